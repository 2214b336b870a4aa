# Train/validation splits of the fiction corpus as id lists.


rule split:
    input:
        fictions=f"{FICTION}/fictions.jsonl",
        fict_qa=f"{FICTION}/fict_qa.jsonl",
    output:
        split="results/splits/{split}.json",
        manifest="results/splits/{split}.manifest.json",
    log:
        "results/logs/splits/{split}.log",
    conda:
        "../envs/data.yaml"
    params:
        cfg=config["splits"],
        seed=config["seed"],
    script:
        "../scripts/split.py"
