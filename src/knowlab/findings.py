"""The three papers' headline findings, checked on the workflow's result tables.

:func:`collect` reads the tables of a finished run (``results/``), checks each claim below and
returns one :class:`Finding` per claim: ``holds`` (True), does not hold (False) or skipped (None,
with the reason: the study or run is off in the config, or its table is absent).  Each finding
carries the numbers behind it (``evidence``), the test that decides it (``test``) and its
p-value.  A claim that does not hold is ``not significant`` (the claimed direction, p >= ALPHA),
``inconclusive`` (another direction, but a two-sided test finds no significant difference: too
few items to tell) or ``fails`` (:attr:`Finding.status`).  :func:`render` prints them one a line for a terminal; :func:`to_frame` and
:func:`to_records` give a table and JSON records.  Significance is at :data:`ALPHA`.

FictionalQA (Kirchenbauer et al. 2026), at the run's last checkpoint; step 0 is the base
model (``results/evaluate/base_model/step-0.parquet``), item tables
``results/evaluate/{run}/step-{N}.parquet``, sides from ``results/splits/{run}.json``.  Means of
loss are token-weighted, as in ``results/summary/fictionalqa.csv``.

1. :func:`train_below_val_loss`: train-document loss below validation-document loss (Sec. 5,
   "Separating Memorization from Generalization", Figs. 3-5).
2. :func:`mcq_above_control`: MCQ-4 accuracy on trained questions above the webtext-only control
   (Sec. 5, "Reconstruction of Fictional Facts via MCQ Testing", Figs. 7-8).
3. :func:`fictsheets_memorised`: the Fictsheets are memorised (training loss falls, validation
   loss rises) and transfer least to MCQ-4 (Sec. 5, Figs. 5 and 7; Sec. 6).
4. :func:`event_generalises_least`: validation-document loss falls least on the Event split
   (Sec. 5, Fig. 4).

SORT (Pink et al. 2024), the base model (the ``eval_models`` key whose value is ``base``):

5. :func:`sort_in_context_above_baseline`: in-context memory above the memory-less baseline
   (Secs. 5.1, 5.3, Tables 1-2).

Claims 5-7 are the paper's descriptive comparisons (tables and Fig. 4, no test between
conditions): each holds on the direction of the accuracies, the evidence says whether McNemar's
test finds the difference significant, and a wrong direction is ``inconclusive`` unless that
test finds it significant.
6. :func:`sort_rag_below_in_context`: RAG below in-context memory (Sec. 5.5, Fig. 4a).
7. :func:`sort_oracle_near_in_context`: oracle RAG closer to in-context memory than RAG
   (Sec. 5.5, Fig. 4b).
8. :func:`sort_parametric`: fine-tuning on the texts lowers segment perplexity but not
   no-context SORT accuracy (Sec. 5.4, App. E.1-E.2, Figs. 12-14).

Grounding (Lee et al. 2024), the base model, each dataset of the config:

9. :func:`grounding_distractors`: F1 lower with distractors than with the gold contexts alone,
   on Original and Conflict (Sec. 4.2, Table 1).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy.stats import mannwhitneyu, wilcoxon
from statsmodels.stats.multitest import multipletests

from knowlab.core.checkpoints import BASE_RUN, CONTROL_RUN, checkpoint_steps
from knowlab.core.io import read_json
from knowlab.core.stats import mcnemar_pair

ALPHA = 0.05
FICTSHEETS = "fictsheets"
EVENT = "event"
# the loss suite of a split's documents (the split JSON's ``documents``)
DOC_SUITE = {"fictions": "fiction_doc", "fictsheets": "fictsheet_doc"}
STATUSES = ("holds", "not significant", "inconclusive", "fails", "skipped")
DESCRIPTIVE = "descriptive (no test)"


@dataclass(frozen=True)
class Finding:
    """One paper's claim checked on this run's results.

    ``holds``: True (holds), False (does not hold) or None (skipped: ``evidence`` says why).
    ``direction``: for a claim that needs significance, whether the effect points the claimed
    way even where the test misses ALPHA (status "not significant"); None otherwise.
    ``against``: for a claim decided on a two-sided test, whether that test finds the data
    significantly against the claim; False makes a claim that does not hold "inconclusive"
    rather than "fails"; None (no such test) leaves it "fails".
    ``evidence``: the numbers behind it; ``test``: the test that decides it; ``p``: its
    p-value (None for a descriptive finding or a skipped one); ``source``: paper and section.
    """

    study: str
    claim: str
    holds: bool | None
    evidence: str
    test: str = ""
    p: float | None = None
    source: str = ""
    direction: bool | None = None
    against: bool | None = None

    @property
    def status(self) -> str:
        """One of :data:`STATUSES`: ``holds``; ``not significant`` (the claimed direction, p >= ALPHA);
        ``inconclusive`` (not the claimed direction, not significantly against it either); ``fails``;
        ``skipped``."""
        if self.holds is None:
            return "skipped"
        if self.holds:
            return "holds"
        return "not significant" if self.direction else "inconclusive" if self.against is False else "fails"


class Skip(Exception):
    """A finding that cannot be checked here: a study or run off in the config, or a table absent."""


class Results:
    """The tables of a results folder, read once each; an absent one raises :class:`Skip`."""

    def __init__(self, root: str | Path, cfg: Mapping[str, Any], model: str | None = None):
        self.root, self.cfg, self.model = Path(root), cfg, model
        finetune = cfg["finetune"]
        self.runs = list(finetune["runs"])
        self.control = bool(finetune["control"])
        self.last = checkpoint_steps(finetune["max_steps"], finetune["checkpoint_every"])[-1]
        self._cache: dict[str, Any] = {}

    def read(self, relative: str) -> Any:
        """``results/<relative>`` (Parquet or JSON), or :class:`Skip` when it is absent."""
        if relative not in self._cache:
            path = self.root / relative
            if not path.is_file():
                raise Skip(f"no {path}")
            self._cache[relative] = read_json(path) if path.suffix == ".json" else pd.read_parquet(path)
        return self._cache[relative]

    def items(self, run: str, step: int) -> pd.DataFrame:
        """Item rows of ``run`` at ``step`` (step 0: the base model's)."""
        return self.read(f"evaluate/{BASE_RUN if step == 0 else run}/step-{step}.parquet")

    def split(self, run: str) -> dict[str, Any]:
        return self.read(f"splits/{run}.json")

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

    def need_control(self) -> None:
        if not self.control:
            raise Skip("no webtext-only control run in the config (finetune.control)")

    def base_eval(self) -> str:
        """The ``eval_models`` key of the base model."""
        name = next((n for n, spec in self.cfg["eval_models"].items() if spec == "base"), None)
        if name is None:
            raise Skip("no eval_models entry is the base model")
        return name


def _rows(items: pd.DataFrame, suite: str, ids: Sequence[str] | None = None) -> pd.DataFrame:
    """Rows of ``suite`` (of the items ``ids`` when given), indexed by ``item_id``."""
    rows = items[items["suite"] == suite].set_index("item_id")
    return rows if ids is None else rows.loc[rows.index.intersection(ids)]


def _loss(rows: pd.DataFrame) -> float:
    """Token-weighted mean loss (nats/token) of item rows, as in the summary table."""
    return float(rows["nll_sum"].sum() / rows["n_tokens"].sum())


def _doc_rows(r: Results, run: str, step: int, side: str) -> pd.DataFrame:
    """Loss rows of ``run``'s documents (fictions, or fictsheets) on one side of its split."""
    split = r.split(run)
    return _rows(r.items(run, step), DOC_SUITE[split["documents"]], split[f"{side}_documents"])


# ------------------------------------------------------------------------------- FictionalQA


def train_below_val_loss(r: Results) -> dict[str, Any]:
    """Train-document loss well below validation-document loss at the last checkpoint.

    Source: Kirchenbauer et al. (2026), Sec. 5 "Separating Memorization from
    Generalization using Train/Validation Loss", Figs. 3-4.  Per document-split run (all fiction
    runs but Fictsheets, whose 4 training and 2 validation fictsheets in the shipped corpus
    cannot reach p < 0.05, smallest p = 1/15; :func:`fictsheets_memorised` covers them), its
    split's train vs validation fiction documents.  Test:
    ``scipy.stats.mannwhitneyu(train, val, alternative="less")`` on per-document loss, one per
    run; holds when every run's p < ALPHA, so ``p`` is the largest of them (an
    intersection-union test: no correction needed).
    """
    parts, pvalues, below = [], [], []
    for run in r.document_runs():
        train, val = (_doc_rows(r, run, r.last, side) for side in ("train", "val"))
        p = float(mannwhitneyu(train["loss"], val["loss"], alternative="less").pvalue)
        pvalues.append(p)
        below.append(_loss(train) < _loss(val))
        parts.append(f"{run} {_loss(train):.2f} vs {_loss(val):.2f} (n {len(train)}/{len(val)}, p = {p:.2g})")
    return {
        "holds": max(pvalues) < ALPHA and all(below),
        "direction": all(below),
        "evidence": f"train vs val document loss at step {r.last}: " + "; ".join(parts),
        "test": "Mann-Whitney U, one-sided, max over runs",
        "p": max(pvalues),
    }


def mcq_above_control(r: Results) -> dict[str, Any]:
    """MCQ-4 accuracy on trained questions above the webtext-only control at the last checkpoint.

    Source: Kirchenbauer et al. (2026), Sec. 5 "Reconstruction of Fictional Facts via MCQ
    Testing", Figs. 7-8.  Per document-split run (all fiction runs but Fictsheets), on the
    questions of its split's training documents: McNemar's test of the run's vs the control's
    per-question correctness (:func:`knowlab.core.stats.mcnemar_pair`, two-sided; exact below
    ``stats.mcnemar_exact_below`` discordant pairs), Holm-corrected over those runs
    (``statsmodels.stats.multitest.multipletests``).  Holds when, for every run, Holm p < ALPHA
    and the run's accuracy exceeds the control's; ``p`` is the largest Holm p.
    """
    r.need_control()
    runs = r.document_runs()
    exact_below = int(r.cfg["stats"]["mcnemar_exact_below"])
    control = r.items(CONTROL_RUN, r.last)
    pairs = []
    for run in runs:
        questions = r.split(run)["train_questions"]
        a = _rows(r.items(run, r.last), "mcq4", questions)["acc"]
        b = _rows(control, "mcq4", questions)["acc"]
        pairs.append((a.mean(), b.mean(), mcnemar_pair(a, b, exact_below)))
    holm = multipletests([test["pvalue"] for *_, test in pairs], method="holm")[1]
    parts = [
        f"{run} {acc:.2f} vs {ctl:.2f} (n {test['n']}, Holm p = {q:.2g})"
        for run, (acc, ctl, test), q in zip(runs, pairs, holm)
    ]
    return {
        "holds": all(q < ALPHA and acc > ctl for (acc, ctl, _), q in zip(pairs, holm)),
        "direction": all(acc > ctl for acc, ctl, _ in pairs),
        "evidence": f"MCQ-4 accuracy on trained questions, run vs control at step {r.last}: " + "; ".join(parts),
        "test": f"McNemar (exact below {exact_below} discordant), Holm over {len(runs)} runs, max over runs",
        "p": float(max(holm)),
    }


def _mcq_gains(r: Results) -> dict[str, float]:
    """MCQ-4 accuracy (all questions) of each fiction run minus the control's, at the last step."""
    control = _rows(r.items(CONTROL_RUN, r.last), "mcq4")["acc"].mean()
    return {run: float(_rows(r.items(run, r.last), "mcq4")["acc"].mean() - control) for run in r.fiction_runs()}


def fictsheets_memorised(r: Results) -> dict[str, Any]:
    """The Fictsheets are memorised yet transfer least.

    Source: Kirchenbauer et al. (2026), Sec. 5, Fig. 5 (training-fictsheet loss falls while
    validation-fictsheet loss rises) and Fig. 7 (the Fictsheets split transfers least to MCQ), Sec. 6.
    Holds when the Fictsheets run's token-weighted loss on its training fictsheets falls from
    step 0 to the last step, on its validation fictsheets rises, and its MCQ-4 gain over the
    control (accuracy on all questions at the last step, run minus control) is strictly the
    smallest of the fiction runs.  Descriptive: no test.
    """
    if FICTSHEETS not in r.runs:
        raise Skip(f"no {FICTSHEETS} run in the config (finetune.runs)")
    if len(r.runs) < 2:
        raise Skip(f"no fiction run besides {FICTSHEETS} to compare its MCQ-4 gain with")
    r.need_control()
    train0, train1, val0, val1 = (
        _loss(_doc_rows(r, FICTSHEETS, step, side)) for side in ("train", "val") for step in (0, r.last)
    )
    gains = _mcq_gains(r)
    others = min(gain for run, gain in gains.items() if run != FICTSHEETS)
    gain_text = ", ".join(f"{run} {gain:+.2f}" for run, gain in gains.items())
    return {
        "holds": train1 < train0 and val1 > val0 and gains[FICTSHEETS] < others,
        "evidence": (
            f"fictsheet loss, step 0 -> {r.last}: train {train0:.2f} -> {train1:.2f}, val {val0:.2f} -> {val1:.2f}; "
            f"MCQ-4 gain over control (all questions): {gain_text}"
        ),
        "test": DESCRIPTIVE,
    }


def event_generalises_least(r: Results) -> dict[str, Any]:
    """Validation-document loss falls least on the Event split.

    Source: Kirchenbauer et al. (2026), Sec. 5 "Separating Memorization from
    Generalization", Fig. 4 (whole events held out: less improvement than the Doc split).  Among
    the document-split runs (doc, event, style_*), the drop of token-weighted validation-document
    loss from step 0 to the last step; holds when the Event split's drop is strictly the
    smallest.  Descriptive: no test.  Skipped without the Event run or another document split.
    """
    runs = r.document_runs()
    if EVENT not in runs or len(runs) < 2:
        raise Skip(f"needs the {EVENT} run and another document split (finetune.runs: {', '.join(r.runs)})")
    drops = {run: _loss(_doc_rows(r, run, 0, "val")) - _loss(_doc_rows(r, run, r.last, "val")) for run in runs}
    others = min(drop for run, drop in drops.items() if run != EVENT)
    return {
        "holds": drops[EVENT] < others,
        "evidence": f"val-document loss drop, step 0 -> {r.last}: "
        + ", ".join(f"{run} {drop:.2f}" for run, drop in drops.items()),
        "test": DESCRIPTIVE,
    }


# ------------------------------------------------------------------------------------- SORT


def _condition_row(r: Results, a: str, b: str) -> pd.Series:
    """The row ``a`` vs ``b`` of the base model's saved McNemar table across SORT conditions."""
    relative = f"sort/stats/{r.base_eval()}/mcnemar_conditions.parquet"
    table = r.read(relative)
    row = table[(table["condition_a"] == a) & (table["condition_b"] == b)]
    if row.empty:
        raise Skip(f"no {a} vs {b} in {r.root / relative} (sort.conditions)")
    return row.iloc[0]


def _sort_test(row: pd.Series) -> str:
    return f"McNemar ({'exact' if row['exact'] else 'chi-square'}), Holm over the condition pairs"


def _significance(row: pd.Series) -> str:
    """``n 24; not significant at 0.05``: the item count and the verdict of the row's Holm p."""
    verdict = "significant" if row["pvalue_holm"] < ALPHA else "not significant"
    return f"n {row['n_items']}; {verdict} at {ALPHA}"


def _condition_claim(r: Results, a: str, b: str, above: bool, names: tuple[str, str]) -> dict[str, Any]:
    """Claim "``a`` above ``b``" (``above``) or "below", on SORT accuracy (a descriptive claim, see the
    module docstring): holds on the direction; against when the other direction is significant."""
    row = _condition_row(r, a, b)
    holds = row["mean_a"] > row["mean_b"] if above else row["mean_a"] < row["mean_b"]
    return {
        "holds": holds,
        "against": not holds and row["pvalue_holm"] < ALPHA,
        "evidence": f"accuracy {names[0]} {row['mean_a']:.2f} vs {names[1]} {row['mean_b']:.2f} ({_significance(row)})",
        "test": _sort_test(row),
        "p": float(row["pvalue_holm"]),
    }


def sort_in_context_above_baseline(r: Results) -> dict[str, Any]:
    """SORT accuracy with the excerpt in context above the memory-less baseline.

    Source: Pink et al. (2024), Sec. 5.1 (Table 1, baseline near chance) and Sec. 5.3
    (Table 2, in-context memory).  From ``results/sort/stats/{model}/mcnemar_conditions.parquet``
    (:func:`knowlab.sort.analysis.condition_tests`): holds when in-context accuracy > baseline
    accuracy; the evidence says whether McNemar's Holm-corrected p is below ALPHA.
    """
    return _condition_claim(r, "in_context", "baseline", True, ("in context", "no context"))


def sort_rag_below_in_context(r: Results) -> dict[str, Any]:
    """SORT accuracy with RAG below in-context memory.

    Source: Pink et al. (2024), Sec. 5.5, Fig. 4a.  From the saved McNemar table across
    conditions; holds when RAG accuracy < in-context accuracy (the evidence says whether the
    Holm-corrected McNemar p is below ALPHA).
    """
    return _condition_claim(r, "rag", "in_context", False, ("RAG", "in context"))


def sort_oracle_near_in_context(r: Results) -> dict[str, Any]:
    """SORT accuracy with oracle RAG near in-context memory: closer to it than RAG's.

    Source: Pink et al. (2024), Sec. 5.5, Fig. 4b (the passages holding both segments,
    in text order).  From the saved McNemar table across conditions; holds when
    |oracle RAG - in context| < |RAG - in context| (accuracies); ``p`` is McNemar's
    Holm-corrected p of oracle RAG vs in context, and the data are against the claim when it
    does not hold and that p is below ALPHA (oracle RAG demonstrably apart from in context).
    """
    oracle = _condition_row(r, "oracle_rag", "in_context")
    rag = _condition_row(r, "rag", "in_context")
    in_context = oracle["mean_b"]
    near, far = abs(oracle["mean_a"] - in_context), abs(rag["mean_a"] - in_context)
    return {
        "holds": near < far,
        "against": near >= far and oracle["pvalue_holm"] < ALPHA,
        "evidence": f"accuracy oracle RAG {oracle['mean_a']:.2f}, RAG {rag['mean_a']:.2f}, in context "
        f"{in_context:.2f}: |oracle - in context| {near:.2f} {'<' if near < far else '>='} |RAG - in context| "
        f"{far:.2f} (oracle RAG vs in context: {_significance(oracle)})",
        "test": _sort_test(oracle) + ", oracle RAG vs in context",
        "p": float(oracle["pvalue_holm"]),
    }


def _segment_nll(r: Results, run: str, epoch: int) -> float:
    """Mean per-token nll of the SORT segments (both of every item, as Fig. 12) at an epoch."""
    table = r.read(f"sort/parametric/{run}/evaluate/epoch-{epoch}_segment_nll.parquet")
    return float(np.concatenate([table["nll_a"], table["nll_b"]]).mean())


def sort_parametric(r: Results) -> dict[str, Any]:
    """Fine-tuning on the texts lowers segment perplexity, but not no-context SORT accuracy.

    Source: Pink et al. (2024), Sec. 5.4, App. E.1 (Fig. 12: perplexity falls) and E.2
    (Figs. 13-14: McNemar, no difference).  The "books" run (text chunks + instructions) after
    the last epoch: mean segment nll against the base model (epoch 0), and no-context accuracy
    against the base model's and against the "instructions" run's last epoch, each by McNemar's
    test from ``results/sort/parametric/stats/mcnemar.parquet``, uncorrected (the stricter choice
    for a claim of no difference).  Holds when the nll falls and neither accuracy gain is both
    positive and significant; ``p`` is the smaller of the two.
    """
    parametric = r.cfg["sort"]["parametric"]
    if not parametric["enabled"]:
        raise Skip("parametric fine-tuning is off in the config (sort.parametric.enabled)")
    epochs = int(parametric["epochs"])
    nll0, books, instructions = (
        _segment_nll(r, run, epoch) for run, epoch in (("base", 0), ("books", epochs), ("instructions", epochs))
    )
    table = r.read("sort/parametric/stats/mcnemar.parquet")
    table = table[(table["condition_a"] == "baseline") & (table["condition_b"] == "baseline")]
    last = table.groupby("run_a")["step_a"].max()
    books_rows = table[(table["run_a"] == "books") & (table["step_a"] == last["books"])]
    rows = [
        books_rows[(books_rows["run_b"] == run) & (books_rows["step_b"] == last[run])].iloc[0]
        for run in ("base", "instructions")
    ]
    gains_ok = all(row["mean_a"] <= row["mean_b"] or row["pvalue"] >= ALPHA for row in rows)
    base_row, instr_row = rows
    return {
        "holds": books < nll0 and gains_ok,
        "evidence": (
            f"segment nll base {nll0:.2f} -> books epoch {epochs} {books:.2f} (instructions {instructions:.2f}); "
            f"no-context accuracy books {base_row['mean_a']:.2f} vs base {base_row['mean_b']:.2f} "
            f"(p = {base_row['pvalue']:.2g}), vs instructions {instr_row['mean_b']:.2f} (p = {instr_row['pvalue']:.2g})"
        ),
        "test": "McNemar, uncorrected, min of the two",
        "p": float(min(row["pvalue"] for row in rows)),
    }


# -------------------------------------------------------------------------------- Grounding


def _less(x: pd.Series, y: pd.Series) -> tuple[float, str]:
    """One-sided paired test of x < y: Wilcoxon signed-rank, p = 1 when every difference is 0."""
    if (x == y).all():
        return 1.0, "no non-zero difference (Wilcoxon undefined)"
    return float(wilcoxon(x, y, zero_method="wilcox", alternative="less").pvalue), "Wilcoxon signed-rank, one-sided"


def grounding_distractors(r: Results, dataset: str) -> dict[str, Any]:
    """Grounding F1 lower with distractor contexts than with the gold contexts alone.

    Source: Lee et al. (2024), Sec. 4.2 and Table 1 (Original-Dist below Original-Gold,
    Conflict-Dist below Conflict-Gold).  The base model's rows of ``dataset`` in
    ``results/grounding/rows.parquet``; per version, mean F1 (x 100) of each condition and a paired
    one-sided test over questions: ``scipy.stats.wilcoxon(dist, gold, alternative="less")``
    (``zero_method="wilcox"``); when every difference is 0 the statistic is undefined and p = 1
    (scipy's ttest_rel is NaN there too).  Holds when Dist < Gold on both versions; ``p`` is the
    larger of the two.
    """
    rows = r.read("grounding/rows.parquet")
    model = r.model
    if model is None:
        models = rows["model"].unique()
        if len(models) != 1:
            raise ValueError(f"the grounding rows hold {len(models)} models; name the base model (model=...)")
        model = models[0]
    rows = rows[(rows["dataset"] == dataset) & (rows["model"] == model)]
    f1 = rows.pivot(index="item_id", columns="condition", values="f1")  # question x condition
    parts, pvalues, tests, holds = [], [], set(), True
    for version in ("original", "conflict"):
        conditions = [f"{version}_gold", f"{version}_dist"]
        paired = f1.reindex(columns=conditions).dropna()
        if paired.empty:
            raise Skip(f"no paired {' / '.join(conditions)} rows of {model} on {dataset}")
        gold, dist = paired[conditions[0]], paired[conditions[1]]
        p, test = _less(dist, gold)
        pvalues.append(p)
        tests.add(test)
        holds &= dist.mean() < gold.mean()
        parts.append(
            f"{version.title()} Gold {100 * gold.mean():.1f} vs Dist {100 * dist.mean():.1f} (n {len(paired)}, p = {p:.2g})"
        )
    return {
        "holds": bool(holds),
        "evidence": "F1 (x 100): " + "; ".join(parts),
        "test": " / ".join(sorted(tests)) + ", max of the two",
        "p": max(pvalues),
    }


# --------------------------------------------------------------------------------- findings

Check = Callable[[Results], dict[str, Any]]
FICTIONALQA = "Kirchenbauer et al. (2026)"
SORT = "Pink et al. (2024)"
GROUNDING = "Lee et al. (2024)"
CLAIMS: tuple[tuple[str, str, str, Check], ...] = (
    (
        "FictionalQA",
        "train-document loss below validation-document loss",
        f"{FICTIONALQA} Sec. 5, Figs. 3-5",
        train_below_val_loss,
    ),
    (
        "FictionalQA",
        "MCQ-4 accuracy on trained questions above the webtext-only control",
        f"{FICTIONALQA} Sec. 5, Figs. 7-8",
        mcq_above_control,
    ),
    (
        "FictionalQA",
        "Fictsheets memorised (train loss falls, val loss rises) yet the smallest MCQ-4 gain",
        f"{FICTIONALQA} Sec. 5, Figs. 5 and 7; Sec. 6",
        fictsheets_memorised,
    ),
    (
        "FictionalQA",
        "validation-document loss falls least on the Event split",
        f"{FICTIONALQA} Sec. 5, Fig. 4",
        event_generalises_least,
    ),
    (
        "SORT",
        "in-context memory above the no-context baseline",
        f"{SORT} Secs. 5.1, 5.3, Tables 1-2",
        sort_in_context_above_baseline,
    ),
    ("SORT", "RAG below in-context memory", f"{SORT} Sec. 5.5, Fig. 4a", sort_rag_below_in_context),
    (
        "SORT",
        "oracle RAG nearer in-context memory than RAG",
        f"{SORT} Sec. 5.5, Fig. 4b",
        sort_oracle_near_in_context,
    ),
    (
        "SORT",
        "fine-tuning on the texts lowers segment nll but not no-context accuracy",
        f"{SORT} Sec. 5.4, App. E.1-E.2",
        sort_parametric,
    ),
)
GROUNDING_CLAIM = "F1 lower with distractors than with gold contexts alone (Original and Conflict)"


def _check(study: str, claim: str, source: str, check: Check, results: Results) -> Finding:
    try:
        result = check(results)
    except Skip as reason:
        return Finding(study, claim, holds=None, evidence=str(reason), source=source)
    p = result.pop("p", None)  # plain Python types, for JSON
    direction, against = result.pop("direction", None), result.pop("against", None)
    return Finding(
        study,
        claim,
        source=source,
        **{**result, "holds": bool(result["holds"])},
        p=None if p is None else float(p),
        direction=None if direction is None else bool(direction),
        against=None if against is None else bool(against),
    )


def collect(results: str | Path, cfg: Mapping[str, Any], model: str | None = None) -> list[Finding]:
    """Every finding of the module docstring, checked on the tables under ``results``.

    Args:
        results: the workflow's ``results`` folder.
        cfg: the workflow config (``finetune``: ``runs``, ``control``, ``max_steps``,
            ``checkpoint_every``; ``stats.mcnemar_exact_below``; ``eval_models``;
            ``sort.parametric``: ``enabled``, ``epochs``; ``grounding.datasets``).
        model: the base model's name in the grounding rows (the workflow's model name); None
            takes the only model there.

    Returns:
        One finding per claim, in the module docstring's order (the grounding finding once per
        dataset); a claim whose table is absent or whose study or run is off is skipped.

    Raises:
        ValueError: ``model`` is None and the grounding rows hold more than one model.
    """
    r = Results(results, cfg, model)
    findings = [_check(study, claim, source, check, r) for study, claim, source, check in CLAIMS]
    for dataset in cfg["grounding"]["datasets"]:
        check = partial(grounding_distractors, dataset=dataset)
        findings.append(_check(f"Grounding ({dataset})", GROUNDING_CLAIM, f"{GROUNDING} Sec. 4.2, Table 1", check, r))
    return findings


def render(findings: Sequence[Finding], report_path: str | Path) -> str:
    """Plain text for a terminal: a first line naming the report, then one line per finding,
    ``[status] study: claim — evidence (test, p = ...)``."""
    counts = {status: sum(f.status == status for f in findings) for status in STATUSES}
    tally = ", ".join(f"{n} {status}" for status, n in counts.items() if n)
    lines = [f"Headline findings of the three papers on this run ({tally}); full report: {report_path}"]
    for f in findings:
        line = f"[{f.status}] {f.study}: {f.claim} — {f.evidence}"
        if f.holds is not None:
            line += f" ({f.test}" + (f", p = {f.p:.2g})" if f.p is not None else ")")
        lines.append(line)
    return "\n".join(lines) + "\n"


def to_records(findings: Sequence[Finding]) -> list[dict[str, Any]]:
    """JSON-ready records, one per finding, with its ``status``."""
    return [{**asdict(f), "status": f.status} for f in findings]


def to_frame(findings: Sequence[Finding]) -> pd.DataFrame:
    """One row per finding: ``study, claim, status, holds, direction, against, evidence, test, p, source``."""
    columns = ["study", "claim", "status", "holds", "direction", "against", "evidence", "test", "p", "source"]
    return pd.DataFrame(to_records(findings), columns=columns)
