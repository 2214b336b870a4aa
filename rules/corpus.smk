# The fiction corpus in the release schema, and its MCQ items.


rule fiction_corpus:
    input:
        shipped_fiction_files,
    output:
        seeds=f"{FICTION}/seeds.jsonl",
        fictsheets=f"{FICTION}/fictsheets.jsonl",
        fictions=f"{FICTION}/fictions.jsonl",
        fict_qa=f"{FICTION}/fict_qa.jsonl",
        manifest=f"{FICTION}/manifest.json",
    log:
        "results/logs/fiction_corpus.log",
    conda:
        "../envs/data.yaml"
    params:
        cfg=config["fiction"],
        basedir=BASEDIR,
        outdir=lambda wildcards, output: Path(output.seeds).parent,
    script:
        "../scripts/fiction_corpus.py"


rule mcq:
    input:
        fict_qa=f"{FICTION}/fict_qa.jsonl",
    output:
        mcq="results/corpus/mcq/mcq{n}.jsonl",
        manifest="results/corpus/mcq/mcq{n}.manifest.json",
    log:
        "results/logs/mcq/mcq{n}.log",
    conda:
        "../envs/data.yaml"
    params:
        seed=config["seed"],
    script:
        "../scripts/mcq.py"
