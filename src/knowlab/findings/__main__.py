"""``python -m knowlab.findings > docs/claims.md``: the claims catalogue as Markdown."""

from knowlab.findings.catalogue import claims_markdown

print(claims_markdown(), end="")
