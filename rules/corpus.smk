# The fiction corpus in the release schema, its MCQ items, and real-world Q&A.


rule fiction_corpus:
    input:
        fiction_files,
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


rule rank_distractors:
    input:
        unpack(ranker_inputs),
    output:
        ranking=RANKED,
        manifest="results/corpus/mcq/ranked_candidates.manifest.json",
    log:
        "results/logs/mcq/rank_distractors.log",
    conda:
        "../envs/eval.yaml"
    threads: config["threads"]
    resources:
        gpu=1,
    params:
        cfg=config["mcq"]["ranker"],
        seed=config["seed"],
    script:
        "../scripts/rank_distractors.py"


rule mcq:
    input:
        unpack(mcq_inputs),
    output:
        mcq="results/corpus/mcq/mcq{n}.jsonl",
        manifest="results/corpus/mcq/mcq{n}.manifest.json",
    log:
        "results/logs/mcq/mcq{n}.log",
    conda:
        "../envs/data.yaml"
    params:
        distractors=config["mcq"]["distractors"],
        seed=config["seed"],
    script:
        "../scripts/mcq.py"


rule real_qa:
    input:
        lambda wildcards: (
            [f"{BASEDIR}/{config['real_qa']['shipped']}"]
            if config["real_qa"]["source"] == "shipped"
            else []
        ),
    output:
        real_qa=REAL_QA,
        manifest="results/corpus/real_qa.manifest.json",
    log:
        "results/logs/real_qa.log",
    conda:
        "../envs/data.yaml"
    params:
        cfg=config["real_qa"],
        basedir=BASEDIR,
        seed=config["seed"],
    script:
        "../scripts/real_qa.py"
