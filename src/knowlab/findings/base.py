"""The machinery every claim is decided with (:mod:`knowlab.findings`): the status rules, the settings,
the results folder, the claim record (:class:`Claim`, whose entries :mod:`knowlab.findings.catalogue`
lists), the tests at the inference unit and the judgement of a claim's comparisons."""

from __future__ import annotations

import copy
import functools
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from knowlab import layout
from knowlab.layout import finetune_models, training_seeds
from knowlab.core.checkpoints import BASE_RUN, checkpoint_steps, replicate_run
from knowlab.core.clustered import (
    cluster_means,
    crossed_bootstrap_difference,
    randomization_test,
    sign_flip_test,
    t_interval_difference,
    two_sample_test,
)
from knowlab.core.io import read_json, read_jsonl
from knowlab.core.rng import keyed_rng
from knowlab.core.settings import StepSettings, as_tuple
from knowlab.core.stats import StatsSettings, holm_adjust, minimum_detectable_effect, paired_items
from knowlab.fiction.splits import split_assignments
from knowlab.findings.protocol import FICTIONALQA, GROUNDING, SORT, deviations, run_protocol, short_form
from knowlab.findings.thresholds import EQUIVALENCE_MARGIN, SMALLEST_EFFECT

SUPPORTED = "supported"
NOT_SIGNIFICANT = "not significant"
UNDERPOWERED = "underpowered"
INCONCLUSIVE = "inconclusive"
CONTRADICTED = "contradicted"
NOT_TESTED = "not tested"
STATUSES = (SUPPORTED, NOT_SIGNIFICANT, UNDERPOWERED, INCONCLUSIVE, CONTRADICTED, NOT_TESTED)
FICTSHEETS = "fictsheets"
EVENT = "event"
# the loss suite of a split's documents (the split JSON's ``documents``)
DOC_SUITE = {"fictions": "fiction_doc", "fictsheets": "fictsheet_doc"}


# ------------------------------------------------------------------------------ status rules


def decide(effect: float, ci_low: float, ci_high: float, p: float, alpha: float) -> str:
    """Status of a directional claim (:mod:`knowlab.findings`): ``effect > 0`` is the claimed direction,
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
    """The slice of the statistics settings the findings read: the intervals' level and resamples,
    the permutations of a test that cannot list them all and the draws of a split's randomisation,
    and the seed every stream is keyed from, per line; not McNemar's threshold or the t-test's
    alternative (:class:`knowlab.core.stats.StatsSettings`)."""
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
    protocol: dict[str, Any] = field(default_factory=dict)
    """The run's value of every setting of the papers' protocols that bears on a claim
    (:func:`knowlab.findings.protocol.run_protocol`), from which each line's deviations come."""

    def __post_init__(self) -> None:
        for name in ("runs", "ft_models", "seeds", "steps", "sort_conditions", "grounding_datasets"):
            object.__setattr__(self, name, as_tuple(getattr(self, name)))
        if not 0 < self.alpha < 1:
            raise ValueError(f"findings.alpha must be in (0, 1), got {self.alpha}")
        if not 0 < self.power < 1:
            raise ValueError(f"findings.power must be in (0, 1), got {self.power}")

    def param(self) -> dict[str, Any]:
        """The fields as a dict of builtins (:meth:`knowlab.core.settings.StepSettings.param`), ``stats``
        as the fields its slice holds (:meth:`knowlab.core.stats.StatsSettings.param`)."""
        return {
            f.name: self.stats.param() if f.name == "stats" else copy.deepcopy(getattr(self, f.name))
            for f in fields(self)
        }

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> FindingsSettings:
        finetune, parametric = config["finetune"], config["sort"]["parametric"]
        base = next((name for name, spec in config["eval_models"].items() if spec == "base"), None)
        return cls(
            alpha=float(config["findings"]["alpha"]),
            power=float(config["findings"]["power"]),
            margin=float(config["findings"]["equivalence_margin"]),
            stats=StatsSettings.from_config(config).only(
                "confidence", "bootstrap_resamples", "permutation_resamples", "seed"
            ),
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
            protocol=run_protocol(config),
        )


@dataclass(frozen=True)
class Finding:
    """One comparison of a paper's claim, decided on this run (:mod:`knowlab.findings`).

    ``effect``, ``ci_low``, ``ci_high``: the effect, positive in the claimed direction, and its 95%
    t interval over the inference units (:func:`knowlab.core.clustered.t_interval_difference`; with
    training seeds, Owen's bootstrap over seeds and units), in ``scale`` (accuracy, nats/token, ...);
    ``unit``: the inference unit, what the design samples or assigns (event, document, excerpt,
    fictsheet, question); ``n_clusters``: how many of them the test counts (paired units, or both
    sets together); ``n``: the measured values they hold (questions, documents, segments, items);
    ``mde``: minimum detectable effect at this number of units (80% power, t on the interval's degrees of
    freedom, :func:`knowlab.core.stats.minimum_detectable_effect`, at Holm's strictest level alpha / m;
    None where the test cannot reach alpha with these units, or fewer than two units leave the
    standard error open); ``p``: the decisive p
    (Holm-corrected in a family; for a claim of no difference the equivalence test's, or the
    difference test's when that contradicts it);
    ``margin``: the equivalence margin of a no-difference claim; ``seeds``: the training seeds
    behind a claim about trained models (1: the result is conditional on that seed; None: no
    training; more than 1: the seeds are the claim's replicates); ``min_p``: the smallest p the test
    can give with this many units, after Holm's
    factor (equivalence: with every pair agreeing), ``not tested`` when not below alpha;
    ``confidence``: the level of ``ci_low``, ``ci_high`` (``stats.confidence``); ``claim_id`` and
    ``quote``: its entry of the claims catalogue (:data:`CLAIMS`) and the paper's words; ``figure``:
    the figure or table of this run it is read from (a path under ``results/``);
    ``smallest_effect``: the smallest effect of interest of its scale
    (:data:`knowlab.findings.thresholds.SMALLEST_EFFECT`), against which ``mde`` separates
    ``not significant`` from ``underpowered``; ``q``: the Benjamini-Hochberg q of its p over the run's
    tested lines (the false-discovery view beside the per-claim Holm); ``plan_sha256``: the sha256 of
    ``results/analysis_plan.json``, the plan it was decided under; ``deviations``: the settings of the
    paper's protocol that bear on the claim and that this run departs from (``setting``, ``run``,
    ``paper``, ``source``, ``depends``: the claim's argument rests on it;
    :func:`knowlab.findings.protocol.deviations`), and ``protocol`` their short form as the line prints
    it.  Fields that do not apply are
    None; ``detail`` gives the numbers behind the effect (or, for ``not tested``, what the claim
    needs).
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
    figure: str | None = None
    smallest_effect: float | None = None
    q: float | None = None
    plan_sha256: str | None = None
    deviations: tuple[dict[str, Any], ...] = ()
    protocol: str | None = None


class Skip(Exception):
    """A claim the config cannot test: a study or run off, or a table absent (the message says which)."""


@dataclass
class Comparison:
    """One comparison of a claim before its family's correction: ``a - b`` oriented to the claim.

    ``a``/``b``: one value per inference unit (``unit``), aligned (paired) or two samples
    (unpaired), what the interval is taken over; ``n``: the measured values behind them; ``p``: the
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
        #: False: the tests give their smallest p only, and p 1.0 (:class:`knowlab.findings.planner.PlannedResults`)
        self.p_values = True

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

    def trains(self, ft_model: str, run: str) -> bool:
        """Whether base model ``ft_model`` trains ``run`` in this config (a base model's entry of
        ``finetune.models`` may name fewer runs, :func:`knowlab.layout.model_runs`): its last
        checkpoint's item table is an input of rule findings or, without inputs, is on disk."""
        path = self.root / layout.ITEMS.relative(ft_model=ft_model, run=run, step=self.last)
        return path in self.inputs if self.inputs is not None else path.is_file()

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


# ------------------------------------------------------------------------------ the claims

Check = Callable[[Results], list[Comparison]]


@dataclass(frozen=True)
class Claim:
    """One headline claim of a paper, as the findings decide it: the catalogue entry
    (:data:`knowlab.findings.catalogue.CLAIMS`) from which the findings rule, ``docs/claims.md``
    (:func:`knowlab.findings.catalogue.claims_markdown`) and the report's lines are built.

    ``id``: stable and unique (``study.short_name``), in ``findings.json`` as ``claim_id``;
    ``claim``: the line's statement; ``quote``: the paper's own words, with ``source`` (paper,
    section, figure or table); ``effect``: what is measured, in the claimed direction, and its scale;
    ``unit``: the inference unit; ``test``: the test at that unit; ``configs``: which shipped configs
    can decide it (docs/findings.md, "What each shipped config can test"); ``check``: the measuring
    function; ``equivalence``: a claim of no difference; ``per_dataset``: decided once per grounding
    dataset of the config (``check`` then takes ``dataset``); ``figure``: the figure (or table) of the
    run the claim is read from, relative to ``results/`` (``{ft_model}``: the reference base model;
    empty where the paper gives the numbers in its text); ``scale``: the unit its effect is measured in,
    which names its smallest effect of interest (:data:`knowlab.findings.thresholds.SMALLEST_EFFECT`);
    ``protocol``: the keys of the paper's settings that bear on it
    (:data:`knowlab.findings.protocol.PAPER_SETTINGS`), and ``depends`` those of them the paper's
    argument rests on (a size claim on a model axis within one family), so that a verdict reached
    under another value is not read as the paper failing.
    Adding a claim is one entry in the catalogue plus its ``check``."""

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
    figure: str = ""
    scale: str = ""
    protocol: tuple[str, ...] = ()
    depends: tuple[str, ...] = ()

    def figure_of(self, ft_models: tuple[str, ...]) -> str | None:
        """``figure`` of a run whose reference base model is the first of ``ft_models``; None: no figure,
        or one of the reference model that the run does not fine-tune."""
        if "{ft_model}" not in self.figure:
            return self.figure or None
        return self.figure.format(ft_model=ft_models[0]) if ft_models else None


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


def identity(values: pd.Series) -> pd.Series:
    """Each unit of ``values`` its own cluster (:func:`by_cluster`): units sampled independently (webtext
    documents, real-world questions) or already one value per unit (an excerpt's rho, an event's mean)."""
    return pd.Series(values.index, index=values.index)


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
    p, min_p = sign_flip_test((means_a - means_b).to_numpy(), r.settings.stats.permutation_resamples, seed, r.p_values)
    test = f"sign-flip permutation over {unit}s"
    n = len(joined) if n is None else n
    return Comparison(label, means_a, means_b, True, p, min_p, test, unit, scale, n, detail, trained)


def signed_rank(label: str, a: pd.Series, b: pd.Series, unit: str, scale: str, detail: str) -> Comparison:
    """Wilcoxon signed-rank test of the paired differences ``a - b``, two-sided (p = 1 when all
    are 0), for units that are themselves the design's (the fictsheets).  Zero differences are
    dropped (``zero_method="wilcox"``), so the smallest p it can give is ``2 / 2**k`` for the
    ``k`` non-zero ones."""
    from scipy.stats import wilcoxon  # deferred: as in knowlab.core.stats

    joined = _aligned(a, b)
    x, y = joined["a"].to_numpy(), joined["b"].to_numpy()
    p = 1.0 if (x == y).all() else float(wilcoxon(x, y, zero_method="wilcox").pvalue)
    min_p = min(1.0, 2 * 0.5 ** np.count_nonzero(x != y))
    return Comparison(label, x, y, True, p, min_p, "Wilcoxon signed-rank", unit, scale, len(x), detail, True)


def two_samples(
    label: str, a: pd.Series, b: pd.Series, r: Results, unit: str, scale: str, detail: str, trained: bool, n: int
) -> Comparison:
    """Two independent samples of units (``a``, ``b``: one value per unit, e.g. the accuracy of each
    excerpt of 250 words and of each of 2,500), compared by a two-sided permutation test of the
    group labels (:func:`knowlab.core.clustered.two_sample_test`); the interval resamples each
    group's units.  ``n``: the measured values behind the units.

    Raises:
        Skip: a group without a unit, or a unit in both groups (the samples would not be independent).
    """
    a, b = a.dropna(), b.dropna()
    if a.empty or b.empty:
        raise Skip(f"{label or 'the comparison'}: no {unit} on one side")
    shared = a.index.intersection(b.index)
    if len(shared):
        raise Skip(f"{len(shared)} {unit}(s) on both sides (e.g. {shared[0]}): the two samples are not independent")
    seed = keyed_rng(r.settings.stats.seed, "findings", "two-sample", label, unit, scale).getrandbits(32)
    p, min_p = two_sample_test(a.to_numpy(), b.to_numpy(), r.settings.stats.permutation_resamples, seed, r.p_values)
    test = f"permutation test of two independent samples of {unit}s"
    return Comparison(label, a, b, False, p, min_p, test, unit, scale, n, detail, trained)


_SPLIT_UNIT = {"doc": "document", "event": "event"}


def is_style_split(run: str) -> bool:
    """Whether the document-split run ``run`` is a style split (``style_news``: tested over the
    events against the control, :func:`split_comparison`), not Doc or Event."""
    return run not in _SPLIT_UNIT


def split_comparison(
    label: str,
    r: Results,
    run: str,
    values: pd.Series,
    scale: str,
    detail: str,
    reference: pd.Series | None = None,
) -> Comparison:
    """Validation minus training documents of ``run``'s split (``values``: one per scored document),
    tested by re-drawing the split's own random assignment
    (:func:`knowlab.fiction.splits.split_assignments`,
    :func:`knowlab.core.clustered.randomization_test`).  The Doc split holds out one document of
    each (event, style), so documents are the unit, and there are many possible draws.  The Event
    split assigns whole events, so events are the unit: 4 of 6 events give 15 assignments, and no
    p below 1/15.  Each side's mean is the mean of its events' means, and so is the effect.  The
    interval is over events: paired when every event has documents on both sides (Doc), else one
    sample of events per side (Event).

    A style split's held-out style is a choice of the config, not a draw: its own "draw" lists the
    5 styles, whose smallest p is 0.2, so a style split is tested over the events instead
    (:func:`_style_split_comparison`), each document's value taken against ``reference``, the
    webtext-only control's on the same document (None: ``values`` already are, e.g. gains over
    the control).  The Doc and Event splits ignore ``reference``."""
    if is_style_split(run):
        return _style_split_comparison(label, r, run, values, scale, detail, reference)
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
        p_value=r.p_values,
    )
    unit = _SPLIT_UNIT[run]
    n_units = len(values) if unit == "document" else values.index.map(events).nunique()
    paired = list(val_means.index) == list(train_means.index)
    test = f"randomisation test of the {run} split's draw ({unit}s), interval over events"
    return Comparison(
        label, val_means, train_means, paired, p, min_p, test, unit, scale, len(values), detail, True,
        n_clusters=n_units,
    )  # fmt: skip


def _style_split_comparison(
    label: str, r: Results, run: str, values: pd.Series, scale: str, detail: str, reference: pd.Series | None
) -> Comparison:
    """A style split's validation minus training documents (:func:`split_comparison`), tested over
    the events: per event, the mean over its held-out style's documents minus the mean over its
    trained styles' documents, each document's value minus the webtext-only control's on the same
    document (``reference``; None: ``values`` are already relative to the control), paired, sign
    flips over events (:func:`by_cluster`).

    Why against the control: the styles differ before any training (on the 24-event corpus the
    base model's loss on the blog documents is about 0.5 nats/token above the other styles'), and
    fine-tuning on webtext moves them unequally, so the raw gap of a held-out style would test the
    style, not the training.  The control's value on the same document removes both, leaving what
    training on the run's fiction did to its trained styles beyond its held-out one (the claim).  The
    events, which the corpus samples (its 5 styles are the whole factor), are the unit.  What it
    cannot separate: a style that training on fiction helps less whether or not it is trained on.
    The error rate under the null, style effects included: ``tests/test_findings_calibration.py``.
    """
    split = r.split(run)
    if reference is not None:
        values = values - reference.reindex(values.index)
    values = values.dropna()
    trained = values.index.isin(split["train_documents"])
    val_means, train_means = (cluster_means(values[side], r.events) for side in (~trained, trained))
    if val_means.empty or train_means.empty:
        raise Skip(f"no scored document on one side of the {run} split")
    c = by_cluster(label, val_means, train_means, identity(val_means), r, "event", scale, detail, True, len(values))
    against = ", each document against the webtext-only control" if reference is not None else ""
    c.test = (
        f"sign-flip permutation over events of the {run} split (its held-out style against its trained styles{against})"
    )
    return c


def _judge(entry: Claim, study: str, comparisons: Sequence[Comparison], s: FindingsSettings) -> list[Finding]:
    """The findings of one claim's comparisons: interval, Holm over the family, status (``study``: the
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
            est = crossed_bootstrap_difference(a, b, paired=c.paired, **bootstrap)
            df = float(len(c.seeds) - 1)  # the seeds are the scarcer replicates
            test += (
                f", on the values averaged over {len(c.seeds)} training seeds; t-test over the seeds' effects "
                f"p = {c.seed_p:.2g}; p the larger of the two; interval over seeds and units"
            )
            effects = ", ".join(f"{k} {_signed(float(x.mean() - y.mean()))}" for k, (x, y) in c.seeds.items())
            detail = f"{c.detail}; effect per training seed: {effects}"
        else:
            est = t_interval_difference(c.a, c.b, paired=c.paired, confidence=s.stats.confidence)
            df = est["df"]
            detail = c.detail + ("; one training seed: the result is conditional on it" if c.trained else "")
        test += f", Holm over {m} comparisons" if m > 1 else ""
        # the smallest p with these units (Holm's factor in); the MDE at Holm's strictest level, none
        # where the test cannot reach alpha
        floor = c.equivalence["min_p"] if equivalence else c.min_p * m
        mde = _finite(minimum_detectable_effect(est["se"], s.alpha / m, s.power, df)) if floor < s.alpha else None
        smallest = SMALLEST_EFFECT.get(c.scale)
        departs = deviations(s.protocol, entry.protocol, entry.depends)
        common = dict(
            study=study,
            claim=f"{claim} ({c.label})" if c.label else claim,
            source=source,
            claim_id=entry.id,
            quote=entry.quote,
            figure=entry.figure_of(s.ft_models),
            effect=est["effect"],
            ci_low=_finite(est["ci_low"]),
            ci_high=_finite(est["ci_high"]),
            n=c.n,
            alpha=s.alpha,
            mde=mde,
            unit=c.unit,
            n_clusters=c.n_clusters,
            scale=c.scale,
            seeds=(len(c.seeds) if c.seeds else 1) if c.trained else None,
            min_p=min(1.0, floor),
            confidence=s.stats.confidence,
            detail=detail,
            smallest_effect=None if smallest is None else smallest.value,
            deviations=tuple(departs),
            protocol=short_form(departs) or None,
        )
        if equivalence:
            eq = c.equivalence
            test += (
                f"; equivalence: Tango score interval {100 * (1 - 2 * s.alpha):g}% [{_signed(eq['low'])}, "
                f"{_signed(eq['high'])}] on the items, design effect {eq['deff']:.2g} of their {c.unit}s, "
                f"t reference on {eq['df']:g} df, within +/-{s.margin:g}" + margin_deviation(s.margin)
            )
            status = decide_equivalence(est["ci_low"], est["ci_high"], float(p), eq["p"], s.alpha, s.margin)
            # a significant difference contradicts the claim whether or not equivalence could be shown
            if status != CONTRADICTED and eq["min_p"] >= s.alpha:
                reason = (
                    f"not testable: with {len(c.a) if c.paired else c.n_clusters} {c.unit}s and {c.n} pairs even "
                    f"full agreement gives an equivalence p of {eq['min_p']:.3g}, not below alpha {s.alpha:g}; "
                    f"{detail}"
                )
                out.append(
                    Finding(**{**common, "detail": reason}, status=NOT_TESTED, test=test, p=eq["p"], margin=s.margin)
                )
                continue
            # the decisive p: the difference test's when it contradicts the claim, else the equivalence test's
            decisive = float(p) if status == CONTRADICTED else float(eq["p"])
            out.append(Finding(**common, status=status, test=test, p=decisive, margin=s.margin))
            continue
        if floor >= s.alpha:
            # paired units whose difference is 0 cannot move the test's statistic: say how many can
            differ = int(np.count_nonzero(c.a - c.b)) if c.paired and len(c.a) == c.n_clusters else c.n_clusters
            moving = f" ({differ} of them differ)" if differ < c.n_clusters else ""
            reason = (
                f"not testable with {c.n_clusters} {c.unit}s{moving}: the smallest p the {c.test.split(' (')[0]} can "
                f"give is {c.min_p:.3g}" + (f" (x {m} for Holm)" if m > 1 else "") + f", not below alpha {s.alpha:g}; "
                f"{detail}"
            )
            out.append(Finding(**{**common, "detail": reason}, status=NOT_TESTED, test=test, p=float(p)))
            continue
        status = decide(est["effect"], est["ci_low"], est["ci_high"], float(p), s.alpha)
        if status == NOT_SIGNIFICANT and smallest is not None and mde and mde > smallest.value:
            status = UNDERPOWERED
            common["detail"] = (
                f"underpowered: {c.n_clusters} {c.unit}s detect {mde:.2g} {c.scale} at 80% power, above the smallest "
                f"effect of interest {smallest.value:.2g} (fixed {smallest.fixed}); {common['detail']}"
            )
        out.append(Finding(**common, status=status, test=test, p=float(p)))
    return out


def margin_deviation(margin: float) -> str:
    """`` (a deviation: ...)`` where the config's equivalence margin is not the analysis plan's, else ``""``."""
    plan = EQUIVALENCE_MARGIN
    if margin == plan.value:
        return ""
    return (
        f" (a deviation: the analysis plan's margin is {plan.value:g}, fixed {plan.fixed}; findings.equivalence_margin)"
    )


def _finite(x: float) -> float | None:
    """``x``, or None where it is infinite (an interval or MDE that fewer than two units leave open)."""
    return float(x) if np.isfinite(x) else None


def _signed(x: float) -> str:
    return f"{x:+.3g}"
