"""Grounding figures (Figs. 3c, 4, 5, 15-16, gold position) drawn from the grounding tables."""

from knowlab.core.provenance import rule_step
from knowlab.grounding.steps import figures

with rule_step(snakemake) as log:
    figures.draw(figures.read_tables(snakemake.input.tables), dict(snakemake.output.items()))
