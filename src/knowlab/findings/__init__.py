"""The three papers' headline findings, each decided on this run's result tables by a rule fixed in advance.

:func:`collect` reads the tables of a finished run (``results/``) and returns one :class:`Finding`
per comparison of the claims below: its effect (oriented so that a positive effect is the
direction the paper claims), a two-sided test, a t interval over the units (at ``stats.confidence``,
95% by default: "the 95% interval" below), n, p and a
status.  The test and the interval work at the **inference unit**: what the design samples or
assigns (``Finding.unit``, ``n_clusters`` of them), not the values measured inside it.
FictionalQA's questions and documents nest in events, whose facts they share.  SORT's items and
segments nest in excerpts, whose text they share.  A grounding question about a fiction document
shares that document.  Each unit's values are averaged into one value, and the interval is
Student's (paired) or Welch's (two sets of units) over those values
(:func:`knowlab.core.clustered.t_interval_difference`; since issue 57, replacing a percentile
bootstrap that covered 0.80 over 6 units).
The test is a permutation test at the unit (:mod:`knowlab.core.clustered`).

Training seeds (``finetune.seeds``): a FictionalQA claim is about fine-tuned models.  With one seed
per run its line says the result is conditional on that seed.  With two or more, every run is
trained once per seed and the seeds are replicates of the claim.  The claim is measured on each
seed's checkpoints, and on the item values averaged over the seeds.  The test at the unit runs
on the averaged values; a one-sample t-test over the seeds' effects
(:func:`knowlab.core.clustered.seed_test`) tests whether training in general, not these seeds'
runs, gives the effect; the claim's p is the larger of the two (an intersection-union test,
Berger 1982: it rejects only when both do, and keeps the level of each).  The interval resamples
seeds and units together (:func:`knowlab.core.clustered.crossed_bootstrap_difference`).  SORT's
parametric runs are trained with the project's seed alone.
:func:`render` prints them for a terminal, :func:`to_records` / :func:`to_frame` give JSON records
and a table.

Status words (:func:`decide`, :func:`decide_equivalence`), fixed before any run was looked at:

- ``supported``: the claimed direction, the test rejects at ``alpha`` (Holm-corrected over the
  comparisons of one claim) **and** the 95% interval excludes 0.  Both: a status never rests on
  one of two analyses that disagree.
- ``not significant``: the claimed direction, but the test or the interval does not exclude 0;
  the line prints the minimum detectable effect at this n (80% power, t on the interval's degrees
  of freedom at Holm's strictest level, :func:`knowlab.core.stats.minimum_detectable_effect`),
  at or below the smallest effect of interest of its scale
  (:data:`knowlab.findings.thresholds.SMALLEST_EFFECT`): the design could have shown an effect that
  matters, and did not.
- ``underpowered`` (since issue 57): as ``not significant``, but the minimum detectable effect is above
  the smallest effect of interest: the design could not have shown one, so the line is no failed
  replication.
- ``inconclusive``: not the claimed direction (a tie included), and not significantly so.
- ``contradicted``: the other direction, the test rejects and the interval excludes 0.
- Claims of **no difference** are ``supported`` only by equivalence, which needs two things.
  First, Tango's ``1 - 2 alpha`` score interval for paired proportions lies inside
  ``(-margin, margin)`` (``findings.equivalence_margin``): the interval form of the two one-sided
  tests, with the counts divided by the design effect of the units.  Second, the 95% interval
  lies inside that margin too.  The claim is ``contradicted`` when the difference is significant
  as above, else ``inconclusive``.  It is ``not tested`` when even full agreement at this
  effective n could not show equivalence.
- ``not tested``: the config lacks what the claim needs (a study, run or table; the line says
  which), or the design cannot reach ``alpha`` at all: the smallest p the test can give at this
  n (every unit agreeing), times the claim's Holm family size, is not below ``alpha`` (e.g. 4
  training fictsheets: Wilcoxon's smallest two-sided p is 2/2^4 = 0.125).

The tally counts ``supported`` only.  A claim that spans a family (every fiction run, every
other split) is one line per comparison, Holm-corrected over the family
(:func:`knowlab.core.stats.holm_adjust`); separate claims are not corrected together.
Tests, all two-sided:

- Sign-flip permutation over units: paired units, each unit's mean difference (:func:`by_cluster`).
- Randomisation test of a split: the split's own random assignment drawn again
  (:func:`split_comparison`).
- Permutation test of two independent samples of units (:func:`knowlab.findings.base.two_samples`):
  units that differ between the two sides (excerpts of two lengths, grounding questions of two
  levels of a factor).
- Page's L trend test: the base models by size, events as blocks.
- Wilcoxon signed-rank: the fictsheets, which are themselves the split's units.  ``scipy.stats.wilcoxon``
  drops zero differences, and p is 1 when every difference is 0.

Permutation counts come from ``stats.permutation_resamples``.  ``tests/core/test_clustered.py``
simulates each design's clustering and shows that each test keeps its level, while the
item-level McNemar, Wilcoxon and Mann-Whitney tests used before did not.

The claims, one :class:`Claim` each of the catalogue :data:`CLAIMS`
(:mod:`knowlab.findings.catalogue`: id, the paper's words, source, unit, test, the configs that can
decide it, the figure of the run it is read from; ``docs/claims.md`` is generated from it by
:func:`claims_markdown`, with what the default run decided), each measured by a function of
:mod:`knowlab.findings.fictionalqa` (Kirchenbauer et al. 2026), :mod:`knowlab.findings.sort` (Pink et
al. 2024) or :mod:`knowlab.findings.grounding` (Lee et al. 2024), whose docstring quotes the paper and
states the operational definition of a claim the paper makes in words only, fixed before any run.

FictionalQA's item tables are ``results/fictionalqa/{ft_model}/evaluate/{run}/step-{N}.parquet``, step
0 the base model's, sides from ``results/fictionalqa/splits/{run}.json``; its claims are decided on
the first base model of ``finetune.models`` (the reference model), but the model-size trends, which
compare the base models.  SORT's and grounding's claims are decided on the base model (the
``eval_models`` key whose value is ``base``), grounding's once per dataset of the config.  Claims of
no harm or no gain in loss (webtext, real-world questions, the Fictsheets' Q&A) are non-inferiority
tests within ``knowlab.findings.fictionalqa.LOSS_MARGIN`` (5%) of the reference loss, on the log
scale (the log of the loss ratio, whose skew does not move the test's level).

The previous "oracle RAG nearer in-context memory than RAG" is not a claim of the paper: Sec. 5.5
compares models within the oracle condition only ("Even when passages containing both segments
are retrieved and presented in the correct order, we find that Llama3-8b-Instruct outperforms two
much larger models on SORT (Figure 4b)"), so it is not checked.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import asdict, replace
from functools import partial
from pathlib import Path
from typing import Any

import pandas as pd

from knowlab.core.clustered import seed_test
from knowlab.core.io import sha256_file
from knowlab.findings.base import (
    CONTRADICTED,
    INCONCLUSIVE,
    NOT_SIGNIFICANT,
    NOT_TESTED,
    STATUSES,
    SUPPORTED,
    UNDERPOWERED,
    Check,
    Claim,
    Comparison,
    Finding,
    FindingsSettings,
    Results,
    Skip,
    _judge,
    _signed,
    decide,
    decide_equivalence,
)
from knowlab.findings.catalogue import CLAIMS, claims_markdown, default_statuses
from knowlab.findings.protocol import short_form


def _replicate(comparisons: Sequence[Comparison], by_seed: Mapping[int, Sequence[Comparison]]) -> None:
    """Training seeds as replicates (:mod:`knowlab.findings`): give each comparison, measured on the values
    averaged over the seeds, each seed's own values (``by_seed``: the same check on each seed's
    runs), the t-test over the seeds' effects, and as its p the larger of that and its own.

    Raises:
        ValueError: a seed's comparisons differ from the averaged ones in label or units.
    """
    for i, c in enumerate(comparisons):
        c.seeds = {}
        for seed, theirs in by_seed.items():
            own = theirs[i] if i < len(theirs) else None
            if own is None or own.label != c.label or own.a.shape != c.a.shape or own.b.shape != c.b.shape:
                raise ValueError(f"training seed {seed} gives other units than the mean over seeds ({c.label})")
            c.seeds[seed] = (own.a, own.b)
        c.seed_p = seed_test([a.mean() - b.mean() for a, b in c.seeds.values()])
        c.p = max(c.p, c.seed_p)


def _check(entry: Claim, study: str, check: Check, r: Results) -> list[Finding]:
    """One claim's findings (``study``: its line's label, ``check``: its measurement).  A FictionalQA
    claim with two or more training seeds is measured on the mean over the seeds and on each seed
    (:func:`_replicate`)."""
    s = r.settings
    try:
        comparisons = check(r)
        if entry.study == "FictionalQA" and len(s.seeds) > 1:
            _replicate(comparisons, {seed: check(r.for_seed(seed)) for seed in s.seeds})
    except Skip as reason:
        return [
            Finding(
                study, entry.claim, NOT_TESTED, str(reason), source=entry.source, alpha=s.alpha,
                claim_id=entry.id, quote=entry.quote, figure=entry.figure_of(s.ft_models),
            )  # fmt: skip
        ]
    return _judge(entry, study, comparisons, s)


def collect(
    results: str | Path,
    settings: FindingsSettings,
    model: str | None = None,
    inputs: Collection[str | Path] | None = None,
    plan: str | Path | None = None,
) -> list[Finding]:
    """Every finding of the catalogue (:data:`CLAIMS`), decided on the tables under ``results``.

    Args:
        results: the workflow's ``results`` folder.
        inputs: the findings rule's inputs (:meth:`knowlab.layout.Layout.findings_inputs`): reading
            any other table raises ``ValueError``; None: any table under ``results``.
        settings: what the claims are decided with and which runs and studies the config asks for
            (:meth:`FindingsSettings.from_config`).
        model: the base model's name in the grounding rows (the workflow's model name); None
            takes the only model there.
        plan: the run's ``results/analysis_plan.json`` (:mod:`knowlab.findings.plan`), whose sha256 every
            finding carries (``plan_sha256``); None: none.

    Returns:
        One finding per comparison, in the order of :mod:`knowlab.findings` (the grounding claims once per
        dataset and version); a claim whose table is absent or whose study or run is off is one
        ``not tested`` finding.

    Raises:
        ValueError: ``model`` is None and the grounding rows hold more than one model.
    """
    found = decide_all(Results(results, settings, model, inputs))
    digest = None if plan is None else sha256_file(plan)
    return [replace(f, plan_sha256=digest) for f in found]


def decide_all(r: Results) -> list[Finding]:
    """Every claim of the catalogue decided on ``r``'s tables (a run's, or the design planner's,
    :mod:`knowlab.findings.planner`), in print order, each line with its Benjamini-Hochberg q."""
    found = [f for entry in CLAIMS if not entry.per_dataset for f in _check(entry, entry.study, entry.check, r)]
    for dataset in r.settings.grounding_datasets:  # each dataset's claims together
        for entry in (entry for entry in CLAIMS if entry.per_dataset):
            found += _check(entry, f"{entry.study} ({dataset})", partial(entry.check, dataset=dataset), r)
    return false_discovery(found)


def false_discovery(findings: Sequence[Finding]) -> list[Finding]:
    """``findings`` with ``q``, the Benjamini-Hochberg (1995) q of each tested line's p over all the run's
    tested lines (``statsmodels.stats.multitest.multipletests``, ``fdr_bh``): the false-discovery view
    beside the per-claim Holm, for a reader who reads the whole tally as one family.  A ``not tested``
    line has none."""
    from statsmodels.stats.multitest import multipletests  # deferred: as scipy in knowlab.core.stats

    tested = [i for i, f in enumerate(findings) if f.status != NOT_TESTED and f.p is not None]
    out = list(findings)
    if tested:
        q = multipletests([findings[i].p for i in tested], method="fdr_bh")[1]
        for i, value in zip(tested, q):
            out[i] = replace(findings[i], q=float(value))
    return out


#: the columns of :func:`design_table`
DESIGN_COLUMNS = (
    "study",
    "claim",
    "unit",
    "n_clusters",
    "n",
    "seeds",
    "min_p",
    "alpha",
    "testable",
    "mde",
    "smallest_effect",
    "scale",
    "status",
)


def design_table(findings: Sequence[Finding]) -> pd.DataFrame:
    """What this run's design can show, per finding (``results/findings_design.csv``): the inference
    unit, how many units and measured values, the smallest p the test can reach with them (after
    Holm's factor), whether that is below alpha (``testable``), and the minimum detectable effect
    at 80% power in ``scale``.  A claim the config cannot test at all (a run or table absent) has
    no unit and ``testable`` False."""
    rows = [
        {
            **{name: getattr(f, name) for name in DESIGN_COLUMNS if name != "testable"},
            "testable": f.min_p is not None and f.min_p < f.alpha,
        }
        for f in findings
    ]
    counts = {"n_clusters": "Int64", "n": "Int64", "seeds": "Int64"}
    return pd.DataFrame(rows, columns=list(DESIGN_COLUMNS)).astype(counts)


#: the columns of :func:`report_table`
REPORT_COLUMNS = (
    "status", "study", "claim", "effect", "ci_low", "ci_high", "scale", "p", "unit", "n_clusters", "figure",
    "claim_id", "source", "quote", "protocol",
)  # fmt: skip


def report_table(findings: Sequence[Finding]) -> pd.DataFrame:
    """The report's findings section (``results/findings.csv``): one row per line of ``findings.txt``,
    beside it the figure or table of this run it is read from (``figure``, under ``results/``) and the
    paper's words (``quote``); the full test and detail are in ``findings.txt`` / ``findings.json``."""
    return to_frame(findings).loc[:, list(REPORT_COLUMNS)].astype({"n_clusters": "Int64"})


def tally(findings: Sequence[Finding]) -> dict[str, int]:
    """Findings per status, in :data:`STATUSES` order."""
    return {status: sum(f.status == status for f in findings) for status in STATUSES}


def render(findings: Sequence[Finding], report_path: str | Path) -> str:
    """Plain text for a terminal: a first line with the tally (``supported`` of all) and the report,
    then one line per finding: ``[status] study: claim — effect, CI (at its level), test, n (units and values),
    p; detail; under <the run's departures from the paper's protocol> (source)``.  A line whose departures
    include a setting its claim rests on (``Claim.depends``) says so beside its status: ``[status] (not the
    paper's protocol: ...)``."""
    counts = tally(findings)
    rest = ", ".join(f"{n} {status}" for status, n in counts.items() if n and status != SUPPORTED)
    tested = [f for f in findings if f.q is not None]
    alpha = tested[0].alpha if tested else None
    discoveries = (
        f"; read as one family: {sum(f.q < alpha for f in tested)} of {len(tested)} tested lines at "
        f"Benjamini-Hochberg q < {alpha:g} (either direction)"
        if tested
        else ""
    )
    lines = [
        f"Headline findings of the three papers on this run: {counts[SUPPORTED]} of {len(findings)} supported"
        + (f" ({rest})" if rest else "")
        + discoveries
        + f"; each claim Holm-corrected over its own lines; status rules in docs/findings.md; full report: {report_path}"
    ]
    for f in findings:
        rests = [d for d in f.deviations if d["depends"]]
        beside = f" (not the paper's protocol: {short_form(rests)})" if rests else ""
        line = f"[{f.status}]{beside} {f.study}: {f.claim} — "
        if f.effect is None:
            lines.append(line + f.detail)
            continue
        line += (
            f"effect {_signed(f.effect)} {f.scale}, {f.confidence:.0%} CI {_interval(f)}, "
            f"{f.test}, n {f.n_clusters} {f.unit}s ({f.n} values), p = {f.p:.2g}"
        )
        if f.status in (NOT_SIGNIFICANT, UNDERPOWERED, INCONCLUSIVE) and f.margin is None:
            # no spread between the units: a standard error of 0 says nothing of power
            line += f", MDE {f.mde:.2g} at 80% power" if f.mde else ", no MDE (no spread between the units)"
        under = f"; under {f.protocol}" if f.protocol else ""
        lines.append(f"{line}; {f.detail}{under} ({f.source})")
    return "\n".join(lines) + "\n"


def _interval(f: Finding) -> str:
    if f.ci_low is None or f.ci_high is None:
        return "open (fewer than two units)"
    return f"[{_signed(f.ci_low)}, {_signed(f.ci_high)}]"


def to_records(findings: Sequence[Finding]) -> list[dict[str, Any]]:
    """JSON-ready records, one per finding, every :class:`Finding` field present (None where it does not apply)."""
    return [asdict(f) for f in findings]


def to_frame(findings: Sequence[Finding]) -> pd.DataFrame:
    """One row per finding, the :class:`Finding` fields as columns."""
    return pd.DataFrame(to_records(findings), columns=list(Finding.__dataclass_fields__))


__all__ = [
    "CLAIMS", "CONTRADICTED", "INCONCLUSIVE", "NOT_SIGNIFICANT", "NOT_TESTED", "REPORT_COLUMNS", "STATUSES",
    "UNDERPOWERED",
    "SUPPORTED", "Claim", "Comparison", "DESIGN_COLUMNS", "Finding", "FindingsSettings", "Results", "Skip",
    "claims_markdown", "collect", "decide", "decide_all", "decide_equivalence", "default_statuses", "design_table",
    "render", "report_table", "tally", "to_frame", "to_records",
]  # fmt: skip
