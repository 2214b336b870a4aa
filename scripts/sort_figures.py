"""SORT figures of the base model: Fig. 3a/3b (in context), Fig. 4 (RAG), Fig. 10 (baseline), condition matrices."""

from knowlab.core.io import read_parquets
from knowlab.core.provenance import rule_step
from knowlab.core.stats import StatsSettings
from knowlab.sort.settings import CONDITION_FIGURES
from knowlab.sort.steps import figures

with rule_step(snakemake):
    inputs = snakemake.input
    figures.condition_figures(
        read_parquets(inputs.rows),
        read_parquets([inputs.binomial]),
        {"mcnemar": read_parquets([inputs.mcnemar]), "ttest": read_parquets([inputs.ttest])},
        {name: read_parquets([path]) for name, path in zip(CONDITION_FIGURES, inputs.bands, strict=True)},
        dict(snakemake.output.items()),
        model=snakemake.params.model,
        stats=StatsSettings.from_param(snakemake.params.stats),
        retrieval=read_parquets([inputs.retrieval]) if inputs.get("retrieval") else None,
    )
