"""Snakemake as a user calls it (``snakemake``), and the one run of the workflow on config/test.yaml
that the tests of ``test_pipeline.py`` read (``workdir``)."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SNAKEMAKE = [sys.executable, "-m", "snakemake", "--snakefile", str(ROOT / "Snakefile")]
TEST_CONFIG = str(ROOT / "config" / "test.yaml")
# a finished run of config/test.yaml to start the session's run from (see ``workdir``)
REUSE_ENV = "KNOWLAB_PIPELINE_RUN"


def run_snakemake(workdir, *args, configs=(TEST_CONFIG,), check=True) -> subprocess.CompletedProcess:
    """``snakemake --directory workdir --configfile *configs *args`` from the repository root
    (``configs``: config/test.yaml and overlays merged over it; empty: the default config alone);
    raises AssertionError with the ends of its output when it fails and ``check``."""
    cmd = [*SNAKEMAKE, "--directory", str(workdir), *(["--configfile", *map(str, configs)] if configs else []), *args]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
    if check and proc.returncode != 0:
        raise AssertionError(f"{' '.join(cmd)} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-5000:]}")
    return proc


@pytest.fixture(scope="session")
def snakemake():
    """:func:`run_snakemake`."""
    return run_snakemake


@pytest.fixture(scope="session")
def workdir(tmp_path_factory):
    """The workflow run once on config/test.yaml (2 cores); read-only for tests (a test that changes
    it takes ``workdir_copy``).  Only tests/workflow/test_pipeline.py and test_rerun.py read it: they are one
    unit of work for pytest-xdist (tests/conftest.py), so the run is made once per session.

    With ``KNOWLAB_PIPELINE_RUN`` naming a finished run of config/test.yaml (a ``--directory``), the
    session starts from a copy of it (times kept) and the workflow brings it up to date: a developer's
    shortcut while editing tests (docs/tests.md); ``make test`` always starts from nothing."""
    work = tmp_path_factory.mktemp("pipeline")
    if os.environ.get(REUSE_ENV):
        shutil.copytree(os.environ[REUSE_ENV], work, symlinks=True, dirs_exist_ok=True)
    run_snakemake(work, "--cores", "2")
    return work


@pytest.fixture
def workdir_copy(workdir, tmp_path):
    """A copy of the finished run (results, resources, Snakemake's metadata; times kept) for a test
    that changes it: the shared run stays as the workflow left it, whatever the tests' order."""
    copy = tmp_path / "pipeline"
    shutil.copytree(workdir, copy, symlinks=True)
    return copy
