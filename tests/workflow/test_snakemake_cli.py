"""Snakemake on other configs and on bad input, as a user calls it: a malformed corpus stops with
no partial output; a generated corpus, the released Book-SORT items and the KAIST grounding
release feed the rules; a config error stops before any job; lint and format; dry runs of the
default, cpu-full and paper configs and of the SLURM profile.

The one full run of config/test.yaml, and the tests reading it: test_pipeline.py.
"""

import hashlib
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT.parent / "shared" / "data" / "fictionalqa_pipeline_sample"
KAIST = ROOT.parent / "shared" / "data" / "grounding_kaist"
TEST_CONFIG = ROOT / "config" / "test.yaml"
SLURM_PROFILE = str(ROOT / "workflow" / "profiles" / "slurm")

pytestmark = [pytest.mark.pipeline, pytest.mark.slow]


def test_malformed_corpus_stops_with_no_partial_output(tmp_path, snakemake):
    corpus = tmp_path / "fiction"
    shutil.copytree(ROOT / "data" / "fiction", corpus)
    lines = (corpus / "fictions.jsonl").read_text().splitlines()
    lines[2] = lines[2][:40]  # truncated line
    (corpus / "fictions.jsonl").write_text("\n".join(lines) + "\n")
    pins = {
        t: hashlib.sha256((corpus / f"{t}.jsonl").read_bytes()).hexdigest()
        for t in ("seeds", "fictsheets", "fictions", "fict_qa")
    }
    config = tmp_path / "bad.yaml"
    config.write_text(json.dumps({"fiction": {"source": "shipped", "shipped": {"dir": str(corpus), "sha256": pins}}}))
    work = tmp_path / "work"
    target = "results/fictionalqa/corpus/fiction/fictions.jsonl"
    proc = snakemake(work, "--cores", "1", target, configs=(TEST_CONFIG, config), check=False)
    assert proc.returncode != 0, proc.stdout[-2000:]
    log_file = work / "results" / "logs" / "fictionalqa" / "corpus.log"
    assert log_file.is_file(), proc.stdout[-2000:] + proc.stderr[-3000:]
    log = log_file.read_text()
    assert "fictions.jsonl:3: malformed JSON" in log
    # the invocation ends by naming the failed rule and its log (onerror)
    assert "rule fictionalqa_corpus: results/logs/fictionalqa/corpus.log" in proc.stderr, proc.stderr[-3000:]
    fiction = work / "results" / "fictionalqa" / "corpus" / "fiction"
    assert not fiction.exists() or not any(fiction.iterdir())


def test_a_run_moved_with_its_checkout_reruns_nothing(tmp_path, copy_checkout):
    """The steps that read files of the checkout (the shipped corpus and real-world questions), run in
    a checkout and moved with it: Snakemake finds every input name and param as the run recorded
    them and re-runs nothing (a param naming the checkout, as ``basedir`` did before, re-ran the
    whole workflow after a move)."""
    from knowlab import layout

    targets = [layout.CORPUS.path(table="fict_qa"), layout.REAL_QA.path()]

    def run(checkout, *args):
        command = [sys.executable, "-m", "snakemake", "--configfile", "config/test.yaml", *args, *targets]
        proc = subprocess.run(command, cwd=checkout, capture_output=True, text=True)
        assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
        return proc.stdout + proc.stderr

    first = copy_checkout(tmp_path / "first")
    run(first, "--cores", "1")
    moved = first.rename(tmp_path / "moved")
    assert "Nothing to be done" in run(moved, "-n"), "the moved run re-runs jobs"


@pytest.mark.skipif(not (SAMPLE / "batch_results").is_dir(), reason=f"authors' pipeline sample not at {SAMPLE}")
def test_generated_corpus_feeds_the_rest_of_the_workflow(tmp_path, snakemake):
    """fiction.source: generate, replaying the authors' recorded gpt-4o responses, through the rules."""
    from knowlab.fiction.schema import read_corpus

    styles = {"news": 5, "social": 3, "encyclopedia": 2, "corporate": 3, "blog": 2}
    generate = {"backend": "replay", "model": "gpt-4o-2024-08-06", "replay": {"path": str(SAMPLE)}, "styles": styles}
    config = tmp_path / "generate.yaml"
    config.write_text(json.dumps({"fiction": {"source": "generate", "generate": generate}}))
    work = tmp_path / "work"
    configs = (TEST_CONFIG, config)
    snakemake(work, "--cores", "2", "results/fictionalqa/corpus/fiction/fict_qa.jsonl", configs=configs)
    corpus = read_corpus(work / "results" / "fictionalqa" / "corpus" / "fiction")
    annotated = [json.loads(line) for line in (work / "results" / "generate" / "fict_qa_annotated.jsonl").open()]
    assert len(corpus["fictions"]) == 15 and len(annotated) == 75
    assert [q["question_id"] for q in corpus["fict_qa"]] == [r["question_id"] for r in annotated if r["kept"]]
    funnel = pd.read_csv(work / "results" / "generate" / "summary.csv").set_index("step")["count"]
    assert (funnel["fictions"], funnel["questions"], funnel["kept"]) == (15, 75, len(corpus["fict_qa"]))
    assert "gpt-4o-2024-08-06" in (work / "results" / "logs" / "generate" / "seeds.log").read_text()
    assert (
        len(list((work / "results" / "generate" / "requests").glob("*/*.json"))) == 1 + 1 + 15 + 15 + 33 + 75 + 21 + 68
    )
    # Downstream rules read the generated corpus with no other change; nothing is generated twice.
    dry = snakemake(work, "-n", configs=configs).stdout
    assert "generate_" not in dry and "rule fictionalqa_split:" in dry and "rule grounding_items:" in dry


def kaist_subset(out: Path, n_questions: int = 2, n_others: int = 40) -> dict[str, str]:
    """A release in the KAIST layout (``knowlab.grounding.kaist.KAIST_FILES``) under ``out``: the
    first ``n_questions`` questions of both versions, their metadata, and a pool of the documents
    sharing a title with their contexts plus ``n_others`` others (seeded); returns the sha256 pins
    of its files.  (Embedding the full pool of 2,620 documents takes minutes on one CPU thread.)"""
    import random

    from knowlab.grounding.kaist import KAIST_FILES

    release = {role: json.loads((KAIST / name).read_text()) for role, name in KAIST_FILES.items()}
    questions = list(release["original"])[:n_questions]
    contexts = " ".join(c for q in questions for c in release["original"][q]["context_list"])
    titles = release["title"]
    kept = [d for d, title in titles.items() if title.strip() and title.split(" [")[0] in contexts]
    kept += random.Random(0).sample(sorted(set(titles) - set(kept)), n_others)
    keys = {"original": questions, "conflict": questions, "meta": questions, "text": kept, "title": kept}
    pins = {}
    for role, name in KAIST_FILES.items():
        (out / name).parent.mkdir(parents=True, exist_ok=True)
        (out / name).write_text(json.dumps({key: release[role][key] for key in keys[role]}))
        pins[name] = hashlib.sha256((out / name).read_bytes()).hexdigest()
    return pins


@pytest.mark.skipif(not (KAIST / "original_version.json").is_file(), reason=f"KAIST grounding release not at {KAIST}")
def test_kaist_release_feeds_the_grounding_rules(tmp_path, snakemake):
    """grounding.datasets: [kaist] from a local release folder (two questions of the real release
    and a pool of 40-odd of its documents, pinned by sha256 as the config pins the release): items
    of both versions, responses in every condition, atomic-fact scores and the paper's tables."""
    from knowlab.core.plotting import read_description
    from knowlab.grounding.schema import check_items

    pins = kaist_subset(tmp_path / "release")
    kaist_cfg = {"path": str(tmp_path / "release"), "sha256": pins}
    config = tmp_path / "kaist.yaml"
    config.write_text(json.dumps({"grounding": {"datasets": ["kaist"], "kaist": kaist_cfg, "max_items": 2}}))
    work = tmp_path / "work"
    targets = ("results/grounding/rows.parquet", "results/figures/grounding/fig4.png")
    snakemake(work, "--cores", "2", *targets, configs=(TEST_CONFIG, config))
    kaist = work / "results" / "grounding" / "kaist"
    items = [json.loads(line) for line in (kaist / "items.jsonl").read_text().splitlines()]
    check_items(items)
    assert len(items) == 4 and {i["version"] for i in items} == {"original", "conflict"}
    assert not (work / "results" / "grounding" / "fiction").exists()  # only the datasets asked for
    responses = [json.loads(line) for line in (kaist / "responses" / "base_model.jsonl").read_text().splitlines()]
    assert len(responses) == 2 * 7 and {r["condition"] for r in responses} >= {"original_gold", "conflict_dist"}
    rows = pd.read_parquet(work / "results" / "grounding" / "rows.parquet")
    assert set(rows["dataset"]) == {"kaist"} and len(rows) == len(responses)
    assert rows[["precision", "recall", "f1"]].apply(lambda c: c.between(0, 1)).all().all()
    table1 = pd.read_csv(work / "results" / "grounding" / "tables" / "table1.csv")
    assert list(table1["condition"]) == ["Original-Gold", "Original-Dist", "Conflict-Gold", "Conflict-Dist"]
    figure = read_description(work / "results" / "figures" / "grounding" / "fig4.png")
    assert figure["title"] and figure["panels"] and all(panel["ylabel"] for panel in figure["panels"])


def test_released_booksort_items_feed_the_sort_rules(tmp_path, booksort_release, snakemake):
    """sort.source: release reads the released items (no book texts, so no RAG) and the DAG needs no retrieval."""
    release = tmp_path / "booksort.jsonl"
    pd.DataFrame(booksort_release.rows).to_json(release, orient="records", lines=True)
    config = tmp_path / "release.yaml"
    config.write_text(json.dumps({"sort": {"source": "release", "release": {"path": str(release)},
                                           "conditions": ["baseline", "in_context"]}}))  # fmt: skip
    snakemake(tmp_path, "--cores", "1", "results/sort/items.jsonl", configs=(TEST_CONFIG, config))
    items = [json.loads(line) for line in (tmp_path / "results" / "sort" / "items.jsonl").read_text().splitlines()]
    assert len(items) == 12 and {i["book_id"] for i in items} == {"69087"}
    assert sum(i["split"] == "validation" for i in items) == 4  # the released validation slice is kept
    dry = snakemake(tmp_path, "-n", configs=(TEST_CONFIG, config)).stdout
    assert "rule sort_prompt:" in dry and "rule sort_evaluate_base:" in dry
    assert "sort_retrieval" not in dry and "sort_rag_prompt" not in dry
    rag = tmp_path / "rag.yaml"
    rag.write_text(json.dumps({"sort": {"source": "release", "conditions": ["rag"]}}))
    proc = snakemake(tmp_path, "-n", configs=(TEST_CONFIG, rag), check=False)
    assert proc.returncode != 0 and "release" in proc.stdout + proc.stderr


@pytest.mark.parametrize(
    "overlay, message",
    [
        # the schema (snakemake.utils.validate in the Snakefile): every case in tests/workflow/test_config.py
        ("finetune:\n  max_steps: lots\n", r"(?s)'lots' is not of type 'integer'.*max_steps"),
        # the cross-field rules (knowlab.config.check_config): every case in tests/test_config.py
        ("mcq:\n  n_choices: [4, 10]\n  ranker:\n    max_candidates: 5\n", r"mcq\.ranker\.max_candidates=5"),
    ],
    ids=["schema", "check_config"],
)
def test_a_config_error_stops_snakemake_before_any_job(tmp_path, overlay, message, snakemake):
    """The Snakefile validates the merged config before it builds the DAG: the user reads the
    message naming the key, and no job starts (no results folder)."""
    config = tmp_path / "bad.yaml"
    config.write_text(overlay)
    proc = snakemake(tmp_path, "-n", configs=(TEST_CONFIG, config), check=False)
    assert proc.returncode != 0
    assert re.search(message, proc.stdout + proc.stderr), proc.stderr[-3000:]
    assert not (tmp_path / "results").exists()


def test_lint_and_format_are_clean(tmp_path, snakemake):
    lint = snakemake(tmp_path, "--lint", configs=(), check=False)
    assert lint.returncode == 0, lint.stdout + lint.stderr
    files = [str(ROOT / "Snakefile"), *map(str, sorted((ROOT / "rules").glob("*.smk")))]
    fmt = subprocess.run([sys.executable, "-m", "snakefmt", "--check", *files], capture_output=True, text=True)
    assert fmt.returncode == 0, fmt.stdout + fmt.stderr


def job_counts(dry_run_stdout: str) -> dict[str, int]:
    """``rule -> jobs`` of a dry run's "Job stats" table."""
    table = dry_run_stdout.split("Job stats:")[1].split("\n\n")[0]
    return {rule: int(n) for rule, n in re.findall(r"^(\w+)\s+(\d+)$", table, flags=re.M)}


@pytest.mark.parametrize(
    "overlay, expected",
    [
        # the default, through the SLURM profile: three fiction runs + control, checkpoints 16 and 32 (issue 56)
        # (+ 2 SORT parametric runs); one fine-tuning process, no srun
        (
            None,
            {
                "finetune_last": 6,
                "fictionalqa_evaluate": 9,
                "fictionalqa_paired_tests": 6,
                "sort_prompt": 1,
                "findings": 1,
            },
        ),
        # config/cpu-full.yaml: the default until 2026-11-24 (153 jobs, + findings, fictionalqa_lm_eval_tasks,
        # dataset_card, and the figure rules split from the stats rules: sort_fiction_figures,
        # sort_parametric_figures, grounding_figures, grounding_finetune_figures; the model axis adds
        # fictionalqa_models and the five fictionalqa_across_models_* figures; then provenance, then
        # analysis_plan)
        (
            "cpu-full.yaml",
            {
                "finetune": 6,
                "finetune_last": 8,
                "fictionalqa_evaluate": 13,
                "fictionalqa_paired_tests": 10,
                "total": 168,
            },
        ),
    ],
    ids=["default", "cpu-full"],
)
def test_default_and_cpu_full_dry_runs(tmp_path, overlay, expected, snakemake):
    profile = [] if overlay else ["--profile", SLURM_PROFILE]
    proc = snakemake(tmp_path, *profile, "-n", configs=[ROOT / "config" / overlay] if overlay else [])
    counts = job_counts(proc.stdout)
    assert {rule: counts.get(rule, 0) for rule in expected} == expected
    if profile:  # the fine-tuning launch: one process
        assert "-m knowlab.finetune_job --threads" in proc.stdout and "srun --nodes" not in proc.stdout


def test_slurm_profile_dry_run_of_the_paper_with_generation(paper_slurm_dry_run):
    """config/paper.yaml through the SLURM profile, fiction generated (tests/conftest.py): the
    generation rules run before the corpus (the OpenAI batch backend: no base model), and each
    fine-tuning job launches eight srun tasks, one per GPU."""
    dry = paper_slurm_dry_run
    for rule in ("generate_seeds", "generate_fict_qa", "generate_grades", "generate_annotate", "fictionalqa_corpus"):
        assert f"rule {rule}:" in dry
    assert "resources/base_model" not in dry.split("rule generate_seeds:")[1].split("rule ")[0]  # openai_batch
    assert "rule finetune:" in dry and "rule fictionalqa_rank_distractors:" in dry
    assert "srun --nodes 1 --ntasks 8 --ntasks-per-node 8" in dry
    assert "gpu=8, tasks_per_gpu=1, tasks=8, mpi=srun" in dry
