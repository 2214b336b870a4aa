# knowlab: three studies of how language models acquire, memorize and ground knowledge,
# from raw data to figures.  This file only wires things together: the logic lives in
# src/knowlab (one package per study over knowlab.core), paths and input functions in
# rules/common.smk, each study's rules in its own file, in data-flow order.
import os
import sys
from pathlib import Path

from snakemake.utils import min_version, validate

# The library lives in src/.  Building the DAG imports it from the checkout (Snakemake's own env
# has only snakemake and workflow/environment.yaml's packages); jobs import it as an installed
# package: the venv's `pip install -e .` (Makefile), or each conda env's `-e ${KNOWLAB_ROOT}[env]`
# line, which pip expands to this checkout when Snakemake creates the env (set here, not asked of
# the user).
sys.path.insert(0, str(Path(str(workflow.current_basedir)) / "src"))
os.environ.update(KNOWLAB_ROOT=str(workflow.current_basedir))

from knowlab.config import check_config

min_version("9.0")


report: "workflow/report/workflow.rst"


configfile: f"{workflow.current_basedir}/config/config.yaml"


validate(config, "config/schema.yaml", set_default=True)
check_config(config)


include: "rules/common.smk"
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
