"""One stage of the fiction generation pipeline (knowlab.fiction_generation.steps.data.run_stage)."""

import torch

from knowlab.core.provenance import checkout_root, rule_step
from knowlab.fiction_generation.steps.data import ClientOptions, make_generator, run_stage
from knowlab.fiction_generation.settings import STAGE_SETTINGS

torch.set_num_threads(snakemake.threads)

with rule_step(snakemake):
    params = snakemake.params
    settings = STAGE_SETTINGS[params.stage].from_param(params.settings)
    inputs = dict(snakemake.input.items())
    # the request cache's folder and the client's keys: no answer depends on them (in no settings)
    generate = snakemake.config["fiction"]["generate"]
    server = generate["openai"]
    client = ClientOptions(
        server["api_key_env"],
        server["max_retries"],
        server["timeout_s"],
        server["concurrency"],
        server["poll_interval_s"],
    )
    generator = make_generator(
        settings,
        params.seed,
        checkout_root(),
        model_path=inputs.get("model"),
        cache_dir=generate["cache_dir"],
        client=client,
    )
    run_stage(settings, generator, inputs, snakemake.output.table, kind=snakemake.wildcards.get("kind"))
