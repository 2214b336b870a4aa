"""``python -m knowlab.findings [--default results/findings.json] > docs/claims.md``: the claims catalogue
as Markdown, with what the default run decided; ``python -m knowlab.findings --deviations docs/deviations.md``:
that page's generated table of the papers' settings (:mod:`knowlab.findings.protocol`)."""

import argparse
from pathlib import Path

from knowlab.core.io import read_json
from knowlab.findings.catalogue import claims_markdown, default_statuses
from knowlab.findings.protocol import deviations_page, page_configs

parser = argparse.ArgumentParser(prog="python -m knowlab.findings", description=__doc__)
parser.add_argument("--default", help="results/findings.json of a run of config/config.yaml")
parser.add_argument("--deviations", metavar="PAGE", help="write the generated table of PAGE (docs/deviations.md)")
args = parser.parse_args()
if args.deviations:
    page = Path(args.deviations)
    page.write_text(deviations_page(page.read_text(encoding="utf-8"), page_configs()), encoding="utf-8")
else:
    print(claims_markdown(default_statuses(read_json(args.default)) if args.default else None), end="")
