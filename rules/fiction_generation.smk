# The fiction generation pipeline (Kirchenbauer et al. 2026, Sec. 3, App. C), for fiction.source: generate:
# seeds -> fictsheets -> fictions -> fict_qa -> answer attempts -> grades -> annotation.
# Every LLM call goes through the request cache (fiction.generate.cache_dir), which is no
# rule's output: a failed or killed stage keeps its answers and its re-run sends the rest.
from knowlab.fiction_generation.settings import (
    FictionGenerationAnnotateSettings,
    FictionGenerationAttemptsSettings,
    FictionGenerationFictionsSettings,
    FictionGenerationFictQaSettings,
    FictionGenerationFictsheetsSettings,
    FictionGenerationGradesSettings,
    FictionGenerationSeedsSettings,
)

# each step's settings (knowlab.fiction_generation.settings): the config keys it reads, its rule's
# param `settings`, so that a changed key re-runs the stages that read it (config/README.md)
GENERATE_SEEDS = FictionGenerationSeedsSettings.from_config(config).param()
GENERATE_FICTSHEETS = FictionGenerationFictsheetsSettings.from_config(config).param()
GENERATE_FICTIONS = FictionGenerationFictionsSettings.from_config(config).param()
GENERATE_FICT_QA = FictionGenerationFictQaSettings.from_config(config).param()
GENERATE_ATTEMPTS = FictionGenerationAttemptsSettings.from_config(config).param()
GENERATE_GRADES = FictionGenerationGradesSettings.from_config(config).param()
GENERATE_ANNOTATE = FictionGenerationAnnotateSettings.from_config(config).param()


# the LLM stages, in order: stage -> (its step, the earlier stages' tables it reads by input name,
# the table it writes, its settings); the answer attempts and their grades run per attempt {kind}
GENERATION_STAGES = {
    "seeds": (layout.GENERATE_SEEDS_STEP, {}, "seeds", GENERATE_SEEDS),
    "fictsheets": (
        layout.GENERATE_FICTSHEETS_STEP,
        {"seeds": "seeds"},
        "fictsheets",
        GENERATE_FICTSHEETS,
    ),
    "fictions": (
        layout.GENERATE_FICTIONS_STEP,
        {"seeds": "seeds", "fictsheets": "fictsheets"},
        "fictions",
        GENERATE_FICTIONS,
    ),
    "fict_qa": (
        layout.GENERATE_FICT_QA_STEP,
        {"seeds": "seeds", "fictsheets": "fictsheets", "fictions": "fictions"},
        "fict_qa_raw",
        GENERATE_FICT_QA,
    ),
    "attempts": (
        layout.GENERATE_ATTEMPTS_STEP,
        {"fictions": "fictions", "fict_qa_raw": "fict_qa_raw"},
        "attempts_{kind}",
        GENERATE_ATTEMPTS,
    ),
    "grades": (
        layout.GENERATE_GRADES_STEP,
        {
            "fictions": "fictions",
            "fict_qa_raw": "fict_qa_raw",
            "attempts": "attempts_{kind}",
        },
        "grades_{kind}",
        GENERATE_GRADES,
    ),
}

for stage, (step, reads, table, settings) in GENERATION_STAGES.items():
    step_rule(
        step,
        "generate",
        unnamed_input=[unpack(generation_inputs)],
        input={
            name: layout.GENERATED.fix(stage=read).smk for name, read in reads.items()
        },
        output={"table": layout.GENERATED.fix(stage=table).smk},
        params=generate_params(stage, settings),
        kind="api_generation",
        script_path="../scripts/generate_stage.py",
    )

step_rule(
    layout.GENERATE_ANNOTATE_STEP,
    "generate",
    input={
        **NEAR_DUPLICATES_INPUTS,
        "fict_qa_raw": layout.GENERATED.path(stage="fict_qa_raw"),
        "grades": [
            layout.GENERATED.path(stage=f"grades_{kind}") for kind in ATTEMPT_KINDS
        ],
        # counted in the summary table only
        "stages": expand(
            layout.GENERATED.smk, stage=("seeds", "fictsheets", "fictions")
        ),
    },
    output={
        "annotated": layout.GENERATED.path(stage="fict_qa_annotated"),
        "fict_qa": layout.GENERATED.path(stage="fict_qa"),
        "summary": report(
            layout.GENERATION_SUMMARY.smk,
            caption="../workflow/report/generation_summary.rst",
            category="Fiction generation",
            labels={"table": "summary.csv: items per stage and questions per filter"},
        ),
    },
    params={"compute": COMPUTE, "settings": GENERATE_ANNOTATE},
    kind="cpu_step",
)
