"""The steps of the fiction generation rules (``rules/fiction_generation.smk``): the only
``knowlab.fiction_generation`` module that ``scripts/generate_*.py`` import, besides
:mod:`knowlab.fiction_generation.settings` for the settings records.

Each script reads its inputs, calls one function here and writes its outputs, as the studies'
steps do (:mod:`knowlab.sort.steps`, :mod:`knowlab.fictionalqa.steps`,
:mod:`knowlab.grounding.steps`).  Generation has data steps only (every rule runs in
``envs/generate.yaml``): :mod:`knowlab.fiction_generation.steps.data`, a stage of the chain per rule
and the annotation.  Its funnel table is written by the annotation step; no statistic or figure.

This package itself imports nothing, so importing its module runs only that module's imports.
"""
