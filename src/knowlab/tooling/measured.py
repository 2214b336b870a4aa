"""Measured numbers in one place: ``docs/measured.md``, generated.

Usage::

    python -m knowlab.tooling.measured [--run DIR ...] [--hand docs/measured.yaml] --out docs/measured.md

(``make measured RUNS="DIR ..."``).  The page holds every number a run measures that the other pages
would otherwise restate (and let drift); they link to it instead:

* **Jobs per config**: a dry run of each shipped config (:data:`SHIPPED_CONFIGS`, each
  ``--configfile`` over the embedded default, in an empty working folder so that every job counts),
  read from Snakemake's own ``Job stats`` table (``snakemake -n --quiet rules``): jobs per rule and in
  all (the ``all`` target included, as Snakemake counts it), and how many of them are local rules
  (``localrule: True``, :class:`knowlab.tooling.slurm.LocalRules`: they run on the submit host under
  the SLURM profile) and how many SLURM jobs the rest are.
* **Runs**: per finished run folder (``--run DIR``: the folder a run's ``results/`` is in, or that
  ``results/`` folder itself), the job time per rule and in all from its Snakemake ``benchmark:``
  files (``results/benchmarks/**.tsv``: ``s``, ``cpu_time``, ``max_rss``), each file's rule from the
  Snakemake logs of the folder (``.snakemake/log/``: a job's ``rule``/``localrule`` block names its
  ``benchmark:``); the config, command, date, cores and elapsed time from the log of the complete
  invocation that ran the most jobs (the latest of equals; a later re-run of a few jobs is not the
  run's time); the commit from the manifests' ``git.commit`` (:func:`knowlab.tooling.trace.load_manifests`);
  the bytes under ``results/`` (per top-level folder) and ``resources/``.  A folder without benchmark
  files or logs is said to lack them; nothing is estimated in their place.
* **Measured by hand**: what no benchmark file records (the test suite, ``make verify``,
  ``make test-slurm``, ``make check-envs``, whole ``make run`` invocations): the entries of a small
  data file (``docs/measured.yaml``: each with its value, wall time, command, commit, date and
  machine), rendered as they are.

The page names the command that made it, the commit whose workflow was dry-run and the machine it
ran on (``lscpu``'s model name, CPUs, memory).  ``tests/tooling/test_measured.py`` checks that its job
counts equal a fresh dry run of ``config/test.yaml`` and that README.md and ``docs/`` do not restate
its numbers (:func:`restatements`).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import re
import shlex
import subprocess
import sys
import tempfile
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from knowlab.layout import BENCHMARKS_FOLDER, RESOURCES, RESULTS, BaseModel
from knowlab.tooling.slurm import LocalRules, job_stats_table
from knowlab.tooling.trace import load_manifests

ROOT = Path(__file__).resolve().parents[3]

#: the shipped configs, each dry-run as ``--configfile`` over the embedded default: label -> overlay
#: (None: the embedded default alone, ``config/config.yaml``)
SHIPPED_CONFIGS: dict[str, str | None] = {
    "default": None,
    "test": "config/test.yaml",
    "cpu-full": "config/cpu-full.yaml",
    "paper": "config/paper.yaml",
    "models": "config/models.yaml",
    "seeds": "config/seeds.yaml",
}
#: files of ``config/`` that are not configs to run: the embedded default itself, its schema, and the
#: prompts of fiction generation (read through a key of the config)
NOT_OVERLAYS = ("config/config.yaml", "config/schema.yaml", "config/fiction_prompts.yaml")

PAGE = "docs/measured.md"
HAND_KEPT = "docs/measured.yaml"
#: the keys every hand-kept entry has (``note`` is optional)
ENTRY_KEYS = ("target", "command", "value", "seconds", "commit", "date", "machine")

_LOG_JOB = re.compile(r"^\s*(local)?rule (\w+):\s*$")
_LOG_BENCHMARK = re.compile(r"^\s+benchmark: (\S+)\s*$")
_LOG_JOB_FIELD = re.compile(r"^\s+(output|log|threads|resources): (.*)$")
_LOG_STEPS = re.compile(r"^(\d+) of (\d+) steps \(\d+%\) done")
_LOG_ELAPSED = re.compile(r"^Elapsed time: (?:(\d+) days?, )?(\d+):(\d+):(\d+(?:\.\d+)?)")
_LOG_FIELD = re.compile(r"^\s+(Date|Command|Config file\(s\)|Host|Platform|Snakemake version): (.*)$")
_LOG_CORES = re.compile(r"^Provided cores: (\d+)")


class MeasuredError(RuntimeError):
    """A dry run failed, or the hand-kept data file is malformed."""


# ------------------------------------------------------------------ dry runs


def dry_run(overlay: str | None, root: Path = ROOT, workdir: Path | None = None) -> str:
    """stdout of ``snakemake -n --quiet rules`` of ``root``'s workflow with ``overlay`` (a config path
    relative to ``root``; None: the embedded default), in an empty working folder (``workdir``, or a
    temporary one): every job of the config, none already done.

    Raises:
        MeasuredError: Snakemake failed (its output's end in the message).
    """
    with tempfile.TemporaryDirectory(prefix="knowlab-measured-") as scratch:
        work = Path(workdir) if workdir else Path(scratch) / "work"
        cmd = [sys.executable, "-m", "snakemake", "--snakefile", str(root / "Snakefile"), "--directory", str(work)]
        if overlay:
            cmd += ["--configfile", str(root / overlay)]
        cmd += ["-n", "--quiet", "rules"]
        proc = subprocess.run(cmd, cwd=root, capture_output=True, text=True)
    if proc.returncode != 0 or "Job stats:" not in proc.stdout:
        raise MeasuredError(f"{' '.join(cmd)} failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}")
    return proc.stdout


def job_counts(stdout: str) -> dict[str, int]:
    """``rule -> jobs`` of the first ``Job stats`` table of a Snakemake printout, ``all`` included and
    ``total`` left out.

    Raises:
        MeasuredError: no such table, or its ``total`` is not the sum of its rows.
    """
    try:
        counts, total = job_stats_table(stdout)
    except ValueError:
        raise MeasuredError("no 'Job stats:' table in the Snakemake printout") from None
    if total is None or total != sum(counts.values()):
        raise MeasuredError(f"the Job stats table's total {total} is not the sum of its rows ({sum(counts.values())})")
    return counts


def split_local(counts: Mapping[str, int], local: Any) -> tuple[int, int]:
    """``(jobs of local rules, jobs of the other rules)`` of ``counts`` (``local``: a container of rule names)."""
    here = sum(n for rule, n in counts.items() if rule in local)
    return here, sum(counts.values()) - here


# ------------------------------------------------------------------ a finished run


@dataclass
class LogRun:
    """One Snakemake invocation's log (``.snakemake/log/*.snakemake.log``)."""

    path: Path
    date: str | None = None
    command: str | None = None
    configs: list[str] = field(default_factory=list)
    host: str | None = None
    platform: str | None = None
    cores: int | None = None
    steps: tuple[int, int] | None = None
    elapsed_s: float | None = None
    benchmarks: dict[str, str] = field(default_factory=dict)
    #: per benchmark path, its job block: :class:`JobBlock`
    jobs: dict[str, "JobBlock"] = field(default_factory=dict)

    @property
    def complete(self) -> bool:
        """It ran every job it planned (``N of N steps (100%) done``), at least one."""
        return self.steps is not None and self.steps[0] == self.steps[1] > 0


@dataclass
class JobBlock:
    """One job block of a Snakemake log: its rule, ``output:`` and ``log:`` paths, ``threads:``
    (Snakemake prints it only above 1) and whether its ``resources:`` ask for a GPU (``gpu=``: the
    workflow's mark of a job that runs a model)."""

    rule: str
    outputs: list[str] = field(default_factory=list)
    logs: list[str] = field(default_factory=list)
    threads: int = 1
    gpu: bool = False


def parse_log(path: Path) -> LogRun:
    """The facts of a Snakemake log: header fields, provided cores, the last ``N of M steps`` line,
    the elapsed time and, per job block (``rule X:`` / ``localrule X:``), its ``benchmark:`` path
    (with the block's outputs, logs, threads and GPU request: :class:`JobBlock`)."""
    run = LogRun(Path(path))
    rule = None  # the rule of the job block the line is in (its indented lines), or None
    block: JobBlock | None = None
    for line in Path(path).read_text(encoding="utf-8", errors="replace").splitlines():
        if found := _LOG_JOB.match(line):
            rule = found.group(2)
            block = JobBlock(rule)
            continue
        if rule and (found := _LOG_BENCHMARK.match(line)):
            run.benchmarks[found.group(1)] = rule
            run.jobs[found.group(1)] = block
            continue
        if rule and block is not None and (found := _LOG_JOB_FIELD.match(line)):
            key, value = found.groups()
            if key == "output":
                block.outputs = [v.strip() for v in value.split(",") if v.strip()]
            elif key == "log":
                block.logs = [v.strip() for v in value.split(",") if v.strip()]
            elif key == "threads" and value.strip().isdigit():
                block.threads = int(value.strip())
            elif key == "resources":
                block.gpu = bool(re.search(r"(?:^|,\s*)gpu=[1-9]", value))
            continue
        if not line.startswith((" ", "\t")):
            rule = None
            block = None
        if found := _LOG_FIELD.match(line):
            key, value = found.group(1), found.group(2).strip()
            if key == "Date" and run.date is None:
                run.date = value
            elif key == "Command" and run.command is None:
                run.command = value
            elif key == "Config file(s)" and not run.configs:
                run.configs = re.findall(r"'([^']+)'", value)
            elif key == "Host" and run.host is None:
                run.host = value
            elif key == "Platform" and run.platform is None:
                run.platform = value
        elif found := _LOG_CORES.match(line):
            run.cores = int(found.group(1))
        elif found := _LOG_STEPS.match(line):
            run.steps = (int(found.group(1)), int(found.group(2)))
        elif found := _LOG_ELAPSED.match(line):
            days, h, m, s = found.groups()
            run.elapsed_s = int(days or 0) * 86400 + int(h) * 3600 + int(m) * 60 + float(s)
    return run


def config_label(configs: Sequence[str]) -> str | None:
    """The label of :data:`SHIPPED_CONFIGS` a log's ``Config file(s)`` amount to (the overlays before
    ``config/config.yaml``), or ``config/<name>`` of an overlay not shipped; None when none is recorded."""
    names = [f"{Path(c).parent.name}/{Path(c).name}" for c in configs]
    overlays = [n for n in names if n != "config/config.yaml"]
    if not names:
        return None
    if not overlays:
        return "default"
    if len(overlays) == 1:
        for label, overlay in SHIPPED_CONFIGS.items():
            if overlay == overlays[0]:
                return label
    return " + ".join(overlays)


def config_title(label: str | None) -> str:
    """How the page names a config: the embedded default, or its overlay file."""
    if label is None:
        return "an unrecorded config"
    if label == "default":
        return "the embedded default"
    return SHIPPED_CONFIGS.get(label) or label


@dataclass
class Bench:
    """One benchmark file: its rule (None when no log names it), wall s, CPU s and peak RSS in MiB
    (None where Snakemake wrote ``NA``), summed over its rows (one per repeat)."""

    path: str
    rule: str | None
    s: float
    cpu_s: float | None
    max_rss_mib: float | None
    #: the job's block in the Snakemake log (None when no log names the file)
    job: JobBlock | None = None


@dataclass
class RunMeasure:
    """What a finished run folder measured (:func:`measure_run`)."""

    folder: Path
    results: Path
    log: LogRun | None
    config: str | None
    benchmarks: list[Bench]
    commits: Counter
    manifests: int
    sizes: dict[str, int]
    checkpoints_bytes: int
    resources_bytes: int | None
    #: the base model's parameter count (:func:`parameter_count` of ``resources/base_model``), or None
    params: int | None = None
    #: per model job (:func:`model_jobs`)
    model_jobs: list["ModelJob"] = field(default_factory=list)


def locate(folder: str | os.PathLike) -> tuple[Path, Path]:
    """``(base, results)`` of a run folder given as the folder holding ``results/`` or as ``results/`` itself.

    Raises:
        MeasuredError: neither.
    """
    folder = Path(folder)
    if (folder / RESULTS).is_dir():
        return folder, folder / RESULTS
    if folder.is_dir() and (folder.name == RESULTS or (folder / BENCHMARKS_FOLDER).is_dir()):
        return folder.parent, folder
    raise MeasuredError(f"{folder}: no {RESULTS}/ folder in it, and not a results folder itself")


def read_benchmark(path: Path) -> tuple[float, float | None, float | None]:
    """``(s, cpu_time, max_rss)`` of one Snakemake benchmark TSV, summed over its rows (``max_rss``: the
    largest); a column all ``NA`` gives None."""
    import pandas as pd  # deferred: the page's other parts need no pandas

    frame = pd.read_csv(path, sep="\t")
    if "s" not in frame.columns:
        raise MeasuredError(f"{path}: no column 's' (not a Snakemake benchmark file)")

    def column(name: str, how: str) -> float | None:
        if name not in frame.columns:
            return None
        values = pd.to_numeric(frame[name], errors="coerce").dropna()
        if values.empty:
            return None
        return float(values.sum() if how == "sum" else values.max())

    return column("s", "sum") or 0.0, column("cpu_time", "sum"), column("max_rss", "max")


def tree_bytes(folder: Path) -> int:
    """Bytes of the regular files under ``folder`` (links not followed)."""
    total = 0
    for dirpath, _, files in os.walk(folder):
        for name in files:
            path = Path(dirpath) / name
            if not path.is_symlink():
                total += path.stat().st_size
    return total


def measure_run(folder: str | os.PathLike) -> RunMeasure:
    """Everything :func:`render` shows of a finished run folder (see the module's docstring)."""
    base, results = locate(folder)
    logs = sorted((base / ".snakemake" / "log").glob("*.snakemake.log"))
    parsed = [parse_log(path) for path in logs]
    rule_of: dict[str, str] = {}
    job_of: dict[str, JobBlock] = {}
    for one in parsed:  # oldest first: a later run's mapping wins
        rule_of.update(one.benchmarks)
        job_of.update(one.jobs)
    complete = [one for one in parsed if one.complete]
    # the invocation that ran the run: the complete one with the most jobs (a later re-run of a few jobs,
    # e.g. the findings re-decided, is not the run's time), the latest of equals
    log = max(reversed(complete), key=lambda one: one.steps[1]) if complete else None
    benchmarks = []
    for path in sorted((results / BENCHMARKS_FOLDER).rglob("*.tsv")) if (results / BENCHMARKS_FOLDER).is_dir() else []:
        relative = path.relative_to(base).as_posix()
        s, cpu, rss = read_benchmark(path)
        benchmarks.append(Bench(relative, rule_of.get(relative), s, cpu, rss, job_of.get(relative)))
    manifests = load_manifests(base)
    commits = Counter(
        ((m.get("git") or {}).get("commit"), (m.get("git") or {}).get("dirty")) for m in manifests.values()
    )
    sizes: dict[str, int] = {}
    for entry in sorted(results.iterdir()):
        key = f"{entry.name}/" if entry.is_dir() else f"(files directly in {RESULTS}/)"
        size = tree_bytes(entry) if entry.is_dir() else (0 if entry.is_symlink() else entry.stat().st_size)
        sizes[key] = sizes.get(key, 0) + size
    checkpoints = sum(tree_bytes(Path(d)) for d, subdirs, _ in os.walk(results) if Path(d).name == "checkpoints")
    resources = base / RESOURCES
    model = base / BaseModel.path
    params = parameter_count(model) if (model / "config.json").is_file() else None
    return RunMeasure(
        folder=Path(folder),
        results=results,
        log=log,
        config=config_label(log.configs) if log else None,
        benchmarks=benchmarks,
        commits=commits,
        manifests=len(manifests),
        sizes=sizes,
        checkpoints_bytes=checkpoints,
        resources_bytes=tree_bytes(resources) if resources.is_dir() else None,
        params=params,
        model_jobs=model_jobs(base, benchmarks),
    )


@dataclass
class RuleTime:
    """One rule's job time over a run's benchmark files."""

    rule: str
    jobs: int = 0
    s: float = 0.0
    longest_s: float = 0.0
    cpu_s: float = 0.0
    max_rss_mib: float | None = None

    def add(self, bench: Bench) -> None:
        self.jobs += 1
        self.s += bench.s
        self.longest_s = max(self.longest_s, bench.s)
        self.cpu_s += bench.cpu_s or 0.0
        if bench.max_rss_mib is not None:
            self.max_rss_mib = max(self.max_rss_mib or 0.0, bench.max_rss_mib)


def rule_times(benchmarks: Iterable[Bench]) -> tuple[list[RuleTime], RuleTime]:
    """Per rule (longest in all first) and the total of a run's benchmark files; a file no log names
    counts under ``? <its folder>``."""
    rows: dict[str, RuleTime] = {}
    total = RuleTime("total")
    for bench in benchmarks:
        name = bench.rule or f"? {Path(bench.path).parent.as_posix()}/"
        rows.setdefault(name, RuleTime(name)).add(bench)
        total.add(bench)
    return sorted(rows.values(), key=lambda r: (-r.s, r.rule)), total


# ------------------------------------------------------------------ model FLOPs against the matmul floor

#: what a model job's outputs cannot tell, per rule: ``(bound, note)``, the note a footnote of its row;
#: bound ``>=`` (the recorded tokens are some of those run) or ``<=`` (requests that may have shared a row).
#: Only for runs older than the scoring engine's token lines (:func:`scored_tokens`), which are exact.
TOKEN_NOTES = {
    "fictionalqa_evaluate": (
        ">=",
        "a lower bound: the item table's `n_tokens` are the scored tokens of the document and webtext suites "
        "(each document's forward pass, prefix token included) and the answers of the QA-likelihood suites; the "
        "questions before those answers and every token of the MCQ suites (`n_tokens` 0) are not recorded",
    ),
    "fictionalqa_rank_distractors": (
        "",
        "not recorded: `ranked_candidates.parquet` has one row per prompt ({rows:,} prompts, each followed by "
        '" Yes" and " No"), not their tokens',
    ),
    **{
        rule: (
            "<=",
            "an upper bound: the sum of the item tables' `n_context_tokens` (each prompt; its one-token labels add "
            "none) and, for the segment likelihoods, `n_tokens_a` + `n_tokens_b`, per request; the scoring engine "
            "runs prompts that share a prefix of 32 tokens or more (one excerpt's items) in one row where that is "
            "cheaper, the prefix once",
        )
        for rule in ("sort_evaluate_base", "sort_fiction_evaluate", "sort_parametric_evaluate")
    },
}
#: a job whose log has no such line loaded no model (it asked for a GPU for one it did not need)
_LOADED = re.compile(r"knowlab\.core\.models: loaded ")
#: a rule without a note of its own whose outputs hold no token counts
NO_TOKENS = "not recorded: its outputs hold no token counts"
#: the hand-kept entry whose ``value`` holds the matmul floor (``benchmarks/matmul.py``'s last line)
MATMUL_COMMAND = "benchmarks/matmul.py"
_MATMUL_FIGURE = re.compile(r"\b(float32|bfloat16|float16)_t(\d+)=(\d+(?:\.\d+)?)")


def parameter_count(model_dir: str | os.PathLike) -> int:
    """Parameters of the model whose ``config.json`` is in ``model_dir``, built on the meta device (no
    weights read): ``sum(p.numel() for p in model.parameters())``, so tied input and output embeddings
    count once."""
    # deferred: torch and transformers load only when a run folder holds a model config
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    config = AutoConfig.from_pretrained(model_dir)
    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(config)
    return sum(p.numel() for p in model.parameters())


@dataclass
class ModelJob:
    """One job that ran a model (its log block asks for a GPU): tokens from its outputs, wall s from
    its benchmark file, dtype from its log.  ``tokens`` None: not recorded; ``partial``: a lower bound."""

    rule: str
    group: str
    s: float
    tokens: int | None
    trained: bool
    dtype: str | None
    threads: int
    note: str | None = None
    bound: str = ""


def _parquet_columns(path: Path, wanted: Sequence[str]) -> dict[str, float]:
    """Sums of the columns of ``wanted`` that the parquet file has (none: empty)."""
    import pyarrow.parquet as pq  # deferred: the page's other parts need no parquet

    have = [c for c in wanted if c in pq.read_schema(path).names]
    if not have:
        return {}
    table = pq.read_table(path, columns=have).to_pandas()
    return {c: float(table[c].fillna(0).sum()) for c in have}


def job_tokens(base: Path, outputs: Sequence[str]) -> tuple[int | None, bool, int]:
    """``(tokens, trained, rows)`` of a model job from its output files (paths relative to ``base``):

    * a training log (``train_log/*.parquet``): the sum of ``tokens`` (each optimizer step's
      non-padding tokens), trained;
    * generations (``*.jsonl`` with ``n_input_tokens``, ``n_new_tokens``): prompt plus generated tokens;
    * item tables (``*.parquet``): the sum of ``n_context_tokens`` (SORT: a prompt, its one-token
      labels scored from its last position), ``n_tokens_a`` + ``n_tokens_b`` (SORT's segment
      likelihoods) and ``n_tokens`` (FictionalQA's scored tokens).

    ``tokens`` is None when no output holds such a column; ``rows``: the rows of the parquet outputs.
    """
    tokens: int | None = None
    trained = False
    rows = 0
    for name in outputs:
        path = base / name
        if not path.is_file():
            continue
        if path.suffix == ".parquet":
            import pyarrow.parquet as pq  # deferred: the page's other parts need no parquet

            rows += pq.read_metadata(path).num_rows
            if path.parent.name == "train_log":
                sums = _parquet_columns(path, ["tokens"])
                trained = trained or bool(sums)
            else:
                sums = _parquet_columns(path, ["n_context_tokens", "n_tokens_a", "n_tokens_b", "n_tokens"])
        elif path.suffix == ".jsonl":
            sums = {}
            for line in path.read_text(encoding="utf-8").splitlines():
                record = json.loads(line) if line.strip() else {}
                for key in ("n_input_tokens", "n_new_tokens"):
                    if isinstance(record.get(key), (int, float)):
                        sums[key] = sums.get(key, 0.0) + record[key]
        else:
            continue
        if sums:
            tokens = (tokens or 0) + round(sum(sums.values()))
    return tokens, trained, rows


#: the scoring engine's line per call (:func:`knowlab.core.scoring.score_token_ids`)
_SCORED = re.compile(r": \d+ requests scored, (\d+) tokens through the model in ")


def scored_tokens(base: Path, logs: Sequence[str]) -> int | None:
    """The tokens a job's scoring passes ran, summed over the scoring engine's log lines
    (:func:`knowlab.core.scoring.score_token_ids`, since 2026-11-29: exact, packed prefixes once); None
    when its log has none (an older run: :func:`job_tokens` reads its outputs instead)."""
    found = [
        int(n)
        for name in logs
        if (base / name).is_file()
        for n in _SCORED.findall((base / name).read_text(encoding="utf-8", errors="replace"))
    ]
    return sum(found) if found else None


def loaded_model(base: Path, logs: Sequence[str]) -> bool | None:
    """Whether a job's log says it loaded a model (``knowlab.core.models: loaded ...``, or a fine-tuning
    job's ``bf16=``); None without a log."""
    texts = [(base / n).read_text(encoding="utf-8", errors="replace") for n in logs if (base / n).is_file()]
    return any(_LOADED.search(t) or "bf16=" in t for t in texts) if texts else None


def job_dtype(base: Path, logs: Sequence[str]) -> str | None:
    """The dtype a job ran its model in, from its own log: a fine-tuning job's ``bf16=True|False``
    (bfloat16 weights, or float32), another's ``compute: <device>, <dtype>`` line; None if neither."""
    for name in logs:
        path = base / name
        if not path.is_file():
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        if found := re.search(r"\bbf16=(True|False)\b", text):
            return "bfloat16" if found.group(1) == "True" else "float32"
        if found := re.search(r"compute: [^,\n]+, (\w+)", text):
            return found.group(1)
    return None


def model_jobs(base: Path, benchmarks: Iterable[Bench]) -> list[ModelJob]:
    """The jobs of a run that ran a model (their log block asks for a GPU), with their tokens
    (:func:`job_tokens`), dtype (:func:`job_dtype`) and threads; grouped per rule and, where a rule
    writes under more than one top folder of ``results/`` (fine-tuning: ``fictionalqa/``, ``sort/``),
    per folder."""
    jobs = []
    for bench in benchmarks:
        job = bench.job
        if job is None or not job.gpu:
            continue
        tokens, trained, rows = job_tokens(base, job.outputs)
        forwarded = scored_tokens(base, job.logs)
        folders = [Path(o).parts[1] for o in job.outputs if Path(o).parts[:1] == (RESULTS,) and len(Path(o).parts) > 2]
        bound, note = TOKEN_NOTES.get(job.rule, ("", None))
        if forwarded is not None and not trained:
            tokens, bound, note = forwarded, "", None
        if tokens is None:
            bound = ""
            if note is None:
                note = NO_TOKENS
                if loaded_model(base, job.logs) is False:
                    note += " (its log records no model loaded: it ran none)"
        jobs.append(
            ModelJob(
                rule=job.rule,
                group=folders[0] if folders else "",
                s=bench.s,
                tokens=tokens,
                trained=trained,
                dtype=job_dtype(base, job.logs),
                threads=job.threads,
                note=note.format(rows=rows) if note else None,
                bound=bound,
            )
        )
    return jobs


def matmul_floor(hand: Mapping[str, list[dict[str, Any]]]) -> tuple[dict[tuple[str, int], float], dict | None]:
    """``{(dtype, threads): GFLOP/s}`` of the latest hand-kept ``benchmarks/matmul.py`` entry (its
    ``value``: ``float32_t1=86.0 bfloat16_t1=...``), and that entry; empty and None without one."""
    for part in ("latest", "earlier"):
        for entry in hand.get(part, []):
            if MATMUL_COMMAND in str(entry.get("command")):
                figures = {(d, int(t)): float(g) for d, t, g in _MATMUL_FIGURE.findall(str(entry.get("value")))}
                return figures, entry
    return {}, None


@dataclass
class FlopRow:
    """One kind of model job of a run: its jobs' tokens, FLOPs and benchmark seconds."""

    label: str
    jobs: int = 0
    s: float = 0.0
    tokens: int | None = 0
    flops: float | None = 0.0
    trained: bool = False
    bounds: set = field(default_factory=set)
    dtypes: set = field(default_factory=set)
    threads: set = field(default_factory=set)
    notes: list = field(default_factory=list)

    @property
    def achieved(self) -> float | None:
        """FLOP/s: FLOPs over the jobs' summed benchmark ``s``."""
        return self.flops / self.s if self.flops is not None and self.s > 0 else None


def flop_rows(jobs: Sequence[ModelJob], params: int | None) -> tuple[list[FlopRow], FlopRow]:
    """Per kind of model job (rule, and folder where a rule writes under several), most FLOPs first,
    and the total of the jobs whose tokens are recorded: tokens, FLOPs (``6 * params`` a trained token,
    ``2 * params`` a scored or generated one; None without ``params`` or tokens), seconds."""
    folders: dict[str, set] = {}
    for job in jobs:
        folders.setdefault(job.rule, set()).add(job.group)
    rows: dict[str, FlopRow] = {}
    total = FlopRow("total, jobs with tokens")
    for job in jobs:
        label = f"{job.rule} (`{job.group}/`)" if len(folders[job.rule]) > 1 else job.rule
        row = rows.setdefault(label, FlopRow(label))
        for target in (row, total) if job.tokens is not None else (row,):
            target.jobs += 1
            target.s += job.s
            target.trained = target.trained or job.trained
            if job.bound:
                target.bounds.add(job.bound)
            target.dtypes.add(job.dtype)
            target.threads.add(job.threads)
            if job.note and job.note not in target.notes:
                target.notes.append(job.note)
            if job.tokens is None or target.tokens is None:
                target.tokens = target.flops = None
            else:
                target.tokens += job.tokens
                target.flops = (
                    None if params is None else target.flops + (6 if job.trained else 2) * params * job.tokens
                )
    return sorted(rows.values(), key=lambda r: (-(r.flops or 0), r.label)), total


def _render_flops(run: RunMeasure, hand: Mapping[str, list[dict[str, Any]]]) -> list[str]:
    jobs = run.model_jobs
    if not jobs:
        return [
            "",
            "### Model FLOPs against the matmul floor",
            "",
            "No job of the run's Snakemake logs asks for a GPU (the mark of a job that runs a model): no FLOPs.",
        ]
    floor, entry = matmul_floor(hand)
    rows, total = flop_rows(jobs, run.params)
    n = f"N = {run.params:,}" if run.params is not None else f"N not known (no `{BaseModel.path}/config.json`)"
    out = [
        "",
        "### Model FLOPs against the matmul floor",
        "",
        "Per kind of job that runs a model (its log block asks for a GPU): the tokens its outputs record, the FLOPs "
        f"they are worth, and those FLOPs per second of the jobs' benchmark `s` (wall seconds, model loading and "
        f"everything else in the job included). FLOPs: 6N per trained token, 2N per scored or generated token "
        f"(prompt tokens count: they are run through the model), {n} parameters of the base model "
        f"(`{BaseModel.path}/config.json` built on the meta device, `sum(p.numel() for p in model.parameters())`: "
        "the tied output layer counted once); attention's sequence-length term is left out. *Floor*: this machine's "
        "`torch.matmul` throughput in the job's dtype (from its log: `bf16=` of a fine-tuning job, `compute:` of "
        "another) at its threads (Snakemake's `threads:`, 1 where the log names none), "
        + (
            f"from `{MATMUL_COMMAND}` ({entry['date']}, `{entry['value']}`, the SmolLM2-135M MLP shape; "
            "measured by hand, above); *of floor* = achieved / floor."
            if entry
            else f"not measured: no `{MATMUL_COMMAND}` entry in the hand-kept file."
        ),
        "",
        "| kind of job | jobs | tokens | FLOPs | wall s | achieved GFLOP/s | dtype, threads | floor GFLOP/s | of floor |",
        "| --- | ---: | ---: | ---: | ---: | ---: | --- | ---: | ---: |",
    ]
    notes: list[str] = []

    def cells(row: FlopRow, bold: bool) -> str:
        marks = ""
        for note in row.notes:
            if note not in notes:
                notes.append(note)
            marks += f" ({notes.index(note) + 1})"
        at_least = {">=": "≥ ", "<=": "≤ "}.get(next(iter(row.bounds)), "") if len(row.bounds) == 1 else ""
        if len(row.bounds) > 1 or row.tokens is None:
            at_least = "~ " if len(row.bounds) > 1 else ""
        tokens = f"{at_least}{row.tokens:,}" if row.tokens is not None else "-"
        flops = f"{at_least}{row.flops:.3g}" if row.flops is not None else "-"
        achieved = row.achieved
        gflops = f"{at_least}{achieved / 1e9:,.2f}" if achieved is not None else "-"
        dtypes = sorted(d or "?" for d in row.dtypes)
        kinds = ", ".join(dtypes) + ", " + ", ".join(str(t) for t in sorted(row.threads))
        peak = floor.get((dtypes[0], next(iter(row.threads)))) if len(dtypes) == 1 and len(row.threads) == 1 else None
        share = f"{at_least}{achieved / 1e9 / peak:.3f}" if peak and achieved is not None else "-"
        name = f"**{row.label}**" if bold else row.label
        return (
            f"| {name}{'' if bold else marks} | {row.jobs:,} | {tokens} | {flops} | {row.s:,.1f} | {gflops} "
            f"| {kinds if not bold else '-'} | {_num(peak) if peak and not bold else '-'} | {share if not bold else '-'} |"
        )

    out += [cells(row, False) for row in rows]
    out.append(cells(total, True))
    out += [
        "",
        "≥: a lower bound (some of the tokens run are recorded), ≤: an upper bound (the requests' tokens, some of "
        "which may have run once for several), ~: both kinds summed; the total sums the jobs whose tokens are "
        "recorded. A fine-tuning job's dtype is its weights' (`bf16=True`: bfloat16 weights, float32 master "
        "weights); the other jobs' is `compute.dtype`'s, as their logs say.",
    ]
    for i, note in enumerate(notes, 1):
        out += ["", f"({i}) {note}."]
    return out


# ------------------------------------------------------------------ measured by hand


def load_hand_kept(path: str | os.PathLike) -> dict[str, list[dict[str, Any]]]:
    """``{"latest": [...], "earlier": [...]}``: the entries of the hand-kept data file, each with
    :data:`ENTRY_KEYS` (``seconds``: a number, ``[low, high]`` or null; ``about: true`` marks an
    approximate one) and optionally ``note``.

    Raises:
        MeasuredError: a list missing, an entry without one of :data:`ENTRY_KEYS`, or seconds that are
            not a number, a pair of numbers or null.
    """
    data = yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {}
    out = {}
    for part in ("latest", "earlier"):
        entries = data.get(part)
        if not isinstance(entries, list):
            raise MeasuredError(f"{path}: '{part}' must be a list of measurements")
        for i, entry in enumerate(entries):
            missing = [key for key in ENTRY_KEYS if key not in entry]
            if missing:
                raise MeasuredError(f"{path}: {part}[{i}] ({entry.get('target')}) lacks {', '.join(missing)}")
            seconds = entry["seconds"]
            pair = isinstance(seconds, list) and len(seconds) == 2 and all(isinstance(x, (int, float)) for x in seconds)
            if not (seconds is None or isinstance(seconds, (int, float)) or pair):
                raise MeasuredError(
                    f"{path}: {part}[{i}] ({entry['target']}): seconds must be a number, [low, high] or null"
                )
        out[part] = entries
    return out


def minutes_seconds(seconds: float) -> str:
    """``458`` -> ``7 min 38 s``; under a minute ``42 s``; from an hour ``1 h 02 min``."""
    seconds = round(seconds)
    if seconds >= 3600:
        return f"{seconds // 3600} h {seconds % 3600 // 60:02d} min"
    if seconds >= 60:
        return f"{seconds // 60} min {seconds % 60:02d} s"
    return f"{seconds} s"


def wall_time(entry: Mapping[str, Any]) -> str:
    """An entry's wall time as the page prints it: ``458 s (7 min 38 s)``, ``70 to 95 s``, ``about ...``."""
    seconds = entry.get("seconds")
    if seconds is None:
        return "-"
    about = "about " if entry.get("about") else ""
    if isinstance(seconds, list):
        low, high = seconds
        return f"{about}{low:,g} to {high:,g} s"
    text = f"{about}{seconds:,g} s"
    return text + (f" ({minutes_seconds(seconds)})" if seconds >= 60 else "")


def time_forms(seconds: float) -> list[str]:
    """The ways a page could write a wall time of ``seconds``: ``458 s``, ``7 min 38 s`` (from a
    minute), with and without the thousands comma."""
    whole = round(seconds)
    forms = {f"{whole} s", f"{whole:,} s"}
    if whole >= 60:
        forms.add(f"{whole // 60} min {whole % 60:02d} s")
        forms.add(f"{whole // 60} min {whole % 60} s")
    return sorted(forms)


# ------------------------------------------------------------------ the machine


def machine() -> dict[str, Any]:
    """This machine: CPU model (``lscpu``, else /proc/cpuinfo, else ``platform``), CPUs, memory, host."""
    model = None
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, timeout=10).stdout
        model = next(
            (line.split(":", 1)[1].strip() for line in out.splitlines() if line.startswith("Model name")), None
        )
    except (OSError, subprocess.SubprocessError):
        pass
    if not model and Path("/proc/cpuinfo").exists():
        text = Path("/proc/cpuinfo").read_text(errors="replace")
        found = re.search(r"^model name\s*:\s*(.+)$", text, flags=re.M)
        model = found.group(1).strip() if found else None
    memory = None
    if Path("/proc/meminfo").exists():
        found = re.search(r"^MemTotal:\s+(\d+) kB", Path("/proc/meminfo").read_text(), flags=re.M)
        memory = int(found.group(1)) * 1024 if found else None
    return {
        "cpu": model or platform.processor() or platform.machine(),
        "cpus": os.cpu_count(),
        "memory_bytes": memory,
        "host": platform.node(),
        "platform": platform.platform(),
    }


def git_state(root: Path) -> tuple[str | None, bool | None]:
    """``(short commit, uncommitted changes to tracked files)`` of ``root``, or ``(None, None)``."""
    try:
        commit = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "--short=7", "HEAD"], capture_output=True, text=True, check=True
        ).stdout.strip()
        status = subprocess.run(
            ["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True, text=True, check=True,
        ).stdout  # fmt: skip
    except (OSError, subprocess.CalledProcessError):
        return None, None
    return commit, bool(status.strip())


# ------------------------------------------------------------------ the page


def gib(n: float) -> str:
    """Bytes as GiB, MiB or KiB (two decimals in GiB, one below)."""
    if n >= 1024**3:
        return f"{n / 1024**3:.2f} GiB"
    if n >= 1024**2:
        return f"{n / 1024**2:.1f} MiB"
    return f"{n / 1024:.1f} KiB"


def _num(x: float | None, digits: int = 1) -> str:
    return "-" if x is None else f"{x:,.{digits}f}"


def run_heading(config: str | None) -> str:
    """The heading of a run's section (its anchor is what other pages link to)."""
    return f"Run of {config_title(config)}"


def _render_jobs(dry: Mapping[str, Mapping[str, int]], local: Any, dry_commit: str | None) -> list[str]:
    labels = list(dry)
    out = ["## Jobs per config", ""]
    out.append(
        "A dry run of each shipped config in an empty working folder (`snakemake -n --quiet rules --directory "
        "<empty folder> [--configfile config/<name>.yaml]`, over `config/config.yaml`), read from Snakemake's "
        f"own `Job stats` table, at commit {dry_commit or 'unknown'}. *Jobs* includes the `all` target, as "
        "Snakemake counts it. *Local* are the jobs of rules marked `localrule: True` "
        "(`knowlab.tooling.slurm.LocalRules`), which run on the submit host under the SLURM profile; "
        "*SLURM jobs* are the rest, one submission each (a retried job is submitted again)."
    )
    out += ["", "| config | `--configfile` | jobs | local | SLURM jobs |", "| --- | --- | ---: | ---: | ---: |"]
    for label in labels:
        here, remote = split_local(dry[label], local)
        overlay = SHIPPED_CONFIGS.get(label)
        out.append(
            f"| {label} | {f'`{overlay}`' if overlay else '(none)'} | {sum(dry[label].values()):,} "
            f"| {here:,} | {remote:,} |"
        )
    out += ["", "### Jobs per rule", "", "| rule | local | " + " | ".join(labels) + " |"]
    out.append("| --- | --- | " + " | ".join("---:" for _ in labels) + " |")
    rules: list[str] = []
    for label in labels:
        rules += [r for r in dry[label] if r not in rules]
    for rule in sorted(rules, key=lambda r: (r == "all", r)):
        cells = [str(dry[label][rule]) if rule in dry[label] else "" for label in labels]
        out.append(f"| {rule} | {'yes' if rule in local else ''} | " + " | ".join(cells) + " |")
    out.append("| **total** | | " + " | ".join(f"**{sum(dry[label].values()):,}**" for label in labels) + " |")
    return out


def _render_run(run: RunMeasure, here: Mapping[str, Any], hand: Mapping[str, list[dict[str, Any]]]) -> list[str]:
    out = [f"## {run_heading(run.config)}", ""]
    out += ["| what | measured |", "| --- | --- |"]
    log = run.log
    if log:
        configs = ", ".join(f"`{Path(c).parent.name}/{Path(c).name}`" for c in log.configs) or "-"
        out.append(f"| config | {config_title(run.config)} ({configs}) |")
        out.append(f"| command | `{anonymous(log.command)}` |" if log.command else "| command | not in the log |")
        out.append(f"| date | {log.date} (Snakemake's log `{log.path.name}`) |")
        out.append(f"| cores | {log.cores} (Snakemake's `Provided cores`) |")
        elapsed = f"{log.elapsed_s:,.0f} s ({minutes_seconds(log.elapsed_s)})" if log.elapsed_s is not None else "-"
        out.append(f"| elapsed | {elapsed}: Snakemake's `Elapsed time`, {log.steps[0]} of {log.steps[1]} steps |")
        same = log.host == here["host"]
        where = (
            f"{log.platform}, this machine: {here['cpu']}, {here['cpus']} CPUs"
            + (f", {gib(here['memory_bytes'])} of memory" if here.get("memory_bytes") else "")
            + " (read where this page was generated)"
            if same
            else f"{log.platform}, another machine than this page's: its CPU is not recorded"
        )
        out.append(f"| machine | {where} |")
    else:
        out.append(
            "| config, command, date, cores, machine | not recorded: no Snakemake log of a complete run "
            "in the run folder's `.snakemake/log/` |"
        )
    if run.commits:
        parts = []
        for (commit, dirty), n in run.commits.most_common():
            state = {True: "uncommitted changes", False: "clean", None: "unknown"}[dirty]
            parts.append(f"`{(commit or 'unknown')[:7]}` ({state}) in {n:,} of {run.manifests:,} manifests")
        out.append(f"| code | {'; '.join(parts)} |")
    else:
        out.append("| code | not recorded: no manifests |")
    rows, total = rule_times(run.benchmarks)
    if run.benchmarks:
        out.append(
            f"| job time | {total.s:,.0f} s ({minutes_seconds(total.s)}) over {total.jobs:,} benchmark files, "
            f"{total.cpu_s:,.0f} CPU-s; largest peak RSS of one job {_num(total.max_rss_mib)} MiB |"
        )
    else:
        out.append(f"| job time | not measured: no benchmark files under `{run.results}/{BENCHMARKS_FOLDER}/` |")
    results_total = sum(run.sizes.values())
    out.append(f"| {RESULTS}/ | {results_total:,} bytes ({gib(results_total)}) |")
    if run.resources_bytes is not None:
        out.append(f"| {RESOURCES}/ | {run.resources_bytes:,} bytes ({gib(run.resources_bytes)}) |")
    if run.benchmarks:
        out += [
            "",
            "Job time per rule, from the benchmark files (`s`: wall seconds of each job, `cpu_time`, "
            "`max_rss`: the peak resident memory of the job's processes), longest in all first:",
            "",
        ]
        out += [
            "| rule | jobs | wall s, all jobs | longest job s | CPU s | peak RSS MiB |",
            "| --- | ---: | ---: | ---: | ---: | ---: |",
        ]
        for row in [*rows, total]:
            name = f"**{row.rule}**" if row is total else row.rule
            out.append(
                f"| {name} | {row.jobs:,} | {row.s:,.1f} | {row.longest_s:,.1f} | {row.cpu_s:,.1f} "
                f"| {_num(row.max_rss_mib)} |"
            )
        unnamed = [b for b in run.benchmarks if b.rule is None]
        if unnamed:
            out += [
                "",
                f"{len(unnamed)} benchmark files are named by no job of the folder's Snakemake logs: "
                "counted under `?` and their folder.",
            ]
    out += [
        "",
        f"Bytes under `{RESULTS}/` (regular files, links not followed):",
        "",
        "| folder | bytes | |",
        "| --- | ---: | ---: |",
    ]
    for name, size in run.sizes.items():
        out.append(f"| `{name}` | {size:,} | {gib(size)} |")
    out.append(f"| **{RESULTS}/** | **{results_total:,}** | **{gib(results_total)}** |")
    out.append(f"| of it in `checkpoints/` folders | {run.checkpoints_bytes:,} | {gib(run.checkpoints_bytes)} |")
    if run.benchmarks:
        out += _render_flops(run, hand)
    return out


def _render_hand(hand: Mapping[str, list[dict[str, Any]]], hand_path: str) -> list[str]:
    head = "| what | command | result | wall time | commit | date | machine | note |"
    rule = "| --- | --- | --- | --- | --- | --- | --- | --- |"

    def row(e: Mapping[str, Any]) -> str:
        cells = [
            e["target"], f"`{e['command']}`", e["value"] if e["value"] is not None else "-", wall_time(e),
            f"`{e['commit']}`" if e["commit"] else "not recorded", str(e["date"]), e["machine"], e.get("note") or "",
        ]  # fmt: skip
        return "| " + " | ".join(str(c).replace("|", "\\|") for c in cells) + " |"

    out = ["## Test suite and checks", ""]
    out.append(
        "Measured by hand: no benchmark file records these. They come from "
        f"`{hand_path}` (add a measurement there, then `make measured`); the latest first."
    )
    out += ["", head, rule, *map(row, hand["latest"])]
    out += [
        "",
        "### Earlier measurements",
        "",
        "Kept for comparison; the code, the suite and the machine's load differed.",
        "",
    ]
    out += [head, rule, *map(row, hand["earlier"])]
    return out


def render(
    dry: Mapping[str, Mapping[str, int]] | None,
    runs: Sequence[RunMeasure],
    hand: Mapping[str, list[dict[str, Any]]],
    *,
    local: Any = (),
    command: str = "python -m knowlab.tooling.measured",
    dry_commit: str | None = None,
    here: Mapping[str, Any] | None = None,
    hand_path: str = HAND_KEPT,
    today: str | None = None,
) -> str:
    """The page: a header (generated, by which command, not to be edited), the hand-kept measurements,
    the jobs per config (``dry``: label -> rule -> jobs; None leaves the section out), and a section per run."""
    here = dict(here or machine())
    today = today or dt.date.today().isoformat()
    memory = f", {gib(here['memory_bytes'])} of memory" if here.get("memory_bytes") else ""
    out = [
        "# Measured numbers",
        "",
        f"<!-- generated by `{command}` (`make measured`); do not edit by hand: measurements by hand go into "
        f"{hand_path}, and the rest is re-measured by running the command again -->",
        "",
        "Every time, job count and size that a run of this workflow measures, in one place: the other pages "
        "link here instead of restating them. Generated by "
        f"`{command}` on {today} on {here['cpu']} ({here['cpus']} CPUs{memory}).",
        "",
    ]
    out += _render_hand(hand, hand_path)
    if dry is not None:
        out += ["", *_render_jobs(dry, local, dry_commit)]
    for run in runs:
        out += ["", *_render_run(run, here, hand)]
    if not runs:
        out += ["", "## Runs", "", "No run folder was given (`--run DIR`): no job times or sizes."]
    return "\n".join(out) + "\n"


# ------------------------------------------------------------------ reading the page back, and checking others


def page_job_counts(text: str) -> dict[str, dict[str, int]]:
    """``label -> rule -> jobs`` of the page's "Jobs per rule" table (``all`` included, ``total`` left
    out): what :func:`render` wrote from the dry runs.

    Raises:
        MeasuredError: the page has no such table.
    """
    lines = text.splitlines()
    try:
        start = lines.index("### Jobs per rule")
    except ValueError:
        raise MeasuredError("no '### Jobs per rule' table on the page") from None
    header = next(line for line in lines[start + 1 :] if line.startswith("|"))
    labels = [cell.strip() for cell in header.strip("|").split("|")][2:]
    counts: dict[str, dict[str, int]] = {label: {} for label in labels}
    for line in lines[lines.index(header, start) + 2 :]:
        if not line.startswith("|"):
            break
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        if cells[0] == "**total**":
            continue
        for label, cell in zip(labels, cells[2:]):
            if cell:
                counts[label][cells[0]] = int(cell.replace(",", ""))
    return counts


def restatements(text: str, job_totals: Iterable[int], hand: Mapping[str, list[dict[str, Any]]]) -> list[str]:
    """Where ``text`` (a page other than the generated one) restates a measured number: a job total of
    ``job_totals`` written as "N jobs", a wall time of a hand-kept entry in any of :func:`time_forms`, or
    any time written "N min NN s" (the suite's style).  Returns each match with its line number."""
    patterns = [rf"(?<![\d,.]){n:,} jobs\b" for n in job_totals] + [rf"(?<![\d,.]){n} jobs\b" for n in job_totals]
    for part in ("latest", "earlier"):
        for entry in hand[part]:
            seconds = entry.get("seconds")
            for value in seconds if isinstance(seconds, list) else [seconds] if seconds is not None else []:
                if value >= 60:  # a short time ("70 s") says too little to be a restatement on its own
                    patterns += [rf"(?<![\d,.]){re.escape(form)}\b" for form in time_forms(value)]
    patterns.append(r"\b\d+ min \d{1,2} s\b")
    found = []
    for number, line in enumerate(text.splitlines(), 1):
        for pattern in dict.fromkeys(patterns):
            for match in re.finditer(pattern, line):
                found.append(f"{number}: {match.group(0)!r}")
    return sorted(set(found), key=lambda s: int(s.split(":")[0]))


def anonymous(command: str) -> str:
    """``command`` with the folders of runs (``--run DIR``, ``--directory DIR``) as ``<run folder>``: the page
    names no host and no machine's temporary folder (issue 59)."""
    return re.sub(r"(--run|--directory)(=|\s+)\S+", r"\1\2<run folder>", command)


# ------------------------------------------------------------------ command line


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m knowlab.tooling.measured", description=__doc__.split("\n\n")[0])
    parser.add_argument("--run", action="append", default=[], metavar="DIR",
                        help="a finished run's folder (or its results/); repeat for several")  # fmt: skip
    parser.add_argument(
        "--hand", default=str(ROOT / HAND_KEPT), help=f"the hand-kept measurements (default {HAND_KEPT})"
    )
    parser.add_argument("--root", default=str(ROOT), help="the checkout whose workflow is dry-run (default: this one)")
    parser.add_argument("--no-dry-runs", action="store_true", help="leave the jobs per config out")
    parser.add_argument("--out", help="write the page here (default: stdout)")
    args = parser.parse_args(argv)
    root = Path(args.root).resolve()
    command = anonymous(
        "python -m knowlab.tooling.measured " + " ".join(map(shlex.quote, sys.argv[1:] if argv is None else argv))
    )
    hand = load_hand_kept(args.hand)
    dry, local, commit = None, (), None
    if not args.no_dry_runs:
        short, dirty = git_state(root)
        commit = f"`{short}`" + (" with uncommitted changes" if dirty else "") if short else None
        local = LocalRules(root)
        dry = {}
        for label, overlay in SHIPPED_CONFIGS.items():
            if overlay and not (root / overlay).exists():
                continue
            print(f"measured: dry run of {overlay or 'the embedded default'}", file=sys.stderr)
            dry[label] = job_counts(dry_run(overlay, root))
    runs = []
    seen = set()
    for folder in args.run:
        base, _ = locate(folder)
        if base.resolve() in seen:
            continue
        seen.add(base.resolve())
        print(f"measured: reading {folder}", file=sys.stderr)
        runs.append(measure_run(folder))
    hand_path = Path(args.hand).resolve()
    hand_name = hand_path.relative_to(ROOT).as_posix() if hand_path.is_relative_to(ROOT) else str(hand_path)
    page = render(dry, runs, hand, local=local, command=command.strip(), dry_commit=commit, hand_path=hand_name)
    if args.out:
        Path(args.out).write_text(page, encoding="utf-8")
        print(f"measured: {args.out}", file=sys.stderr)
    else:
        sys.stdout.write(page)
    return 0


if __name__ == "__main__":
    sys.exit(main())
