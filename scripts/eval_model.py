"""Save a model evaluated as it is (a Hub id, ``<id>@<revision>``, or a local folder) under resources/models/<name>."""

from knowlab.core.io import atomic_dir
from knowlab.core.models import from_hub
from knowlab.core.provenance import rule_step

with rule_step(snakemake) as log:
    log.info("model %s", snakemake.params.spec)
    with atomic_dir(snakemake.output.model) as folder:
        from_hub(snakemake.params.spec, folder, key=f"eval_models.{snakemake.wildcards.model}")
