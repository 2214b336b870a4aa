# SORT (sequence order recall, Pink et al. 2024): texts -> items -> passages -> prompt selection
# -> the base model's conditions -> tables and figures; SORT on the FictionalQA documents
# at every checkpoint; parametric memory: training texts -> (fine-tuning, rules/models.smk)
# -> SORT per epoch -> tests and figures.  Step 0 (epoch 0) is the base model.

from knowlab.sort.settings import (
    SortEvaluateSettings,
    SortFictionItemsSettings,
    SortItemsSettings,
    SortParametricTextsSettings,
    SortPromptSettings,
    SortRagPromptSettings,
    SortRetrievalSettings,
    SortSourcesSettings,
    evaluate_settings,
)

# the figures of rules sort_figures and sort_parametric_figures: name -> title in the report
from knowlab.sort.settings import FIGURES as SORT_FIGURES
from knowlab.sort.settings import PARAMETRIC_FIGURES as SORT_PARAMETRIC_FIGURES

# the param `settings` of each SORT rule: the config keys its step reads (knowlab.sort.settings);
# sort.batch_size, which cannot change a score, is read by the scripts from the config
SORT_SOURCES_SETTINGS = SortSourcesSettings.from_config(config).param()
SORT_ITEMS_SETTINGS = SortItemsSettings.from_config(config).param()
SORT_RETRIEVAL_SETTINGS = SortRetrievalSettings.from_config(config).param()
SORT_PROMPT_SETTINGS = SortPromptSettings.from_config(config).param()
SORT_RAG_PROMPT_SETTINGS = SortRagPromptSettings.from_config(config).param()
SORT_EVALUATE_SETTINGS = SortEvaluateSettings.from_config(config).param()
SORT_FICTION_ITEMS_SETTINGS = SortFictionItemsSettings.from_config(config).param()
SORT_PARAMETRIC_TEXTS_SETTINGS = SortParametricTextsSettings.from_config(config).param()
# the param `stats` of the statistics rules (the bands' intervals, McNemar's threshold, the t-test's
# alternative) and of the figure rules (the bands' level and resamples, which the footnotes name)
SORT_STATS = STATS.param(
    "confidence",
    "bootstrap_resamples",
    "seed",
    "mcnemar_exact_below",
    "ttest_alternative",
)
SORT_FIGURE_STATS = STATS.param("confidence", "bootstrap_resamples")

# the texts' folder under resources/ and its manifest: the config's source
SORT_SOURCES = layout.SORT_SOURCES_STEP.fix(source=config["sort"]["source"])

# the segments' nll of every parametric epoch, the base model's at epoch 0 (Fig. 12's points)
PARAMETRIC_NLL = LAYOUT.parametric_nll()


step_rule(
    SORT_SOURCES,
    "data",
    output={
        "texts": directory(layout.SORT_SOURCE.format(source=config["sort"]["source"]))
    },
    params={"settings": SORT_SOURCES_SETTINGS},
)

step_rule(
    layout.SORT_ITEMS_STEP,
    "data",
    input={"texts": rules.sort_sources.output.texts},
    output={"books": layout.SORT_BOOKS.smk, "sort_items": layout.SORT_ITEMS.smk},
    params={"settings": SORT_ITEMS_SETTINGS, "seed": config["seed"]},
)

step_rule(
    layout.SORT_RETRIEVAL_STEP,
    "sort",
    input={
        **SORT_EMBEDDER_INPUTS,
        "books": layout.SORT_BOOKS.smk,
        "sort_items": layout.SORT_ITEMS.smk,
    },
    output={"table": layout.SORT_RETRIEVAL.smk},
    params={"compute": COMPUTE, "settings": SORT_RETRIEVAL_SETTINGS},
    kind="cpu_step",
)

step_rule(
    layout.SORT_PROMPT_STEP,
    "eval",
    input={"sort_items": layout.SORT_ITEMS.smk, "model": eval_model_input},
    output={"selection": layout.SORT_SELECTION.smk, "rows": layout.SORT_VALIDATION.smk},
    params={"compute": COMPUTE, "settings": SORT_PROMPT_SETTINGS},
    kind="model_evaluation",
)

step_rule(
    layout.SORT_RAG_PROMPT_STEP,
    "eval",
    input={
        "sort_items": layout.SORT_ITEMS.smk,
        "retrieval": layout.SORT_RETRIEVAL.smk,
        "selection": layout.SORT_SELECTION.smk,
        "model": eval_model_input,
    },
    output={
        "selection": layout.SORT_RAG_SELECTION.smk,
        "rows": layout.SORT_RAG_VALIDATION.smk,
    },
    params={"compute": COMPUTE, "settings": SORT_RAG_PROMPT_SETTINGS},
    kind="model_evaluation",
)

step_rule(
    layout.SORT_ROWS_STEP,
    "eval",
    unnamed_input=[unpack(sort_condition_inputs)],
    input={"model": eval_model_input},
    output={"table": layout.SORT_ROWS.smk},
    params={
        "compute": COMPUTE,
        # the RAG reading instructions only under rag and oracle_rag
        "settings": lambda wildcards: evaluate_settings(
            config, wildcards.condition
        ).param(),
        "checkpoint": lambda wildcards, input: input.model,
        "condition": lambda wildcards: wildcards.condition,
        "model": lambda wildcards: eval_model_label(wildcards.model),
        "run": BASE.run,
        "step": 0,
    },
    kind="model_evaluation",
    script_path="../scripts/sort_evaluate.py",
)

step_rule(
    layout.SORT_STATS_STEP,
    "stats",
    input={
        "rows": expand(
            layout.SORT_ROWS.smk, model=EVAL_MODELS, condition=SORT_CONDITIONS
        )
    },
    output={
        "tables": tables_output(layout.SORT_TABLES, "SORT"),
        "binomial": layout.SORT_BINOMIAL.smk,
        "mcnemar": expand(layout.SORT_MCNEMAR.smk, model=EVAL_MODELS),
        "ttest": expand(layout.SORT_TTEST.smk, model=EVAL_MODELS),
        "bands": expand(layout.SORT_BANDS.smk, name=CONDITION_FIGURES),
    },
    params={
        "conditions": SORT_CONDITIONS,
        "models": [eval_model_label(name) for name in EVAL_MODELS],
        "stats": SORT_STATS,
    },
)

step_rule(
    layout.SORT_FIGURES_STEP,
    "plot",
    unnamed_input=[unpack(sort_figure_inputs)],
    input={
        "binomial": layout.SORT_BINOMIAL.smk,
        "mcnemar": layout.SORT_MCNEMAR.path(model=BASE.evaluated_as),
        "ttest": layout.SORT_TTEST.path(model=BASE.evaluated_as),
        "bands": expand(layout.SORT_BANDS.smk, name=CONDITION_FIGURES),
    },
    output=sort_figure_outputs("Memory conditions (base model)", SORT_FIGURES),
    params={"model": BASE.name, "stats": SORT_FIGURE_STATS},
)

step_rule(
    layout.SORT_FICTION_ITEMS_STEP,
    "data",
    input={"fictions": layout.CORPUS.path(table="fictions")},
    output={"sort_items": layout.SORT_FICTION_ITEMS.smk},
    params={"settings": SORT_FICTION_ITEMS_SETTINGS, "seed": config["seed"]},
)


# SORT on the FictionalQA documents at every checkpoint (rules/probe.smk): sort_fiction_evaluate
# (the baseline condition, no context), sort_fiction_stats and sort_fiction_figures
checkpoint_probe(
    evaluate=ProbeRule(
        layout.SORT_FICTION_ROWS_STEP,
        "../scripts/sort_evaluate.py",
        input={
            "sort_items": layout.SORT_FICTION_ITEMS.smk,
            "selection": layout.SORT_SELECTION.path(model=BASE.evaluated_as),
        },
        output={"table": layout.SORT_FICTION_ROWS.smk},
        params={"settings": SORT_EVALUATE_SETTINGS, "condition": "baseline"},
        kind="checkpoint_sort",
    ),
    table=layout.SORT_FICTION_ROWS.smk,
    stats=ProbeRule(
        layout.SORT_FICTION_STATS_STEP,
        "../scripts/sort_fiction_stats.py",
        output={
            "rows": layout.SORT_FICTION_ALL_ROWS.smk,
            "binomial": layout.SORT_FICTION_BINOMIAL.smk,
            "tests": directory(layout.SORT_FICTION_TESTS.smk),
            "bands": layout.SORT_FICTION_BANDS.smk,
        },
        params={"stats": SORT_STATS},
    ),
    figures=ProbeRule(
        layout.SORT_FICTION_FIGURES_STEP,
        "../scripts/sort_fiction_figures.py",
        input={
            "rows": layout.SORT_FICTION_ALL_ROWS.smk,
            "bands": layout.SORT_FICTION_BANDS.smk,
        },
        output=figure_outputs(
            layout.SORT_FICTION_FIGURE,
            "sort_fiction_sort",
            "SORT",
            "FictionalQA documents across fine-tuning",
            {
                "figure": "SORT on the FictionalQA documents per checkpoint",
                "base model": "{ft_model}",
            },
        ),
        params={"stats": SORT_FIGURE_STATS},
    ),
)


step_rule(
    layout.SORT_PARAMETRIC_TEXTS_STEP,
    "train",
    input={
        **INSTRUCTIONS_INPUTS,
        "books": layout.SORT_BOOKS.smk,
        "sort_items": layout.SORT_ITEMS.smk,
        "selection": layout.SORT_SELECTION.path(model=BASE.evaluated_as),
        "model": BASE.path,
    },
    output={"texts": layout.SORT_PARAMETRIC_TEXTS.smk},
    params={"settings": SORT_PARAMETRIC_TEXTS_SETTINGS, "seed": config["seed"]},
    kind="cpu_step",
    threads=1,
)


step_rule(
    layout.SORT_PARAMETRIC_EVALUATE_STEP,
    "eval",
    input={
        "sort_items": layout.SORT_ITEMS.smk,
        "selection": layout.SORT_SELECTION.path(model=BASE.evaluated_as),
        "texts": layout.SORT_PARAMETRIC_TEXTS.smk,
        "model": checkpoint_input,
    },
    output={
        "rows": layout.SORT_PARAMETRIC_ROWS.smk,
        "nll": layout.SORT_PARAMETRIC_NLL.smk,
    },
    params={
        "compute": COMPUTE,
        "settings": SORT_EVALUATE_SETTINGS,
        "checkpoint": checkpoint_path,
        "conditions": sort_parametric_conditions,
        "model": BASE.name,
        "run": lambda wildcards: wildcards.prun,
        "epoch": lambda wildcards: int(wildcards.epoch),
    },
    kind="checkpoint_evaluation",
    constraints={"prun": "|".join([BASE.run, *PARAMETRIC_RUNS])},
)

step_rule(
    layout.SORT_PARAMETRIC_STATS_STEP,
    "stats",
    input={
        "base": expand(
            layout.SORT_ROWS.smk,
            model=BASE.evaluated_as,
            condition=["baseline", "in_context"],
        ),
        "rows": expand(
            layout.SORT_PARAMETRIC_ROWS.smk,
            prun=PARAMETRIC_RUNS,
            epoch=range(1, SORT_EPOCHS + 1),
        ),
        "nll": PARAMETRIC_NLL,
    },
    output={
        "rows": layout.SORT_PARAMETRIC_ALL_ROWS.smk,
        "mcnemar": layout.SORT_PARAMETRIC_MCNEMAR.smk,
        "ttest": layout.SORT_PARAMETRIC_TTEST.smk,
        "bands": expand(layout.SORT_PARAMETRIC_BANDS.smk, name=EPOCH_FIGURES),
    },
    params={"stats": SORT_STATS},
)

step_rule(
    layout.SORT_PARAMETRIC_FIGURES_STEP,
    "plot",
    input={
        "rows": layout.SORT_PARAMETRIC_ALL_ROWS.smk,
        "mcnemar": layout.SORT_PARAMETRIC_MCNEMAR.smk,
        "ttest": layout.SORT_PARAMETRIC_TTEST.smk,
        "bands": expand(layout.SORT_PARAMETRIC_BANDS.smk, name=EPOCH_FIGURES),
        "nll": PARAMETRIC_NLL,
    },
    output=sort_figure_outputs(
        "Parametric memory (fine-tuning)", SORT_PARAMETRIC_FIGURES
    ),
    params={"model": BASE.name, "stats": SORT_FIGURE_STATS},
)


SORT_OUTPUTS = [layout.SORT_TABLES.smk, layout.SORT_STATS_STEP.manifest]
SORT_OUTPUTS += expand(layout.SORT_FIGURE.smk, name=SORT_FIGURES, ext=("pdf", "png"))
if FICTION_RUNS:
    SORT_OUTPUTS += expand(
        layout.SORT_FICTION_STATS_STEP.manifest, ft_model=PROBE_MODELS
    )
    SORT_OUTPUTS += expand(
        layout.SORT_FICTION_FIGURE.smk, ft_model=PROBE_MODELS, ext=("pdf", "png")
    )
if config["sort"]["parametric"]["enabled"]:
    SORT_OUTPUTS += [layout.SORT_PARAMETRIC_STATS_STEP.manifest]
    SORT_OUTPUTS += expand(
        layout.SORT_FIGURE.smk, name=SORT_PARAMETRIC_FIGURES, ext=("pdf", "png")
    )
    SORT_OUTPUTS += [
        layout.TRAIN_LOG.path(training=layout.parametric_training(prun))
        for prun in PARAMETRIC_RUNS
    ]
