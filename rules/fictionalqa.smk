# FictionalQA (Kirchenbauer et al. 2026): webtext and the fiction corpus -> MCQ items -> splits ->
# (fine-tuning, rules/models.smk) -> checkpoint evaluation -> paired tests -> summary
# -> the paper's figures.  Step 0 of every run is the base model, evaluated once as run
# `base_model` (knowlab.core.checkpoints).  Results under results/fictionalqa/, figures under
# results/figures/fictionalqa/ (every path: knowlab.layout); each script calls knowlab.fictionalqa.steps.

# the paper's figure families drawn by the workflow per base model, family -> title in the report, and
# across the base models (knowlab.fictionalqa.settings; their drawing: knowlab.fictionalqa.figures)
from knowlab.fictionalqa.settings import FIGURES as FIGURE_FAMILIES
from knowlab.fictionalqa.settings import ACROSS_MODEL_FIGURES as ACROSS_MODEL_FAMILIES

step_rule(
    layout.WEBTEXT_STEP,
    "data",
    output={"train": layout.WEBTEXT_TRAIN, "heldout": layout.WEBTEXT_HELDOUT},
    params={
        "settings": WebtextSettings.from_config(config).param(),
        "seed": config["seed"],
    },
)

step_rule(
    layout.CORPUS_STEP,
    "data",
    unnamed_input=[fiction_files],
    output={table: layout.CORPUS.path(table=table) for table in TABLES},
    params={
        "settings": FictionCorpusSettings.from_config(config).param(),
        "outdir": lambda wildcards, output: Path(output.seeds).parent,
    },
)

step_rule(
    layout.RANK_DISTRACTORS_STEP,
    "eval",
    unnamed_input=[unpack(ranker_inputs)],
    output={"ranking": layout.RANKED_CANDIDATES.smk},
    params={
        "compute": COMPUTE,
        # evict is read by rule fictionalqa_mcq (the choices from the ranking), batch_size by the
        # script (not a result key): changing either re-ranks nothing
        "settings": RankerSettings.from_config(config).param(),
        "seed": config["seed"],
        "shards": layout.RANKING_SHARDS.smk,  # kept by a killed job, read by its re-run
    },
    kind="ranking",
    priority=20,
)

step_rule(
    layout.MCQ_STEP,
    "data",
    unnamed_input=[unpack(mcq_inputs)],
    output={"mcq": layout.MCQ.smk},
    params={
        "settings": McqSettings.from_config(config).param(),
        "seed": config["seed"],
    },
    kind="cpu_step",
    threads=1,
)

# the MCQ suites as lm-evaluation-harness tasks (knowlab.fictionalqa.lm_eval_export): a folder that
# names no absolute path: `lm_eval --include_path <the folder>` runs them from any directory
step_rule(
    layout.LM_EVAL_TASKS_STEP,
    "eval",
    input={"mcq": MCQ_FILES},
    output={"tasks": directory(layout.LM_EVAL_TASKS.smk)},
    params={
        "template": lambda wildcards: config["evaluate"][
            "mcq_template"
        ],  # "{question}": no expansion
        # the base models whose checkpoints the README points to
        "models": {ft_model: ft_model_dir(ft_model) for ft_model in FT_MODELS},
    },
)


step_rule(
    layout.REAL_QA_STEP,
    "data",
    unnamed_input=[real_qa_files],
    output={"real_qa": layout.REAL_QA.smk},
    params={
        "settings": RealQASettings.from_config(config).param(),
        "seed": config["seed"],
    },
)

step_rule(
    layout.SPLIT_STEP,
    "data",
    input={
        "fictions": layout.CORPUS.path(table="fictions"),
        "fict_qa": layout.CORPUS.path(table="fict_qa"),
    },
    output={"split": layout.SPLIT.smk},
    params={
        "settings": SplitSettings.from_config(config).param(),
        "seed": config["seed"],
    },
)

step_rule(
    layout.ITEMS_STEP,
    "eval",
    input={**SUITE_INPUTS, "model": checkpoint_input},
    output={"table": layout.ITEMS.smk},
    params={
        "compute": ft_compute,
        # evaluate.batch_size is read by the script (not a result key)
        "settings": lambda wildcards: EvaluateSettings.from_config(
            config, replicated_run(wildcards.run)
        ).param(),
        "checkpoint": checkpoint_path,
        "model": lambda wildcards: wildcards.ft_model,
        "run": lambda wildcards: wildcards.run,
        "step": lambda wildcards: int(wildcards.step),
    },
    kind="checkpoint_evaluation",
    priority=5,
    constraints={
        "run": "|".join(re.escape(run) for run in [BASE.run, *RUNS, *REPLICATE_RUNS])
    },
)

step_rule(
    layout.PAIRED_TESTS_STEP,
    "stats",
    input={"item_tables": compared_items},
    output={test: layout.PAIRED_TESTS.fix(test=test).smk for test in TESTS},
    params={
        "stats": STATS.param("mcnemar_exact_below", "ttest_alternative"),
        "control": CONTROL_RUN,
        "runs": compared_runs,
    },
)


step_rule(
    layout.SUMMARY_STEP,
    "stats",
    input={
        "item_tables": lambda wildcards: run_items(
            wildcards.ft_model, *MODEL_RUNS[wildcards.ft_model]
        ),
        "splits": expand(layout.SPLIT.smk, split=FICTION_RUNS),
        "train_logs": train_logs_of,
    },
    output={
        "summary": report(
            layout.SUMMARY.smk,
            caption="../workflow/report/fictionalqa_summary.rst",
            category="FictionalQA",
            subcategory="Summary table",
            labels={
                "table": "summary.csv: every metric per split, run, step and side",
                "base model": "{ft_model}",
            },
        )
    },
    params={
        "note": lambda wildcards: FT_NOTES[wildcards.ft_model],
        "runs": lambda wildcards: MODEL_RUNS[wildcards.ft_model],
        "stats": STATS.param("confidence", "bootstrap_resamples", "seed"),
    },
    kind="cpu_step",
    threads=1,
)

for family, title in FIGURE_FAMILIES.items():
    step_rule(
        layout.FQA_FIGURE_STEP.fix(family=family),
        "plot",
        input={"summary": layout.SUMMARY.smk, "train_logs": train_logs_of},
        output=figure_outputs(
            layout.FQA_FIGURE.fix(family=family),
            f"fictionalqa_{family}",
            "FictionalQA",
            "Paper figures",
            {"figure": title, "base model": "{ft_model}"},
        ),
        params={
            "family": family,
            "model": lambda wildcards: wildcards.ft_model,
            "note": lambda wildcards: FT_NOTES[wildcards.ft_model],
        },
        script_path="../scripts/fictionalqa_figure.py",
    )

step_rule(
    layout.FQA_PVALUES_FIGURE_STEP,
    "plot",
    input={"table": layout.PAIRED_TESTS.smk},
    output=figure_outputs(
        layout.FQA_PVALUES_FIGURE,
        "fictionalqa_pvalues",
        "FictionalQA",
        "Paired tests",
        {
            "base model": "{ft_model}",
            "run": "{run}",
            "suite": "{suite}",
            "test": "{test}",
        },
    ),
    params={"note": lambda wildcards: FT_NOTES[wildcards.ft_model]},
)

# the base models: name, source, parameter count (the model-size finding, the dataset card)
step_rule(
    layout.MODELS_STEP,
    "eval",
    input={"models": [ft_model_dir(ft_model) for ft_model in FT_MODELS]},
    output={"table": layout.MODELS.smk},
    params={
        "names": FT_MODELS,
        "sources": [model_source(FT_CONFIGS[ft_model]) for ft_model in FT_MODELS],
    },
)

for family in ACROSS_MODEL_FAMILIES:
    step_rule(
        layout.ACROSS_MODELS_FIGURE_STEP.fix(family=family),
        "plot",
        input={"summaries": expand(layout.SUMMARY.smk, ft_model=FT_MODELS)},
        output=figure_outputs(
            layout.ACROSS_MODELS_FIGURE.fix(family=family),
            f"fictionalqa_across_models_{family}",
            "FictionalQA",
            "Across base models",
            {"figure": f"{family} across base models"},
        ),
        params={"family": family, "models": FT_MODELS, "note": ACROSS_MODELS_NOTE},
        script_path="../scripts/fictionalqa_across_models.py",
    )


FICTIONALQA_OUTPUTS = expand(layout.SPLIT.smk, split=SPLITS)
FICTIONALQA_OUTPUTS += [layout.LM_EVAL_TASKS.smk]
if FICTION_RUNS:
    FICTIONALQA_OUTPUTS += expand(
        layout.FQA_FIGURE.smk,
        ft_model=FT_MODELS,
        family=FIGURE_FAMILIES,
        ext=("pdf", "png"),
    )
    FICTIONALQA_OUTPUTS += expand(
        layout.ACROSS_MODELS_FIGURE.smk,
        family=ACROSS_MODEL_FAMILIES,
        ext=("pdf", "png"),
    )
    FICTIONALQA_OUTPUTS += [
        path
        for ft_model in FT_MODELS
        for path in expand(
            layout.FQA_PVALUES_FIGURE.smk,
            ft_model=ft_model,
            run=[run for run in MODEL_RUNS[ft_model] if run != CONTROL_RUN],
            suite=STATS_SUITES,
            test=TESTS,
            ext=("pdf", "png"),
        )
    ]
