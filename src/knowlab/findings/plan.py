"""The analysis plan every finding cites (issue 57): ``results/analysis_plan.json``, written by the first
rule of a run (``analysis_plan``) from the claims catalogue and the config alone, before any model job.

It holds, per claim of :data:`knowlab.findings.catalogue.CLAIMS`: what is measured and in which scale,
the unit and test, alpha and power, the Holm family (the claim's own lines), the margin of a claim of
no difference or no harm and the smallest effect of interest of its scale
(:mod:`knowlab.findings.thresholds`, each with the date it was fixed and whether results had been seen
then), and the run's deviations from the plan's numbers (a config that changes
``findings.equivalence_margin``).  Every record of ``results/findings.json`` carries this file's sha256
(``plan_sha256``), so that a finding names the plan it was decided under.

What the design can reach (units, attainable p, minimum detectable effect) is in
``results/findings_design.csv`` after the run, and before it from the design planner
(:mod:`knowlab.findings.planner`): ``python -m knowlab.findings.plan [--configfile FILE ...]``
(``make plan``) prints it from the config and the corpus alone.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

from knowlab.core.settings import StepSettings
from knowlab.findings.catalogue import CLAIMS
from knowlab.findings.thresholds import EQUIVALENCE_MARGIN, LOSS_MARGIN, SMALLEST_EFFECT

#: the scale of the claims of no harm or no gain, whose margin is :data:`LOSS_MARGIN`
NON_INFERIORITY_SCALE = "log loss ratio"


@dataclass(frozen=True)
class PlanSettings(StepSettings):
    """Rule ``analysis_plan``: the decision's numbers the plan records (config ``findings`` and
    ``stats.confidence``), and nothing else, so that another key re-runs no plan."""

    alpha: float
    power: float
    confidence: float
    margin: float
    """``findings.equivalence_margin``: the run's; the plan's own is :data:`EQUIVALENCE_MARGIN`."""

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> PlanSettings:
        findings = config["findings"]
        return cls(
            alpha=float(findings["alpha"]),
            power=float(findings["power"]),
            confidence=float(config["stats"]["confidence"]),
            margin=float(findings["equivalence_margin"]),
        )


def deviations(settings: PlanSettings) -> list[dict[str, Any]]:
    """The config's departures from the plan's numbers: ``{"key", "plan", "run"}`` each."""
    if settings.margin == EQUIVALENCE_MARGIN.value:
        return []
    return [{"key": "findings.equivalence_margin", "plan": EQUIVALENCE_MARGIN.value, "run": settings.margin}]


def analysis_plan(settings: PlanSettings) -> dict[str, Any]:
    """The plan (a JSON-ready dict): the decision's numbers, the thresholds and every claim's entry.
    It depends on the catalogue and on ``settings`` only, so that it can be written before any table."""
    claims = []
    for entry in CLAIMS:
        if entry.equivalence:
            margin = {"kind": "equivalence", "value": settings.margin, **_fixed(EQUIVALENCE_MARGIN)}
        elif entry.scale == NON_INFERIORITY_SCALE:
            margin = {"kind": "non-inferiority, a share of the reference loss", "value": LOSS_MARGIN.value}
            margin |= _fixed(LOSS_MARGIN)
        else:
            margin = None
        smallest = SMALLEST_EFFECT.get(entry.scale)
        claims.append(
            {
                "claim_id": entry.id,
                "study": entry.study,
                "claim": entry.claim,
                "source": entry.source,
                "effect": entry.effect,
                "scale": entry.scale,
                "unit": entry.unit,
                "test": entry.test,
                "holm_family": "the claim's own lines (one per comparison)",
                "margin": margin,
                "smallest_effect": None if smallest is None else {"value": smallest.value, **_fixed(smallest)},
                "decided_by": entry.configs,
            }
        )
    return {
        "alpha": settings.alpha,
        "power": settings.power,
        "confidence": settings.confidence,
        "status_rules": "docs/findings.md",
        "false_discovery": "Benjamini-Hochberg q over the run's tested lines, reported beside the per-claim Holm",
        "margins": {"equivalence": asdict(EQUIVALENCE_MARGIN), "loss": asdict(LOSS_MARGIN)},
        "smallest_effects": {scale: asdict(threshold) for scale, threshold in SMALLEST_EFFECT.items()},
        "deviations": deviations(settings),
        "design": "results/findings_design.csv after the run: units, attainable p and MDE per line",
        "claims": claims,
    }


def _fixed(threshold) -> dict[str, Any]:
    return {"fixed": threshold.fixed, "results_seen": threshold.seen}


if __name__ == "__main__":  # the design planner's command line (knowlab.findings.planner)
    from knowlab.findings.planner import main

    raise SystemExit(main())
