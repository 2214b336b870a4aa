"""``python -m knowlab.findings [--default results/findings.json] > docs/claims.md``: the claims catalogue
as Markdown, with what the default run decided."""

import argparse

from knowlab.core.io import read_json
from knowlab.findings.catalogue import claims_markdown, default_statuses

parser = argparse.ArgumentParser(prog="python -m knowlab.findings", description=__doc__)
parser.add_argument("--default", help="results/findings.json of a run of config/config.yaml")
args = parser.parse_args()
print(claims_markdown(default_statuses(read_json(args.default)) if args.default else None), end="")
