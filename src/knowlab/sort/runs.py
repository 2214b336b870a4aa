"""The names of SORT's parametric-memory fine-tuning runs (Pink et al. 2024, Sec. 3.2 and App. E).

Constants alone, so that :mod:`knowlab.layout` names the runs' folders without importing the trainer
(:mod:`knowlab.sort.finetune`, :mod:`knowlab.core.train`).
"""

from __future__ import annotations

#: the "books" run (the framed book chunks mixed with the instructions) and the "instructions" run
#: (the paper's control: the instructions alone), in this order
PARAMETRIC_RUNS = ("books", "instructions")
