"""The steps of the SORT rules (``rules/sort.smk``): the only ``knowlab.sort`` modules that
``scripts/sort_*.py`` import, besides :mod:`knowlab.sort.settings` for the settings records.

Each script reads its inputs, calls one or two functions here and writes its outputs.  The
steps are three modules, one per kind of rule, because a module's imports run in the conda env
of every rule that imports it (``tests/workflow/test_envs.py``) and the layers below them need
different envs:

- :mod:`knowlab.sort.steps.data`: texts, items, passages, training texts, prompt selection and
  the scored item rows (rules in ``envs/data.yaml``, ``sort.yaml``, ``eval.yaml``, ``train.yaml``;
  no matplotlib, scipy or statsmodels there);
- :mod:`knowlab.sort.steps.stats`: the test tables from the item rows
  (:mod:`knowlab.sort.analysis`; rules ``*_stats`` in ``envs/stats.yaml``: no matplotlib);
- :mod:`knowlab.sort.steps.figures`: the figures drawn from those tables and rows
  (:mod:`knowlab.sort.condition_plots`, :mod:`~knowlab.sort.finetune_plots`,
  :mod:`~knowlab.sort.matrix_plots`; rules ``*_figures`` in ``envs/plot.yaml``).

This package itself imports nothing, so importing one of them runs only its own imports.
"""
