"""The one run of the workflow on config/test.yaml that the tests of ``test_pipeline.py`` and
``test_rerun.py`` read (``workdir``; Snakemake is started by the ``snakemake`` fixture of
tests/conftest.py)."""

import os
import shutil

import pytest

# a finished run of config/test.yaml to start the session's run from (see ``workdir``)
REUSE_ENV = "KNOWLAB_PIPELINE_RUN"


@pytest.fixture(scope="session")
def workdir(tmp_path_factory, snakemake):
    """The workflow run once on config/test.yaml (2 cores); read-only for tests (a test that changes
    it takes ``workdir_copy``).  Only tests/workflow/test_pipeline.py and test_rerun.py read it: they are one
    unit of work for pytest-xdist (tests/conftest.py), so the run is made once per session.

    With ``KNOWLAB_PIPELINE_RUN`` naming a finished run of config/test.yaml (a ``--directory``), the
    session starts from a copy of it (times kept) and the workflow brings it up to date: a developer's
    shortcut while editing tests (docs/tests.md); ``make test`` always starts from nothing."""
    work = tmp_path_factory.mktemp("pipeline")
    if os.environ.get(REUSE_ENV):
        shutil.copytree(os.environ[REUSE_ENV], work, symlinks=True, dirs_exist_ok=True)
    proc = snakemake(work, "--cores", "2")
    (work.parent / "run.stdout").write_text(proc.stdout)  # what the run printed (its end: onsuccess)
    return work


@pytest.fixture
def workdir_copy(workdir, tmp_path):
    """A copy of the finished run (results, resources, Snakemake's metadata; times kept) for a test
    that changes it: the shared run stays as the workflow left it, whatever the tests' order."""
    copy = tmp_path / "pipeline"
    shutil.copytree(workdir, copy, symlinks=True)
    return copy
