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


rule generate_seeds:
    input:
        unpack(generation_inputs),
    output:
        table=layout.GENERATED.path(stage="seeds"),
        manifest=layout.GENERATE_SEEDS_STEP.manifest,
    log:
        layout.GENERATE_SEEDS_STEP.log,
    benchmark:
        layout.GENERATE_SEEDS_STEP.benchmark
    conda:
        "../envs/generate.yaml"
    threads: job_threads(config, "api_generation")
    resources:
        **job_resources(config, "api_generation"),
    params:
        **generate_params("seeds", GENERATE_SEEDS),
    script:
        "../scripts/generate_stage.py"


use rule generate_seeds as generate_fictsheets with:
    input:
        unpack(generation_inputs),
        seeds=layout.GENERATED.path(stage="seeds"),
    output:
        table=layout.GENERATED.path(stage="fictsheets"),
        manifest=layout.GENERATE_FICTSHEETS_STEP.manifest,
    log:
        layout.GENERATE_FICTSHEETS_STEP.log,
    benchmark:
        layout.GENERATE_FICTSHEETS_STEP.benchmark
    params:
        **generate_params("fictsheets", GENERATE_FICTSHEETS),


use rule generate_seeds as generate_fictions with:
    input:
        unpack(generation_inputs),
        seeds=layout.GENERATED.path(stage="seeds"),
        fictsheets=layout.GENERATED.path(stage="fictsheets"),
    output:
        table=layout.GENERATED.path(stage="fictions"),
        manifest=layout.GENERATE_FICTIONS_STEP.manifest,
    log:
        layout.GENERATE_FICTIONS_STEP.log,
    benchmark:
        layout.GENERATE_FICTIONS_STEP.benchmark
    params:
        **generate_params("fictions", GENERATE_FICTIONS),


use rule generate_seeds as generate_fict_qa with:
    input:
        unpack(generation_inputs),
        seeds=layout.GENERATED.path(stage="seeds"),
        fictsheets=layout.GENERATED.path(stage="fictsheets"),
        fictions=layout.GENERATED.path(stage="fictions"),
    output:
        table=layout.GENERATED.path(stage="fict_qa_raw"),
        manifest=layout.GENERATE_FICT_QA_STEP.manifest,
    log:
        layout.GENERATE_FICT_QA_STEP.log,
    benchmark:
        layout.GENERATE_FICT_QA_STEP.benchmark
    params:
        **generate_params("fict_qa", GENERATE_FICT_QA),


use rule generate_seeds as generate_attempts with:
    input:
        unpack(generation_inputs),
        fictions=layout.GENERATED.path(stage="fictions"),
        fict_qa_raw=layout.GENERATED.path(stage="fict_qa_raw"),
    output:
        table=layout.GENERATED.fix(stage="attempts_{kind}").smk,
        manifest=layout.GENERATE_ATTEMPTS_STEP.manifest,
    log:
        layout.GENERATE_ATTEMPTS_STEP.log,
    benchmark:
        layout.GENERATE_ATTEMPTS_STEP.benchmark
    params:
        **generate_params("attempts", GENERATE_ATTEMPTS),


use rule generate_seeds as generate_grades with:
    input:
        unpack(generation_inputs),
        fictions=layout.GENERATED.path(stage="fictions"),
        fict_qa_raw=layout.GENERATED.path(stage="fict_qa_raw"),
        attempts=layout.GENERATED.fix(stage="attempts_{kind}").smk,
    output:
        table=layout.GENERATED.fix(stage="grades_{kind}").smk,
        manifest=layout.GENERATE_GRADES_STEP.manifest,
    log:
        layout.GENERATE_GRADES_STEP.log,
    benchmark:
        layout.GENERATE_GRADES_STEP.benchmark
    params:
        **generate_params("grades", GENERATE_GRADES),


rule generate_annotate:
    input:
        **NEAR_DUPLICATES_INPUTS,
        fict_qa_raw=layout.GENERATED.path(stage="fict_qa_raw"),
        grades=[layout.GENERATED.path(stage=f"grades_{kind}") for kind in ATTEMPT_KINDS],
        # counted in the summary table only
        stages=expand(layout.GENERATED.smk, stage=("seeds", "fictsheets", "fictions")),
    output:
        annotated=layout.GENERATED.path(stage="fict_qa_annotated"),
        fict_qa=layout.GENERATED.path(stage="fict_qa"),
        summary=report(
            layout.GENERATION_SUMMARY.smk,
            caption="../workflow/report/generation_summary.rst",
            category="Fiction generation",
            labels={"table": "summary.csv: items per stage and questions per filter"},
        ),
        manifest=layout.GENERATE_ANNOTATE_STEP.manifest,
    log:
        layout.GENERATE_ANNOTATE_STEP.log,
    benchmark:
        layout.GENERATE_ANNOTATE_STEP.benchmark
    conda:
        "../envs/generate.yaml"
    threads: job_threads(config, "cpu_step")
    resources:
        **job_resources(config, "cpu_step"),
    params:
        compute=COMPUTE,
        settings=GENERATE_ANNOTATE,
    script:
        "../scripts/generate_annotate.py"
