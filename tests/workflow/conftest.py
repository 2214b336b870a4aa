"""The one run of the workflow on config/test.yaml that the tests of ``test_pipeline.py``,
``test_rerun.py`` and ``test_remote_module.py`` read (``workdir``; Snakemake is started by the
``snakemake`` fixture of tests/conftest.py); the checkout as a commit of it would hold it, and
Snakemake where the checkout's package cannot be imported (the workflow read from elsewhere:
``test_remote_module.py``, ``test_snakedeploy.py``)."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# a finished run of config/test.yaml to start the session's run from (see ``workdir``)
REUSE_ENV = "KNOWLAB_PIPELINE_RUN"


@pytest.fixture(scope="session")
def workdir(tmp_path_factory, snakemake):
    """The workflow run once on config/test.yaml (2 cores); read-only for tests (a test that changes
    it takes ``workdir_copy``).  Only tests/workflow/test_pipeline.py, test_rerun.py and test_remote_module.py
    read it: they are one unit of work for pytest-xdist (tests/conftest.py, ``PIPELINE_MODULES``), so the
    run is made once per session.

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


def _copy_checkout(dest: Path) -> Path:
    """The checkout's files as its next commit would hold them (tracked, or new and not ignored), as
    they are in the working tree (links as links), copied into ``dest``; returns ``dest``."""
    listed = subprocess.run(
        ["git", "-C", str(ROOT), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        capture_output=True, check=True,
    ).stdout.decode()  # fmt: skip
    for name in filter(None, listed.split("\0")):
        if (ROOT / name).is_file() or (ROOT / name).is_symlink():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, dest / name, follow_symlinks=False)
    return dest


@pytest.fixture
def copy_checkout():
    """``copy_checkout(dest) -> dest``: the checkout's files as its next commit would hold them, so that
    a test of the workflow read from a copy checks the code being committed, not the last commit."""
    return _copy_checkout


# Snakemake's command line in a Python whose sys.path holds no folder with the package (the venv's editable
# install puts a checkout's src/ there: this one's, or, where the venv is shared, another's):
# `python -c _HIDDEN [snakemake args]`; without args, it prints what `import knowlab` would find (None)
_HIDDEN = """
import os
import sys
sys.path[:] = [p for p in sys.path if not os.path.isfile(os.path.join(p or ".", "knowlab", "__init__.py"))]
if len(sys.argv) == 1:
    import importlib.util
    print(importlib.util.find_spec("knowlab"))
    sys.exit()
from snakemake.cli import main
sys.argv[0] = "snakemake"
main()
"""


def _snakemake_without_checkout(cwd, *args, environ=None) -> subprocess.CompletedProcess:
    """``snakemake *args`` in ``cwd`` where the checkout's package cannot be imported (no PYTHONPATH,
    no ``src/`` on sys.path; ``environ``: variables to add); raises AssertionError with the ends of its
    output when it fails.  Without ``args``: the process that prints ``None``, what it finds of ``knowlab``."""
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"} | dict(environ or {})
    command = [sys.executable, "-c", _HIDDEN, *map(str, args)]
    proc = subprocess.run(command, capture_output=True, text=True, env=env, cwd=cwd)
    if proc.returncode != 0:
        raise AssertionError(
            f"snakemake {' '.join(map(str, args))} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-5000:]}"
        )
    return proc


@pytest.fixture
def snakemake_without_checkout():
    """:func:`_snakemake_without_checkout`: Snakemake as a user runs the workflow from a module or a
    deployment, with no checkout of it on the Python path (only the copy the Snakefile makes)."""
    return _snakemake_without_checkout
