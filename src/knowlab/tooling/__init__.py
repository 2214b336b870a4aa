"""Tooling around the workflow: capacity plan, conda env checks, reproducibility verification, results
comparison, provenance audit.

:mod:`~knowlab.tooling.capacity` (the paper-scale capacity plan), :mod:`~knowlab.tooling.envs` (each
rule's conda env against the code it reaches), :mod:`~knowlab.tooling.verify` (``make verify``: reruns,
kills and output hashes), :mod:`~knowlab.tooling.compare` (two results folders, table by table),
:mod:`~knowlab.tooling.audit` (re-hashing what the manifests recorded), :mod:`~knowlab.tooling.config_docs`
(``config/README.md`` from the schema's descriptions) and :mod:`~knowlab.tooling.source` (the package's
files, copied from the workflow's own source when Snakemake reads the workflow from a URL or a git
source).  They import the core and the studies; nothing in :mod:`knowlab.core` or in a study imports them (``tests/test_imports.py`` checks it).
Run those with a command line as ``python -m knowlab.tooling.<name>``.
"""
