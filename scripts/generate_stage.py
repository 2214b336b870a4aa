"""One stage of the fiction generation pipeline (knowlab.fiction_generation.pipeline.run_stage)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent / "src"))

import torch

from knowlab.core.provenance import rule_step
from knowlab.fiction_generation.pipeline import make_generator, run_stage

torch.set_num_threads(snakemake.threads)

with rule_step(snakemake):
    params = snakemake.params
    inputs = dict(snakemake.input.items())
    generator = make_generator(params.cfg, params.seed, params.basedir, model_path=inputs.get("model"))
    run_stage(params.stage, generator, inputs, snakemake.output.table, kind=snakemake.wildcards.get("kind"))
