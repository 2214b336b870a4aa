# Grounding (Lee et al. 2024): items -> ranked distractors -> responses -> atomic facts and scores
# -> tables -> figures; and the fiction set at every FictionalQA checkpoint (step 0 is
# the base model, run `base_model`). Statistics and figures are separate rules: a figures rule
# reads the tables of its stats rule and computes no statistic (knowlab.grounding.steps).

from knowlab.grounding.settings import (
    GroundingCheckpointGenerateSettings,
    GroundingDistractorsSettings,
    GroundingGenerateSettings,
    GroundingItemsSettings,
    GroundingScoreSettings,
    GroundingTablesSettings,
)

# the figures of rule grounding_figures (knowlab.grounding.plots): name -> title in the report
from knowlab.grounding.settings import FIGURES as GROUNDING_FIGURES

# each step's settings (knowlab.grounding.settings): the config keys it reads, its rules' param
# `settings`, so that a changed key re-runs the jobs that read it (config/README.md)
# (items: per dataset, for_dataset; generation: per model, for_served)
GROUNDING_ITEMS = GroundingItemsSettings.from_config(config)
GROUNDING_DISTRACTORS = GroundingDistractorsSettings.from_config(config).param()
GROUNDING_GENERATE = GroundingGenerateSettings.from_config(config)
GROUNDING_CHECKPOINT_GENERATE = GroundingCheckpointGenerateSettings.from_config(config)
GROUNDING_SCORE = GroundingScoreSettings.from_config(config).param()
# the request cache of the decomposer's OpenAI-compatible backend
DECOMPOSER_REQUESTS = layout.GROUNDING_REQUESTS.path(served="decomposer")

GROUNDING_TABLES = GroundingTablesSettings.from_config(config).param()


step_rule(
    layout.GROUNDING_ITEMS_STEP,
    "data",
    unnamed_input=[unpack(grounding_item_inputs)],
    output={
        "grounding_items": layout.GROUNDING_ITEMS.smk,
        "pool": layout.GROUNDING_POOL.smk,
    },
    params={
        # the KAIST release's keys for dataset kaist; the fiction set reads the seed
        "settings": lambda wildcards: GROUNDING_ITEMS.for_dataset(
            wildcards.dataset
        ).param(),
        "seed": lambda wildcards: (
            config["seed"] if wildcards.dataset == "fiction" else None
        ),
    },
)

step_rule(
    layout.GROUNDING_DISTRACTORS_STEP,
    "grounding",
    input={
        **GROUNDING_RETRIEVER_INPUTS,
        "grounding_items": layout.GROUNDING_ITEMS.smk,
        "pool": layout.GROUNDING_POOL.smk,
    },
    output={"table": layout.GROUNDING_DISTRACTORS.smk},
    params={"compute": COMPUTE, "settings": GROUNDING_DISTRACTORS},
    kind="cpu_step",
)

step_rule(
    layout.GROUNDING_RESPONSES_STEP,
    "eval",
    input={
        "grounding_items": layout.GROUNDING_ITEMS.smk,
        "pool": layout.GROUNDING_POOL.smk,
        "distractors": layout.GROUNDING_DISTRACTORS.smk,
        "model": eval_model_input,
    },
    output={"responses": layout.GROUNDING_RESPONSES.smk},
    params={
        "compute": COMPUTE,
        # backend openai: only this model's entry of grounding.generation.openai.models
        "settings": lambda wildcards: GROUNDING_GENERATE.for_served(
            wildcards.model
        ).param(),
        "seed": config["seed"],
        "model": lambda wildcards: eval_model_label(wildcards.model),
        "run": BASE.run,
        "step": 0,
        # backend openai: the key of grounding.generation.openai.models, and the request cache
        "served_key": lambda wildcards: wildcards.model,
        "request_cache": lambda wildcards: layout.GROUNDING_REQUESTS.path(
            served=f"{wildcards.dataset}/{wildcards.model}"
        ),
    },
    kind="long_generation",
    # the default's longest job (32 questions x 8 conditions): started with fine-tuning, not left as the
    # run's tail on one core (issue 56: it started 45 min into the default's run and ran alone for its last 20)
    priority=10,
)

step_rule(
    layout.GROUNDING_SCORES_STEP,
    "grounding",
    input={
        **GROUNDING_EVALUATOR_INPUTS,
        "responses": layout.GROUNDING_RESPONSES.smk,
        "decomposer": BASE.path,
    },
    output={"table": layout.GROUNDING_SCORES.smk, "facts": layout.GROUNDING_FACTS.smk},
    params=grounding_score_params(
        lambda wildcards: f"{wildcards.dataset}/{wildcards.model}"
    ),
    kind="model_evaluation",
)

step_rule(
    layout.GROUNDING_TABLES_STEP,
    "stats",
    input={
        "scores": expand(
            layout.GROUNDING_SCORES.smk, dataset=GROUNDING_DATASETS, model=EVAL_MODELS
        )
    },
    output={
        "rows": layout.GROUNDING_ROWS.smk,
        "tables": tables_output(layout.GROUNDING_TABLES, "Grounding"),
    },
    params={
        "settings": GROUNDING_TABLES,
        "stats": STATS.param("confidence", "bootstrap_resamples", "seed"),
        # read by the report's caption (workflow/report/grounding_tables.rst)
        "models": [eval_model_label(name) for name in EVAL_MODELS],
    },
    kind="cpu_step",
    threads=1,
)

step_rule(
    layout.GROUNDING_FIGURES_STEP,
    "plot",
    input={"tables": layout.GROUNDING_TABLES.smk},
    output=figure_outputs(
        layout.GROUNDING_FIGURE,
        "grounding_{name}",
        "Grounding",
        "Paper figures",
        titles=GROUNDING_FIGURES,
    ),
    # read by the report's captions (workflow/report/grounding_<figure>.rst)
    params={"models": [eval_model_label(name) for name in EVAL_MODELS]},
)


# grounding on the fiction set at every checkpoint (rules/probe.smk): grounding_checkpoint_generate,
# then grounding_checkpoint_score (below) per checkpoint, grounding_finetune_stats on its scores and
# grounding_finetune_figures
checkpoint_probe(
    evaluate=ProbeRule(
        layout.GROUNDING_CHECKPOINT_RESPONSES_STEP,
        "../scripts/grounding_generate.py",
        input={
            "grounding_items": layout.GROUNDING_ITEMS.path(dataset="fiction"),
            "pool": layout.GROUNDING_POOL.path(dataset="fiction"),
            "distractors": layout.GROUNDING_DISTRACTORS.path(dataset="fiction"),
        },
        output={"responses": layout.GROUNDING_CHECKPOINT_RESPONSES.smk},
        params={
            "settings": lambda wildcards: GROUNDING_CHECKPOINT_GENERATE.for_served(
                checkpoint_key(wildcards)
            ).param(),
            "seed": config["seed"],
            "served_key": checkpoint_key,
            "request_cache": lambda wildcards: layout.GROUNDING_REQUESTS.path(
                served=f"finetune/{checkpoint_key(wildcards)}"
            ),
        },
        kind="checkpoint_generation",
    ),
    table=layout.GROUNDING_CHECKPOINT_SCORES.smk,
    stats=ProbeRule(
        layout.GROUNDING_FINETUNE_STATS_STEP,
        "../scripts/grounding_finetune_stats.py",
        output={
            "rows": layout.GROUNDING_FINETUNE_ROWS.smk,
            "rates": report(
                layout.GROUNDING_FINETUNE_RATES.smk,
                caption="../workflow/report/grounding_finetune_rates.rst",
                category="Grounding",
                subcategory="Across fine-tuning",
                labels={
                    "item": "rates.csv: F1 and follow rates per checkpoint",
                    "base model": "{ft_model}",
                },
            ),
            "mcnemar": layout.GROUNDING_FINETUNE_MCNEMAR.smk,
        },
        params={
            # read by the report's caption (workflow/report/grounding_finetune_rates.rst)
            "note": lambda wildcards: FT_NOTES[wildcards.ft_model],
            "stats": STATS.param("mcnemar_exact_below"),
        },
    ),
    figures=ProbeRule(
        layout.GROUNDING_FINETUNE_FIGURES_STEP,
        "../scripts/grounding_finetune_figures.py",
        input={"rates": layout.GROUNDING_FINETUNE_RATES.smk},
        output=figure_outputs(
            layout.GROUNDING_FINETUNE_FIGURE,
            "grounding_finetune",
            "Grounding",
            "Across fine-tuning",
            {
                "item": "figure: F1 and follow rates per checkpoint",
                "base model": "{ft_model}",
            },
        ),
    ),
)


step_rule(
    layout.GROUNDING_CHECKPOINT_SCORES_STEP,
    "grounding",
    input={
        **GROUNDING_EVALUATOR_INPUTS,
        "responses": layout.GROUNDING_CHECKPOINT_RESPONSES.smk,
        "decomposer": BASE.path,
    },
    output={
        "table": layout.GROUNDING_CHECKPOINT_SCORES.smk,
        "facts": layout.GROUNDING_CHECKPOINT_FACTS.smk,
    },
    params=grounding_score_params(
        lambda wildcards: f"finetune/{checkpoint_key(wildcards)}"
    ),
    kind="checkpoint_evaluation",
    script_path="../scripts/grounding_score.py",
    constraints={"run": PROBE_RUNS},
)


# the stats rules' manifests and the figures (as SORT_OUTPUTS): the files rule all asked for
# when one rule wrote both
GROUNDING_OUTPUTS = [layout.GROUNDING_TABLES_STEP.manifest]
GROUNDING_OUTPUTS += expand(
    layout.GROUNDING_FIGURE.smk, name=GROUNDING_FIGURES, ext=("pdf", "png")
)
if GROUNDING_FINETUNE:
    GROUNDING_OUTPUTS += expand(
        layout.GROUNDING_FINETUNE_STATS_STEP.manifest, ft_model=PROBE_MODELS
    )
    GROUNDING_OUTPUTS += expand(
        layout.GROUNDING_FINETUNE_FIGURE.smk, ft_model=PROBE_MODELS, ext=("pdf", "png")
    )
