"""Annotate generated questions and keep the unique, infeasible-when-blind ones (fiction_generation.annotate)."""

import torch

from knowlab.core.provenance import rule_step
from knowlab.fiction_generation.steps.data import run_annotation
from knowlab.fiction_generation.settings import FictionGenerationAnnotateSettings

torch.set_num_threads(snakemake.threads)

with rule_step(snakemake) as log:
    settings = FictionGenerationAnnotateSettings.from_param(snakemake.params.settings)
    counts = run_annotation(snakemake.input.fict_qa_raw, list(snakemake.input.grades), settings.embedder,
                            settings.distance_threshold, snakemake.output.annotated, snakemake.output.fict_qa,
                            snakemake.output.summary, list(snakemake.input.stages))
    log.info("kept %(kept)d of %(questions)d question(s)", counts)
