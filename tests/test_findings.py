"""knowlab.findings: the status rules at their boundaries, and every claim decided on a small synthetic
results folder in the workflow's formats (built so that each claim is supported, then changed against
it), with p-values from scipy / statsmodels called directly on hand-written tables."""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy.stats import binomtest, mannwhitneyu, wilcoxon
from statsmodels.stats.contingency_tables import mcnemar

from knowlab import findings
from knowlab.core import stats
from knowlab.core.io import write_json
from knowlab.findings import (
    CONTRADICTED,
    INCONCLUSIVE,
    NOT_SIGNIFICANT,
    NOT_TESTED,
    SUPPORTED,
    FindingsSettings,
    decide,
    decide_equivalence,
)

MODEL = "m"
STEPS = (0, 2, 4)
LAST = STEPS[-1]
CFG = {
    "seed": 1,
    "findings": {"alpha": 0.05, "power": 0.8, "equivalence_margin": 0.05},
    "finetune": {
        "runs": ["doc", "event", "fictsheets"],
        "control": True,
        "max_steps": LAST,
        "checkpoint_every": 2,
        # three base models; the first (the reference model) holds every run
        "models": {"small": "base", "mid": {"source": "tiny_random"}, "large": {"source": "tiny_random"}},
    },
    "stats": {"mcnemar_exact_below": 25, "bootstrap_resamples": 200},
    "eval_models": {"base_model": "base"},
    "sort": {
        "conditions": ["baseline", "in_context", "rag", "oracle_rag"],
        "parametric": {"enabled": True, "epochs": 1},
    },
    "grounding": {"datasets": ["fiction"]},
}
DOCS = [f"d{i:02d}" for i in range(40)]
SHEETS = [f"e{i:02d}" for i in range(16)]
QUESTIONS = [f"q{i:03d}" for i in range(120)]
SPLITS = {  # run: (documents, train documents, train questions)
    "doc": ("fictions", DOCS[:20], QUESTIONS[:60]),
    "event": ("fictions", DOCS[:24], QUESTIONS[:70]),
    "fictsheets": ("fictsheets", SHEETS[:10], QUESTIONS[:60]),
}
# questions answered right at the last step (the first n)
CORRECT = {"base_model": 40, "doc": 90, "event": 85, "fictsheets": 50, "control": 40}
# validation-document loss per step: Doc's curve is U-shaped (its minimum at step 2), Event's falls
# a little to the end, so the last step alone would rank them the wrong way round
VAL_LOSS = {"doc": {2: 2.5, 4: 3.4}, "event": {2: 3.3, 4: 3.2}}
SORT_ITEMS = [f"s{i:02d}" for i in range(40)]
# parameters of each base model, and the share of its Doc-split training-document loss the larger
# ones keep beside the reference model at the first checkpoint
SIZES = {"small": 1000, "mid": 2000, "large": 3000}
KEEP = {"mid": 0.9, "large": 0.8}
SORT_CORRECT = {"baseline": 20, "in_context": 36, "rag": 26, "oracle_rag": 30}
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
    "Larger base models fit the training documents faster (Doc split) (mid vs small)",
    "Larger base models fit the training documents faster (Doc split) (large vs mid)",
    "in-context memory above the no-context baseline",
    "RAG below in-context memory",
    "fine-tuning on the books lowers segment nll (vs instructions only)",
    "fine-tuning on the books leaves no-context accuracy unchanged (vs instructions only)",
    "Original-Dist F1 below Original-Gold",
    "Conflict-Dist F1 below Conflict-Gold",
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
        INCONCLUSIVE: 0,
        CONTRADICTED: 0,
        NOT_TESTED: 1,
    }
    assert (
        findings.render(found, "r.html")
        .splitlines()[0]
        .startswith("Headline findings of the three papers on this run: 2 of 3 supported (1 not tested)")
    )


def test_tost_equals_two_one_sided_t_tests():
    rng = np.random.default_rng(0)
    a, b = rng.normal(0, 1, 50), rng.normal(0, 1, 50)
    d = a - b
    from scipy.stats import ttest_1samp

    expected = max(ttest_1samp(d, -0.5, alternative="greater").pvalue, ttest_1samp(d, 0.5, alternative="less").pvalue)
    assert findings.tost(a, b, 0.5) == pytest.approx(expected, rel=1e-9)
    assert findings.tost(np.ones(5), np.ones(5), 0.05) == 0.0  # no spread, inside the margin
    assert findings.tost(np.ones(5), np.zeros(5), 0.05) == 1.0


# --------------------------------------------------------------------------- results folder


def _loss_rows(suite, ids, losses):
    return [
        {"suite": suite, "item_id": i, "loss": loss, "nll_sum": 100 * loss, "n_tokens": 100.0, "acc": np.nan}
        for i, loss in zip(ids, losses)
    ]


def _spread(ids, level, step=0.01):
    return [level + step * k for k in range(len(ids))]


def _items(run, step, docs, sheets, correct):
    rows = _loss_rows("fiction_doc", DOCS, docs) + _loss_rows("fictsheet_doc", SHEETS, sheets)
    rows += [{"suite": "mcq4", "item_id": q, "acc": float(k < correct)} for k, q in enumerate(QUESTIONS)]
    return pd.DataFrame(rows).assign(run=run, step=step)


def _run_items(run, step):
    docs, sheets = _spread(DOCS, 3.5), _spread(SHEETS, 3.5)
    if run in VAL_LOSS:
        train = SPLITS[run][1]
        docs = [2.0 + 0.01 * k if d in train else VAL_LOSS[run][step] + 0.01 * k for k, d in enumerate(DOCS)]
    if run == "fictsheets":
        sheets = [1.0 + 0.03 * k if s in SPLITS[run][1] else 3.8 + 0.02 * k for k, s in enumerate(SHEETS)]
    return _items(run, step, docs, sheets, CORRECT[run])


def _write_models(root, base):
    """The larger base models: the reference model's step-0 rows, and at the first checkpoint its
    Doc-run rows with each training document's loss times the model's KEEP factor."""
    pd.DataFrame({"model": list(SIZES), "source": "test", "n_parameters": list(SIZES.values())}).to_csv(
        root / "fictionalqa/models.csv", index=False
    )
    train = set(SPLITS["doc"][1])
    for model, keep in KEEP.items():
        _write(root, f"fictionalqa/{model}/evaluate/base_model/step-0.parquet", base)
        items = _run_items("doc", STEPS[1])
        scaled = (items["suite"] == "fiction_doc") & items["item_id"].isin(train)
        items.loc[scaled, "loss"] *= keep
        _write(root, f"fictionalqa/{model}/evaluate/doc/step-{STEPS[1]}.parquet", items)


def _write(root, relative, frame):
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    frame.to_parquet(path, index=False)


def _sort_rows(n_right, **columns):
    return pd.DataFrame({"item_id": SORT_ITEMS, "correct": [k < n_right for k in range(len(SORT_ITEMS))], **columns})


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """A results folder where every claim is supported (built once; tests get a copy)."""
    root = tmp_path_factory.mktemp("findings") / "results"
    base = _items("base_model", 0, _spread(DOCS, 3.5), _spread(SHEETS, 3.5), CORRECT["base_model"])
    _write(root, "fictionalqa/small/evaluate/base_model/step-0.parquet", base)
    for run in [*SPLITS, "control"]:
        for step in STEPS[1:]:
            _write(root, f"fictionalqa/small/evaluate/{run}/step-{step}.parquet", _run_items(run, step))
    _write_models(root, base)
    for run, (documents, train, questions) in SPLITS.items():
        ids = DOCS if documents == "fictions" else SHEETS
        split = {
            "split": run,
            "documents": documents,
            "train_documents": train,
            "val_documents": [i for i in ids if i not in train],
            "train_questions": questions,
            "val_questions": [q for q in QUESTIONS if q not in questions],
        }
        write_json(root / f"fictionalqa/splits/{run}.json", split)
    for condition, n_right in SORT_CORRECT.items():
        _write(root, f"sort/evaluate/base_model/{condition}.parquet", _sort_rows(n_right, condition=condition))
    for run, nll in (("books", 3.0), ("instructions", 3.9)):
        _write(root, f"sort/parametric/{run}/evaluate/epoch-1.parquet", _sort_rows(22, condition="baseline"))
        spread = 0.01 * np.arange(len(SORT_ITEMS))
        nll_table = pd.DataFrame({"item_id": SORT_ITEMS, "nll_a": nll + spread, "nll_b": nll - spread})
        _write(root, f"sort/parametric/{run}/evaluate/epoch-1_segment_nll.parquet", nll_table)
    grounding = [
        {
            "dataset": "fiction",
            "model": MODEL,
            "item_id": f"g{k}",
            "condition": condition,
            "f1": f1 + 0.01 * k * is_dist,
        }
        for k in range(8)
        for condition, f1, is_dist in (
            ("original_gold", 0.6, 0),
            ("original_dist", 0.4, 1),
            ("conflict_gold", 0.5, 0),
            ("conflict_dist", 0.3, 1),
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


def test_every_claim_is_supported_where_the_data_show_it(results):
    found = findings.collect(results, FindingsSettings.from_config(CFG), model=MODEL)
    assert [f.claim for f in found] == CLAIMS
    assert [f.status for f in found] == [SUPPORTED] * len(CLAIMS), findings.render(found, "r.html")
    for f in found:  # no supported finding at p >= alpha or with an interval that reaches 0
        assert f.p < f.alpha and f.source and f.test and f.n > 0
        assert (f.ci_low > 0 or f.margin is not None) and f.ci_low <= f.effect <= f.ci_high


def test_effects_and_pvalues_equal_the_tables_by_hand(results):
    found = _by_claim(findings.collect(results, FindingsSettings.from_config(CFG), model=MODEL))
    # at the last step, Doc's 20 validation documents at 3.4 + 0.01 k (k = 20..39) vs 20 training ones at
    # 2.0 + 0.01 k; Event's 16 at 3.2 + 0.01 k (k = 24..39) vs 24 at 2.0 + 0.01 k; Holm over the two runs
    doc_val, doc_train = 3.4 + 0.01 * np.arange(20, 40), 2.0 + 0.01 * np.arange(20)
    event_val, event_train = 3.2 + 0.01 * np.arange(24, 40), 2.0 + 0.01 * np.arange(24)
    assert found[CLAIMS[0]].effect == pytest.approx(1.6) and found[CLAIMS[0]].n == 40
    holm = _holm2(mannwhitneyu(doc_val, doc_train).pvalue, mannwhitneyu(event_val, event_train).pvalue)
    assert [found[claim].p for claim in CLAIMS[:2]] == pytest.approx(holm, rel=1e-12)

    # MCQ-4 vs control on the trained questions: Doc 60 vs 40 right of 60 (20 discordant: exact),
    # Event 70 vs 40 of 70 (30 discordant: chi-square with continuity correction)
    f = found[CLAIMS[2]]
    assert f.effect == pytest.approx(20 / 60) and f.n == 60
    holm = _holm2(binomtest(0, 20, 0.5).pvalue, mcnemar([[40, 30], [0, 0]], exact=False, correction=True).pvalue)
    assert [found[claim].p for claim in CLAIMS[2:4]] == pytest.approx(holm, rel=1e-12)
    assert "exact" in f.test and "chi-square" in found[CLAIMS[3]].test and "Holm over 2" in f.test

    # Fictsheets: 10 training fictsheets from 3.5 + 0.01 k to 1.0 + 0.03 k, paired
    f = found[CLAIMS[4]]
    before, after = 3.5 + 0.01 * np.arange(10), 1.0 + 0.03 * np.arange(10)
    assert f.effect == pytest.approx((before - after).mean())
    assert f.p == pytest.approx(wilcoxon(before, after).pvalue, rel=1e-12) and f.n == 10

    # Event's improvement to its minimum: Doc's validation documents 3.5 -> 2.5 (step 2), Event's 3.5 -> 3.2
    f = found[CLAIMS[8]]
    assert f.effect == pytest.approx(1.0 - 0.3) and "step 2" in f.detail and "(step 4)" in f.detail

    # SORT: in context 36 vs baseline 20 right of 40, 16 discordant one way
    f = found[CLAIMS[11]]
    assert f.effect == pytest.approx(16 / 40) and f.p == pytest.approx(binomtest(0, 16, 0.5).pvalue, rel=1e-12)

    # grounding: every Dist below Gold on 8 questions, Wilcoxon's exact two-sided p = 2 / 2^8
    f = found[CLAIMS[15]]
    assert f.p == pytest.approx(2 / 256) and f.effect == pytest.approx(0.2 - 0.01 * np.arange(8).mean())


def _wrong_on_first_40(items):
    return items.assign(acc=items["acc"].mask((items["suite"] == "mcq4") & (items["item_id"] < "q040"), 0.0))


def test_the_claims_go_against_the_data_built_against_them(results):
    def swap(items):  # Doc's validation documents below its training documents
        docs = items["suite"] == "fiction_doc"
        items.loc[docs, "loss"] = items.loc[docs, "loss"].to_numpy()[::-1]
        return items

    for step in STEPS[1:]:
        _rewrite(results, f"fictionalqa/small/evaluate/doc/step-{step}.parquet", swap)

    def right(items):
        return items.assign(acc=items["acc"].notna().astype(float))

    # the control right on every question, Doc and Event wrong on the first 40: below the control
    _rewrite(results, f"fictionalqa/small/evaluate/control/step-{LAST}.parquet", right)
    for run in ("doc", "event"):
        _rewrite(results, f"fictionalqa/small/evaluate/{run}/step-{LAST}.parquet", _wrong_on_first_40)
    # RAG ties in-context memory; the books run right on 16 more SORT items than instructions only
    _write(results, "sort/evaluate/base_model/rag.parquet", _sort_rows(SORT_CORRECT["in_context"]))
    _write(results, "sort/parametric/books/evaluate/epoch-1.parquet", _sort_rows(38, condition="baseline"))
    # distractors help grounding (Original)
    _rewrite(
        results,
        "grounding/rows.parquet",
        lambda f: f.assign(f1=np.where(f["condition"] == "original_dist", 0.9 + 0.001 * f.index, f["f1"])),
    )
    found = _by_claim(findings.collect(results, FindingsSettings.from_config(CFG), model=MODEL))
    statuses = {claim: found[claim].status for claim in CLAIMS}
    assert statuses[CLAIMS[0]] == CONTRADICTED
    assert statuses[CLAIMS[2]] == statuses[CLAIMS[3]] == CONTRADICTED
    assert statuses[CLAIMS[12]] == INCONCLUSIVE  # a tie
    assert statuses[CLAIMS[14]] == CONTRADICTED  # a significant difference where none is claimed
    assert statuses[CLAIMS[15]] == CONTRADICTED
    assert statuses[CLAIMS[11]] == statuses[CLAIMS[16]] == SUPPORTED  # untouched


def test_right_direction_without_significance_prints_its_minimum_detectable_effect(results):
    _write(results, "sort/evaluate/base_model/rag.parquet", _sort_rows(34))  # 2 discordant: exact p = 0.5
    found = findings.collect(results, FindingsSettings.from_config(CFG), model=MODEL)
    f = _by_claim(found)[CLAIMS[12]]
    assert f.status == NOT_SIGNIFICANT and f.p == pytest.approx(0.5) and f.effect == pytest.approx(0.05)
    se = stats.bootstrap_difference(
        np.r_[np.ones(36), np.zeros(4)], np.r_[np.ones(34), np.zeros(6)], seed=0, n_resamples=500
    )["se"]
    assert f.mde == pytest.approx(2.8016 * se, rel=0.3)  # (z 0.975 + z 0.8) SE; another bootstrap stream
    line = next(line for line in findings.render(found, "r.html").splitlines() if CLAIMS[12] in line)
    assert line.startswith("[not significant] SORT: RAG below in-context memory — effect +0.05 accuracy, 95% CI [")
    assert f"MDE {f.mde:.2g} at 80% power" in line and "p = 0.5" in line and "n 40" in line


def test_no_difference_needs_equivalence(results):
    # books right on 2 more items of 40: inside no test's reach, and the interval passes the margin
    _write(results, "sort/parametric/books/evaluate/epoch-1.parquet", _sort_rows(24, condition="baseline"))
    f = _by_claim(findings.collect(results, FindingsSettings.from_config(CFG), model=MODEL))[CLAIMS[14]]
    assert f.status == INCONCLUSIVE and f.margin == 0.05 and f.ci_high > 0.05
    assert "TOST" in f.test


def test_a_design_that_cannot_reach_alpha_is_not_tested(results):
    cfg = copy.deepcopy(CFG)
    split = json.loads((results / "fictionalqa/splits/fictsheets.json").read_text())
    split["val_documents"] = split["val_documents"][:2]  # 2 validation fictsheets: smallest p 0.5
    write_json(results / "fictionalqa/splits/fictsheets.json", split)
    f = _by_claim(findings.collect(results, FindingsSettings.from_config(cfg), model=MODEL))[CLAIMS[5]]
    assert f.status == NOT_TESTED and "not testable at n 2" in f.detail and "0.5" in f.detail


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
    with pytest.raises(ValueError, match="name the base model"):
        findings.collect(results, FindingsSettings.from_config(CFG))
    assert findings.collect(results, FindingsSettings.from_config(CFG), model=MODEL)[-1].status == SUPPORTED


def test_records_carry_every_field_for_every_claim(results):
    found = findings.collect(results, FindingsSettings.from_config(CFG), model=MODEL)
    found.append(findings.Finding("SORT", "a claim", NOT_TESTED, "no table"))
    records = json.loads(json.dumps(findings.to_records(found)))
    keys = {"claim", "status", "effect", "ci_low", "ci_high", "n", "p", "alpha", "test", "source"}
    assert all(keys <= record.keys() for record in records)
    assert all(record[key] is not None for record in records[:-1] for key in keys)
    assert records[-1]["effect"] is None and records[-1]["status"] == NOT_TESTED
    assert list(findings.to_frame(found).columns) == list(records[0])
    text = findings.render(found, "results/report.html").splitlines()
    assert len(text) == 1 + len(found) and text[-1] == "[not tested] SORT: a claim — no table"
    assert text[1].startswith(f"[supported] FictionalQA: {CLAIMS[0]} — effect +")
    assert text[1].endswith("(Kirchenbauer et al. (2026) Sec. 5, Figs. 3-4)")


def test_model_size_compares_neighbours_in_size_and_needs_three_models(results):
    found = _by_claim(findings.collect(results, FindingsSettings.from_config(CFG), model=MODEL))
    # the reference model keeps (2.0 + 0.01k) / (3.5 + 0.01k) of each training document's step-0 loss
    small = np.array([(2.0 + 0.01 * k) / (3.5 + 0.01 * k) for k in range(20)])
    mid_vs_small, large_vs_mid = found[CLAIMS[9]], found[CLAIMS[10]]
    assert mid_vs_small.effect == pytest.approx(np.mean(small - 0.9 * small))
    assert large_vs_mid.effect == pytest.approx(np.mean(0.9 * small - 0.8 * small))
    assert mid_vs_small.n == 20 and mid_vs_small.unit == "fraction of step-0 loss"
    assert "Wilcoxon signed-rank" in mid_vs_small.test and "Holm over 2" in mid_vs_small.test
    assert "small (1,000 parameters)" in mid_vs_small.detail
    two = {**CFG, "finetune": {**CFG["finetune"], "models": {"small": "base", "mid": {"source": "tiny_random"}}}}
    line = _by_claim(findings.collect(results, FindingsSettings.from_config(two), model=MODEL))[
        "Larger base models fit the training documents faster (Doc split)"
    ]
    assert line.status == NOT_TESTED and "2 base model(s) in finetune.models (small, mid)" in line.detail
    assert "needs at least three" in line.detail
