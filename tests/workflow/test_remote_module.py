"""The workflow used as a module read over HTTP (issue 58 item 2), as ``github(...)`` or any URL would
serve it: the checkout is served on 127.0.0.1, another folder declares ``module knowlab: snakefile:
"http://127.0.0.1:<port>/Snakefile"``, and Snakemake runs where the checkout's ``src/`` is not
importable: the DAG of config/test.yaml builds as the plain workflow's, the package's files are copied
from the served source (knowlab.tooling.source), and one model job, re-made from the shared run's
inputs, writes the same bytes as that run and records the served source in its manifest.

Served: the files the checkout's next commit would hold (tracked, or new and not ignored), as they
are in the working tree, so the test checks the code being committed, not the last commit.  It reads
the one run of the workflow (``workdir``, tests/workflow/conftest.py), so it runs beside
test_pipeline.py (tests/conftest.py, ``PIPELINE_MODULES``).
"""

from __future__ import annotations

import functools
import json
import re
import shutil
import subprocess
from http.server import SimpleHTTPRequestHandler

import pytest

from knowlab.tooling.source import CHECKOUT, PACKAGE_FILES, SOURCE_RECORD, read_listing

pytestmark = pytest.mark.pipeline


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def served(tmp_path, copy_checkout, serve_on_localhost):
    """(folder, URL): the checkout's files as its next commit would hold them, served over HTTP on an
    ephemeral port of 127.0.0.1."""
    tree = copy_checkout(tmp_path / "served")
    with serve_on_localhost(functools.partial(_Quiet, directory=str(tree))) as url:
        yield tree, url


def _job_counts(stdout: str, prefix: str = "") -> dict[str, int]:
    """``rule -> jobs`` of a dry run's "Job stats" table (its ``total`` row too), each rule's name
    after ``prefix``."""
    table = stdout.split("Job stats:")[1].split("\n\n")[0]
    return {
        rule if rule == "total" else prefix + rule: int(n)
        for rule, n in re.findall(r"^(\w+)\s+(\d+)$", table, flags=re.M)
    }


def test_a_module_read_over_http_builds_the_dag_and_remakes_a_model_job_as_the_run_did(
    served, workdir, tmp_path, snakemake, snakemake_without_checkout
):
    tree, url = served
    module = tmp_path / "module"
    module.mkdir()
    (module / "Snakefile").write_text(
        f'configfile: "{tree / "config" / "config.yaml"}"\n\n\n'
        f'module knowlab:\n    snakefile:\n        "{url}/Snakefile"\n    config:\n        config\n\n\n'
        "use rule * from knowlab as knowlab_*\n"
    )
    hidden = snakemake_without_checkout(module)
    assert hidden.stdout.strip() == "None", hidden.stdout  # the checkout's package is out of reach

    local = {"NO_PROXY": "127.0.0.1", "no_proxy": "127.0.0.1"}  # the server is here, whatever proxy is set

    def run(*args: str) -> subprocess.CompletedProcess:
        return snakemake_without_checkout(module, *args, "--configfile", tree / "config" / "test.yaml", environ=local)

    # the DAG: every job of the plain workflow's, under the module's prefix
    dry = run("-n", "--cores", "1")
    plain = snakemake(tmp_path / "plain", "-n", "--cores", "1")
    assert _job_counts(dry.stdout) == _job_counts(plain.stdout, prefix="knowlab_")
    # the package's files, copied from the served source byte for byte
    copy = module / CHECKOUT
    listed = read_listing((tree / PACKAGE_FILES).read_text())
    assert {"src/knowlab/config.py", "data/fiction/fictions.jsonl", "pyproject.toml"} <= set(listed)
    assert all((copy / name).read_bytes() == (tree / name).read_bytes() for name in listed)
    assert json.loads((copy / SOURCE_RECORD).read_text())["source"] == url

    # one model job (the base model, built from the run's corpus and webtext: copied after the package's
    # files, so newer than the shipped corpus they came from), as the shared run made it
    for folder in ("results/fictionalqa/corpus/fiction", "resources/webtext"):
        shutil.copytree(workdir / folder, module / folder, copy_function=shutil.copy)
    made = run("--cores", "1", "resources/base_model")
    ran = set(re.findall(r"^(?:local)?rule (\w+):", made.stdout + made.stderr, flags=re.M))
    assert ran == {"knowlab_base_model"}, made.stdout[-3000:]
    model = sorted(p.relative_to(workdir) for p in (workdir / "resources" / "base_model").rglob("*") if p.is_file())
    assert model and all((module / path).read_bytes() == (workdir / path).read_bytes() for path in model)
    manifest = json.loads((module / "resources" / "base_model.manifest.json").read_text())
    expected = json.loads((workdir / "resources" / "base_model.manifest.json").read_text())
    assert manifest["outputs"] == expected["outputs"]
    # the job imported the package from the copy (knowlab.core.provenance.package_source)
    assert manifest["git"]["source"] == url and manifest["git"]["commit"] is None
