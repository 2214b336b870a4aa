"""The steps of the FictionalQA rules (``rules/fictionalqa.smk``): the only ``knowlab.fictionalqa``
modules that ``scripts/fictionalqa_*.py`` import, besides :mod:`knowlab.fictionalqa.settings` for the
settings records.

Each script reads its inputs, calls one or two functions here and writes its outputs.  The steps
are three modules, one per kind of rule, because a module's imports run in the conda env of every
rule that imports it (``tests/workflow/test_envs.py``) and the layers below them need different
envs:

- :mod:`knowlab.fictionalqa.steps.data`: webtext, the fiction corpus, the distractor ranking, the
  MCQ items, the real-world Q&A, the splits, the checkpoint evaluation and the lm-evaluation-harness
  tasks (rules ``fictionalqa_webtext``, ``fictionalqa_corpus``, ``fictionalqa_rank_distractors``,
  ``fictionalqa_mcq``, ``fictionalqa_real_qa``, ``fictionalqa_split``, ``fictionalqa_evaluate``,
  ``fictionalqa_lm_eval_tasks``; ``envs/data.yaml``, ``eval.yaml``: no matplotlib, scipy or
  statsmodels there);
- :mod:`knowlab.fictionalqa.steps.stats`: the paired tests and the study summary from the item
  rows (:mod:`knowlab.fictionalqa.stats`, :mod:`knowlab.fictionalqa.summary`; rules
  ``fictionalqa_paired_tests`` and ``fictionalqa_summary`` in ``envs/stats.yaml``: no matplotlib);
- :mod:`knowlab.fictionalqa.steps.figures`: the paper's figure families drawn from the summary and
  the training logs, and the p-value matrices drawn from the paired tests
  (:mod:`knowlab.fictionalqa.figures`, :mod:`knowlab.core.plotting`; rules
  ``fictionalqa_figure_<family>`` and ``fictionalqa_figure_pvalues`` in ``envs/plot.yaml``).

This package itself imports nothing, so importing one of them runs only its own imports.
"""
