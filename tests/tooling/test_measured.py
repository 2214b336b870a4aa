"""docs/measured.md (knowlab.tooling.measured): the page's sums from a fabricated run folder, its job
counts against a fresh dry run, and the other pages linking to it instead of restating its numbers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from knowlab.tooling import measured

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / measured.PAGE
HAND = ROOT / measured.HAND_KEPT
OTHER_PAGES = sorted({ROOT / "README.md", *(ROOT / "docs").glob("*.md")} - {PAGE})

HERE = {"cpu": "Test CPU", "cpus": 2, "memory_bytes": 8 * 1024**3, "host": "testhost", "platform": "Linux-test"}

#: (benchmark path under results/benchmarks, rule, s, cpu_time, max_rss): the fabricated run's jobs, at the
#: page's precision (one decimal) so that its sums are exact
JOBS = [
    ("fictionalqa/evaluate/doc.tsv", "fictionalqa_evaluate", 120.3, 100.5, 2000.0),
    ("fictionalqa/evaluate/event.tsv", "fictionalqa_evaluate", 80.4, 60.2, 2500.5),
    ("finetune/doc.tsv", "finetune_last", 200.0, 150.0, 4000.2),
    ("figures/fig2.tsv", "fictionalqa_figure_fig2", 1.2, "NA", "NA"),
]
FILES = {"fictionalqa/a.parquet": 1000, "fictionalqa/doc/checkpoints/step-6/model.safetensors": 5000, "sort/b.csv": 300}
LOG = """Assuming unrestricted shared filesystem usage.

SNAKEMAKE
=========
  Date: 2026-01-02 03:04:05
  Host: testhost
  Platform: Linux-test
  Command: snakemake --cores 2 --configfile config/test.yaml
  Config file(s): [PosixPath('/x/config/test.yaml'), '/x/config/config.yaml']

Building DAG of jobs...
Provided cores: 2
{jobs}
4 of 4 steps (100%) done
Elapsed time: 0:07:38.250000
"""
JOB_BLOCK = """[Fri Jan  2 03:04:06 2026]
{kind} {rule}:
    input: x
    output: y
    jobid: {i}
    benchmark: results/benchmarks/{path}
    resources: tmpdir=/tmp
"""


def fabricated_run(tmp_path: Path, log: bool = True) -> Path:
    """A finished run folder: benchmark TSVs, one manifest, files under results/ and, if ``log``, the
    Snakemake log that names each benchmark file's rule."""
    run = tmp_path / "run"
    for path, _, s, cpu, rss in JOBS:
        tsv = run / "results" / "benchmarks" / path
        tsv.parent.mkdir(parents=True, exist_ok=True)
        tsv.write_text(
            "s\th:m:s\tmax_rss\tmax_vms\tmax_uss\tmax_pss\tio_in\tio_out\tmean_load\tcpu_time\n"
            f"{s}\t0:00:00\t{rss}\t1\t1\t1\t0\t0\t0\t{cpu}\n"
        )
    for path, size in FILES.items():
        (run / "results" / path).parent.mkdir(parents=True, exist_ok=True)
        (run / "results" / path).write_bytes(b"x" * size)
    manifest = {
        "rule": "fictionalqa_evaluate",
        "inputs": [],
        "outputs": [],
        "git": {"commit": "abc1234" + "0" * 33, "dirty": False},
    }
    (run / "results" / "fictionalqa" / "a.manifest.json").write_text(json.dumps(manifest))
    if log:
        blocks = "".join(
            JOB_BLOCK.format(kind="localrule" if "figure" in rule else "rule", rule=rule, i=i, path=path)
            for i, (path, rule, *_) in enumerate(JOBS)
        )
        (run / ".snakemake" / "log").mkdir(parents=True)
        (run / ".snakemake" / "log" / "2026-01-02T030405.snakemake.log").write_text(LOG.format(jobs=blocks))
    return run


def table_rows(page: str, header_start: str) -> dict[str, list[str]]:
    """First cell -> the other cells of every row of the table whose header starts with ``header_start``."""
    lines = page.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(header_start))
    rows = {}
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        rows[cells[0]] = cells[1:]
    return rows


def number(cell: str) -> float:
    return float(cell.strip("*").replace(",", ""))


def test_the_page_sums_the_benchmark_files_per_rule_and_in_all(tmp_path):
    hand = measured.load_hand_kept(HAND)
    run = measured.measure_run(fabricated_run(tmp_path))
    page = measured.render(None, [run], hand, here=HERE, today="2026-01-03")
    assert "## Run of config/test.yaml" in page and "do not edit by hand" in page.splitlines()[2]
    rows = table_rows(page, "| rule | jobs | wall s")
    for rule in {r for _, r, *_ in JOBS}:
        jobs = [j for j in JOBS if j[1] == rule]
        cpu = sum(j[3] for j in jobs if j[3] != "NA")
        rss = [j[4] for j in jobs if j[4] != "NA"]
        got = rows[rule]
        assert number(got[0]) == len(jobs)
        assert number(got[1]) == pytest.approx(sum(j[2] for j in jobs), abs=1e-6)
        assert number(got[2]) == pytest.approx(max(j[2] for j in jobs), abs=1e-6)
        assert number(got[3]) == pytest.approx(cpu, abs=1e-6)
        assert got[4] == ("-" if not rss else f"{max(rss):,.1f}")
    total = rows["**total**"]
    assert number(total[0]) == len(JOBS)
    assert number(total[1]) == pytest.approx(sum(j[2] for j in JOBS), abs=1e-6)
    assert number(total[3]) == pytest.approx(sum(j[3] for j in JOBS if j[3] != "NA"), abs=1e-6)
    assert number(total[4]) == max(j[4] for j in JOBS if j[4] != "NA")
    # the rows add up to the total (the page's own arithmetic)
    per_rule = [cells for name, cells in rows.items() if name != "**total**"]
    assert sum(number(c[1]) for c in per_rule) == pytest.approx(number(total[1]), abs=1e-6)

    facts = table_rows(page, "| what | measured |")
    assert facts["elapsed"][0].startswith("458 s (7 min 38 s)") and "4 of 4 steps" in facts["elapsed"][0]
    assert facts["cores"][0].startswith("2 ")
    assert "`abc1234` (clean) in 1 of 1 manifests" in facts["code"][0]
    assert "Test CPU, 2 CPUs" in facts["machine"][0]  # the log's host is this (fabricated) machine
    # no host name and no machine's folder on the page (issue 59): the run's folder is named by its config
    assert str(tmp_path) not in page and HERE["host"] not in page and "host `" not in page
    assert measured.anonymous("python -m x --run /tmp/a --run=/work/b --out d.md") == (
        "python -m x --run <run folder> --run=<run folder> --out d.md"
    )
    assert (
        measured.anonymous("snakemake --cores 2 --directory /tmp/t") == "snakemake --cores 2 --directory <run folder>"
    )
    sizes = table_rows(page, "| folder | bytes |")
    manifest_bytes = (tmp_path / "run" / "results" / "fictionalqa" / "a.manifest.json").stat().st_size
    assert number(sizes["`fictionalqa/`"][0]) == 1000 + 5000 + manifest_bytes
    assert number(sizes["`sort/`"][0]) == 300
    assert number(sizes["of it in `checkpoints/` folders"][0]) == 5000
    assert number(sizes["**results/**"][0]) == sum(number(c[0]) for n, c in sizes.items() if n.startswith("`"))


def test_a_later_rerun_of_a_few_jobs_is_not_the_runs_time(tmp_path):
    """The run's facts come from the complete invocation that ran the most jobs: a later invocation that
    re-ran one job (the findings re-decided) is not the run's elapsed time or command."""
    folder = fabricated_run(tmp_path)
    later = LOG.format(jobs="").replace("03:04:05", "05:06:07").replace("4 of 4", "1 of 1")
    later = later.replace("0:07:38.250000", "0:00:10.000000").replace("--cores 2", "--cores 1")
    (folder / ".snakemake" / "log" / "2026-01-02T050607.snakemake.log").write_text(later)
    run = measured.measure_run(folder)
    assert run.log.steps == (4, 4) and run.log.elapsed_s == pytest.approx(458.25)
    facts = table_rows(measured.render(None, [run], measured.load_hand_kept(HAND), here=HERE), "| what | measured |")
    assert facts["elapsed"][0].startswith("458 s") and "--cores 2" in facts["command"][0]


def test_a_run_without_logs_or_benchmarks_says_so(tmp_path):
    hand = measured.load_hand_kept(HAND)
    folder = fabricated_run(tmp_path, log=False)
    run = measured.measure_run(folder / "results")  # the results folder itself also names the run
    page = measured.render(None, [run], hand, here=HERE)
    assert "## Run of an unrecorded config" in page
    assert "not recorded: no Snakemake log of a complete run" in page
    rows = table_rows(page, "| rule | jobs | wall s")
    assert "? results/benchmarks/fictionalqa/evaluate/" in rows  # no rule invented for an unnamed file
    for path in (folder / "results" / "benchmarks").rglob("*.tsv"):
        path.unlink()
    page = measured.render(None, [measured.measure_run(folder)], hand, here=HERE)
    assert "not measured: no benchmark files" in page and "| rule | jobs | wall s" not in page


def test_hand_kept_entries_are_checked(tmp_path):
    bad = tmp_path / "measured.yaml"
    bad.write_text("latest:\n  - target: make test\n    seconds: 12\nearlier: []\n")
    with pytest.raises(
        measured.MeasuredError, match=r"latest\[0\] \(make test\) lacks command, value, commit, date, machine"
    ):
        measured.load_hand_kept(bad)
    bad.write_text(
        "latest:\n  - {target: t, command: c, value: v, seconds: soon, commit: null, date: d, machine: m}\nearlier: []\n"
    )
    with pytest.raises(
        measured.MeasuredError, match=r"latest\[0\] \(t\): seconds must be a number, \[low, high\] or null"
    ):
        measured.load_hand_kept(bad)
    hand = measured.load_hand_kept(HAND)
    assert hand["latest"] and hand["earlier"]
    page = measured.render(None, [], hand, here=HERE)
    for entry in hand["latest"]:  # every hand-kept measurement is on the page with its wall time
        assert f"| {entry['target']} | `{entry['command']}` |" in page
        assert measured.wall_time(entry) in page


def test_job_counts_read_back_from_the_page():
    dry = {"default": {"a": 2, "b": 1, "all": 1}, "test": {"a": 3, "c": 1, "all": 1}}
    page = measured.render(dry, [], {"latest": [], "earlier": []}, local={"b", "all"}, here=HERE)
    assert measured.page_job_counts(page) == dry
    summary = table_rows(page, "| config | `--configfile`")
    assert summary["default"][1:] == ["4", "2", "2"] and summary["test"][1:] == ["5", "1", "4"]


def test_every_config_file_is_dry_run_or_known_not_to_be_one():
    files = {p.relative_to(ROOT).as_posix() for p in (ROOT / "config").glob("*.yaml")}
    shipped = {overlay for overlay in measured.SHIPPED_CONFIGS.values() if overlay}
    assert files == shipped | set(measured.NOT_OVERLAYS)


@pytest.mark.slow
def test_the_pages_job_counts_are_a_fresh_dry_run_of_the_test_config(tmp_path):
    """The page cannot go stale silently: a rule or job added to config/test.yaml's DAG fails this
    until `make measured` is run again."""
    on_page = measured.page_job_counts(PAGE.read_text(encoding="utf-8"))
    now = measured.job_counts(measured.dry_run(measured.SHIPPED_CONFIGS["test"], ROOT, tmp_path / "work"))
    assert on_page["test"] == now, "docs/measured.md is stale: run `make measured RUNS=...`"


def test_other_pages_link_to_the_measured_numbers_instead_of_restating_them():
    hand = measured.load_hand_kept(HAND)
    counts = measured.page_job_counts(PAGE.read_text(encoding="utf-8"))
    totals = set()
    for label in ("test", "default"):
        totals |= {sum(counts[label].values()), sum(n for rule, n in counts[label].items() if rule != "all")}
    found = []
    for page in OTHER_PAGES:
        for where in measured.restatements(page.read_text(encoding="utf-8"), totals, hand):
            found.append(f"{page.relative_to(ROOT)}:{where}")
    assert not found, "restated measured numbers (link to docs/measured.md instead):\n" + "\n".join(found)
    assert any("measured.md" in page.read_text(encoding="utf-8") for page in OTHER_PAGES if page.name == "README.md")


def test_restatements_are_found():
    hand = {
        "latest": [{"target": "make test", "seconds": 458}, {"target": "make test-fast", "seconds": [70, 95]}],
        "earlier": [],
    }
    text = "a\nthe suite took 7 min 38 s (458 s) here\nconfig/test.yaml makes 140 jobs\nfast: 70 to 95 s\n1,140 jobs; 4 min 2 s"
    found = measured.restatements(text, {140}, hand)
    assert sorted(found) == sorted(["2: '7 min 38 s'", "2: '458 s'", "3: '140 jobs'", "4: '95 s'", "5: '4 min 2 s'"])
    assert measured.restatements("the paper's 1,930 jobs; 32 steps of 2 sequences; 140 documents", {140}, hand) == []


#: (benchmark under results/benchmarks, rule, s, output written, log text, threads, asks for a GPU): a run
#: whose model jobs the page turns into tokens and FLOPs
MODEL_JOBS = [
    ("ft/doc/step-2.tsv", "finetune", 10.0, "results/fictionalqa/m/finetune/doc/train_log/step-2.parquet",
     "run doc: ... device=cpu bf16=True zero=0", 2, True),
    ("ft/books/epoch-1.tsv", "finetune", 4.0, "results/sort/parametric/books/train_log/epoch-1.parquet",
     "run books: ... device=cpu bf16=True zero=0", 2, True),
    ("eval/doc.tsv", "fictionalqa_evaluate", 20.0, "results/fictionalqa/m/evaluate/doc/step-2.parquet",
     "compute: cpu, float32, at most None tokens\nknowlab.core.models: loaded x on cpu", 1, True),
    ("gen/base.tsv", "grounding_generate", 5.0, "results/grounding/fiction/responses/base_model.jsonl",
     "compute: cpu, float32, at most None tokens\nknowlab.core.models: loaded x on cpu", 1, True),
    ("rank.tsv", "fictionalqa_rank_distractors", 7.0, "results/fictionalqa/corpus/mcq/ranked_candidates.parquet",
     "compute: cpu, float32, at most None tokens\nknowlab.core.models: loaded x on cpu", 1, True),
    ("score.tsv", "grounding_score", 1.0, "results/grounding/fiction/scores/base_model.parquet",
     "compute: cpu, float32, at most None tokens", 1, True),
    ("split.tsv", "fictionalqa_split", 2.0, "results/fictionalqa/splits/doc.json", "", 1, False),
]  # fmt: skip
MODEL_BLOCK = """[Fri Jan  2 03:04:06 2026]
rule {rule}:
    input: x
    output: {output}, {output}.manifest.json
    log: results/logs/{i}.log
    jobid: {i}
    benchmark: results/benchmarks/{path}
    reason: Missing output files
{threads}    resources: tmpdir=/tmp{gpu}
"""
PARAMS = 10**8
MATMUL = {
    "target": "matmul",
    "command": ".venv/bin/python benchmarks/matmul.py",
    "value": "matmul: float32_t1=5.0 bfloat16_t1=30.0 float32_t2=9.0 bfloat16_t2=60.0",
    "seconds": 18, "commit": None, "date": "2026-01-01", "machine": "test",
}  # fmt: skip


def model_run(tmp_path: Path) -> Path:
    """A finished run of model jobs: benchmark files, a Snakemake log naming each one's outputs, log,
    threads and GPU request, the outputs tokens are read from, and each job's own log."""
    import pandas as pd

    run = tmp_path / "run"
    outputs = {
        "finetune": [pd.DataFrame({"step": [1, 2], "tokens": [300, 200]}), pd.DataFrame({"tokens": [40]})],
        "fictionalqa_evaluate": pd.DataFrame({"suite": ["doc", "qa", "mcq4"], "n_tokens": [100, 150, 0]}),
        "fictionalqa_rank_distractors": pd.DataFrame({"candidate": ["a", "b", "c"], "loss_yes": [1.0, 2.0, 3.0]}),
        "grounding_score": pd.DataFrame({"f1": [0.5]}),
    }
    blocks = []
    for i, (path, rule, s, output, text, threads, gpu) in enumerate(MODEL_JOBS):
        tsv = run / "results" / "benchmarks" / path
        tsv.parent.mkdir(parents=True, exist_ok=True)
        tsv.write_text(f"s\tmax_rss\tcpu_time\n{s}\t100\t{s}\n")
        out = run / output
        out.parent.mkdir(parents=True, exist_ok=True)
        if rule == "finetune":
            outputs[rule].pop(0).to_parquet(out)
        elif rule == "grounding_generate":
            records = [{"n_input_tokens": 40, "n_new_tokens": 10}, {"n_input_tokens": 60, "n_new_tokens": 15}]
            out.write_text("".join(json.dumps(r) + "\n" for r in records))
        elif rule in outputs:
            outputs[rule].to_parquet(out)
        else:
            out.write_text("{}")
        (run / "results" / "logs").mkdir(parents=True, exist_ok=True)
        (run / "results" / "logs" / f"{i}.log").write_text(text + "\n")
        blocks.append(
            MODEL_BLOCK.format(
                rule=rule, output=output, i=i, path=path, threads=f"    threads: {threads}\n" if threads > 1 else "",
                gpu=", gpu=1" if gpu else "",
            )  # fmt: skip
        )
    (run / ".snakemake" / "log").mkdir(parents=True)
    (run / ".snakemake" / "log" / "2026-01-02T030405.snakemake.log").write_text(
        LOG.replace("4 of 4", f"{len(MODEL_JOBS)} of {len(MODEL_JOBS)}").format(jobs="".join(blocks))
    )
    (run / "resources" / "base_model").mkdir(parents=True)
    (run / "resources" / "base_model" / "config.json").write_text("{}")
    return run


def test_model_flops_per_kind_of_job_against_the_matmul_floor(tmp_path, monkeypatch):
    monkeypatch.setattr(measured, "parameter_count", lambda model_dir: PARAMS)  # no model, no transformers
    run = measured.measure_run(model_run(tmp_path))
    assert run.params == PARAMS
    assert measured.matmul_floor({"latest": [MATMUL], "earlier": []})[0] == {
        ("float32", 1): 5.0, ("bfloat16", 1): 30.0, ("float32", 2): 9.0, ("bfloat16", 2): 60.0,
    }  # fmt: skip
    page = measured.render(None, [run], {"latest": [MATMUL], "earlier": []}, here=HERE)
    assert "### Model FLOPs against the matmul floor" in page and f"N = {PARAMS:,}" in page
    rows = table_rows(page, "| kind of job | jobs | tokens")
    assert "fictionalqa_split" not in rows  # no GPU asked: no model run

    # fine-tuning, split by the folder it writes under: 6N per trained token, bf16 at 2 threads
    ft = rows["finetune (`fictionalqa/`)"]
    assert ft[:4] == ["1", "500", f"{6 * PARAMS * 500:.3g}", "10.0"]
    assert number(ft[4]) == pytest.approx(6 * PARAMS * 500 / 10.0 / 1e9, abs=0.005)
    assert ft[5:] == ["bfloat16, 2", "60.0", f"{6 * PARAMS * 500 / 10.0 / 1e9 / 60.0:.3f}"]
    assert rows["finetune (`sort/`)"][1:3] == ["40", f"{6 * PARAMS * 40:.3g}"]

    # evaluation: 2N per recorded token, a lower bound (questions and MCQ tokens not recorded), float32 at 1
    ev = next(cells for name, cells in rows.items() if name.startswith("fictionalqa_evaluate ("))
    assert ev[1:4] == ["≥ 250", f"≥ {2 * PARAMS * 250:.3g}", "20.0"]
    assert ev[5:] == ["float32, 1", "5.0", f"≥ {2 * PARAMS * 250 / 20.0 / 1e9 / 5.0:.3f}"]

    # generation: prompt and generated tokens
    gen = rows["grounding_generate"]
    assert gen[1:3] == ["125", f"{2 * PARAMS * 125:.3g}"]
    assert number(gen[4]) == pytest.approx(2 * PARAMS * 125 / 5.0 / 1e9, abs=0.005)

    # not recorded: a dash and a footnote, never a number
    rank_name, rank = next((n, c) for n, c in rows.items() if n.startswith("fictionalqa_rank_distractors ("))
    assert rank[1:3] == ["-", "-"] and rank[4] == "-" and rank[7] == "-"
    footnote = rank_name.split(" (")[1].rstrip(")")
    assert f"({footnote}) not recorded: `ranked_candidates.parquet` has one row per prompt (3 prompts" in page
    score_name = next(n for n in rows if n.startswith("grounding_score ("))
    assert "its log records no model loaded" in page.split(f"\n({score_name.split(' (')[1]} ")[1].splitlines()[0]

    total = rows["**total, jobs with tokens**"]
    flops = 6 * PARAMS * 540 + 2 * PARAMS * (250 + 125)
    assert total[:4] == ["4", "≥ 915", f"≥ {flops:.3g}", "39.0"]  # the jobs with tokens, not the dashes


def test_the_scoring_engines_log_lines_give_a_jobs_tokens_exactly(tmp_path, monkeypatch):
    """A job whose log has the scoring engine's lines (knowlab.core.scoring.score_token_ids, since
    2026-11-29) counts the tokens they name, exactly, in place of its outputs' bound or dash."""
    monkeypatch.setattr(measured, "parameter_count", lambda model_dir: PARAMS)
    run_dir = model_run(tmp_path)
    i = next(i for i, job in enumerate(MODEL_JOBS) if job[1] == "fictionalqa_rank_distractors")
    with open(run_dir / "results" / "logs" / f"{i}.log", "a") as log:
        log.write("2026-01-02 03:04:05 INFO knowlab.core.scoring: rank: 30 requests scored, 1200 tokens through the "
                  "model in 3 sequences (3 packed)\n")  # fmt: skip
        log.write("2026-01-02 03:04:06 INFO knowlab.core.scoring: rank: 2 requests scored, 34 tokens through the "
                  "model in 2 sequences (0 packed)\n")  # fmt: skip
    run = measured.measure_run(run_dir)
    rank = next(job for job in run.model_jobs if job.rule == "fictionalqa_rank_distractors")
    assert (rank.tokens, rank.bound, rank.note) == (1234, "", None)
    assert (
        next(job for job in run.model_jobs if job.rule == "fictionalqa_evaluate").bound == ">="
    )  # no lines: as before


def test_a_run_without_model_jobs_or_a_matmul_entry_says_so(tmp_path, monkeypatch):
    monkeypatch.setattr(measured, "parameter_count", lambda model_dir: PARAMS)
    hand = {"latest": [], "earlier": []}
    page = measured.render(None, [measured.measure_run(model_run(tmp_path))], hand, here=HERE)
    assert "not measured: no `benchmarks/matmul.py` entry" in page
    assert table_rows(page, "| kind of job | jobs | tokens")["grounding_generate"][6:] == ["-", "-"]
    page = measured.render(None, [measured.measure_run(fabricated_run(tmp_path / "other"))], hand, here=HERE)
    assert "No job of the run's Snakemake logs asks for a GPU" in page
