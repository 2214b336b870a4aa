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
        table=f"{GENERATE}/seeds.jsonl",
        manifest=f"{GENERATE}/seeds.manifest.json",
    log:
        "results/logs/generate/seeds.log",
    benchmark:
        "results/benchmarks/generate/seeds.tsv"
    conda:
        "../envs/generate.yaml"
    threads: config["threads"]
    params:
        compute=COMPUTE,
        stage="seeds",
        settings=GENERATE_SEEDS,
        seed=config["seed"],
        basedir=BASEDIR,
    script:
        "../scripts/generate_stage.py"


use rule generate_seeds as generate_fictsheets with:
    input:
        unpack(generation_inputs),
        seeds=f"{GENERATE}/seeds.jsonl",
    output:
        table=f"{GENERATE}/fictsheets.jsonl",
        manifest=f"{GENERATE}/fictsheets.manifest.json",
    log:
        "results/logs/generate/fictsheets.log",
    benchmark:
        "results/benchmarks/generate/fictsheets.tsv"
    params:
        compute=COMPUTE,
        stage="fictsheets",
        settings=GENERATE_FICTSHEETS,
        seed=config["seed"],
        basedir=BASEDIR,


use rule generate_seeds as generate_fictions with:
    input:
        unpack(generation_inputs),
        seeds=f"{GENERATE}/seeds.jsonl",
        fictsheets=f"{GENERATE}/fictsheets.jsonl",
    output:
        table=f"{GENERATE}/fictions.jsonl",
        manifest=f"{GENERATE}/fictions.manifest.json",
    log:
        "results/logs/generate/fictions.log",
    benchmark:
        "results/benchmarks/generate/fictions.tsv"
    params:
        compute=COMPUTE,
        stage="fictions",
        settings=GENERATE_FICTIONS,
        seed=config["seed"],
        basedir=BASEDIR,


use rule generate_seeds as generate_fict_qa with:
    input:
        unpack(generation_inputs),
        seeds=f"{GENERATE}/seeds.jsonl",
        fictsheets=f"{GENERATE}/fictsheets.jsonl",
        fictions=f"{GENERATE}/fictions.jsonl",
    output:
        table=f"{GENERATE}/fict_qa_raw.jsonl",
        manifest=f"{GENERATE}/fict_qa_raw.manifest.json",
    log:
        "results/logs/generate/fict_qa.log",
    benchmark:
        "results/benchmarks/generate/fict_qa.tsv"
    params:
        compute=COMPUTE,
        stage="fict_qa",
        settings=GENERATE_FICT_QA,
        seed=config["seed"],
        basedir=BASEDIR,


use rule generate_seeds as generate_attempts with:
    input:
        unpack(generation_inputs),
        fictions=f"{GENERATE}/fictions.jsonl",
        fict_qa_raw=f"{GENERATE}/fict_qa_raw.jsonl",
    output:
        table=f"{GENERATE}/attempts_{{kind}}.jsonl",
        manifest=f"{GENERATE}/attempts_{{kind}}.manifest.json",
    log:
        "results/logs/generate/attempts_{kind}.log",
    benchmark:
        "results/benchmarks/generate/attempts_{kind}.tsv"
    params:
        compute=COMPUTE,
        stage="attempts",
        settings=GENERATE_ATTEMPTS,
        seed=config["seed"],
        basedir=BASEDIR,


use rule generate_seeds as generate_grades with:
    input:
        unpack(generation_inputs),
        fictions=f"{GENERATE}/fictions.jsonl",
        fict_qa_raw=f"{GENERATE}/fict_qa_raw.jsonl",
        attempts=f"{GENERATE}/attempts_{{kind}}.jsonl",
    output:
        table=f"{GENERATE}/grades_{{kind}}.jsonl",
        manifest=f"{GENERATE}/grades_{{kind}}.manifest.json",
    log:
        "results/logs/generate/grades_{kind}.log",
    benchmark:
        "results/benchmarks/generate/grades_{kind}.tsv"
    params:
        compute=COMPUTE,
        stage="grades",
        settings=GENERATE_GRADES,
        seed=config["seed"],
        basedir=BASEDIR,


rule generate_annotate:
    input:
        fict_qa_raw=f"{GENERATE}/fict_qa_raw.jsonl",
        grades=expand(f"{GENERATE}/grades_{{kind}}.jsonl", kind=ATTEMPT_KINDS),
        # counted in the summary table only
        stages=expand(
            f"{GENERATE}/{{stage}}.jsonl", stage=("seeds", "fictsheets", "fictions")
        ),
    output:
        annotated=f"{GENERATE}/fict_qa_annotated.jsonl",
        fict_qa=f"{GENERATE}/fict_qa.jsonl",
        summary=report(
            f"{GENERATE}/summary.csv",
            caption="../workflow/report/generation_summary.rst",
            category="Fiction generation",
            labels={"table": "summary.csv: items per stage and questions per filter"},
        ),
        manifest=f"{GENERATE}/fict_qa.manifest.json",
    log:
        "results/logs/generate/annotate.log",
    benchmark:
        "results/benchmarks/generate/annotate.tsv"
    conda:
        "../envs/generate.yaml"
    threads: config["threads"]
    params:
        compute=COMPUTE,
        settings=GENERATE_ANNOTATE,
    script:
        "../scripts/generate_annotate.py"
