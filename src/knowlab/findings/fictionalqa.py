"""FictionalQA's claims (Kirchenbauer et al. 2026): each a measurement function of :mod:`knowlab.findings`."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import pandas as pd

from knowlab import layout
from knowlab.core.checkpoints import CONTROL_RUN
from knowlab.core.clustered import cluster_means
from knowlab.findings.thresholds import LOSS_MARGIN as LOSS_THRESHOLD
from knowlab.findings.base import (
    DOC_SUITE,
    EVENT,
    FICTSHEETS,
    Comparison,
    Results,
    Skip,
    _rows,
    by_cluster,
    identity,
    is_style_split,
    signed_rank,
    split_comparison,
)


def _doc_losses(r: Results, run: str, step: int, side: str) -> pd.Series:
    """Per-document mean loss (nats/token) of ``run``'s documents (fictions, or fictsheets) on one
    side of its split, indexed by document id."""
    split = r.split(run)
    return _rows(r.items(run, step), DOC_SUITE[split["documents"]], split[f"{side}_documents"])["loss"]


def _control_reference(
    r: Results, run: str, measure: Callable[[Callable[[int], pd.DataFrame]], pd.Series]
) -> pd.Series | None:
    """The webtext-only control's value of each document, which a style split's test subtracts
    (:func:`knowlab.findings.base.split_comparison`): ``measure(at)``, ``at(step)`` the control's rows
    of the split's documents (fictions, or fictsheets) at ``step``, indexed by document id.  None for
    the Doc and Event splits, whose test is their own draw.

    Raises:
        Skip: a style split and no control run in the config.
    """
    if not is_style_split(run):
        return None
    if not r.control:
        raise Skip(f"the {run} split is tested against the webtext-only control, and the config has none")
    suite = DOC_SUITE[r.split(run)["documents"]]
    return measure(lambda step: _rows(r.items(CONTROL_RUN, step), suite))


def train_below_val_loss(r: Results) -> list[Comparison]:
    """Training-document loss below validation-document loss at the last checkpoint, per document-split run.

    Source: Kirchenbauer et al. (2026), Sec. 5 "Verbatim Memorization under Repeated Training":
    "Figure 3 demonstrates rapid overfitting despite the fact that we are training on a mixture of
    fictional data and base webtext" (Fig. 3 left: loss on training vs validation samples), and
    Fig. 4.  Effect: mean validation minus mean training document loss (nats/token), each side the
    mean of its events' means.  Tested by re-drawing the split (:func:`split_comparison`): the
    Doc split at the document, the Event split at the event; a style split over the events,
    against the control's loss on each document.  The Fictsheets run is claims 3-4's.
    """
    out = []
    for run in r.document_runs():
        train, val = (_doc_losses(r, run, r.last, side) for side in ("train", "val"))
        detail = f"train {train.mean():.2f} vs val {val.mean():.2f} at step {r.last}"
        control = _control_reference(r, run, lambda at: at(r.last)["loss"])
        out.append(split_comparison(run, r, run, pd.concat([train, val]), "nats/token", detail, control))
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
            n = len(event) + len(other)  # the validation documents behind the two runs' event means
            out.append(
                by_cluster(
                    run,
                    other_by_event,
                    event_by_event,
                    identity(other_by_event),
                    r,
                    "event",
                    "nats/token",
                    detail,
                    True,
                    n,
                )
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
        control = _control_reference(r, run, lambda at: -at(r.last)[columns[0]])
        out.append(split_comparison(run, r, run, -pd.concat([train, val]), "exact match", detail, control))
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


def _during_training(r: Results) -> int:
    """The first checkpoint after the fiction warm-up (``finetune.fiction_warmup_steps``), the pre-named
    checkpoint of the U shape's two halves; it must come before the last checkpoint."""
    after = [step for step in r.steps if step > r.settings.warmup]
    if len(after) < 2:
        raise Skip(
            f"needs a checkpoint after the fiction warm-up (step {r.settings.warmup}) and before the last; "
            f"checkpoints {', '.join(map(str, r.steps))} (finetune.checkpoint_every)"
        )
    return after[0]


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
    during_step = _during_training(r)
    out = []
    for run in r.document_runs():
        before, during = (_doc_losses(r, run, step, "val") for step in (0, during_step))
        detail = f"validation documents {before.mean():.2f} at step 0 -> {during.mean():.2f} at step {during_step}"
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
    smaller of the two one-sided p-values, and the smallest p it can give with these values:
    ``2 / R`` where R, the rankings the blocks can take, is the product over blocks of
    ``k! / (t_1! t_2! ...)`` for the block's ties (``(k!)^n`` for n blocks of k distinct values)."""
    from scipy.stats import page_trend_test  # deferred: as in knowlab.core.stats

    rising = page_trend_test(blocks).pvalue
    falling = page_trend_test(blocks[:, ::-1]).pvalue
    rankings = 1
    for row in blocks:
        ties = np.unique(row, return_counts=True)[1]
        rankings *= math.factorial(row.size) // math.prod(math.factorial(t) for t in ties)
    return min(1.0, 2 * min(rising, falling)), min(1.0, 2 / rankings)


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
    checkpoint after the warm-up (:func:`_size_trend`).
    """
    after = [step for step in r.steps if step > r.settings.warmup]

    def speed(run: str, ft_model: str) -> pd.Series:
        if not after:
            raise Skip(
                f"no checkpoint after the fiction warm-up (finetune.fiction_warmup_steps {r.settings.warmup}; "
                f"checkpoints {', '.join(map(str, r.steps))}): no checkpoint has seen fiction"
            )
        ids = r.split(run)["train_documents"]
        start = _rows(r.items(run, 0, ft_model), "fiction_doc", ids)["loss"]
        left = [_rows(r.items(run, step, ft_model), "fiction_doc", ids)["loss"] / start for step in after]
        return 1 - pd.concat(left, axis=1).mean(axis=1)

    what = f"fitting speed of the training documents after the warm-up (steps {', '.join(map(str, after))})"
    return _size_trend(r, speed, what)


def _models_by_size(r: Results) -> tuple[list[str], pd.Series]:
    """The base models of ``finetune.models`` in order of parameter count, and the counts.

    Raises:
        Skip: fewer than three base models, or two of the same size."""
    models = list(r.settings.ft_models)
    if len(models) < 3:
        raise Skip(
            f"{len(models)} base model(s) in finetune.models ({', '.join(models)}): a trend over model size "
            "needs at least three"
        )
    sizes = r.read(layout.MODELS.relative()).set_index("model")["n_parameters"]
    if len({int(sizes[m]) for m in models}) < len(models):
        raise Skip(f"base models of the same parameter count: {dict(sizes[models])}")
    return sorted(models, key=lambda m: int(sizes[m])), sizes


def _size_trend(r: Results, measure: Callable[[str, str], pd.Series], what: str) -> list[Comparison]:
    """A monotone trend over the base models by size, on the Doc and the Event split: ``measure(run,
    base model)`` gives one value per document or question, averaged per event; each event is a block
    of its values under each model, in size order; Page's L (:func:`page_trend`), two-sided, Holm
    over the splits.  Effect: the mean over events of Spearman's rho between size rank and value."""
    order, sizes = _models_by_size(r)
    runs = [run for run in MODEL_SIZE_RUNS if run in r.runs and all(r.trains(m, run) for m in order)]
    if not runs:
        raise Skip("no Doc or Event split run that every base model trains (finetune.runs, finetune.models)")
    events = r.events
    out = []
    for run in runs:
        values = {m: measure(run, m) for m in order}
        per_event = pd.concat({m: cluster_means(v, events) for m, v in values.items()}, axis=1).dropna()
        if per_event.empty:
            raise Skip(f"no event of the {run} split measured under every base model")
        p, min_p = page_trend(per_event.to_numpy())
        rho = per_event.rank(axis=1).corrwith(pd.Series(range(len(order)), index=order), axis=1).fillna(0.0)
        detail = f"{what}: " + ", ".join(f"{m} ({int(sizes[m]):,} parameters) {per_event[m].mean():.3f}" for m in order)
        test = "Page's L trend over base models by size, events as blocks"
        n = len(values[order[0]])
        out.append(
            Comparison(run, rho, np.zeros(len(rho)), True, p, min_p, test, "event", "Spearman rho", n, detail, True)
        )
    return out


def larger_models_transfer_more(r: Results) -> list[Comparison]:
    """Larger base models gain more MCQ-4 accuracy from training on the fiction: a trend over the base
    models by size, on the Doc and on the Event split.

    Source: Kirchenbauer et al. (2026), Sec. 5 (Fig. 7 left): "training on only the fictional documents
    (not the questions) reliably increases rank-choice MCQ accuracy, and that larger models achieve
    higher levels of transfer".  Operational definition, fixed before any run: per question, the
    model's MCQ-4 accuracy at the last checkpoint minus its own at step 0 (a larger model starts
    higher, Fig. 11, so the gain, not the level, is the transfer), every question of the corpus;
    blocks, test and effect as :func:`larger_models_fit_faster` (:func:`_size_trend`).
    """

    def gain(run: str, ft_model: str) -> pd.Series:
        before, after = (_rows(r.items(run, step, ft_model), "mcq4")["acc"] for step in (0, r.last))
        return (after - before).dropna()

    return _size_trend(r, gain, f"MCQ-4 accuracy gain from step 0 to step {r.last}")


#: the margin of FictionalQA's claims of no harm or no gain in loss: 5% of the reference model's loss
#: on the same text (:data:`knowlab.findings.thresholds.LOSS_MARGIN`, with when it was fixed)
LOSS_MARGIN = LOSS_THRESHOLD.value
#: the scale of the non-inferiority tests: the natural log of a loss ratio
LOG_RATIO = "log loss ratio"


def _log_losses(losses: pd.Series, what: str) -> pd.Series:
    """``log(losses)``: the non-inferiority tests compare losses as ratios, on the log scale.

    A margin that is a share of the reference loss is a ratio; the per-unit ratio of two losses is
    skewed (a ratio cannot fall below 0 and has no upper bound), and a sign-flip test of the
    difference ``1.05 x reference - run`` assumes that difference is symmetric at the margin's edge.
    On the log scale the margin is a shift, ``log 1.05``, and a log ratio is near symmetric: with
    log-normal per-unit ratios exactly at the margin the test keeps its level at every spread
    (tests/test_findings_calibration.py), where the difference on the loss scale was declared
    non-inferior 8-9% of the time at log-scale SD 0.5-0.8 (issue 57).  Changed on 2026-11-29, after
    default results of these claims had been seen (the margin, 5%, is unchanged).

    Raises:
        ValueError: a loss that is not positive (``what`` names the table).
    """
    losses = losses.dropna()
    if (losses <= 0).any():
        raise ValueError(f"{what}: a loss of {losses.min():g} at {losses.idxmin()!r}; a ratio needs positive losses")
    return np.log(losses)


def validation_loss_rises_after(r: Results) -> list[Comparison]:
    """The second half of the U shape: after the period of parallel improvement, the validation
    documents' loss rises again, per document-split run.

    Source: Kirchenbauer et al. (2026), Sec. 5 (Fig. 3): "The U-shaped curve in validation loss seen in
    the left side of Figure 3 indicates a region where generalization via factual and stylistic
    memorization is possible".  Operational definition, fixed before any run: each validation
    document's loss at the last checkpoint minus at the pre-named checkpoint of
    :func:`validation_loss_improves_in_parallel` (the first after the fiction warm-up); unit the
    event, paired, sign flips over events (:func:`by_cluster`).  With that claim (the first half)
    and :func:`train_below_val_loss` (the gap at the end) it states the paper's U shape.
    """
    during_step = _during_training(r)
    out = []
    for run in r.document_runs():
        during, last = (_doc_losses(r, run, step, "val") for step in (during_step, r.last))
        detail = f"validation documents {during.mean():.2f} at step {during_step} -> {last.mean():.2f} at step {r.last}"
        out.append(by_cluster(run, last, during, r.events, r, "event", "nats/token", detail, True))
    return out


def webtext_not_destroyed(r: Results) -> list[Comparison]:
    """Training on 5% fiction keeps webtext modelling: the webtext loss stays within 5% of the
    webtext-only control's, per fiction run.

    Source: Kirchenbauer et al. (2026), Sec. 5 (Fig. 5): "the loss on the base webtext distribution for
    all models is visualized in Figure 5 to show that the ability to faithfully model normal webtext is
    not destroyed by finetuning on the fictional data at this 5% relative rate".  Operational
    definition, fixed before any run: a non-inferiority test.  Per held-out webtext document,
    ``log((1 + LOSS_MARGIN) x control's loss / run's loss)`` at the last checkpoint (the log scale
    since 2026-11-29, :func:`_log_losses`); positive when the run is less than 5% worse.  The
    control is the comparison because it trains on the same webtext without the fiction.  Unit: the
    webtext document (sampled independently), sign flips over documents.
    """
    if not r.control:
        raise Skip("no webtext-only control run in the config (finetune.control)")
    control = _rows(r.items(CONTROL_RUN, r.last), "webtext")["loss"]
    out = []
    for run in r.fiction_runs():
        own = _rows(r.items(run, r.last), "webtext")["loss"]
        detail = (
            f"webtext loss at step {r.last}: {run} {own.mean():.3f} vs control {control.mean():.3f} "
            f"(margin {LOSS_MARGIN:.0%} of the control's)"
        )
        ceiling = _log_losses((1 + LOSS_MARGIN) * control, "control webtext loss")
        own = _log_losses(own, f"{run} webtext loss")
        out.append(by_cluster(run, ceiling, own, identity(own), r, "webtext document", LOG_RATIO, detail, True))
    return out


def real_qa_no_improvement(r: Results) -> list[Comparison]:
    """Training on the fiction does not improve nll(answer | question) on real-world questions, per fiction run.

    Source: Kirchenbauer et al. (2026), Sec. 5 (Fig. 6 right): "we also measure the same question
    conditional answer loss but for real TriviaQA questions and see that the models don't improve at
    all in terms of answer likelihood on real factual question answering data" (App. C.7, Fig. 9).
    Operational definition, fixed before any run: per real-world question (``real_qa_nll``: TriviaQA
    where the config has it, else the shipped set), ``log(run's nll at the last checkpoint / (1 -
    LOSS_MARGIN) x the base model's (step 0))`` (the log scale since 2026-11-29,
    :func:`_log_losses`); positive when the loss fell by less than 5%.  Unit: the question (sampled
    independently), sign flips over questions.
    """
    out = []
    for run in r.fiction_runs():
        before, after = (_rows(r.items(run, step), "real_qa_nll")["loss"] for step in (0, r.last))
        detail = (
            f"real-world nll(answer | question): step 0 {before.mean():.3f} -> {run} {after.mean():.3f} at step "
            f"{r.last} (margin {LOSS_MARGIN:.0%} of step 0's)"
        )
        floor = _log_losses((1 - LOSS_MARGIN) * before, "base model real-world nll")
        after = _log_losses(after, f"{run} real-world nll")
        out.append(by_cluster(run, after, floor, identity(after), r, "real-world question", LOG_RATIO, detail, True))
    return out


def fictsheets_qa_no_gain(r: Results) -> list[Comparison]:
    """Training on the Fictsheets does not improve nll(answer | question) beyond the webtext-only control.

    Source: Kirchenbauer et al. (2026), Sec. 5 (Fig. 6): "training on the Fictsheets split does not
    consistently improve Q&A loss".  Operational definition, fixed before any run: on the questions
    of the Fictsheets split's training events, ``log(Fictsheets run's nll(answer | question) / (1 -
    LOSS_MARGIN) x the control's)`` at the last checkpoint (the log scale since 2026-11-29,
    :func:`_log_losses`); positive when it is less than 5% below the control.  Unit: the event,
    paired (each side the mean of its questions' log nll), sign flips over events (:func:`by_cluster`).
    """
    r.need_fictsheets()
    if not r.control:
        raise Skip("no webtext-only control run in the config (finetune.control)")
    ids = r.split(FICTSHEETS)["train_questions"]
    own = _rows(r.items(FICTSHEETS, r.last), "fict_qa_nll", ids)["loss"]
    control = _rows(r.items(CONTROL_RUN, r.last), "fict_qa_nll", ids)["loss"]
    detail = (
        f"nll(answer | question) at step {r.last}: {FICTSHEETS} {own.mean():.3f} vs control {control.mean():.3f} "
        f"(margin {LOSS_MARGIN:.0%} of the control's)"
    )
    floor = _log_losses((1 - LOSS_MARGIN) * control, "control nll(answer | question)")
    own = _log_losses(own, f"{FICTSHEETS} nll(answer | question)")
    return [by_cluster("", own, floor, r.events, r, "event", LOG_RATIO, detail, True)]


def event_transfers_less_qa(r: Results) -> list[Comparison]:
    """Training on the Event split transfers less to Q&A loss than the Doc split: on the questions of
    the events Event holds out, its nll(answer | question) is above Doc's.

    Source: Kirchenbauer et al. (2026), Sec. 5 (Fig. 6): "the stronger factual separation between train
    and validation samples for the Event Split appears to result in less transfer to Q&A loss, while
    the more complete coverage of all events in the Doc Split allows for more improvement".
    Operational definition, fixed before any run: on the questions of the Event split's validation
    events (which the Event run never saw a document of, and the Doc run saw most of), the Event
    run's nll at the last checkpoint minus the Doc run's.  Unit: the event, paired, sign flips over
    those events (:func:`by_cluster`); with 2 validation events no p is below 0.5.
    """
    runs = r.document_runs()
    if EVENT not in runs or "doc" not in runs:
        raise Skip(f"needs the doc and {EVENT} runs (finetune.runs: {', '.join(r.runs)})")
    ids = r.split(EVENT)["val_questions"]
    event, doc = (_rows(r.items(run, r.last), "fict_qa_nll", ids)["loss"] for run in (EVENT, "doc"))
    detail = (
        f"nll(answer | question) on the {EVENT} split's held-out events at step {r.last}: "
        f"{EVENT} {event.mean():.3f} vs doc {doc.mean():.3f}"
    )
    return [by_cluster("", event, doc, r.events, r, "event", "nats/token", detail, True)]


def held_out_below_trained(r: Results) -> list[Comparison]:
    """The "leaky" gain is smaller on held-out questions: MCQ-4 accuracy gain over the control on the
    questions of the training documents above that on the questions of the held-out ones, per
    document-split run.

    Source: Kirchenbauer et al. (2026), Sec. 5 (Fig. 8): "the performance on the questions corresponding
    to held-out fictional scenarios and events is also elevated '(Val)', albeit slightly less than for
    questions corresponding to scenarios that were trained on '(Train)'".  Per question, the run's
    accuracy minus the control's at the last checkpoint; per document, the mean over its questions;
    training minus validation documents, tested as claim 1 by re-drawing the split
    (:func:`split_comparison`; values negated there so that the effect reads trained minus held out;
    a style split over the events, the gains being against the control already).
    """
    if not r.control:
        raise Skip("no webtext-only control run in the config (finetune.control)")
    documents = r.read(layout.CORPUS.relative(table="fict_qa")).set_index("question_id")["fiction_id"]
    control = _rows(r.items(CONTROL_RUN, r.last), "mcq4")["acc"]
    out = []
    for run in r.document_runs():
        split = r.split(run)
        gain = (_rows(r.items(run, r.last), "mcq4")["acc"] - control).dropna()
        per_document = gain.groupby(documents.reindex(gain.index).to_numpy()).mean()
        train, val = (gain.reindex(split[f"{side}_questions"]).dropna() for side in ("train", "val"))
        detail = (
            f"gain over control at step {r.last}: trained questions {train.mean():+.2f} vs held-out {val.mean():+.2f}"
        )
        out.append(split_comparison(run, r, run, -per_document, "accuracy", detail))
    return out


def gap_opens_after_minimum(r: Results) -> list[Comparison]:
    """The train-validation gap opens after the validation minimum: from the period of parallel
    improvement to the last checkpoint, the validation documents' loss rises against the training
    documents', per document-split run.

    Source: Kirchenbauer et al. (2026), Sec. 5 (Figs. 3-4): "there is a period during which the loss on
    the validation documents for the split also improves in parallel to the training loss" before
    "rapid overfitting"; the U-shaped validation curve.  Operational definition, fixed before any
    run: per document, its loss at the last checkpoint minus at the pre-named checkpoint of
    :func:`validation_loss_improves_in_parallel`; validation minus training documents, each side
    the mean of its events' means, tested by re-drawing the split (:func:`split_comparison`, as
    claim 1; a style split against the control's change on each document): the change of the gap.
    """
    during_step = _during_training(r)
    out = []
    for run in r.document_runs():
        control = _control_reference(r, run, lambda at: at(r.last)["loss"] - at(during_step)["loss"])
        sides = {
            side: {step: _doc_losses(r, run, step, side) for step in (during_step, r.last)} for side in ("train", "val")
        }
        gaps = [sides["val"][step].mean() - sides["train"][step].mean() for step in (during_step, r.last)]
        change = pd.concat([sides[side][r.last] - sides[side][during_step] for side in ("train", "val")])
        detail = (
            f"validation minus training loss {gaps[0]:+.2f} at step {during_step} -> {gaps[1]:+.2f} at step {r.last}"
        )
        out.append(split_comparison(run, r, run, change.dropna(), "nats/token", detail, control))
    return out
