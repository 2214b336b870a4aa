# knowlab: three studies of how language models acquire, memorize and ground knowledge,
# from raw data to figures.  This file only wires things together: the logic lives in
# src/knowlab (one package per study over knowlab.core), paths and input functions in
# rules/common.smk, each study's rules in its own file, in data-flow order.
import importlib.util
import os
import sys
from pathlib import Path

from snakemake.sourcecache import LocalSourceFile
from snakemake.utils import min_version, validate

# The library lives in src/ of the checkout.  Building the DAG imports it from there (Snakemake's own
# env has only snakemake and workflow/environment.yaml's packages); jobs import it as an installed
# package: the venv's `pip install -e .` (Makefile), or each conda env's `-e ${KNOWLAB_ROOT}[env]`
# line, which pip expands to the checkout when Snakemake creates the env (set here, not asked of
# the user).  The checkout is this file's folder; read from a URL or a git source instead (a module's
# `snakefile: github(...)`), the workflow has none: knowlab.tooling.source, loaded alone through
# Snakemake's source cache, copies the package's files from that source, at the revision Snakemake
# reads, into .snakemake/knowlab-source/, whose src/ also goes first on the jobs' PYTHONPATH, so that
# they run the source's package whatever the interpreter has installed.
KNOWLAB_SOURCE = workflow.current_basedir  # this file's folder, as Snakemake reads it
if isinstance(KNOWLAB_SOURCE, LocalSourceFile):
    KNOWLAB_CHECKOUT = str(KNOWLAB_SOURCE)
else:
    _spec = importlib.util.spec_from_file_location(
        "knowlab_source", workflow.source_path("src/knowlab/tooling/source.py")
    )
    _source = importlib.util.module_from_spec(_spec)
    _spec.loader.exec_module(_source)
    KNOWLAB_CHECKOUT = str(
        _source.checkout(KNOWLAB_SOURCE, lambda path: workflow.source_path(path))
    )
    _source.first_on_pythonpath(f"{KNOWLAB_CHECKOUT}/src")
sys.path.insert(0, f"{KNOWLAB_CHECKOUT}/src")
# the jobs read the checkout from it (knowlab.core.provenance.checkout_root), not from a param
os.environ.update(KNOWLAB_ROOT=KNOWLAB_CHECKOUT)

from knowlab.config import check_config

min_version("9.0")


report: "workflow/report/workflow.rst"


configfile: f"{workflow.current_basedir}/config/config.yaml"


validate(config, "config/schema.yaml", set_default=True)
check_config(config)


include: "rules/common.smk"
include: "rules/step.smk"
include: "rules/probe.smk"
include: "rules/models.smk"
include: "rules/fiction_generation.smk"
include: "rules/fictionalqa.smk"
include: "rules/sort.smk"
include: "rules/grounding.smk"
include: "rules/findings.smk"
include: "rules/provenance.smk"


rule all:
    default_target: True
    input:
        FICTIONALQA_OUTPUTS,
        SORT_OUTPUTS,
        GROUNDING_OUTPUTS,
        FINDINGS_OUTPUTS,
        PROVENANCE_OUTPUTS,
    localrule: True


# A job killed with SIGKILL (by hand, by SLURM at its time limit, by a node failure) cannot remove
# the temporaries of its atomic writes; its next attempt removes those beside its own outputs, and a
# run that ends well removes every one left, caches included (knowlab.core.io.sweep_partials).
# The end of every invocation that runs (not a dry run), local or on SLURM: the findings and where
# the report is, or each failed rule and its log (knowlab.tooling.endings).
onsuccess:
    from knowlab.core.io import sweep_partials
    from knowlab.tooling.endings import success_message

    for stale in sweep_partials("results", "resources"):
        print(f"removed {stale}, left by an interrupted job", file=sys.stderr)
    print(success_message(), end="")


onerror:
    from knowlab.tooling.endings import error_message

    print(error_message(log), end="", file=sys.stderr)
