"""Download the SORT texts (sort.source), each verified by sha256."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent / "src"))

from knowlab.core.io import atomic_dir
from knowlab.core.provenance import rule_step
from knowlab.sort.settings import SortSourcesSettings
from knowlab.sort.sources import fetch_sources

with rule_step(snakemake) as log, atomic_dir(snakemake.output.texts) as tmp:
    for path in fetch_sources(SortSourcesSettings.from_param(snakemake.params.settings), tmp):
        log.info("verified %s", Path(path).name)
