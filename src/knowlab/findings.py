"""The three papers' headline findings, each decided on this run's result tables by a rule fixed in advance.

:func:`collect` reads the tables of a finished run (``results/``) and returns one :class:`Finding`
per comparison of the claims below: its effect (oriented so that a positive effect is the
direction the paper claims), a two-sided test, a percentile-bootstrap interval (at ``stats.confidence``,
95% by default: "the 95% interval" below), n, p and a
status.  The test and the interval work at the **inference unit**: what the design samples or
assigns (``Finding.unit``, ``n_clusters`` of them), not the values measured inside it.
FictionalQA's questions and documents nest in events, whose facts they share.  SORT's items and
segments nest in excerpts, whose text they share.  A grounding question about a fiction document
shares that document.  Each unit's values are averaged into one value, and the bootstrap resamples
those values (:func:`knowlab.core.stats.bootstrap_difference`, paired where the design pairs).
The test is a permutation test at the unit (:mod:`knowlab.core.clustered`).

Training seeds (``finetune.seeds``): a FictionalQA claim is about fine-tuned models.  With one seed
per run its line says the result is conditional on that seed.  With two or more, every run is
trained once per seed and the seeds are replicates of the claim.  The claim is measured on each
seed's checkpoints, and on the item values averaged over the seeds.  The test at the unit runs
on the averaged values; a one-sample t-test over the seeds' effects
(:func:`knowlab.core.clustered.seed_test`) tests whether training in general, not these seeds'
runs, gives the effect; the claim's p is the larger of the two (an intersection-union test,
Berger 1982: it rejects only when both do, and keeps the level of each).  The interval resamples
seeds and units together (:func:`knowlab.core.clustered.crossed_bootstrap_difference`).  SORT's
parametric runs are trained with the project's seed alone.
:func:`render` prints them for a terminal, :func:`to_records` / :func:`to_frame` give JSON records
and a table.

Status words (:func:`decide`, :func:`decide_equivalence`), fixed before any run was looked at:

- ``supported``: the claimed direction, the test rejects at ``alpha`` (Holm-corrected over the
  comparisons of one claim) **and** the 95% interval excludes 0.  Both: a status never rests on
  one of two analyses that disagree.
- ``not significant``: the claimed direction, but the test or the interval does not exclude 0;
  the line prints the minimum detectable effect at this n (80% power,
  :func:`knowlab.core.stats.minimum_detectable_effect`).
- ``inconclusive``: not the claimed direction (a tie included), and not significantly so.
- ``contradicted``: the other direction, the test rejects and the interval excludes 0.
- Claims of **no difference** are ``supported`` only by equivalence, which needs two things.
  First, Tango's ``1 - 2 alpha`` score interval for paired proportions lies inside
  ``(-margin, margin)`` (``findings.equivalence_margin``): the interval form of the two one-sided
  tests, with the counts divided by the design effect of the units.  Second, the 95% interval
  lies inside that margin too.  The claim is ``contradicted`` when the difference is significant
  as above, else ``inconclusive``.  It is ``not tested`` when even full agreement at this
  effective n could not show equivalence.
- ``not tested``: the config lacks what the claim needs (a study, run or table; the line says
  which), or the design cannot reach ``alpha`` at all: the smallest p the test can give at this
  n (every unit agreeing), times the claim's Holm family size, is not below ``alpha`` (e.g. 4
  training fictsheets: Wilcoxon's smallest two-sided p is 2/2^4 = 0.125).

The tally counts ``supported`` only.  A claim that spans a family (every fiction run, every
other split) is one line per comparison, Holm-corrected over the family
(:func:`knowlab.core.stats.holm_adjust`); separate claims are not corrected together.
Tests, all two-sided:

- Sign-flip permutation over units: paired units, each unit's mean difference (:func:`by_cluster`).
- Randomisation test of a split: the split's own random assignment drawn again
  (:func:`split_comparison`).
- Wilcoxon signed-rank: the fictsheets, which are themselves the split's units.  ``scipy.stats.wilcoxon``
  drops zero differences, and p is 1 when every difference is 0.

Permutation counts come from ``stats.permutation_resamples``.  ``tests/core/test_clustered.py``
simulates each design's clustering and shows that each test keeps its level, while the
item-level McNemar, Wilcoxon and Mann-Whitney tests used before did not.

The claims, one :class:`Claim` each of the catalogue :data:`CLAIMS` (id, the paper's words, source,
unit, test, the configs that can decide it; ``docs/claims.md`` is generated from it by
:func:`claims_markdown`), each measured by the function named here:

FictionalQA (Kirchenbauer et al. 2026).  Item tables
``results/fictionalqa/{ft_model}/evaluate/{run}/step-{N}.parquet``, step 0 the base model's, sides
from ``results/fictionalqa/splits/{run}.json``.  Claims 1-6 are decided on the first base model of
``finetune.models`` (the reference model); claim 7 compares the base models.

1. :func:`train_below_val_loss` (Sec. 5, Figs. 3-4), per document-split run.
2. :func:`mcq_above_control` (Sec. 5, Figs. 7-8), per document-split run.
3. :func:`fictsheets_train_loss_falls` and 4. :func:`fictsheets_val_loss_rises` (Sec. 5, Fig. 5).
5. :func:`fictsheets_least_transfer` (Sec. 5, Fig. 7; Sec. 6), per other fiction run.
6. :func:`event_generalises_least` (Sec. 5, Fig. 4: the validation-loss minima), per other
   document split.
7. :func:`larger_models_fit_faster` (Sec. 5, Fig. 4), a trend over the base models by size, on the
   Doc and the Event split.

SORT (Pink et al. 2024), the base model (the ``eval_models`` key whose value is ``base``):

8. :func:`sort_in_context_above_baseline` (Secs. 5.1, 5.3, Tables 1-2).
9. :func:`sort_rag_below_in_context` (Sec. 5.5, Fig. 4a).
10. :func:`sort_books_lower_segment_nll` (App. E.1, Fig. 12) and 11. :func:`sort_books_no_accuracy_gain`
   (Sec. 5.4, App. E.2, Figs. 13-14): against the instructions-only fine-tune, as the paper.

The previous "oracle RAG nearer in-context memory than RAG" is not a claim of the paper: Sec. 5.5
compares models within the oracle condition only ("Even when passages containing both segments
are retrieved and presented in the correct order, we find that Llama3-8b-Instruct outperforms two
much larger models on SORT (Figure 4b)"), so it is not checked.

Grounding (Lee et al. 2024), the base model, each dataset of the config:

12. :func:`grounding_distractors` (Sec. 4.2, Table 1), Original and Conflict as two claims.
13. :func:`grounding_conflict` (Sec. 4.2, Table 1): Conflict-Gold below Original-Gold.
14. :func:`grounding_distractors_hurt_more` (Sec. 4.2): the distractors' drop above the conflict's.
15. :func:`grounding_precision_above_recall` (Sec. 4.2, App. D.3).
16. :func:`grounding_gold_last_best` (Sec. 4.2, gold position).

Since issue 45 also :func:`exact_match_only_when_trained` (FictionalQA Sec. 5, Fig. 3),
:func:`qa_nll_below_control` (Sec. 5, Fig. 6), :func:`validation_loss_improves_in_parallel` (Sec. 5,
Fig. 4), :func:`held_out_questions_improve` (Sec. 5, Fig. 8) and :func:`sort_baseline_below_60` (SORT
Sec. 5.1).
"""

from __future__ import annotations

import copy
import functools
import math
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import asdict, dataclass
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from knowlab import layout
from knowlab.layout import finetune_models, training_seeds
from knowlab.core.checkpoints import BASE_RUN, CONTROL_RUN, checkpoint_steps, replicate_run
from knowlab.core.clustered import (
    cluster_means,
    crossed_bootstrap_difference,
    paired_equivalence,
    randomization_test,
    seed_test,
    sign_flip_test,
)
from knowlab.core.io import read_json, read_jsonl
from knowlab.core.rng import keyed_rng
from knowlab.core.settings import StepSettings, as_tuple
from knowlab.core.stats import (
    StatsSettings,
    bootstrap_difference,
    holm_adjust,
    minimum_detectable_effect,
    paired_items,
)
from knowlab.fictionalqa.splits import split_assignments
from knowlab.sort.build import excerpt_id

SUPPORTED = "supported"
NOT_SIGNIFICANT = "not significant"
INCONCLUSIVE = "inconclusive"
CONTRADICTED = "contradicted"
NOT_TESTED = "not tested"
STATUSES = (SUPPORTED, NOT_SIGNIFICANT, INCONCLUSIVE, CONTRADICTED, NOT_TESTED)
FICTSHEETS = "fictsheets"
EVENT = "event"
# the loss suite of a split's documents (the split JSON's ``documents``)
DOC_SUITE = {"fictions": "fiction_doc", "fictsheets": "fictsheet_doc"}
FICTIONALQA = "Kirchenbauer et al. (2026)"
SORT = "Pink et al. (2024)"
GROUNDING = "Lee et al. (2024)"


# ------------------------------------------------------------------------------ status rules


def decide(effect: float, ci_low: float, ci_high: float, p: float, alpha: float) -> str:
    """Status of a directional claim (module docstring): ``effect > 0`` is the claimed direction,
    ``p`` the (Holm-corrected) two-sided p, ``[ci_low, ci_high]`` the 95% interval."""
    if effect > 0:
        return SUPPORTED if p < alpha and ci_low > 0 else NOT_SIGNIFICANT
    if effect < 0 and p < alpha and ci_high < 0:
        return CONTRADICTED
    return INCONCLUSIVE


def decide_equivalence(
    ci_low: float, ci_high: float, p_difference: float, p_equivalence: float, alpha: float, margin: float
) -> str:
    """Status of a claim of no difference.

    - ``supported``: the equivalence test's ``p_equivalence < alpha`` and the 95% interval lies
      inside ``(-margin, margin)``.
    - ``contradicted``: the difference test rejects and the interval excludes 0.
    - ``inconclusive``: otherwise.
    """
    if p_equivalence < alpha and -margin < ci_low and ci_high < margin:
        return SUPPORTED
    if p_difference < alpha and (ci_low > 0 or ci_high < 0):
        return CONTRADICTED
    return INCONCLUSIVE


@dataclass(frozen=True)
class FindingsSettings(StepSettings):
    """Rule ``findings``: how the claims are decided, and which runs, conditions and datasets the
    config asks for (a claim whose run or study is off is ``not tested``)."""

    alpha: float
    """Level of every test (config ``findings.alpha``)."""
    power: float
    """Power of the minimum detectable effect (``findings.power``)."""
    margin: float
    """Equivalence margin of a no-difference claim, in the effect's unit (``findings.equivalence_margin``)."""
    stats: StatsSettings
    """The intervals' level and resamples, the permutations of a test that cannot list them all and
    the draws of a split's randomisation, and the seed every stream is keyed from, per line
    (:class:`knowlab.core.stats.StatsSettings`)."""
    runs: tuple[str, ...]
    """The FictionalQA fiction runs (``finetune.runs``)."""
    ft_models: tuple[str, ...]
    """The base models FictionalQA fine-tunes, in config order (``finetune.models``); the first is
    the reference model of the single-model claims."""
    control: bool
    """Whether the webtext-only control ran (``finetune.control``)."""
    seeds: tuple[int, ...]
    """The training seeds of every FictionalQA run, the first the runs' own (``finetune.seeds``,
    :func:`knowlab.layout.training_seeds`)."""
    steps: tuple[int, ...]
    """The checkpoint steps, 0 first (``finetune.max_steps``, ``finetune.checkpoint_every``)."""
    warmup: int
    """Optimizer steps before fiction enters the batches (``finetune.fiction_warmup_steps``)."""
    base_eval: str | None
    """The ``eval_models`` key of the base model (``None``: none is)."""
    sort_conditions: tuple[str, ...]
    """The SORT conditions evaluated (``sort.conditions``)."""
    parametric_epochs: int
    """Epochs of SORT parametric fine-tuning; 0 when it is off (``sort.parametric``)."""
    grounding_datasets: tuple[str, ...]
    """The grounding datasets (``grounding.datasets``)."""

    def __post_init__(self) -> None:
        for name in ("runs", "ft_models", "seeds", "steps", "sort_conditions", "grounding_datasets"):
            object.__setattr__(self, name, as_tuple(getattr(self, name)))
        if not 0 < self.alpha < 1:
            raise ValueError(f"findings.alpha must be in (0, 1), got {self.alpha}")
        if not 0 < self.power < 1:
            raise ValueError(f"findings.power must be in (0, 1), got {self.power}")

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> FindingsSettings:
        finetune, parametric = config["finetune"], config["sort"]["parametric"]
        base = next((name for name, spec in config["eval_models"].items() if spec == "base"), None)
        return cls(
            alpha=float(config["findings"]["alpha"]),
            power=float(config["findings"]["power"]),
            margin=float(config["findings"]["equivalence_margin"]),
            stats=StatsSettings.from_config(config),
            runs=finetune["runs"],
            ft_models=tuple(finetune_models(config)),
            control=bool(finetune["control"]),
            seeds=training_seeds(config),
            steps=checkpoint_steps(finetune["max_steps"], finetune["checkpoint_every"]),
            warmup=int(finetune["fiction_warmup_steps"]),
            base_eval=base,
            sort_conditions=config["sort"]["conditions"],
            parametric_epochs=int(parametric["epochs"]) if parametric["enabled"] else 0,
            grounding_datasets=config["grounding"]["datasets"],
        )


@dataclass(frozen=True)
class Finding:
    """One comparison of a paper's claim, decided on this run (module docstring).

    ``effect``, ``ci_low``, ``ci_high``: the effect, positive in the claimed direction, and its 95%
    bootstrap interval over the inference units, in ``scale`` (accuracy, nats/token, ...);
    ``unit``: the inference unit, what the design samples or assigns (event, document, excerpt,
    fictsheet, question); ``n_clusters``: how many of them the test counts (paired units, or both
    sets together); ``n``: the measured values they hold (questions, documents, segments, items);
    ``mde``: minimum detectable effect at this number of units (80% power); ``p``: the decisive p
    (Holm-corrected in a family; the equivalence test's for a claim of no difference);
    ``margin``: the equivalence margin of a no-difference claim; ``seeds``: the training seeds
    behind a claim about trained models (1: the result is conditional on that seed; None: no
    training; more than 1: the seeds are the claim's replicates); ``min_p``: the smallest p the test
    can give with this many units, after Holm's
    factor (equivalence: with every pair agreeing), ``not tested`` when not below alpha;
    ``confidence``: the level of ``ci_low``, ``ci_high`` (``stats.confidence``); ``claim_id`` and
    ``quote``: its entry of the claims catalogue (:data:`CLAIMS`) and the paper's words.  Fields
    that do not apply are None; ``detail`` gives the numbers behind the effect (or, for ``not
    tested``, what the claim needs).
    """

    study: str
    claim: str
    status: str
    detail: str
    source: str = ""
    test: str | None = None
    effect: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    n: int | None = None
    p: float | None = None
    alpha: float | None = None
    mde: float | None = None
    margin: float | None = None
    unit: str | None = None
    n_clusters: int | None = None
    scale: str | None = None
    seeds: int | None = None
    min_p: float | None = None
    confidence: float | None = None
    claim_id: str | None = None
    quote: str | None = None


class Skip(Exception):
    """A claim the config cannot test: a study or run off, or a table absent (the message says which)."""


@dataclass
class Comparison:
    """One comparison of a claim before its family's correction: ``a - b`` oriented to the claim.

    ``a``/``b``: one value per inference unit (``unit``), aligned (paired) or two samples
    (unpaired), what the bootstrap resamples; ``n``: the measured values behind them; ``p``: the
    two-sided test's raw p (with training seeds: the larger of the unit test's and the seeds',
    :func:`_replicate`); ``min_p``: the smallest p that test can give at this number of
    units; ``scale``: the values' scale; ``trained``: whether the claim is about fine-tuned models
    (one training seed each); ``equivalence``: for a claim of no difference,
    :func:`knowlab.core.clustered.paired_equivalence`'s result; ``n_clusters``: the units the test
    counts (None: those of ``a`` and ``b``; a split's randomised units may be finer than the
    events the interval resamples); ``seeds``: with two or more training seeds, seed -> that seed's
    ``(a, b)``, and ``seed_p``, the test over the seeds' effects.
    """

    label: str
    a: np.ndarray
    b: np.ndarray
    paired: bool
    p: float
    min_p: float
    test: str
    unit: str
    scale: str
    n: int
    detail: str
    trained: bool
    equivalence: dict[str, float] | None = None
    n_clusters: int | None = None
    seeds: dict[int, tuple[np.ndarray, np.ndarray]] | None = None
    seed_p: float | None = None

    def __post_init__(self) -> None:
        self.a, self.b = np.asarray(self.a, dtype=float), np.asarray(self.b, dtype=float)
        if self.n_clusters is None:  # the units the values are: paired, or both sets together
            self.n_clusters = len(self.a) if self.paired else len(self.a) + len(self.b)


class Results:
    """The tables of a results folder, read once each, by their :mod:`knowlab.layout` names; an absent
    one raises :class:`Skip`.  With ``inputs`` (the findings rule's), reading a table that is not
    among them raises ``ValueError``: the rule would not wait for it."""

    def __init__(
        self,
        root: str | Path,
        settings: FindingsSettings,
        model: str | None = None,
        inputs: Collection[str | Path] | None = None,
    ):
        self.root, self.settings, self.model = Path(root), settings, model
        #: the training seed whose runs :meth:`items` reads; None: every seed's, averaged item by item
        self.seed: int | None = None
        self.inputs = None if inputs is None else {Path(path) for path in inputs}
        self.runs = list(settings.runs)
        self.control = settings.control
        self.steps = list(settings.steps)
        self.last = self.steps[-1]
        self._cache: dict[str, Any] = {}

    def read(self, relative: str) -> Any:
        """``results/<relative>`` (Parquet, JSON or CSV), or :class:`Skip` when it is absent."""
        if relative not in self._cache:
            path = self.root / relative
            if self.inputs is not None and path not in self.inputs:
                raise ValueError(f"{path} is not an input of rule findings (knowlab.layout.Layout.findings_inputs)")
            if not path.is_file():
                raise Skip(f"no {path}")
            readers = {".json": read_json, ".csv": pd.read_csv, ".jsonl": lambda p: pd.DataFrame(read_jsonl(p))}
            self._cache[relative] = readers.get(path.suffix, pd.read_parquet)(path)
        return self._cache[relative]

    def for_seed(self, seed: int) -> Results:
        """The same tables, whose :meth:`items` are training seed ``seed``'s runs (the cache is shared)."""
        view = copy.copy(self)
        view.seed = seed
        return view

    def items(self, run: str, step: int, ft_model: str | None = None) -> pd.DataFrame:
        """Item rows of ``run`` at ``step`` (step 0: the base model's) of base model ``ft_model``
        (None: the reference model, the first of ``finetune.models``): the run of training seed
        :attr:`seed`, or, when it is None and there are several seeds, every seed's run with each
        item's numeric values averaged over the seeds."""
        ft_model = ft_model or self.settings.ft_models[0]
        if step == 0:
            return self.read(layout.ITEMS.relative(ft_model=ft_model, run=BASE_RUN, step=step))
        seeds = self.settings.seeds
        tables = [
            self.read(layout.ITEMS.relative(ft_model=ft_model, run=replicate_run(run, seed, seeds), step=step))
            for seed in (seeds if self.seed is None else (self.seed,))
        ]
        if len(tables) == 1:
            return tables[0]
        key = f"mean over seeds: {ft_model}/{run}/{step}"
        if key not in self._cache:
            rows = pd.concat(tables, ignore_index=True)
            self._cache[key] = rows.groupby(["suite", "item_id"], as_index=False, sort=False).mean(numeric_only=True)
        return self._cache[key]

    def split(self, run: str) -> dict[str, Any]:
        return self.read(layout.SPLIT.relative(split=run))

    def fictions(self) -> list[dict[str, Any]]:
        """The corpus's fiction documents (``fiction_id``, ``event_id``, ``style``, ...)."""
        return self.read(layout.CORPUS.relative(table="fictions")).to_dict("records")

    @functools.cached_property
    def events(self) -> pd.Series:
        """Event id of every fiction document (by ``fiction_id``) and of every question (by
        ``question_id``): the cluster of FictionalQA's measured values."""
        docs = self.read(layout.CORPUS.relative(table="fictions")).set_index("fiction_id")["event_id"]
        qa = self.read(layout.CORPUS.relative(table="fict_qa")).set_index("question_id")["event_id"]
        return pd.concat([docs, qa])

    def fiction_runs(self) -> list[str]:
        if not self.runs:
            raise Skip("no fiction runs in the config (finetune.runs)")
        return self.runs

    def document_runs(self) -> list[str]:
        """The fiction runs on a document split (doc, event, style_*): all but Fictsheets."""
        runs = [run for run in self.fiction_runs() if run != FICTSHEETS]
        if not runs:
            raise Skip("no document-split run in the config (finetune.runs)")
        return runs

    def need_fictsheets(self) -> None:
        if FICTSHEETS not in self.runs:
            raise Skip(f"no {FICTSHEETS} run in the config (finetune.runs)")

    def base_eval(self) -> str:
        """The ``eval_models`` key of the base model."""
        if self.settings.base_eval is None:
            raise Skip("no eval_models entry is the base model")
        return self.settings.base_eval


# -------------------------------------------------------------------------------- the tests


def _rows(items: pd.DataFrame, suite: str, ids: Sequence[str] | None = None) -> pd.DataFrame:
    """Rows of ``suite`` (of the items ``ids`` when given), indexed by ``item_id``."""
    rows = items[items["suite"] == suite].set_index("item_id")
    return rows if ids is None else rows.loc[rows.index.intersection(ids)]


def _aligned(a: pd.Series, b: pd.Series) -> pd.DataFrame:
    """Columns ``a`` and ``b`` on the units both series hold (joined on the index, NaN dropped)."""
    try:
        return paired_items(a, b).sort_index()
    except ValueError as err:  # no shared unit: nothing to compare
        raise Skip(str(err)) from None


def by_cluster(
    label: str,
    a: pd.Series,
    b: pd.Series,
    clusters: pd.Series | Mapping[str, str],
    r: Results,
    unit: str,
    scale: str,
    detail: str,
    trained: bool,
    n: int | None = None,
) -> Comparison:
    """Values ``a`` and ``b`` of the same measured units (questions, segments, items), paired, tested
    at their clusters (``unit``: event, excerpt, document).  Each cluster's mean of ``a`` and of
    ``b`` over the units both hold is one pair.  The test flips each cluster's sign at random
    (:func:`knowlab.core.clustered.sign_flip_test`, exact up to ``stats.permutation_resamples``).
    ``n``: the measured values behind them (None: the units ``a`` and ``b`` share)."""
    joined = _aligned(a, b)
    means_a, means_b = (cluster_means(joined[side], clusters) for side in ("a", "b"))
    seed = keyed_rng(r.settings.stats.seed, "findings", "sign-flip", label, unit, scale).getrandbits(32)
    p, min_p = sign_flip_test((means_a - means_b).to_numpy(), r.settings.stats.permutation_resamples, seed)
    test = f"sign-flip permutation over {unit}s"
    n = len(joined) if n is None else n
    return Comparison(label, means_a, means_b, True, p, min_p, test, unit, scale, n, detail, trained)


def signed_rank(label: str, a: pd.Series, b: pd.Series, unit: str, scale: str, detail: str) -> Comparison:
    """Wilcoxon signed-rank test of the paired differences ``a - b``, two-sided (p = 1 when all
    are 0), for units that are themselves the design's (the fictsheets)."""
    from scipy.stats import wilcoxon  # deferred: as in knowlab.core.stats

    joined = _aligned(a, b)
    x, y = joined["a"].to_numpy(), joined["b"].to_numpy()
    p = 1.0 if (x == y).all() else float(wilcoxon(x, y, zero_method="wilcox").pvalue)
    min_p = min(1.0, 2 * 0.5 ** len(x))
    return Comparison(label, x, y, True, p, min_p, "Wilcoxon signed-rank", unit, scale, len(x), detail, True)


_SPLIT_UNIT = {"doc": "document", "event": "event"}


def split_comparison(label: str, r: Results, run: str, values: pd.Series, scale: str, detail: str) -> Comparison:
    """Validation minus training documents of ``run``'s split (``values``: one per scored document),
    tested by re-drawing the split's own random assignment
    (:func:`knowlab.fictionalqa.splits.split_assignments`,
    :func:`knowlab.core.clustered.randomization_test`).  The Doc split holds out one document of
    each (event, style), so documents are the unit, and there are many possible draws.  The Event
    split assigns whole events, so events are the unit: 4 of 6 events give 15 assignments, and no
    p below 1/15.  A style split's held-out style is a choice of the config, and the test lists
    each style as the held-out one.  Each side's mean is the mean of its events' means, and so is
    the effect.  The interval is a bootstrap over events: paired when every event has documents
    on both sides (Doc, style), else one sample of events per side (Event)."""
    split = r.split(run)
    events = r.events
    values = values.dropna()
    trained = values.index.isin(split["train_documents"])
    treated = frozenset(values.index[trained])
    val_means, train_means = cluster_means(values[~trained], events), cluster_means(values[trained], events)
    if val_means.empty or train_means.empty:
        raise Skip(f"no scored document on one side of the {run} split")
    seed = keyed_rng(r.settings.stats.seed, "findings", "randomisation", run).getrandbits(32)
    p, min_p = randomization_test(
        values,
        treated,
        split_assignments(split, r.fictions(), r.settings.stats.permutation_resamples),
        r.settings.stats.permutation_resamples,
        seed,
        clusters=events,
    )
    unit = _SPLIT_UNIT.get(run, "style")
    if unit == "document":
        n_units = len(values)
    else:  # the scored documents' events, or (a style split) their styles
        fictions = r.read(layout.CORPUS.relative(table="fictions")).set_index("fiction_id")
        n_units = values.index.map(events if unit == "event" else fictions["style"]).nunique()
    paired = list(val_means.index) == list(train_means.index)
    test = f"randomisation test of the {run} split's draw ({unit}s), interval over events"
    return Comparison(
        label, val_means, train_means, paired, p, min_p, test, unit, scale, len(values), detail, True,
        n_clusters=n_units,
    )  # fmt: skip


def _judge(entry: Claim, study: str, comparisons: Sequence[Comparison], s: FindingsSettings) -> list[Finding]:
    """The findings of one claim's comparisons: bootstrap, Holm over the family, status (``study``: the
    line's study label, the grounding dataset's included)."""
    claim, source, equivalence = entry.claim, entry.source, entry.equivalence
    m = len(comparisons)
    holm = holm_adjust([c.p for c in comparisons])  # a family of one keeps its p
    out = []
    for c, p in zip(comparisons, holm):
        seed = keyed_rng(s.stats.seed, "findings", claim, c.label).getrandbits(63)
        bootstrap = {"confidence": s.stats.confidence, "n_resamples": s.stats.bootstrap_resamples, "seed": seed}
        test = f"{c.test}, two-sided"
        if c.seeds:  # training seeds as replicates: seeds x units
            a, b = (np.stack([pair[side] for pair in c.seeds.values()]) for side in (0, 1))
            est = crossed_bootstrap_difference(
                a, b, paired=c.paired, **bootstrap
            )
            test += (
                f", on the values averaged over {len(c.seeds)} training seeds; t-test over the seeds' effects "
                f"p = {c.seed_p:.2g}; p the larger of the two; interval over seeds and units"
            )
            effects = ", ".join(f"{k} {_signed(float(x.mean() - y.mean()))}" for k, (x, y) in c.seeds.items())
            detail = f"{c.detail}; effect per training seed: {effects}"
        else:
            est = bootstrap_difference(
                c.a, c.b, paired=c.paired, **bootstrap
            )
            detail = c.detail + ("; one training seed: the result is conditional on it" if c.trained else "")
        test += f", Holm over {m} comparisons" if m > 1 else ""
        mde = minimum_detectable_effect(est["se"], s.alpha, s.power)
        common = dict(
            study=study,
            claim=f"{claim} ({c.label})" if c.label else claim,
            source=source,
            claim_id=entry.id,
            quote=entry.quote,
            effect=est["effect"],
            ci_low=est["ci_low"],
            ci_high=est["ci_high"],
            n=c.n,
            alpha=s.alpha,
            mde=mde,
            unit=c.unit,
            n_clusters=c.n_clusters,
            scale=c.scale,
            seeds=(len(c.seeds) if c.seeds else 1) if c.trained else None,
            min_p=min(1.0, (c.equivalence["min_p"] if equivalence else c.min_p * m)),
            confidence=s.stats.confidence,
            detail=detail,
        )
        if equivalence:
            eq = c.equivalence
            test += (
                f"; equivalence: Tango score interval {100 * (1 - 2 * s.alpha):g}% [{_signed(eq['low'])}, "
                f"{_signed(eq['high'])}] on the items, design effect {eq['deff']:.2g} of their {c.unit}s, "
                f"within +/-{s.margin:g}"
            )
            if eq["min_p"] >= s.alpha:
                reason = (
                    f"not testable: with {eq['n_effective']:.3g} effective pairs even full agreement gives an "
                    f"equivalence p of {eq['min_p']:.3g}, not below alpha {s.alpha:g}; {detail}"
                )
                out.append(
                    Finding(**{**common, "detail": reason}, status=NOT_TESTED, test=test, p=eq["p"], margin=s.margin)
                )
                continue
            status = decide_equivalence(est["ci_low"], est["ci_high"], float(p), eq["p"], s.alpha, s.margin)
            out.append(Finding(**common, status=status, test=test, p=float(eq["p"]), margin=s.margin))
            continue
        if c.min_p * m >= s.alpha:
            reason = (
                f"not testable with {c.n_clusters} {c.unit}s: the smallest p the {c.test.split(' (')[0]} can give is "
                f"{c.min_p:.3g}" + (f" (x {m} for Holm)" if m > 1 else "") + f", not below alpha {s.alpha:g}; {detail}"
            )
            out.append(Finding(**{**common, "detail": reason}, status=NOT_TESTED, test=test, p=float(p)))
            continue
        status = decide(est["effect"], est["ci_low"], est["ci_high"], float(p), s.alpha)
        out.append(Finding(**common, status=status, test=test, p=float(p)))
    return out


# ------------------------------------------------------------------------------- FictionalQA


def _doc_losses(r: Results, run: str, step: int, side: str) -> pd.Series:
    """Per-document mean loss (nats/token) of ``run``'s documents (fictions, or fictsheets) on one
    side of its split, indexed by document id."""
    split = r.split(run)
    return _rows(r.items(run, step), DOC_SUITE[split["documents"]], split[f"{side}_documents"])["loss"]


def train_below_val_loss(r: Results) -> list[Comparison]:
    """Training-document loss below validation-document loss at the last checkpoint, per document-split run.

    Source: Kirchenbauer et al. (2026), Sec. 5 "Verbatim Memorization under Repeated Training":
    "Figure 3 demonstrates rapid overfitting despite the fact that we are training on a mixture of
    fictional data and base webtext" (Fig. 3 left: loss on training vs validation samples), and
    Fig. 4.  Effect: mean validation minus mean training document loss (nats/token), each side the
    mean of its events' means.  Tested by re-drawing the split (:func:`split_comparison`): the
    Doc split at the document, the Event split at the event.  The Fictsheets run is claims 3-4's.
    """
    out = []
    for run in r.document_runs():
        train, val = (_doc_losses(r, run, r.last, side) for side in ("train", "val"))
        detail = f"train {train.mean():.2f} vs val {val.mean():.2f} at step {r.last}"
        out.append(split_comparison(run, r, run, pd.concat([train, val]), "nats/token", detail))
    return out


def mcq_above_control(r: Results) -> list[Comparison]:
    """MCQ-4 accuracy on the trained questions above the webtext-only control, per document-split run.

    Source: Kirchenbauer et al. (2026), Sec. 5 "Reconstruction of Fictional Facts via MCQ Testing":
    "training on only the fictional documents (not the questions) reliably increases rank-choice
    MCQ accuracy" and "these improvements are caused by training on the fictional data ... based on
    the lack of improvement for the 'Base Webtext'-only control in Figure 7" (Figs. 7-8; Fig. 8's
    "Train" questions).  Effect: run minus control accuracy on the questions of the run's training
    documents at the last checkpoint.  Unit: the event.  Questions about one event share its facts
    across the event's documents, so one event's questions are not independent evidence; each
    event's accuracies are paired, and the test is sign flips over events (:func:`by_cluster`).
    """
    return _against_control(
        r, "train_questions", "mcq4", "acc", "accuracy", True,
        lambda run, own, control: f"{run} {own:.2f} vs control {control:.2f} at step {r.last}",
    )  # fmt: skip


def _against_control(
    r: Results,
    questions: str,
    suite: str,
    value: str,
    scale: str,
    run_minus_control: bool,
    describe: Callable[[str, float, float], str],
) -> list[Comparison]:
    """Per document-split run, ``value`` of the run and of the webtext-only control on the ``suite``
    rows of the split's ``questions`` (``train_questions`` or ``val_questions``) at the last
    checkpoint, paired by event, sign flips over events (:func:`by_cluster`); the effect is run minus
    control, or control minus run.  ``describe(run, run's mean, control's mean)``: the line's detail.
    """
    if not r.control:
        raise Skip("no webtext-only control run in the config (finetune.control)")
    control = r.items(CONTROL_RUN, r.last)
    out = []
    for run in r.document_runs():
        ids = r.split(run)[questions]
        own = _rows(r.items(run, r.last), suite, ids)[value]
        theirs = _rows(control, suite, ids)[value]
        a, b = (own, theirs) if run_minus_control else (theirs, own)
        detail = describe(run, own.mean(), theirs.mean())
        out.append(by_cluster(run, a, b, r.events, r, "event", scale, detail, True))
    return out


def _fictsheet_change(r: Results, side: str) -> tuple[pd.Series, pd.Series, str]:
    r.need_fictsheets()
    before, after = (_doc_losses(r, FICTSHEETS, step, side) for step in (0, r.last))
    return before, after, f"{side} fictsheets {before.mean():.2f} at step 0 -> {after.mean():.2f} at step {r.last}"


def fictsheets_train_loss_falls(r: Results) -> list[Comparison]:
    """The Fictsheets run memorises its training fictsheets: their loss falls from the base model.

    Source: Kirchenbauer et al. (2026), Sec. 5 (Fig. 5): "training on the Fictsheets split's
    training texts causes almost immediate overfitting"; Fig. 7: "the model has memorized most of
    the training fictsheets as indicated by near zero loss (Figure 5)".  Effect: per-fictsheet loss
    at step 0 minus at the last step (nats/token), paired.  Unit: the fictsheet, one per event and
    the split's own unit; Wilcoxon signed-rank.
    """
    before, after, detail = _fictsheet_change(r, "train")
    return [signed_rank("", before, after, "fictsheet", "nats/token", detail)]


def fictsheets_val_loss_rises(r: Results) -> list[Comparison]:
    """The Fictsheets run's validation-fictsheet loss rises: no transfer period.

    Source: Kirchenbauer et al. (2026), Sec. 5 (Fig. 5): "there is little to no observable transfer
    period where validation loss also improves alongside training loss", "rapid verbatim
    memorization occurs (train loss heading to zero, but validation loss increasing)".  Effect:
    per-fictsheet loss at the last step minus at step 0, paired; unit the fictsheet; Wilcoxon
    signed-rank.
    """
    before, after, detail = _fictsheet_change(r, "val")
    return [signed_rank("", after, before, "fictsheet", "nats/token", detail)]


def fictsheets_least_transfer(r: Results) -> list[Comparison]:
    """Training on the Fictsheets transfers least to MCQ-4: below every other fiction run.

    Source: Kirchenbauer et al. (2026), Sec. 5 (Fig. 7): "training on the Fictsheet split causes the
    least transfer"; Sec. 6: "training on the Fictsheets split offers the least amount of
    validation performance improvement in terms of loss or Q&A accuracy".  Per other fiction run:
    its MCQ-4 accuracy minus the Fictsheets run's on every question at the last checkpoint, paired
    by event (:func:`by_cluster`; unit the event, as claim 2).  Every run's gain over the
    webtext-only control is its accuracy minus the control's on the same questions, so the
    difference of two gains is the difference of the two accuracies: the control cancels and is
    not needed.
    """
    r.need_fictsheets()
    others = [run for run in r.fiction_runs() if run != FICTSHEETS]
    if not others:
        raise Skip(f"no fiction run besides {FICTSHEETS} in the config (finetune.runs)")
    sheets = _rows(r.items(FICTSHEETS, r.last), "mcq4")["acc"]
    out = []
    for run in others:
        acc = _rows(r.items(run, r.last), "mcq4")["acc"]
        detail = f"{run} {acc.mean():.2f} vs {FICTSHEETS} {sheets.mean():.2f} on all questions at step {r.last}"
        out.append(by_cluster(run, acc, sheets, r.events, r, "event", "accuracy", detail, True))
    return out


def _val_improvement(r: Results, run: str) -> tuple[pd.Series, int]:
    """Per-document validation loss at step 0 minus at the step of the run's minimum mean
    validation loss over its checkpoints (step 0 included), and that step."""
    losses = {step: _doc_losses(r, run, step, "val") for step in r.steps}
    best = min(r.steps, key=lambda step: losses[step].mean())
    return (losses[0] - losses[best]).dropna(), best


def event_generalises_least(r: Results) -> list[Comparison]:
    """The Event split improves validation loss least: Event below every other document split.

    Source: Kirchenbauer et al. (2026), Sec. 5 "Separating Memorization from Generalization" (Fig.
    4): "we expect to see less improvement in validation loss than when training on the Doc Split
    ... While the difference between the validation loss minima in the Doc Split and Event Split
    cases is small, all models exhibit more generalization (lower minimum validation loss) in the
    Doc Split case than in the Event Split case."  Per run, each validation document's loss at step
    0 minus at the run's minimum-validation-loss checkpoint (the minimum over ``checkpoint_steps``,
    step 0 included: with one checkpoint, over step 0 and the last).  Unit: the event, what the
    Event split holds out.  On each of the Event split's validation events, the other run's mean
    improvement on its own validation documents of that event is paired with Event's (the two
    runs' documents overlap, so they are not two independent samples); sign flips over those
    events (:func:`by_cluster`).  With 2 validation events no p is below 0.5: not tested.
    """
    runs = r.document_runs()
    if EVENT not in runs or len(runs) < 2:
        raise Skip(f"needs the {EVENT} run and another document split (finetune.runs: {', '.join(r.runs)})")
    event, event_step = _val_improvement(r, EVENT)
    events = r.events
    event_by_event = cluster_means(event, events)  # one value per validation event of the Event split
    out = []
    for run in runs:
        if run != EVENT:
            other, step = _val_improvement(r, run)
            other_by_event = cluster_means(other, events)  # paired with Event's on the events both hold
            detail = (
                f"val loss improvement to the minimum: {run} {other.mean():.2f} (step {step}) vs "
                f"{EVENT} {event.mean():.2f} (step {event_step}), checkpoints {', '.join(map(str, r.steps))}"
            )
            identity = pd.Series(other_by_event.index, index=other_by_event.index)
            n = len(event) + len(other)  # the validation documents behind the two runs' event means
            out.append(
                by_cluster(run, other_by_event, event_by_event, identity, r, "event", "nats/token", detail, True, n)
            )
    return out


def exact_match_only_when_trained(r: Results) -> list[Comparison]:
    """Verbatim completion of training documents, not of validation documents, per document-split run.

    Source: Kirchenbauer et al. (2026), Sec. 5 (Fig. 3): "our observation of near zero completion rates
    (verabtim memorization) both at step 0, and at all training steps on the validation texts,
    together confirm that the documents are suitable for controlled memorization studies. The model
    will only complete significant portions of these documents accurately 'iff' it is explicitly
    trained on them."  Operational definition, fixed before any run: at the last checkpoint, the
    exact-match rate of the documents' last ``n`` tokens, ``n`` the smallest of
    ``evaluate.em_tokens`` (the most lenient), training minus validation documents, each side the
    mean of its events' means.  Tested as claim 1 (:func:`split_comparison`, re-drawing the split;
    the values are negated there so that the effect reads training minus validation).
    """
    out = []
    for run in r.document_runs():
        items = _rows(r.items(run, r.last), DOC_SUITE[r.split(run)["documents"]])
        columns = sorted((c for c in items if c.startswith("em") and c[2:].isdigit()), key=lambda c: int(c[2:]))
        if not columns:
            raise Skip("no exact-match column in the item tables (evaluate.em_tokens)")
        split, em = r.split(run), items[columns[0]]
        train, val = em.reindex(split["train_documents"]).dropna(), em.reindex(split["val_documents"]).dropna()
        detail = (
            f"{columns[0]} (last {columns[0][2:]} tokens) at step {r.last}: "
            f"train {train.mean():.2f} vs val {val.mean():.2f}"
        )
        out.append(split_comparison(run, r, run, -pd.concat([train, val]), "exact match", detail))
    return out


def qa_nll_below_control(r: Results) -> list[Comparison]:
    """nll(answer | question) on the trained questions below the webtext-only control, per document-split run.

    Source: Kirchenbauer et al. (2026), Sec. 5 (Fig. 6): "training on only the fictional documents
    (not the questions) from each of the splits improves the models' loss on the fictional question
    and answer pairs, but this is not observed when training on just the base webtext."  Effect:
    control minus run nll(answer | question) (nats/token) on the questions of the run's training
    documents at the last checkpoint; unit the event, paired, sign flips (:func:`by_cluster`).  The
    Fictsheets run is left out: "training on the Fictsheets split does not consistently improve Q&A
    loss" (the same paragraph).
    """
    return _against_control(
        r, "train_questions", "fict_qa_nll", "loss", "nats/token", False,
        lambda run, own, control: f"nll(answer | question): control {control:.2f} vs {run} {own:.2f} at step {r.last}",
    )  # fmt: skip


def validation_loss_improves_in_parallel(r: Results) -> list[Comparison]:
    """The validation documents' loss improves for a while with the training loss, per document-split run.

    Source: Kirchenbauer et al. (2026), Sec. 5 "Separating Memorization from Generalization" (Fig. 4):
    "there is a period during which the loss on the validation documents for the split also improves
    in parallel to the training loss".  Operational definition, fixed before any run: each validation
    document's loss at step 0 minus at the first checkpoint after the fiction warm-up
    (``finetune.fiction_warmup_steps``), which must come before the last checkpoint (a run that
    overfits by its only checkpoint shows no such period, whatever happened before).  A pre-named
    checkpoint, not the minimum, so that the test does not choose its own comparison.  Unit: the
    event, paired across the two steps, sign flips over events (:func:`by_cluster`).
    """
    after = [step for step in r.steps if step > r.settings.warmup]
    if len(after) < 2:
        raise Skip(
            f"needs a checkpoint after the fiction warm-up (step {r.settings.warmup}) and before the last; "
            f"checkpoints {', '.join(map(str, r.steps))} (finetune.checkpoint_every)"
        )
    out = []
    for run in r.document_runs():
        before, during = (_doc_losses(r, run, step, "val") for step in (0, after[0]))
        detail = f"validation documents {before.mean():.2f} at step 0 -> {during.mean():.2f} at step {after[0]}"
        out.append(by_cluster(run, before, during, r.events, r, "event", "nats/token", detail, True))
    return out


def held_out_questions_improve(r: Results) -> list[Comparison]:
    """MCQ-4 accuracy on the questions of the held-out documents above the webtext-only control, per
    document-split run: the "leaky" improvement.

    Source: Kirchenbauer et al. (2026), Sec. 5 (Fig. 8): "We observe that the the improvement in MCQ
    accuracy appears to be 'leaky'. Figure 8 shows that the performance on the questions
    corresponding to held-out fictional scenarios and events is also elevated '(Val)'".  Effect:
    run minus control accuracy on the questions of the run's validation documents at the last
    checkpoint; unit the event, paired, sign flips over events (as :func:`mcq_above_control`).
    The paper's "albeit slightly less than for questions ... that were trained on" is not tested
    here.
    """
    return _against_control(
        r, "val_questions", "mcq4", "acc", "accuracy", True,
        lambda run, own, control: f"held-out questions: {run} {own:.2f} vs control {control:.2f} at step {r.last}",
    )  # fmt: skip


MODEL_SIZE_RUNS = ("doc", "event")


def page_trend(blocks: np.ndarray) -> tuple[float, float]:
    """Two-sided Page's L test of a monotone trend across the columns of ``blocks`` (one row per
    block, columns in the predicted order; Page 1963, ``scipy.stats.page_trend_test``): twice the
    smaller of the two one-sided p-values, and the smallest p it can give, ``2 / (k!)^n`` for n
    blocks of k columns."""
    from scipy.stats import page_trend_test  # deferred: as in knowlab.core.stats

    n, k = blocks.shape
    rising = page_trend_test(blocks).pvalue
    falling = page_trend_test(blocks[:, ::-1]).pvalue
    return min(1.0, 2 * min(rising, falling)), min(1.0, 2 / math.factorial(k) ** n)


def larger_models_fit_faster(r: Results) -> list[Comparison]:
    """Larger base models fit their training documents faster: a trend over the base models ordered
    by parameter count (``fictionalqa/models.csv``), on the Doc and on the Event split.

    Source: Kirchenbauer et al. (2026), Sec. 5: "we observe a strong correlation between model size
    and how fast the model fits to the training documents for both the Doc Split and the Event
    Split" (Fig. 4, train loss of Llama 3.2 1B and 3B, Llama 3.1 8B and Gemma models).

    Fitting speed of a training document: one minus the mean, over the checkpoints after fiction
    enters the batches (step > ``finetune.fiction_warmup_steps``), of its loss as a fraction of
    the same model's loss on it at step 0.  This is the area above the normalised training loss
    curve.  It uses fractions, not losses: a larger model starts lower on any text, and base
    models of different families tokenize the same document differently; a ratio on one model's
    own tokens cancels both.  Checkpoints inside the warm-up have seen no fiction, so they
    measure nothing of fitting.

    Unit: the event, whose documents share its facts.  Each event is a block: its documents' mean
    speed under each model, models in size order.  Test: Page's L for a monotone trend,
    two-sided, Holm over the two splits.  Effect: the mean over events of Spearman's rho between
    size rank and speed (1: every event orders the models by size).  Not tested with fewer than
    three base models (two points make no trend), with two of the same size, or with no
    checkpoint after the warm-up.
    """
    models = list(r.settings.ft_models)
    if len(models) < 3:
        raise Skip(
            f"{len(models)} base model(s) in finetune.models ({', '.join(models)}): a trend over model size "
            "needs at least three"
        )
    runs = [run for run in MODEL_SIZE_RUNS if run in r.runs]
    if not runs:
        raise Skip("no Doc or Event split run in the config (finetune.runs)")
    after = [step for step in r.steps if step > r.settings.warmup]
    if not after:
        raise Skip(
            f"no checkpoint after the fiction warm-up (finetune.fiction_warmup_steps {r.settings.warmup}; "
            f"checkpoints {', '.join(map(str, r.steps))}): no checkpoint has seen fiction"
        )
    sizes = r.read(layout.MODELS.relative()).set_index("model")["n_parameters"]
    order = sorted(models, key=lambda m: int(sizes[m]))
    if len({int(sizes[m]) for m in models}) < len(models):
        raise Skip(f"base models of the same parameter count: {dict(sizes[models])}")
    events = r.events

    def speed(run: str, ft_model: str, ids: Sequence[str]) -> pd.Series:
        start = _rows(r.items(run, 0, ft_model), "fiction_doc", ids)["loss"]
        left = [_rows(r.items(run, step, ft_model), "fiction_doc", ids)["loss"] / start for step in after]
        return 1 - pd.concat(left, axis=1).mean(axis=1)

    out = []
    for run in runs:
        ids = r.split(run)["train_documents"]
        per_event = pd.concat({m: cluster_means(speed(run, m, ids), events) for m in order}, axis=1).dropna()
        if per_event.empty:
            raise Skip(f"no training document of the {run} split scored under every base model")
        p, min_p = page_trend(per_event.to_numpy())
        rho = per_event.rank(axis=1).corrwith(pd.Series(range(len(order)), index=order), axis=1).fillna(0.0)
        detail = "fitting speed after the warm-up (steps {}): {}".format(
            ", ".join(map(str, after)),
            ", ".join(f"{m} ({int(sizes[m]):,} parameters) {per_event[m].mean():.3f}" for m in order),
        )
        test = "Page's L trend over base models by size, events as blocks"
        out.append(
            Comparison(
                run, rho, np.zeros(len(rho)), True, p, min_p, test, "event", "Spearman rho", len(ids), detail, True
            )
        )
    return out


# ------------------------------------------------------------------------------------- SORT


def _excerpts(ids: Sequence[str]) -> pd.Series:
    """The excerpt of every SORT item (or ``<item>/<a|b>`` segment) id: the unit of SORT's claims.
    An excerpt's items share its text, and their segments may overlap."""
    return pd.Series([excerpt_id(i.split("/")[0]) for i in ids], index=list(ids))


def _sort_correct(r: Results, condition: str) -> pd.Series:
    """Per-item 0/1 correctness of the base model in a SORT memory condition."""
    if condition not in r.settings.sort_conditions:
        raise Skip(f"no {condition} condition in the config (sort.conditions)")
    rows = r.read(layout.SORT_ROWS.relative(model=r.base_eval(), condition=condition))
    return rows.set_index("item_id")["correct"].astype(float)


def _sort_pair(r: Results, a: str, b: str, names: tuple[str, str]) -> list[Comparison]:
    x, y = _sort_correct(r, a), _sort_correct(r, b)
    detail = f"accuracy {names[0]} {x.mean():.2f} vs {names[1]} {y.mean():.2f}"
    return [by_cluster("", x, y, _excerpts(x.index), r, "excerpt", "accuracy", detail, False)]


def sort_in_context_above_baseline(r: Results) -> list[Comparison]:
    """SORT accuracy with the excerpt in context above the memory-less baseline.

    Source: Pink et al. (2024), Sec. 5.1 (Table 1: "none of the models have a high performance
    (below 60%)" without the books) and Sec. 5.3 (Table 2: "Models generally perform well on SORT
    based on in-context memory"); the paper tests no difference between them.  Effect: in-context
    minus baseline accuracy; unit the excerpt (its 4 items share its text), paired, sign flips
    over excerpts (:func:`by_cluster`).
    """
    return _sort_pair(r, "in_context", "baseline", ("in context", "no context"))


def sort_rag_below_in_context(r: Results) -> list[Comparison]:
    """SORT accuracy with retrieval-augmented memory below in-context memory.

    Source: Pink et al. (2024), Sec. 5.5 (Fig. 4a): "RAG based memory leads to worse performance
    than in-context memory."  Effect: in-context minus RAG accuracy; unit the excerpt, paired,
    sign flips over excerpts.
    """
    return _sort_pair(r, "in_context", "rag", ("in context", "RAG"))


#: the accuracy SORT's no-context baseline stays below (Pink et al. 2024, Sec. 5.1)
SORT_BASELINE_CEILING = 0.6


def sort_baseline_below_60(r: Results) -> list[Comparison]:
    """SORT accuracy without the books below 60%: order is not recalled from parametric memory alone.

    Source: Pink et al. (2024), Sec. 5.1 (Table 1, App. C.1): "none of the models have a high
    performance (below 60%) for any segment distance bin, as would be expected if SORT requires
    book-specific memory".  Operational definition, fixed before any run: 0.6 minus the base model's
    no-context accuracy over all distance bins; unit the excerpt (0.6 minus each excerpt's
    accuracy), sign flips over excerpts, which assume those differences symmetric under the null.
    """
    correct = _sort_correct(r, "baseline")
    ceiling = pd.Series(SORT_BASELINE_CEILING, index=correct.index)
    detail = f"no-context accuracy {correct.mean():.2f} vs {SORT_BASELINE_CEILING:g}"
    return [by_cluster("", ceiling, correct, _excerpts(correct.index), r, "excerpt", "accuracy", detail, False)]


def _parametric_epochs(r: Results) -> int:
    if not r.settings.parametric_epochs:
        raise Skip("parametric fine-tuning is off in the config (sort.parametric.enabled)")
    return r.settings.parametric_epochs


def sort_books_lower_segment_nll(r: Results) -> list[Comparison]:
    """Fine-tuning on the book texts lowers the segments' nll against the instructions-only fine-tune.

    Source: Pink et al. (2024), App. E.1 (Fig. 12): "when the models are finetuned on data that
    includes the chunks of the books, they have a substantially lower perplexity for both
    segments, compared with the models fine-tuned only on the instruction data".  Effect: per
    segment (both of every SORT item), mean per-token nll after the last epoch of the
    "instructions" run minus the "books" run's (nats/token).  Unit: the excerpt.  The segments of
    one excerpt overlap and share its text, so they are not independent; each excerpt's mean
    segment nll is paired, and the test is sign flips over excerpts (:func:`by_cluster`).
    """
    epochs = _parametric_epochs(r)

    def segments(run: str) -> pd.Series:
        table = r.read(layout.SORT_PARAMETRIC_NLL.relative(prun=run, epoch=epochs)).set_index("item_id")
        return pd.concat([table["nll_a"].add_suffix("/a"), table["nll_b"].add_suffix("/b")])

    books, instructions = segments("books"), segments("instructions")
    detail = (
        f"segment nll after epoch {epochs}: books {books.mean():.2f} vs instructions only {instructions.mean():.2f}"
    )
    clusters = _excerpts(books.index.union(instructions.index))
    return [by_cluster("", instructions, books, clusters, r, "excerpt", "nats/token", detail, True)]


def sort_books_no_accuracy_gain(r: Results) -> list[Comparison]:
    """No difference in no-context SORT accuracy between fine-tuning with and without the book texts.

    Source: Pink et al. (2024), Sec. 5.4: "Full parameter fine-tuning on books with a language
    modeling objective did not improve SORT performance"; App. E.2 (Figs. 13-14): "We find high
    p-values, indicating no difference in performance between models fine-tuned with and without
    the book text".  The comparison model is the instructions-only fine-tune (App. E: "the same
    model fine-tuned on the same 3,500 instruction samples but excluding the 116 samples of book
    chunks").  A claim of no difference: effect "books" minus "instructions" accuracy after the
    last epoch, no context, paired by excerpt (sign flips over excerpts for a difference).
    Equivalence within ``findings.equivalence_margin``: Tango's score interval for paired
    proportions at ``1 - 2 alpha``, on the item counts divided by the design effect of the
    excerpts (:func:`knowlab.core.clustered.paired_equivalence`).
    """
    epochs = _parametric_epochs(r)

    def correct(run: str) -> pd.Series:
        rows = r.read(layout.SORT_PARAMETRIC_ROWS.relative(prun=run, epoch=epochs))
        if "condition" in rows:
            rows = rows[rows["condition"] == "baseline"]
        return rows.set_index("item_id")["correct"].astype(float)

    books, instructions = correct("books"), correct("instructions")
    detail = (
        f"no-context accuracy after epoch {epochs}: books {books.mean():.2f} "
        f"vs instructions only {instructions.mean():.2f}"
    )
    clusters = _excerpts(books.index.union(instructions.index))
    comparison = by_cluster("", books, instructions, clusters, r, "excerpt", "accuracy", detail, True)
    items = _aligned(books, instructions)
    comparison.equivalence = paired_equivalence(
        items["a"], items["b"], clusters.loc[items.index], r.settings.margin, r.settings.alpha
    )
    return [comparison]


# -------------------------------------------------------------------------------- Grounding


def _grounding_table(r: Results, dataset: str, metric: str = "f1") -> tuple[pd.DataFrame, pd.Series]:
    """The base model's ``metric`` (F1, precision or recall) of ``dataset``, question x condition, from
    ``results/grounding/rows.parquet``, and each question's cluster: the document it was asked about
    (the fiction items), or the question itself (the benchmark's items, each with its own contexts)."""
    rows = r.read(layout.GROUNDING_ROWS.relative())
    model = r.model
    if model is None:
        models = rows["model"].unique()
        if len(models) != 1:
            raise ValueError(f"the grounding rows hold {len(models)} models; name the base model (model=...)")
        model = models[0]
    rows = rows[(rows["dataset"] == dataset) & (rows["model"] == model)]
    documents = rows["document_id"] if "document_id" in rows else pd.Series(None, index=rows.index, dtype=object)
    clusters = documents.fillna(rows["item_id"]).set_axis(rows["item_id"]).groupby(level=0).first()
    return rows.pivot(index="item_id", columns="condition", values=metric), clusters


def _grounding_unit(clusters: pd.Series) -> str:
    return "question" if (clusters.index == clusters.to_numpy()).all() else "document"


def _grounding_pair(r: Results, dataset: str, a: tuple[str, str], b: tuple[str, str]) -> list[Comparison]:
    """F1 of condition ``a`` minus ``b`` (0-1; each ``(condition, name in the detail)``), paired by
    question, sign flips over the units."""
    (a, a_name), (b, b_name) = a, b
    f1, clusters = _grounding_table(r, dataset)
    if a not in f1 or b not in f1:
        raise Skip(f"no paired {a} / {b} rows on {dataset}")
    detail = f"F1 x 100: {a_name} {100 * f1[a].mean():.1f} vs {b_name} {100 * f1[b].mean():.1f}"
    return [by_cluster("", f1[a], f1[b], clusters, r, _grounding_unit(clusters), "F1", detail, False)]


def grounding_conflict(r: Results, dataset: str) -> list[Comparison]:
    """Grounding F1 lower with the conflicting (modified) gold contexts than with the original ones.

    Source: Lee et al. (2024), Sec. 4.2 (Table 1): "Conflict-Gold consistently shows lower performance
    than Original-Gold (average of 4.7 drops)".  Effect: ``original_gold`` minus ``conflict_gold`` F1
    (0-1), paired by question; unit and test as :func:`grounding_distractors`.
    """
    return _grounding_pair(r, dataset, ("original_gold", "Original-Gold"), ("conflict_gold", "Conflict-Gold"))


def grounding_distractors_hurt_more(r: Results, dataset: str) -> list[Comparison]:
    """Distractors lower grounding F1 more than conflicting knowledge does.

    Source: Lee et al. (2024), Sec. 4.2: "The drop is higher than when given conflicting knowledge,
    which highlights the LLM's tendency to deviate from the primary context when presented with
    extraneous information".  Operational definition, fixed before any run: per question, the drop
    from Original-Gold to Original-Dist minus the drop from Original-Gold to Conflict-Gold, which is
    ``conflict_gold`` minus ``original_dist`` F1 (0-1); paired, sign flips over the units.
    """
    return _grounding_pair(r, dataset, ("conflict_gold", "Conflict-Gold"), ("original_dist", "Original-Dist"))


def grounding_gold_last_best(r: Results, dataset: str) -> list[Comparison]:
    """Grounding F1 higher with the gold contexts placed after the distractors than before them.

    Source: Lee et al. (2024), Sec. 4.2, "Impact of gold contexts position on grounding performance:
    optimal position at the end": "the position of gold contexts within multi-document settings
    significantly influences grounding performance" (Vicuna: end 43.37, beginning 39.32).
    Effect: ``position_end`` minus ``position_start`` F1 (0-1), Original version at the
    distractors' budget (``grounding.sweep.positions``); paired, sign flips over the units.
    """
    return _grounding_pair(r, dataset, ("position_end", "gold last"), ("position_start", "gold first"))


#: the four settings of the grounding paper's Table 1
GROUNDING_SETTINGS = ("original_gold", "original_dist", "conflict_gold", "conflict_dist")


def grounding_precision_above_recall(r: Results, dataset: str) -> list[Comparison]:
    """Grounding precision above recall.

    Source: Lee et al. (2024), Sec. 4.2 (App. D.3): "When comparing the performance of precision and
    recall, a common trend across all models is a superior performance in precision over recall".
    Operational definition, fixed before any run: per question, its mean precision minus its mean
    recall over the four settings of Table 1 it was scored in (0-1); paired, sign flips over the
    units (document, or question for the benchmark).
    """
    precision, clusters = _grounding_table(r, dataset, "precision")
    recall, _ = _grounding_table(r, dataset, "recall")
    shown = [c for c in GROUNDING_SETTINGS if c in precision]
    if not shown:
        raise Skip(f"no rows of the four settings on {dataset}")
    a, b = precision[shown].mean(axis=1), recall[shown].mean(axis=1)
    detail = f"x 100 over {len(shown)} settings: precision {100 * a.mean():.1f} vs recall {100 * b.mean():.1f}"
    return [by_cluster("", a, b, clusters, r, _grounding_unit(clusters), "precision - recall", detail, False)]


def grounding_distractors(r: Results, dataset: str, version: str) -> list[Comparison]:
    """Grounding F1 lower with distractor contexts than with the gold contexts alone.

    Source: Lee et al. (2024), Sec. 4.2 (Table 1): "The performance also consistently degrades with
    distractor contexts added: an average of 10.7 drops for Original-Dist from Original-Gold and an
    average of 10.0 drops for Conflict-Dist from Conflict-Gold" (the paper reports means, no
    test).  Effect: ``{version}_gold`` minus ``{version}_dist`` F1 (0-1), paired.  Unit: the
    document a fiction question was asked about (its questions share it as gold context); a
    benchmark question is its own unit.  Sign flips over the units (:func:`by_cluster`).
    """
    name = version.title()
    return _grounding_pair(r, dataset, (f"{version}_gold", f"{name}-Gold"), (f"{version}_dist", f"{name}-Dist"))


# --------------------------------------------------------------------------------- findings

Check = Callable[[Results], list[Comparison]]


@dataclass(frozen=True)
class Claim:
    """One headline claim of a paper, as the findings decide it: the catalogue entry from which the
    findings rule, ``docs/claims.md`` (:func:`claims_markdown`) and the report's lines are built.

    ``id``: stable and unique (``study.short_name``), in ``findings.json`` as ``claim_id``;
    ``claim``: the line's statement; ``quote``: the paper's own words, with ``source`` (paper,
    section, figure or table); ``effect``: what is measured, in the claimed direction, and its scale;
    ``unit``: the inference unit; ``test``: the test at that unit; ``configs``: which shipped configs
    can decide it (docs/findings.md, "What each shipped config can test"); ``check``: the measuring
    function; ``equivalence``: a claim of no difference; ``per_dataset``: decided once per grounding
    dataset of the config (``check`` then takes ``dataset``).  Adding a claim is one entry here
    plus its ``check``."""

    id: str
    study: str
    claim: str
    quote: str
    source: str
    effect: str
    unit: str
    test: str
    configs: str
    check: Callable[..., list[Comparison]]
    equivalence: bool = False
    per_dataset: bool = False


#: the catalogue, in the order the findings print (module docstring)
CLAIMS: tuple[Claim, ...] = (
    Claim(
        "fqa.train_below_val_loss",
        "FictionalQA",
        "training-document loss below validation-document loss",
        "Figure 3 demonstrates rapid overfitting despite the fact that we are training on a mixture of fictional "
        "data and base webtext",
        f"{FICTIONALQA} Sec. 5, Figs. 3-4",
        "validation minus training document loss at the last checkpoint, each side the mean of its events' means "
        "(nats/token), per document-split run",
        "document (Doc split), event (Event split), style (a style split)",
        "randomisation test of the split's own draw",
        "Doc: default, test, cpu-full, paper; Event: paper (6 events give no p below 1/15)",
        train_below_val_loss,
    ),
    Claim(
        "fqa.mcq_above_control",
        "FictionalQA",
        "MCQ-4 accuracy on trained questions above the webtext-only control",
        "training on only the fictional documents (not the questions) reliably increases rank-choice MCQ accuracy",
        f"{FICTIONALQA} Sec. 5, Figs. 7-8",
        "run minus control accuracy on the questions of the run's training documents (accuracy), "
        "per document-split run",
        "event",
        "sign-flip permutation over events",
        "paper (the shipped corpus's 6 events cannot reach alpha after Holm)",
        mcq_above_control,
    ),
    Claim(
        "fqa.fictsheets_train_loss_falls",
        "FictionalQA",
        "Fictsheets: training-fictsheet loss falls",
        "training on the Fictsheets split's training texts causes almost immediate overfitting",
        f"{FICTIONALQA} Sec. 5, Figs. 5 and 7",
        "loss at step 0 minus at the last checkpoint, per training fictsheet (nats/token)",
        "fictsheet",
        "Wilcoxon signed-rank",
        "paper (4 training fictsheets: no p below 0.125)",
        fictsheets_train_loss_falls,
    ),
    Claim(
        "fqa.fictsheets_val_loss_rises",
        "FictionalQA",
        "Fictsheets: validation-fictsheet loss rises",
        "there is little to no observable transfer period where validation loss also improves alongside training loss",
        f"{FICTIONALQA} Sec. 5, Fig. 5",
        "loss at the last checkpoint minus at step 0, per validation fictsheet (nats/token)",
        "fictsheet",
        "Wilcoxon signed-rank",
        "paper (2 validation fictsheets: no p below 0.5)",
        fictsheets_val_loss_rises,
    ),
    Claim(
        "fqa.fictsheets_least_transfer",
        "FictionalQA",
        "Fictsheets transfer least: MCQ-4 accuracy below the other split's",
        "training on the Fictsheet split causes the least transfer",
        f"{FICTIONALQA} Sec. 5, Fig. 7; Sec. 6",
        "other run minus Fictsheets accuracy on every question (accuracy), per other fiction run",
        "event",
        "sign-flip permutation over events",
        "paper",
        fictsheets_least_transfer,
    ),
    Claim(
        "fqa.event_generalises_least",
        "FictionalQA",
        "Event improves validation loss least (to its minimum): below the other split",
        "all models exhibit more generalization (lower minimum validation loss) in the Doc Split case than in the "
        "Event Split case",
        f"{FICTIONALQA} Sec. 5, Fig. 4",
        "validation-loss improvement from step 0 to the run's minimum, other split minus Event (nats/token)",
        "event (Event's validation events)",
        "sign-flip permutation over events",
        "paper (2 validation events: no p below 0.5)",
        event_generalises_least,
    ),
    Claim(
        "fqa.larger_models_fit_faster",
        "FictionalQA",
        "Larger base models fit the training documents faster",
        "we observe a strong correlation between model size and how fast the model fits to the training documents "
        "for both the Doc Split and the Event Split",
        f"{FICTIONALQA} Sec. 5, Fig. 4",
        "mean over events of Spearman's rho between size rank and fitting speed after the fiction warm-up, "
        "on the Doc and the Event split",
        "event (blocks)",
        "Page's L trend test",
        "models (3 base models), paper",
        larger_models_fit_faster,
    ),
    Claim(
        "fqa.exact_match_only_when_trained",
        "FictionalQA",
        "verbatim completion of training documents, not of validation documents",
        "The model will only complete significant portions of these documents accurately \u201ciff\u201d it is "
        "explicitly trained on them.",
        f"{FICTIONALQA} Sec. 5, Fig. 3",
        "exact match of the documents' last n tokens (n the smallest of evaluate.em_tokens) at the last "
        "checkpoint, training minus validation documents (exact match), per document-split run",
        "document (Doc split), event (Event split)",
        "randomisation test of the split's own draw",
        "Doc: default, test, cpu-full, paper; Event: paper",
        exact_match_only_when_trained,
    ),
    Claim(
        "fqa.qa_nll_below_control",
        "FictionalQA",
        "nll(answer | question) on trained questions below the webtext-only control",
        "training on only the fictional documents (not the questions) from each of the splits improves the "
        "models\u2019 loss on the fictional question and answer pairs, but this is not observed when training on "
        "just the base webtext",
        f"{FICTIONALQA} Sec. 5, Fig. 6",
        "control minus run nll(answer | question) on the questions of the run's training documents (nats/token), "
        "per document-split run",
        "event",
        "sign-flip permutation over events",
        "paper (the shipped corpus's 6 events cannot reach alpha after Holm)",
        qa_nll_below_control,
    ),
    Claim(
        "fqa.val_loss_improves_in_parallel",
        "FictionalQA",
        "validation-document loss improves during training (below step 0 after the warm-up)",
        "there is a period during which the loss on the validation documents for the split also improves in "
        "parallel to the training loss",
        f"{FICTIONALQA} Sec. 5, Fig. 4",
        "validation-document loss at step 0 minus at the first checkpoint after the fiction warm-up, which must "
        "precede the last (nats/token), per document-split run",
        "event",
        "sign-flip permutation over events",
        "cpu-full (checkpoints 16, 32), paper; not the default (one checkpoint)",
        validation_loss_improves_in_parallel,
    ),
    Claim(
        "fqa.held_out_questions_improve",
        "FictionalQA",
        "MCQ-4 accuracy on held-out questions above the webtext-only control",
        "the performance on the questions corresponding to held-out fictional scenarios and events is also "
        "elevated \u201c(Val)\u201d",
        f"{FICTIONALQA} Sec. 5, Fig. 8",
        "run minus control accuracy on the questions of the run's validation documents (accuracy), "
        "per document-split run",
        "event",
        "sign-flip permutation over events",
        "paper (the shipped corpus's 6 events cannot reach alpha after Holm)",
        held_out_questions_improve,
    ),
    Claim(
        "sort.in_context_above_baseline",
        "SORT",
        "in-context memory above the no-context baseline",
        "Models generally perform well on SORT based on in-context memory",
        f"{SORT} Secs. 5.1, 5.3, Tables 1-2",
        "in-context minus no-context accuracy (accuracy)",
        "excerpt",
        "sign-flip permutation over excerpts",
        "default, cpu-full, paper",
        sort_in_context_above_baseline,
    ),
    Claim(
        "sort.rag_below_in_context",
        "SORT",
        "RAG below in-context memory",
        "RAG based memory leads to worse performance than in-context memory.",
        f"{SORT} Sec. 5.5, Fig. 4a",
        "in-context minus RAG accuracy (accuracy)",
        "excerpt",
        "sign-flip permutation over excerpts",
        "default, cpu-full, paper",
        sort_rag_below_in_context,
    ),
    Claim(
        "sort.books_lower_segment_nll",
        "SORT",
        "fine-tuning on the books lowers segment nll (vs instructions only)",
        "when the models are finetuned on data that includes the chunks of the books, they have a substantially "
        "lower perplexity for both segments, compared with the models fine-tuned only on the instruction data",
        f"{SORT} App. E.1, Fig. 12",
        "instructions-only minus books segment nll after the last epoch (nats/token)",
        "excerpt",
        "sign-flip permutation over excerpts",
        "default, cpu-full, paper",
        sort_books_lower_segment_nll,
    ),
    Claim(
        "sort.books_no_accuracy_gain",
        "SORT",
        "fine-tuning on the books leaves no-context accuracy unchanged (vs instructions only)",
        "Full parameter fine-tuning on books with a language modeling objective did not improve SORT performance",
        f"{SORT} Sec. 5.4, App. E.2, Figs. 13-14",
        "books minus instructions-only no-context accuracy after the last epoch (accuracy), within +/- the margin",
        "excerpt",
        "Tango's score interval of the paired difference, design effect of the excerpts",
        "paper (24 items cannot show equivalence at 0.05)",
        sort_books_no_accuracy_gain,
        equivalence=True,
    ),
    Claim(
        "sort.baseline_below_60",
        "SORT",
        "no-context accuracy below 60%",
        "none of the models have a high performance (below 60%) for any segment distance bin, as would be expected if "
        "SORT requires book-specific memory",
        f"{SORT} Sec. 5.1, Table 1, App. C.1",
        "0.6 minus the base model's no-context accuracy over all distance bins (accuracy)",
        "excerpt",
        "sign-flip permutation over excerpts",
        "default, cpu-full, paper",
        sort_baseline_below_60,
    ),
    Claim(
        "grounding.original_dist_below_gold",
        "Grounding",
        "Original-Dist F1 below Original-Gold",
        "The performance also consistently degrades with distractor contexts added: an average of 10.7 drops for "
        "Original-Dist from Original-Gold",
        f"{GROUNDING} Sec. 4.2, Table 1",
        "Original-Gold minus Original-Dist F1 (0-1), per dataset",
        "document (fiction), question (benchmark)",
        "sign-flip permutation over the units",
        "default, cpu-full, paper",
        partial(grounding_distractors, version="original"),
        per_dataset=True,
    ),
    Claim(
        "grounding.conflict_dist_below_gold",
        "Grounding",
        "Conflict-Dist F1 below Conflict-Gold",
        "an average of 10.0 drops for Conflict-Dist from Conflict-Gold",
        f"{GROUNDING} Sec. 4.2, Table 1",
        "Conflict-Gold minus Conflict-Dist F1 (0-1), per dataset",
        "document (fiction), question (benchmark)",
        "sign-flip permutation over the units",
        "default, cpu-full, paper",
        partial(grounding_distractors, version="conflict"),
        per_dataset=True,
    ),
    Claim(
        "grounding.conflict_below_original",
        "Grounding",
        "Conflict-Gold F1 below Original-Gold",
        "Conflict-Gold consistently shows lower performance than Original-Gold (average of 4.7 drops)",
        f"{GROUNDING} Sec. 4.2, Table 1",
        "Original-Gold minus Conflict-Gold F1 (0-1), per dataset",
        "document (fiction), question (benchmark)",
        "sign-flip permutation over the units",
        "default, cpu-full, paper",
        grounding_conflict,
        per_dataset=True,
    ),
    Claim(
        "grounding.distractors_hurt_more_than_conflict",
        "Grounding",
        "distractors lower F1 more than conflicting knowledge",
        "The drop is higher than when given conflicting knowledge, which highlights the LLM's tendency to deviate "
        "from the primary context when presented with extraneous information",
        f"{GROUNDING} Sec. 4.2, Table 1",
        "per question, the Original-Gold to Original-Dist drop minus the Original-Gold to Conflict-Gold drop, "
        "i.e. Conflict-Gold minus Original-Dist F1 (0-1), per dataset",
        "document (fiction), question (benchmark)",
        "sign-flip permutation over the units",
        "default, cpu-full, paper",
        grounding_distractors_hurt_more,
        per_dataset=True,
    ),
    Claim(
        "grounding.precision_above_recall",
        "Grounding",
        "precision above recall",
        "When comparing the performance of precision and recall, a common trend across all models is a superior "
        "performance in precision over recall",
        f"{GROUNDING} Sec. 4.2, App. D.3",
        "per question, mean precision minus mean recall over the four settings of Table 1 (0-1), per dataset",
        "document (fiction), question (benchmark)",
        "sign-flip permutation over the units",
        "default, cpu-full, paper",
        grounding_precision_above_recall,
        per_dataset=True,
    ),
    Claim(
        "grounding.gold_last_best",
        "Grounding",
        "F1 with the gold contexts last above first",
        "the position of gold contexts within multi-document settings significantly influences grounding performance",
        f"{GROUNDING} Sec. 4.2, gold contexts position",
        "gold last minus gold first F1 (0-1), Original version with distractors, per dataset",
        "document (fiction), question (benchmark)",
        "sign-flip permutation over the units",
        "default, cpu-full, paper (grounding.sweep.positions: start and end)",
        grounding_gold_last_best,
        per_dataset=True,
    ),
)


def _replicate(comparisons: Sequence[Comparison], by_seed: Mapping[int, Sequence[Comparison]]) -> None:
    """Training seeds as replicates (module docstring): give each comparison, measured on the values
    averaged over the seeds, each seed's own values (``by_seed``: the same check on each seed's
    runs), the t-test over the seeds' effects, and as its p the larger of that and its own.

    Raises:
        ValueError: a seed's comparisons differ from the averaged ones in label or units.
    """
    for i, c in enumerate(comparisons):
        c.seeds = {}
        for seed, theirs in by_seed.items():
            own = theirs[i] if i < len(theirs) else None
            if own is None or own.label != c.label or own.a.shape != c.a.shape or own.b.shape != c.b.shape:
                raise ValueError(f"training seed {seed} gives other units than the mean over seeds ({c.label})")
            c.seeds[seed] = (own.a, own.b)
        c.seed_p = seed_test([a.mean() - b.mean() for a, b in c.seeds.values()])
        c.p = max(c.p, c.seed_p)


def _check(entry: Claim, study: str, check: Check, r: Results) -> list[Finding]:
    """One claim's findings (``study``: its line's label, ``check``: its measurement).  A FictionalQA
    claim with two or more training seeds is measured on the mean over the seeds and on each seed
    (:func:`_replicate`)."""
    s = r.settings
    try:
        comparisons = check(r)
        if entry.study == "FictionalQA" and len(s.seeds) > 1:
            _replicate(comparisons, {seed: check(r.for_seed(seed)) for seed in s.seeds})
    except Skip as reason:
        return [
            Finding(
                study, entry.claim, NOT_TESTED, str(reason), source=entry.source, alpha=s.alpha,
                claim_id=entry.id, quote=entry.quote,
            )  # fmt: skip
        ]
    return _judge(entry, study, comparisons, s)


def collect(
    results: str | Path,
    settings: FindingsSettings,
    model: str | None = None,
    inputs: Collection[str | Path] | None = None,
) -> list[Finding]:
    """Every finding of the module docstring, decided on the tables under ``results``.

    Args:
        results: the workflow's ``results`` folder.
        inputs: the findings rule's inputs (:meth:`knowlab.layout.Layout.findings_inputs`): reading
            any other table raises ``ValueError``; None: any table under ``results``.
        settings: what the claims are decided with and which runs and studies the config asks for
            (:meth:`FindingsSettings.from_config`).
        model: the base model's name in the grounding rows (the workflow's model name); None
            takes the only model there.

    Returns:
        One finding per comparison, in the module docstring's order (the grounding claims once per
        dataset and version); a claim whose table is absent or whose study or run is off is one
        ``not tested`` finding.

    Raises:
        ValueError: ``model`` is None and the grounding rows hold more than one model.
    """
    r = Results(results, settings, model, inputs)
    found = [f for entry in CLAIMS if not entry.per_dataset for f in _check(entry, entry.study, entry.check, r)]
    for dataset in settings.grounding_datasets:  # each dataset's claims together
        for entry in (entry for entry in CLAIMS if entry.per_dataset):
            found += _check(entry, f"{entry.study} ({dataset})", partial(entry.check, dataset=dataset), r)
    return found


#: the columns of :func:`design_table`
DESIGN_COLUMNS = (
    "study", "claim", "unit", "n_clusters", "n", "seeds", "min_p", "alpha", "testable", "mde", "scale", "status"
)


def design_table(findings: Sequence[Finding]) -> pd.DataFrame:
    """What this run's design can show, per finding (``results/findings_design.csv``): the inference
    unit, how many units and measured values, the smallest p the test can reach with them (after
    Holm's factor), whether that is below alpha (``testable``), and the minimum detectable effect
    at 80% power in ``scale``.  A claim the config cannot test at all (a run or table absent) has
    no unit and ``testable`` False."""
    rows = [
        {
            **{name: getattr(f, name) for name in DESIGN_COLUMNS if name != "testable"},
            "testable": f.min_p is not None and f.min_p < f.alpha,
        }
        for f in findings
    ]
    counts = {"n_clusters": "Int64", "n": "Int64", "seeds": "Int64"}
    return pd.DataFrame(rows, columns=list(DESIGN_COLUMNS)).astype(counts)


def tally(findings: Sequence[Finding]) -> dict[str, int]:
    """Findings per status, in :data:`STATUSES` order."""
    return {status: sum(f.status == status for f in findings) for status in STATUSES}


def _signed(x: float) -> str:
    return f"{x:+.3g}"


def render(findings: Sequence[Finding], report_path: str | Path) -> str:
    """Plain text for a terminal: a first line with the tally (``supported`` of all) and the report,
    then one line per finding: ``[status] study: claim — effect, CI (at its level), test, n (units and values),
    p; detail (source)``."""
    counts = tally(findings)
    rest = ", ".join(f"{n} {status}" for status, n in counts.items() if n and status != SUPPORTED)
    lines = [
        f"Headline findings of the three papers on this run: {counts[SUPPORTED]} of {len(findings)} supported"
        + (f" ({rest})" if rest else "")
        + f"; status rules in docs/findings.md; full report: {report_path}"
    ]
    for f in findings:
        line = f"[{f.status}] {f.study}: {f.claim} — "
        if f.effect is None:
            lines.append(line + f.detail)
            continue
        line += (
            f"effect {_signed(f.effect)} {f.scale}, {f.confidence:.0%} CI [{_signed(f.ci_low)}, {_signed(f.ci_high)}], "
            f"{f.test}, n {f.n_clusters} {f.unit}s ({f.n} values), p = {f.p:.2g}"
        )
        if f.status in (NOT_SIGNIFICANT, INCONCLUSIVE) and f.margin is None:
            # no spread between the units: a standard error of 0 says nothing of power
            line += f", MDE {f.mde:.2g} at 80% power" if f.mde else ", no MDE (no spread between the units)"
        lines.append(f"{line}; {f.detail} ({f.source})")
    return "\n".join(lines) + "\n"


def to_records(findings: Sequence[Finding]) -> list[dict[str, Any]]:
    """JSON-ready records, one per finding, every :class:`Finding` field present (None where it does not apply)."""
    return [asdict(f) for f in findings]


def to_frame(findings: Sequence[Finding]) -> pd.DataFrame:
    """One row per finding, the :class:`Finding` fields as columns."""
    return pd.DataFrame(to_records(findings), columns=list(Finding.__dataclass_fields__))


def claims_markdown() -> str:
    """``docs/claims.md``: every claim of :data:`CLAIMS` with its id, the paper's words and source, what
    is measured, its unit, test and the shipped configs that can decide it.  Generated (``python -m
    knowlab.findings > docs/claims.md``); ``tests/test_findings.py`` fails when the file is stale."""
    lines = [
        "# Claims",
        "",
        "<!-- generated by `python -m knowlab.findings > docs/claims.md` from knowlab.findings.CLAIMS; edit there -->",
        "",
        "The claims of the three papers that every run decides (`results/findings.txt`, `findings.json`:",
        "`claim_id`, `quote`), one entry each of the catalogue `knowlab.findings.CLAIMS`. How each is",
        "decided, and what the status words mean: [findings.md](findings.md).",
    ]
    for study in dict.fromkeys(entry.study for entry in CLAIMS):
        lines += ["", f"## {study}", ""]
        for entry in (entry for entry in CLAIMS if entry.study == study):
            lines += [
                f"### `{entry.id}`: {entry.claim}",
                "",
                f"> {entry.quote}",
                "",
                f"- Source: {entry.source}",
                f"- Effect: {entry.effect}" + (" (a claim of no difference: equivalence)" if entry.equivalence else ""),
                f"- Unit: {entry.unit}; test: {entry.test}"
                + ("; once per grounding dataset" if entry.per_dataset else ""),
                f"- Decided by: {entry.configs}",
                "",
            ]
    return "\n".join(lines).rstrip("\n") + "\n"


if __name__ == "__main__":
    print(claims_markdown(), end="")
