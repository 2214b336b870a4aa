"""snakedeploy (issue 58 item 3): ``snakedeploy deploy-workflow <repository> <folder> --branch main``
writes a folder that dry-runs as it is, with the SLURM profile deployed.

The repository has the Snakemake workflow catalog's layout: ``workflow/Snakefile`` (it includes the
top-level Snakefile), ``config/`` with its README, ``profiles/slurm`` (a link to
``workflow/profiles/slurm``, which snakedeploy copies as a folder).  snakedeploy 0.17.1 picks its
provider by the address: a GitHub one writes ``snakefile: github("<owner>/<name>", path=
"workflow/Snakefile", branch=...)``; a plain local path gets a relative ``"workflow/Snakefile"``, which
Snakemake reads beside the deployed file (``<folder>/workflow/workflow/Snakefile``): no layout can make
that resolve.  So the test deploys as from GitHub, offline: the clone sits at a
``github.com/<owner>/<name>`` path (snakedeploy clones it with ``git clone``, and its GitHub provider
takes owner and name from the path), and Snakemake's git cache (under ``XDG_CACHE_HOME``) holds a bare
clone of it, whose origin is that clone, so Snakemake's fetch of the branch needs no network.  The
deployed folder is then dry-run on config/test.yaml, by Snakemake where the checkout's package cannot
be imported: the workflow copies its package from the git source (knowlab.tooling.source).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from knowlab.tooling.source import CHECKOUT, SOURCE_RECORD

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.slow


def _git(repo: Path, *args: str) -> str:
    command = ["git", "-C", str(repo), "-c", "user.email=test@example.org", "-c", "user.name=test", *args]
    return subprocess.run(command, check=True, capture_output=True, text=True).stdout.strip()


def _job_counts(stdout: str) -> dict[str, int]:
    """``rule -> jobs`` of a dry run's "Job stats" table."""
    table = stdout.split("Job stats:")[1].split("\n\n")[0]
    return {rule: int(n) for rule, n in re.findall(r"^(\w+)\s+(\d+)$", table, flags=re.M)}


def test_a_deployed_folder_dry_runs_as_it_is_with_the_profile_beside_it(
    tmp_path, copy_checkout, snakemake, snakemake_without_checkout
):
    pytest.importorskip("snakedeploy", reason="snakedeploy is not installed (requirements.txt pins it)")
    clone = copy_checkout(tmp_path / "github.com" / "knowlab" / "knowlab")
    _git(clone, "init", "-q", "-b", "main")
    _git(clone, "add", "-A")
    _git(clone, "commit", "-q", "-m", "the checkout")
    deployed = tmp_path / "deployed"
    deploy = [Path(sys.executable).with_name("snakedeploy"), "deploy-workflow", clone, deployed, "--branch", "main"]
    done = subprocess.run(list(map(str, deploy)), capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (
        'github("knowlab/knowlab", path="workflow/Snakefile", branch="main")'
        in (deployed / "workflow" / "Snakefile").read_text()
    )
    # the profile, as the clone has it (it names no file: the tests that dry-run workflow/profiles/slurm hold for it)
    profile = deployed / "profiles" / "slurm" / "config.yaml"
    assert profile.read_bytes() == (ROOT / "workflow" / "profiles" / "slurm" / "config.yaml").read_bytes()
    for name in ("config.yaml", "test.yaml", "README.md"):
        assert (deployed / "config" / name).read_bytes() == (ROOT / "config" / name).read_bytes(), name

    # Snakemake's git cache holding the repository, as its first read from GitHub would leave it
    cache = tmp_path / "cache"
    hosted = cache / "snakemake" / "snakemake" / "source-cache" / "snakemake-git-cache" / "github.com"
    subprocess.run(["git", "clone", "-q", "--bare", str(clone), str(hosted / "knowlab" / "knowlab")], check=True)
    environ = {"XDG_CACHE_HOME": str(cache)}
    dry = snakemake_without_checkout(deployed, "-n", "--configfile", "config/test.yaml", environ=environ)
    plain = snakemake(tmp_path / "plain", "-n", "--cores", "1")
    assert _job_counts(dry.stdout) == _job_counts(plain.stdout)  # `use rule * from knowlab`: the same names
    record = json.loads((deployed / CHECKOUT / SOURCE_RECORD).read_text())
    assert record["commit"] == _git(clone, "rev-parse", "HEAD")
