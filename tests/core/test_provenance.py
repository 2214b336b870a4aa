"""rule_step: a manifest only on success; a failure logged with its traceback; every attempt kept."""

from __future__ import annotations

import json
import logging
import subprocess
import sys

import pytest

from knowlab.core.io import sha256_file
from knowlab.core.provenance import CHECKOUT_VARIABLE, attempts_path, checkout_root, record, rule_step


class _Named(list):
    """A Snakemake ``Namedlist`` stand-in: a list of values, the named ones also attributes and ``items()``."""

    def __init__(self, *values, **named):
        super().__init__([*values, *named.values()])
        self._named = named
        for name, value in named.items():
            setattr(self, name, value)

    def items(self):
        return self._named.items()

    def get(self, name, default=None):
        return self._named.get(name, default)


def _snakemake(tmp_path, **params):
    """A fake ``snakemake`` object of a rule ``demo`` with one input, one output, a manifest and a log."""
    source = tmp_path / "in.jsonl"
    source.write_text('{"a": 1}\n')
    return source, type(
        "Snakemake",
        (),
        {
            "rule": "demo",
            "input": _Named(source=str(source)),
            "output": _Named(
                table=str(tmp_path / "out" / "table.jsonl"), manifest=str(tmp_path / "out" / "manifest.json")
            ),
            "log": _Named(str(tmp_path / "logs" / "demo.log")),
            "params": _Named(**params),
            "wildcards": _Named(n="4"),
        },
    )()


@pytest.fixture(autouse=True)
def _knowlab_logging():
    """rule_step replaces the ``knowlab`` logger's handlers: close its files and restore the logger after each test."""
    logger = logging.getLogger("knowlab")
    saved = (list(logger.handlers), logger.level, logger.propagate)
    yield
    for handler in logger.handlers:
        if handler not in saved[0]:
            handler.close()
    logger.handlers[:] = saved[0]
    logger.setLevel(saved[1])
    logger.propagate = saved[2]


def _fails(smk, message="bad record at in.jsonl:3"):
    def work():
        raise ValueError(message)

    with pytest.raises(ValueError, match=message) as caught, rule_step(smk):
        work()
    return caught.value


def test_success_writes_the_manifest_and_logs_both_files(tmp_path):
    source, smk = _snakemake(tmp_path, seed=7, cfg={"k": 3})
    with rule_step(smk) as log:
        (tmp_path / "out").mkdir()
        (tmp_path / "out" / "table.jsonl").write_text('{"b": 2}\n')
        record("pinned", "abc")
        log.info("did the work")
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["rule"] == "demo" and manifest["wildcards"] == {"n": "4"} and manifest["seed"] == 7
    assert manifest["inputs"] == [{"path": str(source), "sha256": sha256_file(source)}]
    assert [o["path"] for o in manifest["outputs"]] == [str(tmp_path / "out" / "table.jsonl")]
    assert manifest["config"] == {"seed": 7, "cfg": {"k": 3}} and manifest["notes"] == {"pinned": "abc"}
    assert not {"host", "started", "wall_time_s"} & set(manifest)  # volatile facts go to the log
    for path in (tmp_path / "logs" / "demo.log", attempts_path(tmp_path / "logs" / "demo.log")):
        text = path.read_text()
        assert "rule demo {'n': '4'} started on" in text and "did the work" in text and "rule demo finished in" in text


def test_failure_writes_no_manifest_and_logs_the_traceback(tmp_path):
    _, smk = _snakemake(tmp_path)
    (tmp_path / "out").mkdir()
    err = _fails(smk)
    assert err.knowlab_logged is True
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == []  # no manifest, no temporary file
    text = (tmp_path / "logs" / "demo.log").read_text()
    assert "ERROR knowlab: rule demo failed: ValueError: bad record at in.jsonl:3" in text
    assert "Traceback (most recent call last):" in text and "in work" in text and "finished" not in text


def test_a_record_of_a_failed_job_does_not_reach_the_next_manifest(tmp_path):
    _, smk = _snakemake(tmp_path)
    with pytest.raises(RuntimeError, match="half way"), rule_step(smk):
        record("from_the_failed_attempt", 1)
        raise RuntimeError("half way")
    with rule_step(smk):
        pass
    assert json.loads((tmp_path / "out" / "manifest.json").read_text())["notes"] == {}


def test_every_attempt_is_kept_beside_the_log(tmp_path):
    """Snakemake empties the log before each attempt; ``<log>.attempts`` keeps the failed first one too."""
    _, smk = _snakemake(tmp_path)
    log_file = tmp_path / "logs" / "demo.log"
    _fails(smk, "first attempt fails")
    log_file.write_text("")  # what Snakemake does before the retry
    with rule_step(smk) as log:
        log.info("second attempt works")
    assert (tmp_path / "out" / "manifest.json").is_file()
    text = log_file.read_text()
    assert "first attempt fails" not in text and "second attempt works" in text
    attempts = attempts_path(log_file).read_text()
    assert attempts_path(log_file) == tmp_path / "logs" / "demo.log.attempts"
    assert attempts.count("rule demo {'n': '4'} started on") == 2
    first, second = attempts.split("second attempt works")
    assert "rule demo failed: ValueError: first attempt fails" in first and "Traceback" in first
    assert "rule demo finished in" in second and "failed" not in second


def test_an_error_before_logging_starts_reaches_the_rule_log(tmp_path):
    """A job that fails on an import, before rule_step runs, still leaves its traceback in the log
    and in ``<log>.attempts`` (the hook ``import knowlab`` installs in a Snakemake script)."""
    log_file = tmp_path / "job.log"
    script = (
        "import types\n"
        f"snakemake = types.SimpleNamespace(log=[{str(log_file)!r}], rule='demo')\n"
        "import knowlab\n"
        "import knowlab.no_such_module\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == 1 and "No module named 'knowlab.no_such_module'" in done.stderr  # the terminal too
    for path in (log_file, attempts_path(log_file)):
        text = path.read_text()
        assert "uncaught error in rule demo" in text and "ModuleNotFoundError" in text, path


def test_a_named_output_that_is_a_list_is_recorded_file_by_file(tmp_path):
    """A named output made by ``expand`` (Snakemake flattens it into the output list, its name a slice)
    is one manifest entry per file, each with its sha256: not one space-joined path without a hash."""
    _, smk = _snakemake(tmp_path)
    bands = [str(tmp_path / "out" / f"band_{i}.parquet") for i in (1, 2)]
    manifest_path = str(tmp_path / "out" / "manifest.json")
    output = _Named(*bands, manifest=manifest_path)
    output._named = {"bands": bands, "manifest": manifest_path}
    smk.output = output
    with rule_step(smk):
        (tmp_path / "out").mkdir()
        for i, band in enumerate(bands):
            (tmp_path / "out" / band).write_text(str(i))
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["outputs"] == [{"path": band, "sha256": sha256_file(band)} for band in bands]


def test_a_job_reads_the_checkout_from_the_variable_the_snakefile_sets(monkeypatch, tmp_path):
    monkeypatch.setenv(CHECKOUT_VARIABLE, str(tmp_path))
    assert checkout_root() == tmp_path
    monkeypatch.delenv(CHECKOUT_VARIABLE)
    with pytest.raises(RuntimeError, match="KNOWLAB_ROOT is not set: the workflow's Snakefile sets it"):
        checkout_root()
