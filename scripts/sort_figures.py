"""SORT figures of the base model: Fig. 3a/3b (in context), Fig. 4 (RAG), Fig. 10 (baseline), condition matrices."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent / "src"))

from knowlab.core.io import read_parquets
from knowlab.core.provenance import rule_step
from knowlab.sort.steps import figures

with rule_step(snakemake):
    inputs = snakemake.input
    figures.condition_figures(
        read_parquets(inputs.rows),
        read_parquets([inputs.binomial]),
        {"mcnemar": read_parquets([inputs.mcnemar]), "ttest": read_parquets([inputs.ttest])},
        dict(snakemake.output.items()),
        model=snakemake.params.model,
        n_resamples=snakemake.params.bootstrap_resamples,
        seed=snakemake.params.seed,
        retrieval=read_parquets([inputs.retrieval]) if inputs.get("retrieval") else None,
    )
