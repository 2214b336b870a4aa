"""The numbers the findings are decided against that are not alpha: the margins of the claims of no
difference and of no harm, and the smallest effect of interest of each scale.  Each is one
:class:`Threshold`, with the date it was fixed and whether results of the claims it decides had been
seen by then, so that a reader can tell a margin set before the data from one set after
(issue 57: "fixed before any run" could not be checked).  ``results/analysis_plan.json`` lists them
(:func:`knowlab.findings.plan.analysis_plan`), and every finding carries that file's sha256.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class Threshold:
    """A margin or smallest effect of interest: ``value`` in its scale's unit, the date it was ``fixed``
    (ISO), whether results of the claims it decides had been ``seen`` then, and ``why``."""

    value: float
    fixed: str
    seen: bool
    why: str


#: the margin of SORT's claim of no difference in accuracy (``findings.equivalence_margin`` may change it
#: for a run, as a printed deviation)
EQUIVALENCE_MARGIN = Threshold(
    0.05,
    "2026-11-25",
    False,
    "5 accuracy points of a two-choice task: set with the first findings rule (commit 2731376), before "
    "any run was decided under it",
)

#: the margin of FictionalQA's claims of no harm or no gain in loss, a share of the reference loss
LOSS_MARGIN = Threshold(
    0.05,
    "2026-11-28",
    True,
    "5% of the reference model's loss on the same text, so that it means the same for every model and "
    "suite (commit c13bd26); the non-inferiority definitions were written after default results of "
    "these claims had been read, and moved to the log scale on 2026-11-29 (issue 57)",
)

_SEEN = "fixed on 2026-11-29 (issue 57), after default and test results of every claim had been read"

#: the smallest effect of interest of each scale a finding is measured in: a design whose minimum
#: detectable effect (80% power) is above it could not have shown an effect a reader would care
#: about, and its line reads ``underpowered``, not ``not significant``
SMALLEST_EFFECT: dict[str, Threshold] = {
    "accuracy": Threshold(0.05, "2026-11-29", True, f"5 accuracy points, the equivalence margin's size; {_SEEN}"),
    "exact match": Threshold(0.05, "2026-11-29", True, f"5% of the documents completed verbatim; {_SEEN}"),
    "nats/token": Threshold(0.1, "2026-11-29", True, f"0.1 nats/token, a 10.5% change of perplexity; {_SEEN}"),
    "log-probability": Threshold(0.1, "2026-11-29", True, f"0.1 nats of the answer's log-probability; {_SEEN}"),
    "log loss ratio": Threshold(
        math.log(1 + LOSS_MARGIN.value),
        "2026-11-29",
        True,
        f"log 1.05: a run whose loss equals the reference's, at the loss margin's edge; {_SEEN}",
    ),
    "Spearman rho": Threshold(0.3, "2026-11-29", True, f"a moderate correlation (Cohen 1988); {_SEEN}"),
    "F1": Threshold(0.05, "2026-11-29", True, f"5 F1 points; {_SEEN}"),
    "precision - recall": Threshold(0.05, "2026-11-29", True, f"5 points; {_SEEN}"),
}
