"""The Hugging Face dataset card of the item-level tables (knowlab.dataset_card), at the root of results/."""

from knowlab.core.provenance import rule_step
from knowlab.dataset_card import write_card

with rule_step(snakemake) as log:
    params = snakemake.params
    configs = write_card(
        snakemake.output.card,
        snakemake.input,
        model=params.model,
        seed=params.seed,
        settings=params.settings,
        eval_models=params.eval_models,
        ft_models=params.ft_models,
    )
    for config, counts in configs.items():
        log.info(
            "config %s: tables %d, rows %d, columns %d", config, counts["tables"], counts["rows"], counts["columns"]
        )
