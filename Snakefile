# knowlab: the FictionalQA experiment from packaged raw data to figures.
# This file only wires things together; logic lives in src/knowlab, input
# functions in rules/common.smk.
from snakemake.utils import min_version, validate

min_version("9.0")


configfile: f"{workflow.basedir}/config/config.yaml"


validate(config, "config/schema.yaml", set_default=True)


include: "rules/common.smk"
include: "rules/resources.smk"
include: "rules/generate.smk"
include: "rules/corpus.smk"
include: "rules/splits.smk"
include: "rules/finetune.smk"
include: "rules/evaluate.smk"
include: "rules/sort.smk"
include: "rules/grounding.smk"
include: "rules/stats.smk"
include: "rules/figures.smk"


rule all:
    default_target: True
    input:
        all_outputs(),
