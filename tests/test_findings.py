"""knowlab.findings: the status rules at their boundaries, and every claim decided on a small synthetic
results folder in the workflow's formats (built so that each claim is supported, then changed against
it), with p-values from scipy / statsmodels called directly on hand-written tables."""

from __future__ import annotations

import copy
import itertools
import json
import re
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from statsmodels.stats import multitest as stats_multitest

from knowlab import findings
from knowlab.core import stats
from knowlab.core.io import write_json, write_jsonl
from knowlab.fiction.splits import make_split
from knowlab.findings import (
    CONTRADICTED,
    INCONCLUSIVE,
    NOT_SIGNIFICANT,
    NOT_TESTED,
    SUPPORTED,
    UNDERPOWERED,
    Comparison,
    FindingsSettings,
    decide,
    decide_equivalence,
    plan,
)
from knowlab.findings.base import _judge

MODEL = "m"
STEPS = (0, 2, 4)
LAST = STEPS[-1]
PERMUTATIONS = 999
CFG = {
    "seed": 1,
    "findings": {"alpha": 0.05, "power": 0.8, "equivalence_margin": 0.05},
    "finetune": {
        "runs": ["doc", "event", "fictsheets"],
        "control": True,
        "max_steps": LAST,
        "checkpoint_every": 2,
        "fiction_warmup_steps": 1,
        # three base models; the first (the reference model) holds every run
        "models": {"small": "base", "mid": {"source": "tiny_random"}, "large": {"source": "tiny_random"}},
    },
    "stats": {
        "bootstrap_resamples": 200,
        "permutation_resamples": PERMUTATIONS,
        "confidence": 0.95,
        "mcnemar_exact_below": 25,
        "ttest_alternative": "greater",
    },
    "eval_models": {"base_model": "base"},
    "sort": {
        "conditions": ["baseline", "in_context", "rag", "oracle_rag"],
        "parametric": {"enabled": True, "epochs": 1},
    },
    "grounding": {"datasets": ["fiction"]},
}
# The corpus: 14 events x 2 styles x 2 documents, 2 questions a document (8 an event, in id order).
# The Event split trains 8 events (C(14, 8) = 3003 assignments), so that every claim can reach alpha
# at the event (the shipped corpus's 6 events cannot: tests/workflow/test_pipeline.py).
EVENTS = [f"e{k:02d}" for k in range(14)]
DOCS = [f"{e}_{style}_{n}" for e in EVENTS for style in ("blog", "news") for n in range(2)]
QUESTIONS = [f"{d}_q{j}" for d in DOCS for j in range(2)]
FICTIONS = [{"fiction_id": d, "event_id": d[:3], "style": d.split("_")[1], "fiction": d} for d in DOCS]
FICT_QA = [{"question_id": q, "fiction_id": q[:-3], "event_id": q[:3]} for q in QUESTIONS]
SPLITS = {
    run: make_split(run, FICTIONS, FICT_QA, seed=1, event_train_fraction=8 / 14)
    for run in ("doc", "event", "fictsheets")
}
# MCQ-4: a run answers the first n of each event's 8 questions right at the last step
RIGHT = {"base_model": 3, "control": 3, "doc": 7, "event": 6, "fictsheets": 4}
# validation-document loss per step: Doc's curve is U-shaped (its minimum at step 2), Event's falls
# a little to the end, so the last step alone would rank them the wrong way round
VAL_LOSS = {"doc": {2: 2.5, 4: 3.4}, "event": {2: 3.3, 4: 3.2}}
QA_NLL = {"doc": 2.0, "event": 2.2}
WEBTEXT = [f"w{k:02d}" for k in range(16)]
REAL_QA = [f"r{k:02d}" for k in range(20)]
INDEX = {q: k for k, q in enumerate(QUESTIONS)}
# SORT: 20 excerpts (2 books x 10) x 4 distance bins; a condition gets the first n bins of every excerpt right
SORT_ITEMS = [f"book{x // 10}|E100|S10|x{x % 10:03d}|b{b}" for x in range(20) for b in range(4)]
SORT_RIGHT = {"baseline": 2, "in_context": 4, "rag": 3, "oracle_rag": 3}
# parameters of each base model, and the share of its Doc-split training-document loss the larger
# ones keep beside the reference model at the first checkpoint
SIZES = {"small": 1000, "mid": 2000, "large": 3000}
KEEP = {"mid": 0.9, "large": 0.8}
CLAIMS = [
    "training-document loss below validation-document loss (doc)",
    "training-document loss below validation-document loss (event)",
    "MCQ-4 accuracy on trained questions above the webtext-only control (doc)",
    "MCQ-4 accuracy on trained questions above the webtext-only control (event)",
    "Fictsheets: training-fictsheet loss falls",
    "Fictsheets: validation-fictsheet loss rises",
    "Fictsheets transfer least: MCQ-4 accuracy below the other split's (doc)",
    "Fictsheets transfer least: MCQ-4 accuracy below the other split's (event)",
    "Event improves validation loss least (to its minimum): below the other split (doc)",
    "Larger base models fit the training documents faster (doc)",
    "Larger base models fit the training documents faster (event)",
    "verbatim completion of training documents, not of validation documents (doc)",
    "verbatim completion of training documents, not of validation documents (event)",
    "nll(answer | question) on trained questions below the webtext-only control (doc)",
    "nll(answer | question) on trained questions below the webtext-only control (event)",
    "validation-document loss improves during training (below step 0 after the warm-up) (doc)",
    "validation-document loss improves during training (below step 0 after the warm-up) (event)",
    "validation-document loss rises again after the dip (the U shape) (doc)",
    "validation-document loss rises again after the dip (the U shape) (event)",
    "the train-validation gap opens after the validation dip (doc)",
    "the train-validation gap opens after the validation dip (event)",
    "MCQ-4 accuracy on held-out questions above the webtext-only control (doc)",
    "MCQ-4 accuracy on held-out questions above the webtext-only control (event)",
    "MCQ-4 gain over the control smaller on held-out questions than on trained ones (doc)",
    "MCQ-4 gain over the control smaller on held-out questions than on trained ones (event)",
    "webtext loss within 5% of the webtext-only control's (not destroyed) (doc)",
    "webtext loss within 5% of the webtext-only control's (not destroyed) (event)",
    "webtext loss within 5% of the webtext-only control's (not destroyed) (fictsheets)",
    "real-world nll(answer | question) does not improve (falls by less than 5%) (doc)",
    "real-world nll(answer | question) does not improve (falls by less than 5%) (event)",
    "real-world nll(answer | question) does not improve (falls by less than 5%) (fictsheets)",
    "Fictsheets: nll(answer | question) not 5% below the webtext-only control",
    "Event transfers less to Q&A loss than Doc on the events Event holds out",
    "Larger base models gain more MCQ-4 accuracy (doc)",
    "Larger base models gain more MCQ-4 accuracy (event)",
    "in-context memory above the no-context baseline",
    "RAG below in-context memory",
    "fine-tuning on the books lowers segment nll (vs instructions only)",
    "fine-tuning on the books leaves no-context accuracy unchanged (vs instructions only)",
    "no-context accuracy below 60%",
    "in-context accuracy rises with segment distance",
    "in-context accuracy falls with excerpt length",
    "in-context accuracy higher with longer segments",
    "fine-tuning on the books raises the correct answer's log-probability (vs instructions only)",
    "in-context accuracy falls after fine-tuning on the books",
    "Original-Dist F1 below Original-Gold",
    "Conflict-Dist F1 below Conflict-Gold",
    "Conflict-Gold F1 below Original-Gold",
    "distractors lower F1 more than conflicting knowledge",
    "precision above recall",
    "F1 with the gold contexts last above first",
    "F1 higher for single-context than multi-context questions",
    "F1 higher for definite than free-form answers",
    "F1 higher with less popular contexts",
]


# ------------------------------------------------------------------------------ status rules


@pytest.mark.parametrize(
    ("effect", "ci", "p", "status"),
    [
        (0.2, (0.05, 0.35), 0.01, SUPPORTED),
        (0.2, (0.05, 0.35), 0.05, NOT_SIGNIFICANT),  # p = alpha does not reject
        (0.2, (0.0, 0.35), 0.01, NOT_SIGNIFICANT),  # the interval touches 0: test and interval must agree
        (0.1, (-0.1, 0.3), 0.5, NOT_SIGNIFICANT),
        (0.0, (-0.1, 0.1), 1.0, INCONCLUSIVE),  # a tie is not the claimed direction
        (-0.1, (-0.3, 0.1), 0.5, INCONCLUSIVE),
        (-0.2, (-0.35, -0.05), 0.049, CONTRADICTED),
        (-0.2, (-0.35, -0.05), 0.05, INCONCLUSIVE),
        (-0.2, (-0.35, 0.01), 0.001, INCONCLUSIVE),
    ],
)
def test_directional_status_at_its_boundaries(effect, ci, p, status):
    assert decide(effect, *ci, p, alpha=0.05) == status


@pytest.mark.parametrize(
    ("ci", "p_difference", "p_equivalence", "status"),
    [
        ((-0.04, 0.04), 1.0, 0.01, SUPPORTED),
        ((-0.04, 0.05), 1.0, 0.01, INCONCLUSIVE),  # the interval reaches the margin
        ((-0.04, 0.04), 1.0, 0.05, INCONCLUSIVE),  # TOST at alpha does not reject
        ((-0.2, 0.3), 0.6, 0.9, INCONCLUSIVE),  # too few items to tell
        ((0.1, 0.3), 0.001, 1.0, CONTRADICTED),  # a significant difference
        ((0.1, 0.3), 0.2, 1.0, INCONCLUSIVE),
    ],
)
def test_equivalence_status_inside_and_outside_the_margin(ci, p_difference, p_equivalence, status):
    assert decide_equivalence(*ci, p_difference, p_equivalence, alpha=0.05, margin=0.05) == status


def test_tally_counts_every_status():
    found = [findings.Finding("S", f"c{i}", status, "d") for i, status in enumerate([SUPPORTED, SUPPORTED, NOT_TESTED])]
    assert findings.tally(found) == {
        SUPPORTED: 2,
        NOT_SIGNIFICANT: 0,
        UNDERPOWERED: 0,
        INCONCLUSIVE: 0,
        CONTRADICTED: 0,
        NOT_TESTED: 1,
    }
    assert (
        findings.render(found, "r.html")
        .splitlines()[0]
        .startswith("Headline findings of the three papers on this run: 2 of 3 supported (1 not tested)")
    )


# --------------------------------------------------------------------------- results folder


def _loss_rows(suite, ids, losses):
    return [
        {"suite": suite, "item_id": i, "loss": loss, "nll_sum": 100 * loss, "n_tokens": 100.0, "acc": np.nan}
        for i, loss in zip(ids, losses)
    ]


def _spread(ids, level, step=0.01):
    return [level + step * k for k in range(len(ids))]


def _items(run, step, docs, sheets, em=None):
    rows = _loss_rows("fiction_doc", DOCS, docs) + _loss_rows("fictsheet_doc", EVENTS, sheets)
    for row in rows:  # exact match of the last 10 tokens: the trained documents of a document-split run
        row["em10"] = (em or {}).get(row["item_id"], 0.0) if row["suite"] == "fiction_doc" else np.nan
    rows += [{"suite": "mcq4", "item_id": q, "acc": float(k % 8 < RIGHT[run])} for k, q in enumerate(QUESTIONS)]
    # nll(answer | question): a document-split run's below the base model's and the control's on every
    # question, Event's above Doc's; the Fictsheets run's the control's
    nll = QA_NLL.get(run, 3.0)
    rows += _loss_rows("fict_qa_nll", QUESTIONS, [nll + 0.001 * k for k in range(len(QUESTIONS))])
    # webtext and real-world questions: the same loss under every model and run
    rows += _loss_rows("webtext", WEBTEXT, _spread(WEBTEXT, 3.0))
    rows += _loss_rows("real_qa_nll", REAL_QA, _spread(REAL_QA, 3.0))
    return pd.DataFrame(rows).assign(run=run, step=step)


def _run_items(run, step):
    docs, sheets = _spread(DOCS, 3.5), _spread(EVENTS, 3.5)
    em = None
    if run in VAL_LOSS:
        train = SPLITS[run]["train_documents"]
        docs = [2.0 + 0.01 * k if d in train else VAL_LOSS[run][step] + 0.01 * k for k, d in enumerate(DOCS)]
        em = {d: 0.5 for d in train}
    if run == "fictsheets":
        train = SPLITS[run]["train_documents"]
        sheets = [1.0 + 0.03 * k if e in train else 3.8 + 0.02 * k for k, e in enumerate(EVENTS)]
    return _items(run, step, docs, sheets, em)


def _write_models(root, base):
    """The larger base models: the reference model's step-0 rows, and at every checkpoint its Doc
    and Event rows with each training document's loss times the model's KEEP factor."""
    pd.DataFrame({"model": list(SIZES), "source": "test", "n_parameters": list(SIZES.values())}).to_csv(
        root / "fictionalqa/models.csv", index=False
    )
    for model, keep in KEEP.items():
        _write(root, f"fictionalqa/{model}/evaluate/base_model/step-0.parquet", base)
        for run in ("doc", "event"):
            train = set(SPLITS[run]["train_documents"])
            for step in STEPS[1:]:
                items = _run_items(run, step)
                scaled = (items["suite"] == "fiction_doc") & items["item_id"].isin(train)
                items.loc[scaled, "loss"] *= keep
                _write(root, f"fictionalqa/{model}/evaluate/{run}/step-{step}.parquet", items)


def _write(root, relative, frame):
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    frame.to_parquet(path, index=False)


def _sort_rows(n_right, score=-0.7, **columns):
    """SORT rows: the first ``n_right`` bins of every excerpt right; bin b at distance 10 (b + 1),
    excerpts of 100 words, segments of 10; the score ``score`` + 0.001 k on item k."""
    bins = [int(i.rsplit("|b", 1)[1]) for i in SORT_ITEMS]
    return pd.DataFrame(
        {
            "item_id": SORT_ITEMS,
            "correct": [b < n_right for b in bins],
            "distance_bin": bins,
            "distance": [10 * (b + 1) for b in bins],
            "excerpt_length": 100,
            "segment_length": 10,
            "score": score + 0.001 * np.arange(len(SORT_ITEMS)),
            **columns,
        }
    )


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """A results folder where every claim is supported (built once; tests get a copy)."""
    root = tmp_path_factory.mktemp("findings") / "results"
    base = _items("base_model", 0, _spread(DOCS, 3.5), _spread(EVENTS, 3.5))
    _write(root, "fictionalqa/small/evaluate/base_model/step-0.parquet", base)
    for run in [*SPLITS, "control"]:
        for step in STEPS[1:]:
            _write(root, f"fictionalqa/small/evaluate/{run}/step-{step}.parquet", _run_items(run, step))
    _write_models(root, base)
    for run, split in SPLITS.items():
        write_json(root / f"fictionalqa/splits/{run}.json", split)
    write_jsonl(root / "fictionalqa/corpus/fiction/fictions.jsonl", FICTIONS)
    write_jsonl(root / "fictionalqa/corpus/fiction/fict_qa.jsonl", FICT_QA)
    for condition, n_right in SORT_RIGHT.items():
        _write(root, f"sort/evaluate/base_model/{condition}.parquet", _sort_rows(n_right, condition=condition))
    for run, nll, score in (("books", 3.0, -0.6), ("instructions", 3.9, -0.65)):
        # no context as the base model; in context (the books run) right on 3 bins, 1 fewer than before
        rows = [_sort_rows(2, score, condition="baseline"), _sort_rows(3, score, condition="in_context")]
        _write(root, f"sort/parametric/{run}/evaluate/epoch-1.parquet", pd.concat(rows, ignore_index=True))
        spread = 0.01 * np.arange(len(SORT_ITEMS))
        nll_table = pd.DataFrame({"item_id": SORT_ITEMS, "nll_a": nll + spread, "nll_b": nll - spread})
        _write(root, f"sort/parametric/{run}/evaluate/epoch-1_segment_nll.parquet", nll_table)
    grounding = [
        {
            "dataset": "fiction",
            "model": MODEL,
            "item_id": f"g{k}",
            "document_id": f"doc{k}",
            "condition": condition,
            "f1": f1 + 0.01 * k * is_dist,
            # precision above recall on every question and setting, by 0.1 + 0.01 k
            "precision": f1 + 0.05 + 0.005 * k,
            "recall": f1 - 0.05 - 0.005 * k,
            # one level of each factor: those claims are not tested here
            "factor_contexts": "single",
            "factor_answer_type": "definite",
            "factor_popularity": "low",
        }
        for k in range(8)
        for condition, f1, is_dist in (
            ("original_gold", 0.6, 0),
            ("original_dist", 0.4, 1),
            ("conflict_gold", 0.5, 0),
            ("conflict_dist", 0.3, 1),
            ("position_start", 0.35, 1),
            ("position_end", 0.45, 1),
        )
    ]
    _write(root, "grounding/rows.parquet", pd.DataFrame(grounding))
    return root


@pytest.fixture
def results(built, tmp_path):
    return Path(shutil.copytree(built, tmp_path / "results"))


def _holm2(p1, p2):
    """Holm's adjustment of two p-values, written out: the smaller times 2, the larger at least that."""
    low, high = sorted((p1, p2))
    adjusted = {low: min(1.0, 2 * low), high: max(min(1.0, 2 * low), high)}
    return [adjusted[p1], adjusted[p2]]


def _by_claim(found):
    return {f.claim: f for f in found}


def _rewrite(root, relative, change):
    path = root / relative
    change(pd.read_parquet(path)).to_parquet(path, index=False)


def _event_means(values):
    """Mean per event of values indexed by document or question id (the first 3 characters: e07)."""
    return values.groupby(values.index.str[:3]).mean()


# what the folder's data show besides ``supported``: Event's curve falls to its end (no U shape, a
# gap that closes), no model answers better for its size, SORT in context right on every bin of one
# length, one level of each grounding factor
AS_BUILT = {
    CLAIMS[20]: CONTRADICTED,
    CLAIMS[23]: UNDERPOWERED,  # 56 documents detect 0.22 accuracy at 80% power, above 0.05
    CLAIMS[24]: INCONCLUSIVE,
    # all tied: every event's gain the same under each model (no ranking of the models to permute), every
    # excerpt's distance rho 0 (no sign to flip); the smallest p the test can give is 1 (issue 57)
    CLAIMS[33]: NOT_TESTED,
    CLAIMS[34]: NOT_TESTED,
    CLAIMS[40]: NOT_TESTED,
    **dict.fromkeys([CLAIMS[41], CLAIMS[42], *CLAIMS[51:54]], NOT_TESTED),
}


def test_every_claim_is_supported_where_the_data_show_it(results):
    found = findings.collect(results, FindingsSettings.from_config(CFG), model=MODEL)
    assert [f.claim for f in found] == CLAIMS
    # the Event split's 6 held-out events cannot reach alpha after Holm (2 / 2^6 x 2): its lines on
    # validation questions and documents are not tested, however clear the data
    held_out = {CLAIMS[16], CLAIMS[18], CLAIMS[22]}
    expected = [NOT_TESTED if claim in held_out else AS_BUILT.get(claim, SUPPORTED) for claim in CLAIMS]
    assert [f.status for f in found] == expected, findings.render(found, "r.html")
    assert all("not testable with 6 events" in f.detail for f in found if f.claim in held_out)
    for f in found:  # no supported finding at p >= alpha or with an interval that reaches 0
        if f.status == SUPPORTED:
            assert f.p < f.alpha and f.source and f.test and f.n > 0 and f.n_clusters > 0
            assert (f.ci_low > 0 or f.margin is not None) and f.ci_low <= f.effect <= f.ci_high


def test_effects_and_pvalues_equal_the_tables_by_hand(results):
    found = _by_claim(findings.collect(results, FindingsSettings.from_config(CFG), model=MODEL))
    # Event split at the last step: every one of the C(14, 8) choices of training events, by hand;
    # each side the mean of its events' mean document loss
    losses = pd.Series(_run_items("event", LAST).query("suite == 'fiction_doc'").set_index("item_id")["loss"])
    train = set(SPLITS["event"]["train_documents"])

    def statistic(trained_events):
        held = ~losses.index.str[:3].isin(trained_events)
        return _event_means(losses[held]).mean() - _event_means(losses[~held]).mean()

    observed = statistic({d[:3] for d in train})
    every = [statistic(set(chosen)) for chosen in itertools.combinations(EVENTS, 8)]
    p_event = np.mean(np.abs(every) >= abs(observed) - 1e-12)
    f = found[CLAIMS[1]]
    assert f.effect == pytest.approx(observed) and p_event == pytest.approx(1 / 3003)  # the most extreme choice
    assert f.unit == "event" and f.n_clusters == 14 and f.n == 56 and f.seeds == 1
    # 3003 choices are more than the 999 permutations may list: Monte Carlo over 999 draws of events,
    # as the Doc split's over 999 fresh draws of the split; none as extreme as the actual one
    doc = found[CLAIMS[0]]
    assert doc.unit == "document" and doc.n_clusters == 56 and "randomisation test of the doc split" in doc.test
    floor = 1 / (PERMUTATIONS + 1)
    assert [doc.p, f.p] == pytest.approx(_holm2(floor, floor), rel=1e-12) and f.min_p == pytest.approx(2 * floor)

    # MCQ-4 vs control on the trained questions, per event, every event's difference positive
    f = found[CLAIMS[3]]
    questions = SPLITS["event"]["train_questions"]
    acc = {
        run: pd.Series({q: float(QUESTIONS.index(q) % 8 < RIGHT[run]) for q in questions})
        for run in ("event", "control")
    }
    assert f.effect == pytest.approx((_event_means(acc["event"]) - _event_means(acc["control"])).mean())
    assert f.unit == "event" and f.n_clusters == 8 and f.n == 64 and "sign-flip permutation over events" in f.test
    assert "Holm over 2" in f.test and "conditional on it" in f.detail

    # Fictsheets: 8 training fictsheets from 3.5 + 0.01 k to 1.0 + 0.03 k, paired; Wilcoxon at the fictsheet
    f = found[CLAIMS[4]]
    k = np.array([EVENTS.index(e) for e in SPLITS["fictsheets"]["train_documents"]])
    before, after = 3.5 + 0.01 * k, 1.0 + 0.03 * k
    assert f.effect == pytest.approx((before - after).mean()) and f.unit == "fictsheet" and f.n_clusters == 8
    # every fictsheet's loss falls: the signed ranks are all positive, the most extreme of the 2^8 sign
    # patterns at each end, so the exact two-sided p is 2 / 2^8
    assert (before > after).all() and f.p == pytest.approx(2 / 2**8, rel=1e-12)

    # Event's improvement to its minimum, paired on Event's 6 validation events: Doc's validation
    # documents 3.5 -> 2.5 (step 2), Event's 3.5 -> 3.2; every event one way: exact p = 2 / 2^6
    f = found[CLAIMS[8]]
    assert f.effect == pytest.approx(1.0 - 0.3) and "step 2" in f.detail and "(step 4)" in f.detail
    assert f.n_clusters == 6 and f.p == pytest.approx(2 / 64)

    # SORT: in context right on 2 more bins of every excerpt than the baseline
    f = found[CLAIMS[35]]
    assert f.effect == pytest.approx(0.5) and f.unit == "excerpt" and f.n_clusters == 20 and f.n == 80
    assert f.seeds is None  # the base model: no training

    # grounding: every Dist below Gold on 8 questions of 8 documents, the exact two-sided p = 2 / 2^8
    f = found[CLAIMS[45]]
    assert f.p == pytest.approx(2 / 256) and f.effect == pytest.approx(0.2 - 0.01 * np.arange(8).mean())
    assert f.unit == "document" and f.n_clusters == 8


def _best_f1(root, condition):
    """Grounding F1 of ``condition`` 0.9 and more on every question, above every other condition."""
    _rewrite(
        root,
        "grounding/rows.parquet",
        lambda f: f.assign(f1=np.where(f["condition"] == condition, 0.9 + 0.001 * f.index, f["f1"])),
    )


def _wrong_on_first_four(items):
    first = (items["suite"] == "mcq4") & (items.index % 8 < 4)
    return items.assign(acc=items["acc"].mask(first, 0.0))


def test_the_claims_go_against_the_data_built_against_them(results):
    def swap(items):  # Doc's validation documents below its training documents
        docs = items["suite"] == "fiction_doc"
        train = items["item_id"].isin(SPLITS["doc"]["train_documents"])
        items.loc[docs & train, "loss"] += 3.0
        return items

    for step in STEPS[1:]:
        _rewrite(results, f"fictionalqa/small/evaluate/doc/step-{step}.parquet", swap)

    def right(items):
        return items.assign(acc=items["acc"].notna().astype(float))

    # the control right on every question, Doc and Event wrong on the first 4 of every event: below the control
    _rewrite(results, f"fictionalqa/small/evaluate/control/step-{LAST}.parquet", right)
    for run in ("doc", "event"):
        _rewrite(results, f"fictionalqa/small/evaluate/{run}/step-{LAST}.parquet", _wrong_on_first_four)
    # RAG ties in-context memory; the books run right on one more bin of every excerpt than instructions only
    _write(results, "sort/evaluate/base_model/rag.parquet", _sort_rows(SORT_RIGHT["in_context"]))
    _write(results, "sort/parametric/books/evaluate/epoch-1.parquet", _sort_rows(3, condition="baseline"))
    _best_f1(results, "original_dist")  # distractors help grounding (Original)
    found = _by_claim(findings.collect(results, FindingsSettings.from_config(CFG), model=MODEL))
    statuses = {claim: found[claim].status for claim in CLAIMS}
    assert statuses[CLAIMS[0]] == CONTRADICTED
    assert statuses[CLAIMS[2]] == statuses[CLAIMS[3]] == CONTRADICTED
    assert statuses[CLAIMS[36]] == NOT_TESTED  # a tie on every excerpt: no sign flip moves the statistic
    assert statuses[CLAIMS[38]] == CONTRADICTED  # a significant difference where none is claimed
    assert statuses[CLAIMS[45]] == CONTRADICTED
    # with distractors helping, the distractors' drop (negative) is below the conflict's
    assert statuses[CLAIMS[48]] == CONTRADICTED
    assert statuses[CLAIMS[35]] == statuses[CLAIMS[46]] == statuses[CLAIMS[47]] == SUPPORTED  # untouched


def _comparison(d, p):
    """A paired comparison of accuracy over events whose differences are ``d``, its test's p ``p``."""
    d = np.asarray(d, dtype=float)
    return Comparison("", d, np.zeros_like(d), True, p, 1e-6, "test", "event", "accuracy", d.size, "d", False)


def test_not_significant_needs_a_design_that_could_detect_the_smallest_effect_of_interest():
    """The same non-significant direction reads ``not significant`` where the design detects 0.05 accuracy
    (the smallest effect of interest) at 80% power, and ``underpowered`` where it cannot (issue 57)."""
    entry = next(e for e in findings.CLAIMS if e.id == "sort.in_context_above_baseline")
    settings = FindingsSettings.from_config(CFG)
    rng = np.random.default_rng(0)
    many = rng.normal(0, 0.1, 400)
    many += 0.003 - many.mean()
    (f,) = _judge(entry, "SORT", [_comparison(many, 0.4)], settings)
    assert f.status == NOT_SIGNIFICANT and f.mde < 0.05 == f.smallest_effect
    few = rng.normal(0.003, 0.1, 6)
    (f,) = _judge(entry, "SORT", [_comparison(few - few.mean() + 0.01, 0.4)], settings)
    assert f.status == UNDERPOWERED and f.mde > 0.05 and f.detail.startswith("underpowered: 6 events detect")
    assert "[underpowered]" in findings.render([f], "r.html")


def test_a_margin_other_than_the_plans_is_a_printed_deviation(results):
    cfg = copy.deepcopy(CFG)
    cfg["findings"]["equivalence_margin"] = 0.1
    settings, planned = FindingsSettings.from_config(cfg), plan.PlanSettings.from_config(cfg)
    assert plan.deviations(planned) == [{"key": "findings.equivalence_margin", "plan": 0.05, "run": 0.1}]
    assert plan.analysis_plan(planned)["deviations"] == plan.deviations(planned)
    found = findings.collect(results, settings, model=MODEL)
    deviated = [f for f in found if "a deviation: the analysis plan's margin is 0.05" in (f.test or "")]
    assert [f.claim_id for f in deviated] == [e.id for e in findings.CLAIMS if e.equivalence]
    assert not any(
        "deviation" in (f.test or "") for f in findings.collect(results, FindingsSettings.from_config(CFG), MODEL)
    )


def test_every_tested_line_has_its_false_discovery_q_and_the_tally_counts_them(results):
    found = findings.collect(results, FindingsSettings.from_config(CFG), model=MODEL)
    tested = [f for f in found if f.status != NOT_TESTED]
    q = stats_multitest.multipletests([f.p for f in tested], method="fdr_bh")[1]
    assert [f.q for f in tested] == pytest.approx(list(q)) and all(f.q is None for f in found if f not in tested)
    first = findings.render(found, "r.html").splitlines()[0]
    assert f"{sum(q < 0.05)} of {len(tested)} tested lines at Benjamini-Hochberg q < 0.05" in first


def test_right_direction_without_significance_prints_its_minimum_detectable_effect(results):
    rag, in_context = _sort_rows(SORT_RIGHT["in_context"]), _sort_rows(SORT_RIGHT["in_context"])
    rag.loc[[3, 7, 11, 15, 19], "correct"] = False  # RAG misses one item in excerpts 0-4
    in_context.loc[[23, 27, 31], "correct"] = False  # in context misses one in excerpts 5-7
    _write(results, "sort/evaluate/base_model/rag.parquet", rag)
    _write(results, "sort/evaluate/base_model/in_context.parquet", in_context)
    found = findings.collect(results, FindingsSettings.from_config(CFG), model=MODEL)
    f = _by_claim(found)[CLAIMS[36]]
    # 8 excerpts differ (5 of them for in context), 12 tie: exactly, p = 1 - C(8, 4) / 2^8 = 0.727 and
    # the smallest p is 2 / 2^8; 2^20 sign patterns: Monte Carlo over 999 of them
    # 20 excerpts detect about 0.1 accuracy at 80% power, above the smallest effect of interest (0.05)
    assert f.status == UNDERPOWERED and f.p == pytest.approx(0.727, abs=0.05) and f.effect == pytest.approx(2 / 80)
    assert f.min_p == pytest.approx(2 / 2**8)
    per_excerpt = np.r_[np.full(5, 0.25), np.full(3, -0.25), np.zeros(12)]
    se = stats.bootstrap_difference(per_excerpt, seed=0, n_resamples=500, confidence=0.95)["se"]
    assert f.mde == pytest.approx(2.8016 * se, rel=0.3)  # (z 0.975 + z 0.8) SE; another bootstrap stream
    line = next(line for line in findings.render(found, "r.html").splitlines() if CLAIMS[36] in line)
    assert line.startswith("[underpowered] SORT: RAG below in-context memory — effect +0.025 accuracy, 95% CI [")
    assert f"MDE {f.mde:.2g} at 80% power" in line and f"p = {f.p:.2g}" in line and "n 20 excerpts (80 values)" in line


def test_no_difference_needs_equivalence(results):
    # books right on 1 more item in 3 of 20 excerpts: no significant difference, but Tango's 90%
    # interval passes the margin
    books = _sort_rows(2, condition="baseline")
    books.loc[[2, 6, 10], "correct"] = True
    _write(results, "sort/parametric/books/evaluate/epoch-1.parquet", books)
    f = _by_claim(findings.collect(results, FindingsSettings.from_config(CFG), model=MODEL))[CLAIMS[38]]
    assert f.status == INCONCLUSIVE and f.margin == 0.05 and f.p >= 0.05
    assert "Tango score interval 90%" in f.test and f.unit == "excerpt"


def test_a_design_that_cannot_reach_alpha_is_not_tested(results):
    split = json.loads((results / "fictionalqa/splits/fictsheets.json").read_text())
    split["val_documents"] = split["val_documents"][:2]  # 2 validation fictsheets: smallest p 0.5
    write_json(results / "fictionalqa/splits/fictsheets.json", split)
    # identical correctness on only 24 items: even full agreement cannot show equivalence within 0.05
    few = _sort_rows(2, condition="baseline").head(24)
    for run in ("books", "instructions"):
        _write(results, f"sort/parametric/{run}/evaluate/epoch-1.parquet", few)
    found = _by_claim(findings.collect(results, FindingsSettings.from_config(CFG), model=MODEL))
    f = found[CLAIMS[5]]
    assert f.status == NOT_TESTED and "not testable with 2 fictsheets" in f.detail and "0.5" in f.detail
    f = found[CLAIMS[38]]
    assert f.status == NOT_TESTED and "6 excerpts and 24 pairs" in f.detail and "full agreement" in f.detail
    # results/findings_design.csv: what the design can show, before the data
    design = findings.design_table(list(found.values())).set_index("claim")
    assert sorted(design.reset_index().columns) == sorted(findings.DESIGN_COLUMNS)
    assert design.loc[CLAIMS[5], ["unit", "n_clusters", "min_p", "testable"]].tolist() == ["fictsheet", 2, 0.5, False]
    assert not design.loc[CLAIMS[38], "testable"] and design.loc[CLAIMS[38], "min_p"] >= 0.05
    assert design.loc[CLAIMS[35], "testable"] and design.loc[CLAIMS[35], "unit"] == "excerpt"


def test_absent_tables_and_studies_switched_off_are_not_tested(tmp_path, results):
    found = findings.collect(tmp_path / "nothing", FindingsSettings.from_config(CFG), model=MODEL)
    assert {f.status for f in found} == {NOT_TESTED}
    assert all(f.detail.startswith("no ") and f.p is None for f in found)

    cfg = copy.deepcopy(CFG)
    cfg["finetune"].update(runs=["doc"], control=False)
    cfg["sort"]["parametric"]["enabled"] = False
    cfg["sort"]["conditions"] = ["baseline", "in_context"]
    found = findings.collect(results, FindingsSettings.from_config(cfg), model=MODEL)
    by_claim = {f.claim: f for f in found}
    assert by_claim[CLAIMS[0]].status == SUPPORTED
    untested = {f.claim.split(" (")[0]: f.detail for f in found if f.status == NOT_TESTED}
    assert "finetune.control" in untested["MCQ-4 accuracy on trained questions above the webtext-only control"]
    assert "fictsheets run" in untested["Fictsheets: training-fictsheet loss falls"]
    assert "event run" in untested["Event improves validation loss least"]
    assert "sort.conditions" in untested["RAG below in-context memory"]
    assert "sort.parametric.enabled" in untested["fine-tuning on the books lowers segment nll"]


def test_grounding_rows_of_several_models_need_the_model_named(results):
    _rewrite(results, "grounding/rows.parquet", lambda f: pd.concat([f, f.assign(model="other")]))
    with pytest.raises(ValueError, match=r"the grounding rows hold 2 models; name the base model \(model=\.\.\.\)"):
        findings.collect(results, FindingsSettings.from_config(CFG))
    assert (
        _by_claim(findings.collect(results, FindingsSettings.from_config(CFG), model=MODEL))[CLAIMS[50]].status
        == SUPPORTED
    )


def test_records_carry_every_field_for_every_claim(results):
    found = findings.collect(results, FindingsSettings.from_config(CFG), model=MODEL)
    found.append(findings.Finding("SORT", "a claim", NOT_TESTED, "no table"))
    records = json.loads(json.dumps(findings.to_records(found)))
    keys = {"claim", "status", "effect", "ci_low", "ci_high", "n", "p", "alpha", "test", "source"}
    keys |= {"unit", "n_clusters", "scale", "claim_id", "quote", "confidence"}
    assert all("seeds" in record for record in records)
    assert all(keys <= record.keys() for record in records)
    decided = [record for record in records if record["effect"] is not None]
    assert len(decided) == 49 and all(record[key] is not None for record in decided for key in keys)
    # the figure of the run each line is read from, the reference model's where the claim is of one
    assert records[0]["figure"] == "figures/fictionalqa/small/fig3.png"
    assert {r["figure"] for r in records if r["claim_id"] == "sort.in_context_falls_after_finetuning"} == {None}
    assert records[-1]["effect"] is None and records[-1]["status"] == NOT_TESTED
    assert list(findings.to_frame(found).columns) == list(records[0])
    text = findings.render(found, "results/report.html").splitlines()
    assert len(text) == 1 + len(found) and text[-1] == "[not tested] SORT: a claim — no table"
    assert text[1].startswith(f"[supported] FictionalQA: {CLAIMS[0]} — effect +")
    assert text[1].endswith("(Kirchenbauer et al. (2026) Sec. 5, Figs. 3-4)")


def test_model_size_is_a_trend_over_sizes_on_both_splits(results):
    found = _by_claim(findings.collect(results, FindingsSettings.from_config(CFG), model=MODEL))
    # every event orders the three models by size (the larger keep 0.9 and 0.8 of the reference
    # model's training-document loss): Spearman's rho 1 in each of the 14 events, Page's L at its extreme
    for claim, run in ((CLAIMS[9], "doc"), (CLAIMS[10], "event")):
        f = found[claim]
        assert f.effect == pytest.approx(1.0) and f.unit == "event" and f.scale == "Spearman rho"
        assert f.n == len(SPLITS[run]["train_documents"]) and "Page's L" in f.test and "Holm over 2" in f.test
        assert "steps 2, 4" in f.detail and "small (1,000 parameters)" in f.detail
    events = len({d[:3] for d in SPLITS["event"]["train_documents"]})
    # every block in size order is the one arrangement of the (3!)^n that gives the largest L: the exact
    # one-sided p is 1 / 6^n, two-sided twice that; the larger p of Holm's two keeps its own value
    assert found[CLAIMS[10]].p == pytest.approx(2 / 6**events, rel=1e-9)
    # the checkpoints inside the fiction warm-up have seen no fiction: they cannot show fitting speed
    late = copy.deepcopy(CFG)
    late["finetune"]["fiction_warmup_steps"] = LAST
    line = _by_claim(findings.collect(results, FindingsSettings.from_config(late), model=MODEL))[
        "Larger base models fit the training documents faster"
    ]
    assert line.status == NOT_TESTED and "no checkpoint after the fiction warm-up" in line.detail
    two = {**CFG, "finetune": {**CFG["finetune"], "models": {"small": "base", "mid": {"source": "tiny_random"}}}}
    line = _by_claim(findings.collect(results, FindingsSettings.from_config(two), model=MODEL))[
        "Larger base models fit the training documents faster"
    ]
    assert line.status == NOT_TESTED and "2 base model(s) in finetune.models (small, mid)" in line.detail
    assert "needs at least three" in line.detail


def test_model_size_reads_only_the_splits_every_model_trains(results):
    """A base model that trains no Event run (its finetune.models entry names fewer runs,
    knowlab.layout.model_runs): the size trend is decided on the Doc split alone, the Event line is gone."""
    shutil.rmtree(results / "fictionalqa" / "mid" / "evaluate" / "event")
    found = _by_claim(findings.collect(results, FindingsSettings.from_config(CFG), model=MODEL))
    assert CLAIMS[9] in found and CLAIMS[10] not in found
    assert found[CLAIMS[9]].effect == pytest.approx(1.0) and "Holm" not in found[CLAIMS[9]].test


# ------------------------------------------------------------------------------ training seeds

SEEDS = (1, 2, 3)
# what the replicates of the seeds after the first change: every validation document's loss moves
# by the seed's shift (so the seeds' effects on claims 1-2 are the first seed's plus it), and the
# Doc run of seed 2 answers no MCQ question right
VAL_SHIFT = {2: 0.05, 3: -0.03}


def _replicates(root):
    """Every run of every base model again as the runs of training seeds 2 and 3 (``doc.seed-2``)."""
    runs = {"small": [*SPLITS, "control"], **{model: ["doc", "event"] for model in KEEP}}
    for model, names in runs.items():
        for run in names:
            for step in STEPS[1:]:
                items = pd.read_parquet(root / f"fictionalqa/{model}/evaluate/{run}/step-{step}.parquet")
                for seed in SEEDS[1:]:
                    copy_ = items.copy()
                    if run in SPLITS and run != "fictsheets":
                        val = (copy_["suite"] == "fiction_doc") & copy_["item_id"].isin(SPLITS[run]["val_documents"])
                        copy_.loc[val, "loss"] += VAL_SHIFT[seed]
                    if run == "doc" and seed == 2:
                        copy_ = copy_.assign(acc=copy_["acc"].where(copy_["suite"] != "mcq4", 0.0))
                    _write(root, f"fictionalqa/{model}/evaluate/{run}.seed-{seed}/step-{step}.parquet", copy_)


def test_training_seeds_are_the_replicates_of_a_claim_about_trained_models(results):
    from scipy.stats import t as student_t

    _replicates(results)
    cfg = {**CFG, "finetune": {**CFG["finetune"], "seeds": list(SEEDS)}}
    found = findings.collect(results, FindingsSettings.from_config(cfg), model=MODEL)
    by_claim = _by_claim(found)
    one_seed = _by_claim(findings.collect(results, FindingsSettings.from_config(CFG), model=MODEL))
    # the Event split's loss gap: each seed's effect is the first seed's plus its shift; the seeds
    # agree, the t-test over them (2 degrees of freedom) rejects, and the claim stays supported
    f, first = by_claim[CLAIMS[1]], one_seed[CLAIMS[1]]
    effects = first.effect + np.array([0.0, VAL_SHIFT[2], VAL_SHIFT[3]])
    t = effects.mean() / (effects.std(ddof=1) / np.sqrt(3))
    seed_p = 2 * student_t.sf(abs(t), df=2)
    assert f.seeds == 3 and first.seeds == 1 and f.status == SUPPORTED
    assert f.effect == pytest.approx(effects.mean()) and f.p >= seed_p
    assert f"t-test over the seeds' effects p = {seed_p:.2g}" in f.test and "interval over seeds and units" in f.test
    assert f"effect per training seed: 1 {effects[0]:+.3g}, 2 {effects[1]:+.3g}" in f.detail
    # Doc's MCQ gain over the control: seeds 1 and 3 give the first seed's, seed 2 minus the control's
    # accuracy (Doc answers none right).  Averaged over the
    # seeds every event is still above the control (the unit test alone rejects), but the seeds do
    # not agree: not significant, with an interval that holds the seeds' spread; 3 seeds (t on 2 df) detect
    # far more than the smallest effect of interest, so the word is underpowered
    f, first = by_claim[CLAIMS[2]], one_seed[CLAIMS[2]]
    assert first.status == SUPPORTED and f.status == UNDERPOWERED and f.seeds == 3
    questions = SPLITS["doc"]["train_questions"]
    control = _event_means(pd.Series({q: float(QUESTIONS.index(q) % 8 < RIGHT["control"]) for q in questions}))
    assert f.effect == pytest.approx((2 * first.effect - control.mean()) / 3) and f.ci_low < 0 < f.ci_high
    assert f.ci_high - f.ci_low > 2 * (first.ci_high - first.ci_low)
    # the claims of untrained models have no seeds; SORT's parametric runs train with one
    assert by_claim[CLAIMS[35]].seeds is None and by_claim[CLAIMS[37]].seeds == 1
    assert findings.design_table(found)["seeds"].tolist()[:3] == [3, 3, 3]


# ------------------------------------------------------------------------------ the catalogue


def test_the_catalogue_names_every_line_and_docs_claims_is_generated_from_it(results):
    ids = [entry.id for entry in findings.CLAIMS]
    assert len(set(ids)) == len(ids) and all(entry.quote and entry.source for entry in findings.CLAIMS)
    found = findings.collect(results, FindingsSettings.from_config(CFG), model=MODEL)
    by_id = {entry.id: entry for entry in findings.CLAIMS}
    # every line carries its entry's id and the paper's words; every entry gives at least one line
    assert all(f.claim_id in by_id and f.quote == by_id[f.claim_id].quote for f in found)
    assert {f.claim_id for f in found} == set(ids)
    assert found[-1].claim_id == "grounding.low_popularity_above_high" and found[-1].study == "Grounding (fiction)"
    # docs/claims.md: the catalogue as it is now, with the default run's statuses it records
    text = (Path(__file__).resolve().parents[1] / "docs" / "claims.md").read_text(encoding="utf-8")
    recorded = dict(re.findall(r"^### `([^`]+)`.*?^- On the default: (.*?)$", text, flags=re.M | re.S))
    assert set(recorded) == set(ids) and "not measured" not in recorded.values(), "docs/claims.md: no default run"
    stale = "docs/claims.md is stale: python -m knowlab.findings --default results/findings.json > docs/claims.md"
    assert text == findings.claims_markdown(recorded), stale
    # the default's statuses come from its findings.json: each line's status, label and effect or reason
    statuses = findings.default_statuses(findings.to_records(found))
    assert statuses["fqa.train_below_val_loss"].startswith("`supported` (doc: +")
    assert statuses["grounding.single_context_above_multi"] == (
        "`not tested` (fiction: fiction has factor_contexts single only: needs single and multi)"
    )


def test_grounding_precision_below_recall_contradicts_the_claim(results):
    _rewrite(
        results,
        "grounding/rows.parquet",
        lambda f: f.assign(precision=f["recall"] - 0.1, recall=f["precision"]),
    )
    f = _by_claim(findings.collect(results, FindingsSettings.from_config(CFG), model=MODEL))[CLAIMS[49]]
    assert f.status == CONTRADICTED and f.unit == "document" and f.n_clusters == 8 and f.p == pytest.approx(2 / 256)
    assert f.claim_id == "grounding.precision_above_recall" and "over 4 settings" in f.detail


def test_the_claims_of_issue_45_go_against_the_data_built_against_them(results):
    """Exact match on the validation documents, a run's Q&A nll above the control's, a no-context SORT
    accuracy of 1 and the gold contexts best first: each new claim contradicted."""
    for run in ("doc", "event"):
        val = set(SPLITS[run]["val_documents"])

        def on_validation(items, val=val):
            docs = items["suite"] == "fiction_doc"
            return items.assign(em10=np.where(docs, items["item_id"].isin(val).astype(float), items["em10"]))

        def worse_qa(items):
            qa = items["suite"] == "fict_qa_nll"
            return items.assign(loss=np.where(qa, items["loss"] + 2.0, items["loss"]))

        _rewrite(results, f"fictionalqa/small/evaluate/{run}/step-{LAST}.parquet", lambda f: worse_qa(on_validation(f)))
    _write(results, "sort/evaluate/base_model/baseline.parquet", _sort_rows(4, condition="baseline"))
    _best_f1(results, "position_start")
    found = _by_claim(findings.collect(results, FindingsSettings.from_config(CFG), model=MODEL))
    for claim in (CLAIMS[11], CLAIMS[13], CLAIMS[14], CLAIMS[39], CLAIMS[50]):
        assert found[claim].status == CONTRADICTED, (claim, found[claim])
    # the Event split's exact-match comparison is at its 14 events: 1 of C(14, 8) choices is as extreme
    assert found[CLAIMS[12]].unit == "event" and found[CLAIMS[12]].effect == pytest.approx(-1.0)
    assert found[CLAIMS[39]].effect == pytest.approx(0.6 - 1.0) and found[CLAIMS[39]].unit == "excerpt"


def test_the_validation_dip_needs_a_checkpoint_inside_the_training(results):
    """One checkpoint after the warm-up (the last): no period of parallel improvement can be seen."""
    late = copy.deepcopy(CFG)
    late["finetune"]["fiction_warmup_steps"] = 2  # checkpoints 2 and 4: only step 4 is after it
    found = _by_claim(findings.collect(results, FindingsSettings.from_config(late), model=MODEL))
    line = found["validation-document loss improves during training (below step 0 after the warm-up)"]
    assert line.status == NOT_TESTED and "before the last" in line.detail
    # with checkpoints 2 and 4 after a warm-up of 1: Doc's validation documents 3.5 -> 2.5, Event's -> 3.3
    on_time = _by_claim(findings.collect(results, FindingsSettings.from_config(CFG), model=MODEL))
    assert on_time[CLAIMS[15]].effect == pytest.approx(1.0) and on_time[CLAIMS[16]].effect == pytest.approx(0.2)
    assert "at step 2" in on_time[CLAIMS[15]].detail and on_time[CLAIMS[15]].unit == "event"


def test_a_comparison_whose_units_all_tie_is_not_tested(results):
    """Every question the same in both conditions: no unit's difference can move the sign flips' statistic,
    so the smallest p the test can give with these values is 1 (issue 57: the attainable p reads the data),
    and the line says so instead of ``inconclusive``."""
    _rewrite(
        results,
        "grounding/rows.parquet",
        lambda f: f.assign(f1=np.where(f["condition"].isin(["conflict_gold", "original_gold"]), 0.6, f["f1"])),
    )
    found = findings.collect(results, FindingsSettings.from_config(CFG), model=MODEL)
    line = next(line for line in findings.render(found, "r.html").splitlines() if CLAIMS[47] in line)
    assert line.startswith("[not tested]") and "can give is 1, not below alpha 0.05" in line


# --------------------------------------------------------------- the claims added by issue 45

ISSUE_45 = (
    "fqa.val_loss_rises_after",
    "fqa.gap_opens_after_minimum",
    "fqa.held_out_below_trained",
    "fqa.webtext_not_destroyed",
    "fqa.real_qa_no_improvement",
    "fqa.fictsheets_qa_no_gain",
    "fqa.event_transfers_less_qa",
    "fqa.larger_models_transfer_more",
    "sort.accuracy_rises_with_distance",
    "sort.accuracy_falls_with_excerpt_length",
    "sort.longer_segments_better",
    "sort.books_higher_answer_likelihood",
    "sort.in_context_falls_after_finetuning",
    "grounding.single_context_above_multi",
    "grounding.definite_above_free_form",
    "grounding.low_popularity_above_high",
)


def _statuses(results, *ids):
    """Status of every line of the claims ``ids``, by line."""
    found = findings.collect(results, FindingsSettings.from_config(CFG), model=MODEL)
    return {f.claim: f.status for f in found if f.claim_id in ids}


def _mcq(results, run, step, right, model="small"):
    """MCQ-4 of ``run`` at ``step``: ``right(question index)`` says which questions it answers right."""
    _rewrite(
        results,
        f"fictionalqa/{model}/evaluate/{run}/step-{step}.parquet",
        lambda f: f.assign(
            acc=f["acc"].mask(f["suite"] == "mcq4", f["item_id"].map(lambda q: float(right(INDEX.get(q, 0)))))
        ),
    )


def _questions_right(run, side):
    """Right on the questions of ``run``'s ``side`` (train or val) of its split, else as the control."""
    ids = set(SPLITS[run][f"{side}_questions"])
    return lambda k: QUESTIONS[k] in ids or k % 8 < RIGHT["control"]


def _sort_lengths(results, column, lengths, right):
    """SORT in context: the first 5 excerpts of each book of length ``lengths[0]`` (``column``), the
    others ``lengths[1]``; an excerpt of length L right on its first ``right[L]`` bins."""
    rows = _sort_rows(4, condition="in_context")
    length = np.where(rows["item_id"].str.contains(r"\|x00[0-4]\|"), lengths[0], lengths[1])
    rows[column] = length
    rows["correct"] = rows["distance_bin"] < pd.Series(length).map(right)
    _write(results, "sort/evaluate/base_model/in_context.parquet", rows)


def _grounding_factors(results, first_half_f1, second_half_f1):
    """Questions g0-g3 one context, a definite answer, low popularity; g4-g7 the other levels; their
    Original-Gold F1 as given."""

    def change(f):
        first = f["item_id"].str[1:].astype(int) < 4
        f = f.assign(
            factor_contexts=np.where(first, "single", "multi"),
            factor_answer_type=np.where(first, "definite", "free_form"),
            factor_popularity=np.where(first, "low", "high"),
        )
        gold = f["condition"] == "original_gold"
        return f.assign(f1=np.where(gold, np.where(first, first_half_f1, second_half_f1), f["f1"]))

    _rewrite(results, "grounding/rows.parquet", change)


def _sizes_and_lengths(results, claimed):
    """The statuses of the model-size MCQ claim and SORT's two length claims, the tables built for them
    (``claimed``) or against them: the base models right on 4, 5, 6 of every event's 8 questions in
    size order (or 6, 5, 4); longer segments and shorter excerpts right on more bins (or fewer), each
    length contrast in its own folder state."""
    for model, n in zip(("small", "mid", "large"), (4, 5, 6) if claimed else (6, 5, 4)):
        for run in ("doc", "event"):
            _mcq(results, run, LAST, lambda k, n=n: k % 8 < n, model)
    more, fewer = (4, 2) if claimed else (2, 4)
    _sort_lengths(results, "segment_length", (20, 50), {20: fewer, 50: more})
    statuses = _statuses(results, ISSUE_45[7], ISSUE_45[10])
    _sort_lengths(results, "excerpt_length", (250, 1000), {250: more, 1000: fewer})
    return statuses | _statuses(results, ISSUE_45[9])


def test_the_claims_of_issue_45_hold_on_data_built_for_them(results):
    """Each claim of issue 45 supported: as built, or with the tables changed to show it."""
    # the folder as built: the U shape on Doc, webtext and real-world Q&A within 5%, Fictsheets' Q&A
    # the control's, Event's Q&A above Doc's, the books run's higher answer likelihood and lower
    # in-context accuracy
    statuses = _statuses(results, *ISSUE_45[3:7], *ISSUE_45[11:13])
    # Event's validation documents rise at the end too; every run right on its trained questions
    _rewrite(
        results,
        f"fictionalqa/small/evaluate/event/step-{LAST}.parquet",
        lambda f: f.assign(loss=f["loss"] + 0.5 * f["item_id"].isin(SPLITS["event"]["val_documents"])),
    )
    for run in ("doc", "event"):
        _mcq(results, run, LAST, _questions_right(run, "train"))
    # SORT in context right on the far bins; grounding's first four questions above the others
    _write(results, "sort/evaluate/base_model/in_context.parquet", _sort_rows(4, condition="in_context").assign(
        correct=lambda f: f["distance_bin"] >= 1))  # fmt: skip
    _grounding_factors(results, 0.8, 0.4)
    statuses |= _statuses(results, *ISSUE_45[:3], ISSUE_45[8], *ISSUE_45[13:])
    statuses |= _sizes_and_lengths(results, claimed=True)
    # the Event split's 6 held-out events: its line on the rise after the dip cannot reach alpha
    assert {k: v for k, v in statuses.items() if v != SUPPORTED} == {CLAIMS[18]: NOT_TESTED}, statuses
    assert len(statuses) == 24  # the 16 claims' lines: 8 of them one per run


def test_the_claims_of_issue_45_are_contradicted_by_data_built_against_them(results):
    """Each claim of issue 45 contradicted: the tables changed against it."""
    # Doc's validation documents fall at the end (no U shape; Event's already closes its gap)
    _rewrite(
        results,
        f"fictionalqa/small/evaluate/doc/step-{LAST}.parquet",
        lambda f: f.assign(loss=f["loss"] - 1.5 * f["item_id"].isin(SPLITS["doc"]["val_documents"])),
    )

    def harm(items):  # webtext 20% worse, real-world Q&A halved, Fictsheets' and Event's Q&A lower
        scale = {"webtext": 1.2, "real_qa_nll": 0.5}
        items = items.assign(loss=items["loss"] * items["suite"].map(scale).fillna(1.0))
        if items["run"].iloc[0] in ("fictsheets", "event"):
            items = items.assign(loss=items["loss"] - 0.6 * (items["suite"] == "fict_qa_nll"))
        return items

    for run in SPLITS:
        _rewrite(results, f"fictionalqa/small/evaluate/{run}/step-{LAST}.parquet", harm)
    for run in ("doc", "event"):  # right on the held-out questions, not the trained ones
        _mcq(results, run, LAST, _questions_right(run, "val"))
    # the instructions-only run's answers more likely; the base model in context on the near bins
    # only, below the books run after fine-tuning (right on 3)
    _rewrite(
        results, "sort/parametric/instructions/evaluate/epoch-1.parquet", lambda f: f.assign(score=f["score"] + 0.2)
    )
    _write(results, "sort/evaluate/base_model/in_context.parquet", _sort_rows(2, condition="in_context"))
    _grounding_factors(results, 0.4, 0.8)
    statuses = _statuses(results, *ISSUE_45[:7], ISSUE_45[8], *ISSUE_45[11:])
    statuses |= _sizes_and_lengths(results, claimed=False)
    assert len(statuses) == 24  # the 16 claims' lines: 8 of them one per run
    assert {k: v for k, v in statuses.items() if v != CONTRADICTED} == {CLAIMS[18]: NOT_TESTED}, statuses
