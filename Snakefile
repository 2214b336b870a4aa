# knowlab: three studies of how language models acquire, memorize and ground knowledge,
# from raw data to figures.  This file only wires things together: the logic lives in
# src/knowlab (one package per study over knowlab.core), paths and input functions in
# rules/common.smk, each study's rules in its own file, in data-flow order.
import sys
from pathlib import Path

from snakemake.utils import min_version, validate

# The library lives in src/; the Snakefile imports it from the checkout, and so does
# every script (first line), in the venv, in conda envs and on SLURM nodes.
sys.path.insert(0, str(Path(str(workflow.current_basedir)) / "src"))

from knowlab.config import check_config

min_version("9.0")


report: "workflow/report/workflow.rst"


configfile: f"{workflow.current_basedir}/config/config.yaml"


validate(config, "config/schema.yaml", set_default=True)
check_config(config)


include: "rules/common.smk"
include: "rules/models.smk"
include: "rules/fiction_generation.smk"
include: "rules/fictionalqa.smk"
include: "rules/sort.smk"
include: "rules/grounding.smk"
include: "rules/findings.smk"


# Rules of seconds that load no model (aggregation, tables, figures, small data steps and
# small downloads) run on the submit host under a cluster executor, not as SLURM jobs.  Not
# here: every model, the TriviaQA and OpenHermes downloads (fictionalqa_real_qa,
# sort_parametric_texts), fictionalqa_mcq (it reads the 52M-row ranking at paper scale), and
# fictionalqa_summary and grounding_tables, whose bootstrap intervals take minutes at paper scale.
localrules:
    all,
    fictionalqa_webtext,
    fictionalqa_corpus,
    fictionalqa_split,
    fictionalqa_lm_eval_tasks,
    train_log,
    fictionalqa_paired_tests,
    fictionalqa_figure_fig2,
    fictionalqa_figure_fig3,
    fictionalqa_figure_fig4,
    fictionalqa_figure_fig5,
    fictionalqa_figure_fig6,
    fictionalqa_figure_fig7,
    fictionalqa_figure_fig8,
    fictionalqa_figure_fig10_11,
    fictionalqa_figure_pvalues,
    fictionalqa_models,
    fictionalqa_across_models_fig4,
    fictionalqa_across_models_fig7,
    fictionalqa_across_models_fig9,
    fictionalqa_across_models_fig10,
    fictionalqa_across_models_fig10_11,
    sort_sources,
    sort_items,
    sort_stats,
    sort_figures,
    sort_fiction_items,
    sort_fiction_stats,
    sort_fiction_figures,
    sort_parametric_stats,
    sort_parametric_figures,
    grounding_items,
    grounding_finetune_stats,
    grounding_figures,
    grounding_finetune_figures,
    findings,
    dataset_card,


rule all:
    default_target: True
    input:
        FICTIONALQA_OUTPUTS,
        SORT_OUTPUTS,
        GROUNDING_OUTPUTS,
        FINDINGS_OUTPUTS,


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
