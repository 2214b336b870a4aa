# Pinned resources: base model and webtext, verified by sha256 before use.


rule base_model:
    input:
        unpack(base_model_inputs),
    output:
        model=directory("resources/base_model"),
        manifest="resources/base_model.manifest.json",
    log:
        "results/logs/base_model.log",
    conda:
        "../envs/train.yaml"
    params:
        cfg=config["model"],
        seed=config["seed"],
    script:
        "../scripts/base_model.py"


rule webtext:
    output:
        train="resources/webtext/train.jsonl",
        heldout="resources/webtext/heldout.jsonl",
        manifest="resources/webtext/manifest.json",
    log:
        "results/logs/webtext.log",
    conda:
        "../envs/data.yaml"
    params:
        cfg=config["webtext"],
        seed=config["seed"],
    script:
        "../scripts/webtext.py"


rule eval_model:
    """A model evaluated as it is (eval_models): a Hub id or a local folder, saved as safetensors."""
    output:
        model=directory("resources/models/{model}"),
        manifest="resources/models/{model}.manifest.json",
    log:
        "results/logs/models/{model}.log",
    conda:
        "../envs/train.yaml"
    params:
        spec=lambda wildcards: config["eval_models"][wildcards.model],
    script:
        "../scripts/eval_model.py"
