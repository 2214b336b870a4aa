"""The steps of the grounding rules (``rules/grounding.smk``): the only ``knowlab.grounding`` modules
that ``scripts/grounding_*.py`` import, besides :mod:`knowlab.grounding.settings` for the settings
records.

Each script reads its inputs, calls the steps and writes its outputs.  The steps are three
modules, one per kind of rule, because a module's imports run in the conda env of every rule
that imports it (``tests/workflow/test_envs.py``) and the layers below them need different envs:

- :mod:`knowlab.grounding.steps.data`: items, ranked distractors, responses and their
  atomic-fact scores (rules ``grounding_items``, ``grounding_distractors``, ``grounding_generate``,
  ``grounding_score``, ``grounding_checkpoint_*``; ``envs/data.yaml``, ``grounding.yaml``,
  ``eval.yaml``: no matplotlib, scipy or statsmodels there);
- :mod:`knowlab.grounding.steps.stats`: the tables from the scored rows
  (:mod:`knowlab.grounding.analysis`, :mod:`knowlab.grounding.report`; rules ``grounding_tables``
  and ``grounding_finetune_stats``: no matplotlib);
- :mod:`knowlab.grounding.steps.figures`: the figures drawn from those tables, computing no
  statistic (:mod:`knowlab.grounding.plots`; rules ``grounding_figures`` and
  ``grounding_finetune_figures`` in ``envs/plot.yaml``).

This package itself imports nothing, so importing one of them runs only its own imports.
"""
