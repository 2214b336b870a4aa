"""Grounding on the fiction set across fine-tuning: the figure of the rates per checkpoint and side."""

from knowlab.core.provenance import rule_step
from knowlab.grounding.steps import figures

with rule_step(snakemake) as log:
    params = snakemake.params
    rates = figures.read_rates(snakemake.input.rates)
    figures.draw_finetune(rates, snakemake.output.pdf, snakemake.output.png, model=params.model, runs=params.runs)
