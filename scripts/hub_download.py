"""Download one Hugging Face Hub repository at its revision into resources/hub (rule hub_download, a local rule)."""

from knowlab.core.hub import HubSnapshot
from knowlab.core.models import download_snapshot
from knowlab.core.provenance import rule_step

with rule_step(snakemake) as log:
    snapshot = HubSnapshot.from_param(snakemake.params.settings)
    commit = download_snapshot(snapshot, snakemake.output.snapshot)
    log.info("%s %s: commit %s in %s", snapshot.repo_type, snapshot.repo_id, commit, snakemake.output.snapshot)
