"""The whole workflow on config/test.yaml (tiny random model), run once as a user runs it
(``workdir``, tests/workflow/conftest.py) and read by every test here: figures, item tables,
statistics, findings, report, provenance; a second run re-runs nothing; a changed result is
flagged and a missing GPU fails clearly (each on its own copy of the run).

Snakemake on other configs and on bad input: test_snakemake_cli.py.
"""

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from knowlab import findings
from knowlab.tooling.compare import difference
from knowlab.tooling.trace import page_name, trace

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.pipeline


RUNS = ("doc", "event", "fictsheets")
# config/test.yaml's base models (finetune.models): the first is the project's base model
MODELS = ("tiny", "tiny-wide")
TESTS_SHOWN = {"mcnemar": "McNemar test", "ttest": "t-test"}  # pair test -> the words in its figure's title
TESTS = tuple(TESTS_SHOWN)
SPLITS = {"Doc split", "Event split", "Fictsheets"}
CONTROL = "Base webtext (control)"
SORT_RUNS = {"fine-tuned on texts + instructions", "fine-tuned on instructions only", "base model (epoch 0)"}
FINETUNE_RUNS = SPLITS | {CONTROL}
# every figure of the run (results/figures/<study>/<name>.png): a title fragment, its panel count, and
# legend entries it must show (config/test.yaml: three splits, the control, two SORT segment lengths)
FIGURES = {
    "fictionalqa/tiny/fig2": ("cf. paper Fig. 2", 2, FINETUNE_RUNS | {"fiction", "webtext"}),
    "fictionalqa/tiny/fig3": ("cf. paper Fig. 3", 2, {"Doc split", "train documents", "val documents"}),
    "fictionalqa/tiny/fig4": (
        "cf. paper Fig. 4",
        2,
        {CONTROL, "Doc split", "Event split", "train documents", "val documents"},
    ),
    "fictionalqa/tiny/fig5": ("cf. paper Fig. 5", 2, {CONTROL, "Fictsheets", "Doc split"}),
    "fictionalqa/tiny/fig6": ("cf. paper Fig. 6", 2, FINETUNE_RUNS),
    "fictionalqa/tiny/fig7": ("cf. paper Fig. 7", 2, FINETUNE_RUNS | {"95% bootstrap CI", "chance (1/4)"}),
    "fictionalqa/tiny/fig8": (
        "cf. paper Fig. 8",
        3,
        FINETUNE_RUNS | {"questions on train documents", "questions on val documents"},
    ),
    "fictionalqa/tiny/fig10_11": ("cf. paper Fig. 11", 2, {CONTROL, "95% bootstrap CI", "chance (1/4, 1/10)"}),
    "sort/fig3a": ("cf. paper Fig. 3a", 1, {"L_S = 10 words", "L_S = 20 words", "chance (0.5)"}),
    "sort/fig3b": ("cf. paper Fig. 3b", 1, {"L_E = 120 words", "chance (0.5)"}),
    "sort/fig4": ("cf. paper Fig. 4", 2, {"in-context", "no memory (baseline)", "RAG memory (panel condition)"}),
    "sort/fig10": ("cf. paper Fig. 10", 1, {"L_S = 10 words", "L_S = 20 words"}),
    "sort/fig12": ("cf. paper Fig. 12", 1, SORT_RUNS),
    "sort/fig13": ("cf. paper Fig. 13", 2, SORT_RUNS | {"chance (0.5)"}),
    "sort/fig14": ("McNemar's test", 1, set()),
    "sort/fig15": ("paired t-test", 1, set()),
    "sort/fig16": ("cf. paper Fig. 16", 2, SORT_RUNS),
    "sort/mcnemar": ("McNemar's test", 1, set()),
    "sort/ttest": ("paired t-test", 1, set()),
    # the probes: tiny's Doc run and control (finetune.probe_models [tiny], probe_runs [doc, control])
    "sort/fiction/tiny/fiction_sort": (
        "SORT on FictionalQA documents",
        2,
        {"Doc split", CONTROL, "train documents", "val documents"},
    ),
    "grounding/fig3c": ("factors", 1, {"fiction / tiny random Llama (test)"}),
    "grounding/fig4": ("distractor contexts lengthen the input", 1, {"fiction / tiny random Llama (test)"}),
    "grounding/fig5": ("reduce grounding F1", 1, set()),
    "grounding/fig15_16": ("Precision", 4, {"precision", "recall"}),
    "grounding/position": ("position of the gold contexts", 1, {"start", "random"}),
    "grounding/finetune/tiny": ("across fine-tuning", 5, {"Doc split", "control (webtext only)"}),
}
# the figures across the base models: one series per model (its legend entry), each model's control
FIGURES |= {
    f"fictionalqa/across_models/{family}": (f"cf. paper Fig. {number}", n_panels, set(MODELS))
    for family, number, n_panels in (
        ("fig4", 4, 2),
        ("fig7", 7, 1),
        ("fig9", 9, 2),
        ("fig10", 10, 3),
        ("fig10_11", 11, 2),
    )
}
# every FictionalQA figure of the first model, drawn for the second too, with its Doc run alone: config/test.yaml
# trains the other splits and the control on the first model only (finetune.models.tiny-wide.finetune: runs
# [doc], control false); SORT and grounding probe the first model's checkpoints only (finetune.probe_models)
FIGURES |= {
    name.replace("/tiny/", "/tiny-wide/"): (
        title,
        1 if name.endswith("/fig8") else n_panels,  # fig8: a panel per run the model trains
        (legend - FINETUNE_RUNS) | ({"Doc split"} & legend),
    )
    for name, (title, n_panels, legend) in FIGURES.items()
    if name.startswith("fictionalqa/tiny/")
}
PROBES = ("sort/fiction/{model}", "grounding/finetune/{model}")


def test_every_figure_shows_its_panels_axes_and_series(workdir):
    """Each figure as its PNG describes it (knowlab.core.plotting.read_description): title, panel
    count, legend entries, a y axis on every panel, something drawn on every panel; the p-value
    matrices of every run, suite and test: the run vs itself and vs the control, one matrix each."""
    from knowlab.core.plotting import read_description

    figures = workdir / "results" / "figures"
    for name, (title, n_panels, legend) in FIGURES.items():
        assert (figures / f"{name}.pdf").read_bytes().startswith(b"%PDF"), name
        shown = read_description(figures / f"{name}.png")
        assert title in shown["title"] and len(shown["panels"]) == n_panels, (name, shown["title"])
        assert legend <= set(shown["legend"]), (name, legend - set(shown["legend"]))
        assert shown["panels"][0]["ylabel"], name
        # something drawn on every panel, or (a split the model does not train: tiny-wide's) its reason
        drawn = [p["lines"] + p["bands"] + p["images"] or any("run of this model" in t for t in p["texts"])
                 for p in shown["panels"]]  # fmt: skip
        assert all(drawn) or name in ("grounding/fig3c", "grounding/position"), (name, drawn)  # bars: patches
    names = {"doc": "Doc split", "event": "Event split", "fictsheets": "Fictsheets"}
    for run in RUNS:
        for suite, label in (("mcq4", "MCQ-4"),):  # config/test.yaml: stats.suites [mcq4]
            for test, test_name in TESTS_SHOWN.items():
                path = figures / "fictionalqa" / "tiny" / "stats" / run / f"{suite}_{test}.png"
                shown = read_description(path)
                assert shown["title"].startswith(f"{names[run]}: {label}") and test_name in shown["title"], path
                assert [p["title"] for p in shown["panels"]] == [
                    f"{names[run]}: checkpoint vs checkpoint",
                    f"{names[run]} vs control at matched steps",
                ]
                assert [p["images"] for p in shown["panels"]] == [1, 1]
                assert (path.with_suffix(".pdf")).read_bytes().startswith(b"%PDF")


def test_a_base_model_trains_only_its_own_runs(workdir):
    """finetune.models.tiny-wide.finetune: runs [doc], control false (knowlab.layout.model_runs): tiny-wide
    trains and evaluates Doc alone, and its summary has no other run's rows (the figures across models
    show both models: test_every_figure_shows_its_panels_axes_and_series)."""
    results = workdir / "results" / "fictionalqa"
    assert [p.name for p in (results / "tiny-wide" / "finetune").iterdir()] == ["doc"]
    assert sorted(p.name for p in (results / "tiny" / "finetune").iterdir()) == sorted([*RUNS, "control"])
    assert sorted(p.name for p in (results / "tiny-wide" / "evaluate").iterdir() if p.is_dir()) == ["base_model", "doc"]
    assert set(pd.read_csv(results / "tiny-wide" / "summary.csv")["run"]) == {"doc"}
    assert set(pd.read_csv(results / "tiny" / "summary.csv")["run"]) == {*RUNS, "control"}


def test_only_the_probed_models_checkpoints_are_probed(workdir):
    """finetune.probe_models [tiny], probe_runs [doc, control]: SORT and grounding probe tiny's base model,
    Doc run and control; nothing of theirs exists for tiny's other runs, nor for tiny-wide, whose FictionalQA
    results are complete."""
    results = workdir / "results"
    for study in PROBES:
        assert any((results / study.format(model="tiny")).rglob("*.parquet")), study
        probed = {p.parent.name for p in (results / study.format(model="tiny")).rglob("step-*.*")}
        assert probed == {"base_model", "doc", "control"}, (study, probed)
        assert not list(results.glob(f"{study.format(model='tiny-wide')}*")), study
        assert not list((results / "figures").glob(f"{study.format(model='tiny-wide')}*")), study
    assert (results / "fictionalqa" / "tiny-wide" / "summary.csv").exists()


def test_item_tables_and_statistics(workdir):
    items = pd.read_parquet(workdir / "results" / "fictionalqa" / "tiny" / "evaluate" / "doc" / "step-6.parquet")
    suites = {"fiction_doc", "webtext", "fict_qa_nll", "real_qa_nll", "mcq4", "mcq10"}
    assert set(items["suite"]) == suites  # evaluate.other_documents: false, its own split's documents
    for run, documents in (("control", {"fiction_doc", "fictsheet_doc"}), ("fictsheets", {"fictsheet_doc"})):
        table = pd.read_parquet(workdir / "results" / "fictionalqa" / "tiny" / "evaluate" / run / "step-6.parquet")
        assert set(table["suite"]) == documents | suites - {"fiction_doc"}, run
    assert {"item_id", "run", "step", "checkpoint", "loss", "em10", "em25", "em50", "acc", "acc_norm"} <= set(
        items.columns
    )
    assert (items["run"] == "doc").all() and (items["step"] == 6).all()
    assert items.groupby("suite")["item_id"].apply(lambda s: s.is_unique).all()
    for test, n_pairs in (("mcnemar", 2 * 2 + 2), ("ttest", 2 * 2 + 2)):
        table = pd.read_parquet(workdir / "results" / "fictionalqa" / "tiny" / "stats" / "doc" / f"mcq4_{test}.parquet")
        assert len(table) == n_pairs  # checkpoint matrix + matched steps vs control
        assert table["pvalue"].between(0, 1).all() and (table["correction"] == "holm").all()
    log = pd.read_parquet(workdir / "results" / "fictionalqa" / "tiny" / "finetune" / "doc" / "train_log.parquet")
    assert list(log["step"]) == [1, 2, 3, 4, 5, 6]
    assert log["fiction_samples_seen"].is_monotonic_increasing
    assert (log["fiction_samples_seen"] + log["webtext_samples_seen"] == log["step"] * 4).all()
    # the same records, live, in TensorBoard (the default tracking backend)
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(workdir / "results" / "logs" / "training" / "fictionalqa" / "tiny" / "doc"))
    events.Reload()
    curve = events.Scalars("train/loss")
    assert [e.step for e in curve] == list(log["step"])
    assert [e.value for e in curve] == pytest.approx(list(log["loss"]), rel=1e-6)
    control = pd.read_parquet(
        workdir / "results" / "fictionalqa" / "tiny" / "finetune" / "control" / "train_log.parquet"
    )
    assert (control["fiction_samples_seen"] == 0).all()
    sheets = pd.read_parquet(
        workdir / "results" / "fictionalqa" / "tiny" / "finetune" / "fictsheets" / "train_log.parquet"
    )
    assert sheets["fiction_epochs"].iloc[-1] > log["fiction_epochs"].iloc[-1]  # 4 fictsheets epoch fastest


def test_findings_record_effect_interval_and_status_for_every_claim(workdir):
    """results/findings.json: one record per comparison of every claim (knowlab.findings), each with
    its effect, 95% interval, n, p and a status word; no ``supported`` at p >= alpha or with an
    interval that reaches 0; results/findings.txt is the same findings, one line each."""
    records = json.loads((workdir / "results" / "findings.json").read_text())
    statuses = set(findings.STATUSES)
    # every record names the analysis plan it was decided under
    plan = hashlib.sha256((workdir / "results" / "analysis_plan.json").read_bytes()).hexdigest()
    assert {r["plan_sha256"] for r in records} == {plan}
    assert all((r["q"] is None) == (r["status"] == "not tested") for r in records)
    keys = ("claim", "status", "effect", "ci_low", "ci_high", "n", "p", "alpha", "test", "source")
    keys += ("unit", "n_clusters", "scale", "seeds", "claim_id", "quote", "confidence", "figure")
    # test.yaml: Doc, Event, Fictsheets, the control, two base models, SORT, one grounding set (9 claims)
    assert len(records) == 49 and {r["claim_id"] for r in records} == {entry.id for entry in findings.CLAIMS}
    # every line names a figure or table this run wrote, but for the claims the papers state in words
    named = {r["figure"] for r in records if r["figure"]}
    assert len(named) >= 10 and all((workdir / "results" / figure).is_file() for figure in named), named
    for record in records:
        assert all(key in record for key in keys) and record["status"] in statuses, record
        if record["effect"] is not None:
            assert record["ci_low"] <= record["effect"] <= record["ci_high"] and record["n"] > 0
            assert record["unit"] and 0 < record["n_clusters"] <= record["n"], record
            assert 0 <= record["p"] <= 1 and record["alpha"] == 0.05
        if record["status"] == "supported" and record["margin"] is None:
            assert record["p"] < record["alpha"] and (record["ci_low"] > 0), record
    design = pd.read_csv(workdir / "results" / "findings_design.csv")
    assert design["claim"].tolist() == [r["claim"] for r in records]
    assert (design["testable"] == [r["min_p"] is not None and r["min_p"] < r["alpha"] for r in records]).all()
    lines = (workdir / "results" / "findings.txt").read_text().splitlines()
    assert [line.split("] ")[0][1:] for line in lines[1:]] == [r["status"] for r in records]
    # the design planner (make plan), from the config and the corpus alone, gives every line's unit, units,
    # values and seeds, and a smallest p the run's reaches unless its values tie (issue 56)
    from knowlab.config import load_config
    from knowlab.findings.planner import disagreements, plan_design

    plan = plan_design(load_config(ROOT / "config" / "test.yaml"), ROOT)
    planned = plan.design()
    assert disagreements(planned, design) == []
    assert (planned["n_clusters"].notna() == design["n_clusters"].notna()).all()
    # ... and each fiction run's exposure by each checkpoint is its training log's (the same sampler draws)
    model = next(iter(load_config(ROOT / "config" / "test.yaml")["finetune"]["models"]))
    for row in plan.exposure.itertuples():
        log = pd.read_parquet(workdir / "results" / "fictionalqa" / model / "finetune" / row.run / "train_log.parquet")
        assert log.loc[log["step"] == row.step, "fiction_epochs"].item() == pytest.approx(row.epochs), row
    # the shipped corpus's 6 events, 4 of them trained: no choice of events is rarer than 1 in C(6, 4) = 15,
    # so the Event split's train-vs-validation claim cannot reach alpha at the event
    event = next(r for r in records if r["claim"] == "training-document loss below validation-document loss (event)")
    assert event["status"] == "not tested" and event["unit"] == "event" and event["n_clusters"] == 6
    assert "0.0667" in event["detail"]
    # two base models: the model-size trend is not tested, and says why
    size = next(r for r in records if r["claim"].startswith("Larger base models fit the training documents faster"))
    assert size["status"] == "not tested" and size["effect"] is None
    assert (
        "2 base model(s) in finetune.models (tiny, tiny-wide)" in size["detail"] and "at least three" in size["detail"]
    )


def test_the_analysis_plan_is_written_before_any_other_job(workdir):
    """results/analysis_plan.json (knowlab.findings.plan) comes from the catalogue and the config alone, and the
    run starts it first (its priority), so no model job runs before the plan its findings cite exists."""
    first_log = sorted((workdir / ".snakemake" / "log").glob("*.snakemake.log"))[0]
    # the jobs Snakemake started before the first one finished: its first batch, which it selects by
    # priority (the order it prints the batch in is not the order it chose them)
    first_batch = first_log.read_text().split("Finished jobid")[0]
    started = re.findall(r"^(?:local)?rule (\w+):$", first_batch, flags=re.M)
    assert "analysis_plan" in started, started
    plan = json.loads((workdir / "results" / "analysis_plan.json").read_text())
    assert [c["claim_id"] for c in plan["claims"]] == [entry.id for entry in findings.CLAIMS]
    assert plan["deviations"] == [] and plan["margins"]["equivalence"]["value"] == 0.05


def test_sort_items_passages_prompt_and_rows(workdir):
    from knowlab.sort.build import check_items
    from knowlab.sort.steps.data import books_from_records

    sort = workdir / "results" / "sort"
    books = books_from_records([json.loads(line) for line in (sort / "books.jsonl").read_text().splitlines()])
    items = [json.loads(line) for line in (sort / "items.jsonl").read_text().splitlines()]
    check_items(items, books)  # bins, boundaries, overlap, balance
    assert {i["split"] for i in items} == {"validation", "test"}
    retrieval = pd.read_parquet(sort / "retrieval.parquet")
    assert set(retrieval["condition"]) == {"rag", "oracle_rag"}
    assert retrieval["recall"].isin([0, 0.5, 1]).all()
    assert (retrieval.loc[retrieval.condition == "oracle_rag", "recall"] == 1).all()
    selection = json.loads((sort / "prompt" / "base_model" / "selection.json").read_text())
    assert len(selection["table"]) == 12 and selection["template_id"].startswith("t")
    rag_selection = json.loads((sort / "prompt" / "base_model" / "rag_selection.json").read_text())
    assert [r["template_id"] for r in rag_selection["table"]] == [
        f"{selection['template_id']}+r{k:02d}" for k in range(1, 11)
    ]
    assert rag_selection["template_id"] == f"{selection['template_id']}+{rag_selection['rag_reading_id']}"
    rag_rows = pd.read_parquet(sort / "prompt" / "base_model" / "rag_validation.parquet")
    assert len(rag_rows) == 10 * sum(i["split"] == "validation" for i in items) and (rag_rows.condition == "rag").all()
    test_ids = {i["item_id"] for i in items if i["split"] == "test"}
    for condition in ("baseline", "in_context", "rag", "oracle_rag"):
        rows = pd.read_parquet(sort / "evaluate" / "base_model" / f"{condition}.parquet")
        assert set(rows["item_id"]) == test_ids and (rows["condition"] == condition).all()
        chosen = rag_selection if condition in ("rag", "oracle_rag") else selection
        assert (rows["template_id"] == chosen["template_id"]).all()
        assert (rows["score"] <= 0).all() and rows["prediction"].isin(["A", "B"]).all()
        assert (rows["correct"] == (rows["prediction"] == rows["answer"])).all()


def test_sort_pvalues_recompute_and_fiction_sides(workdir, own_choice):
    """Every saved SORT p-value recomputes from the saved item rows (statsmodels / scipy directly)."""
    from knowlab.core.stats import recompute_pvalue

    sort = workdir / "results" / "sort"
    base_rows = pd.concat(map(pd.read_parquet, (sort / "evaluate" / "base_model").glob("*.parquet")))
    fiction_rows = pd.read_parquet(sort / "fiction" / "tiny" / "rows.parquet")
    assert set(fiction_rows["run"]) == {"doc", "control"}  # finetune.probe_runs
    assert set(fiction_rows.loc[fiction_rows.run != "control", "side"]) == {"train", "val"}
    assert fiction_rows.loc[fiction_rows.run == "control", "side"].isna().all()
    tables = [(base_rows, pd.read_parquet(p)) for p in (sort / "stats" / "base_model").glob("*.parquet")]
    for path in (sort / "fiction" / "tiny" / "stats" / "tests").glob(
        "*.parquet"
    ):  # {run}_{test}: the run's trained items
        run = path.stem.rsplit("_", 1)[0]
        trained = fiction_rows.loc[(fiction_rows.run == run) & (fiction_rows.side == "train"), "item_id"]
        tables.append((fiction_rows[fiction_rows.item_id.isin(set(trained))], pd.read_parquet(path)))
    parametric = pd.read_parquet(sort / "parametric" / "rows.parquet")
    assert set(parametric["run"]) == {"base_model", "books", "instructions"}
    assert set(parametric["epoch"]) == {0, 1, 2}
    tables += [(parametric, pd.read_parquet(sort / "parametric" / "stats" / f"{t}.parquet")) for t in TESTS]
    log = pd.read_parquet(sort / "parametric" / "books" / "train_log.parquet")
    assert log["fiction_samples_seen"].iloc[-1] > 0 and log["epoch"].iloc[-1] == 2
    assert len(tables) == 2 + 2 + 2  # the base model's, the Doc run's (probe_runs), the parametric runs'
    for rows, table in tables:
        assert (table["correction"] == "holm").all()
        for record in table.to_dict("records"):
            # the variant the data and the config call for (exact below 25 discordant; t-test
            # alternative stats.ttest_alternative), not the one the saved row names
            mine = own_choice(record, rows, alternative="greater")
            assert recompute_pvalue(mine, rows) == pytest.approx(record["pvalue"], rel=1e-9, abs=1e-12)


def test_grounding_items_responses_scores_and_tables(workdir):
    from knowlab.grounding.schema import check_items
    from knowlab.grounding.settings import GroundingConditionSettings, condition_names

    grounding = workdir / "results" / "grounding"
    items = [json.loads(line) for line in (grounding / "fiction" / "items.jsonl").read_text().splitlines()]
    check_items(items)
    assert {i["version"] for i in items} == {"original", "conflict"}
    responses = [
        json.loads(line) for line in (grounding / "fiction" / "responses" / "base_model.jsonl").read_text().splitlines()
    ]
    conditions = condition_names(
        GroundingConditionSettings(
            budget=192, position="random", sweep_budgets=(96, 192), sweep_positions=("start", "random")
        )
    )
    assert conditions == [
        "original_gold",
        "original_dist",
        "conflict_gold",
        "conflict_dist",
        "no_context",
        "length_96",
        "position_start",
    ]
    assert len(responses) == 3 * len(conditions) and {r["condition"] for r in responses} == set(conditions)
    for r in responses:  # contexts: gold only, gold + distractors within the budget (gold always kept), none
        assert set(r["gold_contexts"]) <= set(r["contexts"]) or r["condition"] == "no_context"
        assert (r["n_distractors"] > 0) == (r["condition"] not in ("original_gold", "conflict_gold", "no_context"))
    rows = pd.read_parquet(grounding / "fiction" / "scores" / "base_model.parquet")
    assert len(rows) == len(responses)
    assert rows[["precision", "recall", "f1"]].apply(lambda c: c.between(0, 1)).all().all()
    pr = rows.precision + rows.recall
    f1 = (2 * rows.precision * rows.recall / pr.where(pr > 0)).fillna(0)
    assert rows.f1.to_numpy() == pytest.approx(f1.to_numpy())
    assert rows.answer_accuracy.isin([0, 1]).all()  # the fiction answers are all definite
    tables = grounding / "tables"
    for name in (
        "summary",
        "table1",
        "table12",
        "reduction_rates",
        "length_curve",
        "position",
        "factors_original_gold",
    ):
        assert (tables / f"{name}.csv").stat().st_size > 0 and "tabular" in (tables / f"{name}.tex").read_text()
    table1 = pd.read_csv(tables / "table1.csv")
    assert list(table1["condition"]) == ["Original-Gold", "Original-Dist", "Conflict-Gold", "Conflict-Dist"]
    # each table's content from the scored rows: one summary row per condition with its question count
    # and mean F1, Table 12's five settings, both versions' reduction rates, the length curve's budgets
    # in order of distractors, the positions swept, the factor levels of the fiction questions
    summary = pd.read_csv(tables / "summary.csv").set_index("condition")
    by_condition = rows.groupby("condition")
    assert set(summary.index) == set(conditions) and (summary["n"] == by_condition.size()[summary.index]).all()
    assert summary["f1"].to_numpy() == pytest.approx(by_condition["f1"].mean()[summary.index].to_numpy())
    assert (summary["f1_low"] <= summary["f1"]).all() and (summary["f1"] <= summary["f1_high"]).all()
    table12 = pd.read_csv(tables / "table12.csv")
    settings = ["No context", "Original-Gold", "Original-Dist", "Conflict-Gold", "Conflict-Dist"]
    assert list(table12.columns[2:7]) == settings
    assert list(pd.read_csv(tables / "reduction_rates.csv")["version"]) == ["original", "conflict"]
    curve = pd.read_csv(tables / "length_curve.csv")
    assert curve["condition"].iloc[0] == "original_gold" and curve["n_distractors"].is_monotonic_increasing
    assert set(curve["condition"]) == {"original_gold", "original_dist", "length_96"}
    assert {"start", "random"} <= set(pd.read_csv(tables / "position.csv").columns)
    factors = pd.read_csv(tables / "factors_original_gold.csv")
    assert {"overall", "contexts=single", "answer_type=definite"} <= set(factors.columns)
    method = {("llm:tiny random Llama (test)", "bi_encoder:packaged:all-MiniLM-L6-v2@0.4")}
    for path in tables.glob("*.csv"):  # every table names its decomposer and evaluator (issue 17)
        table = pd.read_csv(path)
        assert list(table.columns[-2:]) == ["decomposer", "evaluator"], path.name
        assert set(zip(table.decomposer, table.evaluator)) == method, path.name


def test_grounding_across_finetuning_recomputes(workdir):
    """follows-context / follows-training per checkpoint; McNemar vs control recomputes from the rows."""
    from knowlab.core.stats import direct_pvalue

    finetune = workdir / "results" / "grounding" / "finetune" / "tiny"
    rows = pd.read_parquet(finetune / "rows.parquet")
    assert set(rows["run"]) == {"doc", "control"} and set(rows["condition"]) == {"original_gold", "conflict_gold"}
    assert rows.loc[rows.condition == "original_gold", "follows_training"].isna().all()
    assert rows.loc[rows.condition == "conflict_gold", "follows_training"].isin([0, 1]).all()
    table = pd.read_parquet(finetune / "mcnemar.parquet")
    assert (
        set(table["run_a"]) == {"doc"} and (table["run_b"] == "control").all() and (table["correction"] == "holm").all()
    )
    for record in table.to_dict("records"):
        trained = rows.loc[(rows.run == record["run_a"]) & (rows.side == "train"), "item_id"]
        part = rows[rows.item_id.isin(set(trained)) & (rows.condition == record["condition"])]
        a, b = (
            part.loc[
                (part.run == record[f"run_{k}"]) & (part.step == record[f"step_{k}"]), ["item_id", record["metric"]]
            ]
            for k in "ab"
        )
        paired = a.merge(b, on="item_id").dropna()
        exact = bool((paired.iloc[:, 1] != paired.iloc[:, 2]).sum() < 25)  # stats.mcnemar_exact_below
        assert record["exact"] == exact
        p = direct_pvalue(paired.iloc[:, 1], paired.iloc[:, 2], "mcnemar", exact)
        assert p == pytest.approx(record["pvalue"], rel=1e-9, abs=1e-12)


def test_saved_pvalues_recompute_from_item_rows(workdir, own_choice):
    """Every p-value in the saved tables, recomputed with statsmodels/scipy from the item rows."""
    from knowlab.core.checkpoints import with_step0
    from knowlab.core.stats import recompute_pvalue

    results = workdir / "results" / "fictionalqa" / "tiny"
    items = pd.concat(map(pd.read_parquet, sorted((results / "evaluate").glob("*/step-*.parquet"))))
    items = with_step0(items, [*RUNS, "control"])
    tables = list((results / "stats").glob("*/*.parquet"))
    assert len(tables) == len(RUNS) * 1 * 2  # runs x suites x tests
    for path in tables:
        for row in pd.read_parquet(path).to_dict("records"):
            mine = own_choice(row, items, within=("suite",), alternative="greater")  # stats.ttest_alternative
            p = recompute_pvalue(mine, items, within=("suite",))
            assert p == pytest.approx(row["pvalue"], rel=1e-9, abs=1e-12), (path, row)


def test_mcq_items_name_their_construction(workdir):
    for n in (4, 10):
        lines = (workdir / "results" / "fictionalqa" / "corpus" / "mcq" / f"mcq{n}.jsonl").read_text().splitlines()
        items = [json.loads(line) for line in lines]
        assert len(items) == 240 and all(i["distractors"] == "model_ranked" and len(i["choices"]) == n for i in items)


def test_summary_has_every_split_and_side(workdir):
    summary = pd.read_csv(workdir / "results" / "fictionalqa" / "tiny" / "summary.csv")
    assert set(summary["split"]) == set(RUNS)
    assert set(summary["run"]) == {*RUNS, "control"}
    mcq = summary[(summary["suite"] == "mcq4") & (summary["side"] != "all")]
    assert set(mcq["side"]) == {"train", "val"} and (mcq["acc_lo"] <= mcq["acc"]).all()


def report_data(html, script_id):
    """The JSON a Snakemake HTML report embeds in ``<script id="...">var name = ...;</script>``."""
    match = re.search(rf'<script id="{script_id}">\s*var \w+ = (.*?);\s*</script>', html, re.S)
    assert match, f"no {script_id} data in the report"
    return json.loads(match.group(1))


def test_report_builds(workdir, snakemake):
    """The report is the results' front page: the workflow description, then every figure (PNG) under
    results/figures/, every summary table (CSV) of the three studies and the findings' design table,
    each with a rendered caption that names the model (workflow/report/*.rst)."""
    report = workdir / "report.html"
    snakemake(workdir, "--report", str(report))
    html = report.read_text()
    assert "paper Fig. 4" in html and "SmolLM2" not in html and "tiny random Llama" in html
    results = report_data(html, "results")
    figures = {p.relative_to(workdir).as_posix() for p in (workdir / "results" / "figures").rglob("*.png")}
    tables = {f"results/fictionalqa/{model}/summary.csv" for model in MODELS} | {
        "results/grounding/finetune/tiny/rates.csv"
    }
    for study in ("sort", "grounding"):
        tables |= {p.relative_to(workdir).as_posix() for p in (workdir / "results" / study / "tables").glob("*.csv")}
    # the findings beside their figures (knowlab.findings.report_table) and what the design can test
    tables |= {"results/findings.csv", "results/findings_design.csv"}
    assert figures and len(tables) > 2
    # and beside each of them, its trace (rule provenance, knowlab.tooling.trace.write_pages)
    pages = {f"results/provenance/{page_name(path)}" for path in figures | tables}
    traces = {path for path in results if path.startswith("results/provenance/")}
    assert pages <= traces, pages - traces
    assert set(results) - traces == figures | tables, (figures | tables) ^ (set(results) - traces)
    for path, result in results.items():
        caption = result["caption"]
        assert not any(raw in caption for raw in ("{{", "{%", "None", "system-message")), path
        if path in traces:
            continue
        # the model that produced it; the figures across the base models name them all
        names = MODELS if "across_models" in path else ("tiny random Llama (test)",)
        assert all(name in caption for name in names), path
        # a link to its own trace page
        assert f"javascript:app.showResultInfo('results/provenance/{page_name(path)}')" in caption, path
    assert set(report_data(html, "categories")) == {"FictionalQA", "SORT", "Grounding", "Findings", "Provenance"}
    assert "Corpus preparation" in report_data(
        html, "workflow-desc"
    )  # Snakefile: report: "workflow/report/workflow.rst"


def test_step_zero_is_the_base_model_evaluated_once(workdir):
    """Each study evaluates the base model once, as run base_model at step 0; no run holds a copy,
    and step 0 of every run is that evaluation (a run's step 0 and the control's agree on every item)."""
    results = workdir / "results"
    for folder in (
        *(results / "fictionalqa" / model / "evaluate" for model in MODELS),
        *(results / study.format(model="tiny") / leaf for study, leaf in zip(PROBES, ("evaluate", "scores"))),
    ):
        base = pd.read_parquet(folder / "base_model" / "step-0.parquet")
        assert (base["run"] == "base_model").all() and (base["step"] == 0).all(), folder
        assert not [run for run in (*RUNS, "control") if (folder / run / "step-0.parquet").exists()], folder
    for run in RUNS:
        table = pd.read_parquet(results / "fictionalqa" / "tiny" / "stats" / run / "mcq4_mcnemar.parquet")
        step0 = table[(table.step_a == 0) & (table.step_b == 0) & (table.run_b == "control")]
        assert len(step0) == 1 and (step0[["b", "c"]] == 0).all(axis=None) and (step0["pvalue"] == 1).all()
    summary = pd.read_csv(results / "fictionalqa" / "tiny" / "summary.csv")
    webtext = summary[(summary.step == 0) & (summary.suite == "webtext")]
    assert set(webtext["run"]) >= {*RUNS, "control"} and webtext["loss"].nunique() == 1


def test_checkpoints_load_with_transformers(workdir):
    from transformers import AutoModelForCausalLM

    run = workdir / "results" / "fictionalqa" / "tiny" / "finetune" / "doc"
    model = AutoModelForCausalLM.from_pretrained(run / "checkpoints" / "step-6")
    assert model.config.num_hidden_layers == 2
    wide = workdir / "results" / "fictionalqa" / "tiny-wide" / "finetune" / "doc" / "checkpoints" / "step-6"
    assert AutoModelForCausalLM.from_pretrained(wide).config.hidden_size == 96  # its own base model
    # step 0 is the base model, not a copy in every run; the last checkpoint keeps no training state
    assert sorted(p.name for p in (run / "checkpoints").iterdir() if p.is_dir()) == ["step-6"]
    assert not (run / "state").exists() or not any((run / "state").iterdir())


def test_manifests_record_provenance(workdir):
    results = workdir / "results" / "fictionalqa" / "tiny"
    manifest = json.loads((results / "evaluate" / "doc" / "step-6.manifest.json").read_text())
    assert manifest["rule"] == "fictionalqa_evaluate"
    assert manifest["wildcards"] == {"ft_model": "tiny", "run": "doc", "step": "6"}
    fictions = next(i for i in manifest["inputs"] if i["path"].endswith("fictions.jsonl"))
    digest = hashlib.sha256((workdir / fictions["path"]).read_bytes()).hexdigest()
    assert fictions["sha256"] == digest
    assert manifest["config"]["settings"]["em_tokens"] == [10, 25, 50]
    assert manifest["packages"]["torch"].startswith("2.13.0")
    assert "commit" in manifest["git"] and manifest["notes"] == {}
    # nothing volatile: a re-run writes the same manifest (times and host are in the log)
    assert not {"host", "started", "wall_time_s"} & set(manifest)
    finetune = json.loads((results / "finetune" / "doc" / "checkpoints" / "step-6.manifest.json").read_text())
    assert finetune["seed"] == 1234
    checkpoint = next(o for o in finetune["outputs"] if o["path"].endswith("checkpoints/step-6"))
    assert "model.safetensors" in checkpoint["files"]
    # a fine-tuning job hashes what it read and wrote, never the (temporary) training state
    assert not any("/state/" in entry["path"] for entry in finetune["inputs"] + finetune["outputs"])
    for log in (
        "fictionalqa/tiny/finetune/doc/step-6.log",
        "fictionalqa/tiny/evaluate/doc/step-6.log",
        "base_model.log",
    ):
        assert "finished in" in (workdir / "results" / "logs" / log).read_text()


def test_the_run_ends_with_the_findings_and_a_second_run_does_nothing(workdir, snakemake):
    """The run's last lines are the findings and where the report is (onsuccess); run again, there is
    nothing to do (and Snakemake runs no hook)."""
    printed = (workdir.parent / "run.stdout").read_text()
    findings = (workdir / "results" / "findings.txt").read_text()
    if printed or not os.environ.get("KNOWLAB_PIPELINE_RUN"):  # a reused run may have had nothing to do
        assert printed.endswith(
            findings + "Report: snakemake --report results/report.html (or make report); "
            "provenance: python -m knowlab.tooling.audit results resources\n"
        )
    proc = snakemake(workdir, "--cores", "2")
    assert "Nothing to be done" in proc.stdout + proc.stderr


def test_audit_flags_a_changed_result(workdir_copy):
    from knowlab.tooling.audit import audit

    work = workdir_copy
    assert audit(work / "results", work / "resources", base=work).empty
    split = work / "results" / "fictionalqa" / "splits" / "doc.json"
    split.write_bytes(split.read_bytes().replace(b'"doc"', b'"edited"', 1))
    flagged = audit(work / "results", base=work)
    assert set(flagged["path"]) == {"results/fictionalqa/splits/doc.json"}
    assert set(flagged["status"]) == {"changed"}
    assert {"input", "output"} <= set(flagged["role"])


def test_a_rule_asking_for_a_missing_gpu_fails_clearly(workdir_copy, snakemake):
    """The failed job removes its output (the ranking) and names the setting and the missing GPU."""
    import torch

    if torch.cuda.is_available():
        pytest.skip("needs a machine without a GPU")
    proc = snakemake(
        workdir_copy, "--cores", "1", "--forcerun", "fictionalqa_rank_distractors",
        "--until", "fictionalqa_rank_distractors",
        "--config", "compute={device: cuda}", check=False,
    )  # fmt: skip
    assert proc.returncode != 0
    # the invocation ends by naming the failed rule and its log (onerror)
    assert "rule fictionalqa_rank_distractors: results/logs/fictionalqa/mcq/rank_distractors.log" in proc.stderr
    log = (workdir_copy / "results" / "logs" / "fictionalqa" / "mcq" / "rank_distractors.log").read_text()
    assert "compute.device is 'cuda' but torch sees no CUDA GPU" in log
    assert not (workdir_copy / "results" / "fictionalqa" / "corpus" / "mcq" / "ranked_candidates.parquet").exists()


def test_a_module_of_another_workflow_reruns_a_model_job_as_the_run_did(workdir, tmp_path, module_snakefile):
    """The workflow used as a Snakemake module from another folder (``module knowlab: snakefile: ...``,
    ``use rule * from knowlab as knowlab_*``): given the finished run's files (times kept, no
    Snakemake metadata), it re-makes a deleted model job's table (SORT's in-context evaluation of the
    base model) and the figure that reads it, through the SORT statistics in between, and every file
    it re-makes equals the normal run's (tables by knowlab.tooling.compare, the figure byte for byte)."""
    module = tmp_path / "module"
    for folder in ("results", "resources"):
        shutil.copytree(workdir / folder, module / folder, symlinks=True)
    table = Path("results/sort/evaluate/base_model/in_context.parquet")
    figure = Path("results/figures/sort/fig3a.png")
    (module / table).unlink()
    (module / table.with_suffix(".manifest.json")).unlink()
    (module / "Snakefile").write_text(module_snakefile)
    command = [sys.executable, "-m", "snakemake", str(table), str(figure), "--cores", "2"]
    started = time.time()
    proc = subprocess.run(
        [*command, "--configfile", ROOT / "config" / "test.yaml"], cwd=module, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    ran = set(re.findall(r"^(?:local)?rule (\w+):", proc.stdout + proc.stderr, flags=re.M))
    assert {"knowlab_sort_evaluate_base", "knowlab_sort_stats", "knowlab_sort_figures"} <= ran, (
        proc.stdout + proc.stderr
    )
    remade = {
        p.relative_to(module)
        for p in (module / "results").rglob("*")
        if p.is_file() and p.stat().st_mtime >= started and not {"logs", "benchmarks"} & set(p.parts)
    }
    assert {table, figure} <= remade
    tables = {p for p in remade if p.suffix in (".parquet", ".csv", ".json") and "manifest" not in p.name}
    assert len(tables) > 3, remade
    for path in sorted(tables):
        assert difference(module / path, workdir / path) is None, path
    for path in sorted(p for p in remade if p.suffix == ".png"):
        assert (module / path).read_bytes() == (workdir / path).read_bytes(), path


def test_every_figure_table_and_finding_traces_to_hashed_raw_inputs(workdir, validate_crate):
    """Rule provenance: a trace page per figure and table with a whole chain (no broken link), and
    the run's Workflow Run RO-Crate valid for the Provenance Run Crate profile (roc-validator).  A
    figure, a SORT table and a finding each trace down to raw inputs pinned by sha256."""
    pages = sorted((workdir / "results" / "provenance").glob("*.html"))
    assert len(pages) > 50
    for page in pages:
        html = page.read_text()
        assert "trace: the chain is whole" in html and "class='broken'" not in html, page.name
    assert (
        "<h1>Each finding</h1>" in (workdir / "results" / "provenance" / page_name("results/findings.csv")).read_text()
    )
    claim = json.loads((workdir / "results" / "findings.json").read_text())[0]["claim_id"]
    for target in (
        "results/figures/fictionalqa/tiny/fig3.png",
        "results/sort/tables/table1_baseline_by_segment_length.csv",
        claim,
    ):
        chain = trace(target, workdir)
        # its leaves: raw files with the sha256 their readers recorded, or package and model pins
        raws = [node for node in chain.nodes.values() if node["kind"] == "raw"]
        pins = [pin for node in chain.nodes.values() if node["kind"] == "step" for pin in node["pins"]]
        assert all(d for node in raws for per in node["recorded"].values() for d in per.values()), target
        assert chain.whole and chain.depth >= 3 and (raws or pins), target
        assert all(node["kind"] != "unrecorded" for node in chain.nodes.values()), target
    done = validate_crate(workdir / "results" / "ro-crate")
    assert done.returncode == 0 and "is a valid provenance-run-crate-0.5" in done.stdout, done.stdout[-3000:]
