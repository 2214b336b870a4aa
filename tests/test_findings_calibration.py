"""Calibration of the findings end to end: simulated null data pushed through a claim's whole decision
(its check, the test at the unit, Holm, the interval and :func:`knowlab.findings.base._judge`) to the
status word, at the shipped margins and the designs' sizes, with between-unit variance that is never
re-centred (issue 57).

Bounds: a directional or non-inferiority claim is ``supported`` under the null at most alpha/2 + 2
Monte Carlo standard errors of the time (a two-sided test at alpha rejects in the claimed direction
alpha/2 of the time), an equivalence claim at most alpha + 2 SE (the two one-sided tests at alpha).
Each row prints its rate and the power at a stated effect beside it; ``pytest -s`` shows them.

Rows (and what they replace):

- Equivalence at the margin's edge (SORT's books vs instructions accuracy, margin 0.05): the true
  difference is the margin on average over excerpts, each excerpt's own difference spread around it.
  Tango's interval with the Rao-Scott design effect and a normal reference declared equivalence
  0.056-0.060 of the time at 6 excerpts (issue 57); with Student's t on K - 1 df it keeps alpha.
- Non-inferiority at the margin's edge (webtext loss within 5% of the control's, 16 documents):
  per-document log loss ratios whose mean is log 1.05, symmetric (normal) and skewed.  On the loss
  scale (``1.05 x control - run``) the sign flips declared non-inferiority 0.08-0.09 of the time at
  log-scale SD 0.5-0.8; on the log scale they keep alpha/2.
- Directional claims at 6, 12 and 24 events (MCQ-4 above the control: sign flips over event means),
  at 6 + 6 excerpts (two samples), the Event split's randomisation over 12 events of the
  shipped corpus, a style split over its 24 events against the control (the held-out style's own
  difficulty included), Wilcoxon over 16 fictsheets and Page's L over 24 events.
- Coverage of the 95% t interval over 6, 12 and 24 units, against the percentile bootstrap it replaced.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from knowlab import layout
from knowlab.core.checkpoints import CONTROL_RUN
from knowlab.core.stats import StatsSettings
from knowlab.findings import CLAIMS, CONTRADICTED, NOT_TESTED, SUPPORTED, FindingsSettings, Results, _check
from knowlab.findings.base import _judge, by_cluster, two_samples

pytestmark = pytest.mark.slow

ALPHA = 0.05
MARGIN = 0.05  # config/config.yaml findings.equivalence_margin
POWER_REPLICATES = 50  # the alternative's draws beside every null rate
LAST = 32
ENTRY = {claim.id: claim for claim in CLAIMS}
ROOT = Path(__file__).resolve().parents[1]


def _bound(level: float, replicates: int) -> float:
    return level + 2 * np.sqrt(level * (1 - level) / replicates)


def _settings(parametric_epochs: int = 1) -> FindingsSettings:
    return FindingsSettings(
        alpha=ALPHA,
        power=0.8,
        margin=MARGIN,
        stats=StatsSettings(
            confidence=0.95,
            bootstrap_resamples=499,
            # fewer than the config's 9,999: a Monte Carlo permutation p with the +1 correction keeps its
            # level at any number of draws (Phipson & Smyth 2010); fewer draws only coarsen it
            permutation_resamples=199,
            mcnemar_exact_below=25,
            ttest_alternative="greater",
            seed=1,
        ),
        runs=("doc",),
        ft_models=("m",),
        control=True,
        seeds=(1,),
        steps=(0, LAST),
        warmup=2,
        base_eval="base_model",
        sort_conditions=("baseline",),
        parametric_epochs=parametric_epochs,
        grounding_datasets=(),
    )


def _results(tables: dict[str, pd.DataFrame]) -> Results:
    """A results folder held in memory: ``tables`` by their path under ``results/``."""
    r = Results("/nonexistent", _settings())
    r._cache.update(tables)
    return r


def _status_rate(decide_once, replicates: int, seed: int) -> tuple[float, float]:
    """Shares of ``supported`` and ``not tested`` over ``replicates`` draws of ``decide_once(rng)``."""
    rng = np.random.default_rng(seed)
    statuses = [decide_once(rng) for _ in range(replicates)]
    return float(np.mean([s == SUPPORTED for s in statuses])), float(np.mean([s == NOT_TESTED for s in statuses]))


def _calibrate(null, alternative, replicates: int, level: float, seeds: tuple[int, int]):
    """``(supported, not tested, power, bound)``: the shares of ``supported`` and ``not tested`` over
    ``replicates`` null draws, of ``supported`` over :data:`POWER_REPLICATES` draws of the
    ``alternative``, and the bound at ``level`` (``seeds``: the null's and the alternative's streams)."""
    supported, untested = _status_rate(null, replicates, seeds[0])
    power = _status_rate(alternative, POWER_REPLICATES, seeds[1])[0]
    return supported, untested, power, _bound(level, replicates)


# ------------------------------------------------------------------------------ equivalence


def _sort_accuracy(rng, excerpts: int, items: int, difference: float, spread: float):
    """0/1 correctness of the books and the instructions-only runs on ``items`` SORT items in each
    of ``excerpts`` excerpts: each excerpt's own books-minus-instructions difference is ``difference``
    plus a normal spread (SD ``spread``, not re-centred), made of discordant pairs on top of 8% each
    way."""
    own = difference + spread * rng.standard_normal(excerpts)
    books_only, instructions_only = 0.08 + np.maximum(own, 0), 0.08 + np.maximum(-own, 0)
    u = rng.random((excerpts, items))
    books = (u < books_only[:, None]) | (u >= 1 - 0.4)  # both right on 40% of the items
    instructions = ((u >= books_only[:, None]) & (u < (books_only + instructions_only)[:, None])) | (u >= 1 - 0.4)
    ids = [f"book|E250|S20|x{k:03d}|b{j}" for k in range(excerpts) for j in range(items)]
    return (
        pd.DataFrame({"item_id": ids, "correct": books.ravel().astype(float)}),
        pd.DataFrame({"item_id": ids, "correct": instructions.ravel().astype(float)}),
    )


def _equivalence_status(excerpts: int, items: int, difference: float, spread: float):
    entry = ENTRY["sort.books_no_accuracy_gain"]

    def once(rng) -> str:
        books, instructions = _sort_accuracy(rng, excerpts, items, difference, spread)
        tables = {
            layout.SORT_PARAMETRIC_ROWS.relative(prun="books", epoch=1): books,
            layout.SORT_PARAMETRIC_ROWS.relative(prun="instructions", epoch=1): instructions,
        }
        return _check(entry, entry.study, entry.check, _results(tables))[0].status

    return once


EQUIVALENCE_REPLICATES = 1000


# 12 excerpts: at 6 no replicate of 1,000 was declared equivalent, under the null or at a true
# difference of 0 (power 0.000; docs/findings.md, measured once), so the suite keeps the size
# where the test can declare it
@pytest.mark.parametrize("excerpts, items, spread", [(12, 24, 0.05)])
def test_equivalence_at_the_margins_edge_keeps_alpha(excerpts, items, spread):
    null, alternative = (_equivalence_status(excerpts, items, d, spread) for d in (MARGIN, 0.0))
    seeds = (excerpts + int(100 * spread), 7)
    supported, _, power, bound = _calibrate(null, alternative, EQUIVALENCE_REPLICATES, ALPHA, seeds)
    print(
        f"equivalence at the edge, {excerpts} excerpts x {items} items, between-excerpt SD {spread}: "
        f"supported {supported:.3f} (bound {bound:.3f}); power at difference 0: {power:.3f}"
    )
    assert supported <= bound


def test_a_significant_difference_contradicts_an_untestable_equivalence():
    """At the default's SORT size (24 items in 6 excerpts) equivalence within 0.05 cannot be shown,
    but books 100% against instructions 0% is a difference the sign flips find (p 0.031): the claim is
    ``contradicted``, not ``not tested`` (issue 57, the first fix)."""
    entry = ENTRY["sort.books_no_accuracy_gain"]
    ids = [f"book|E250|S20|x{k:03d}|b{j}" for k in range(6) for j in range(4)]
    tables = {
        layout.SORT_PARAMETRIC_ROWS.relative(prun="books", epoch=1): pd.DataFrame({"item_id": ids, "correct": 1.0}),
        layout.SORT_PARAMETRIC_ROWS.relative(prun="instructions", epoch=1): pd.DataFrame(
            {"item_id": ids, "correct": 0.0}
        ),
    }
    (finding,) = _check(entry, entry.study, entry.check, _results(tables))
    assert finding.status == CONTRADICTED and finding.p == pytest.approx(2 / 64)
    same = {key: table.assign(correct=1.0) for key, table in tables.items()}
    assert _check(entry, entry.study, entry.check, _results(same))[0].status == NOT_TESTED


# ------------------------------------------------------------------------------ non-inferiority


def _webtext_status(documents: int, log_ratio):
    """Webtext losses of the control and a fiction run, whose per-document ``log(run / control)`` is
    ``log_ratio(rng, documents)``."""
    entry = ENTRY["fqa.webtext_not_destroyed"]

    def once(rng) -> str:
        ids = [f"web-{j:02d}" for j in range(documents)]
        control = 3.0 * np.exp(0.2 * rng.standard_normal(documents))
        run = control * np.exp(log_ratio(rng, documents))
        tables = {
            layout.ITEMS.relative(ft_model="m", run=run_name, step=LAST): pd.DataFrame(
                {"suite": "webtext", "item_id": ids, "loss": loss}
            )
            for run_name, loss in ((CONTROL_RUN, control), ("doc", run))
        }
        return _check(entry, entry.study, entry.check, _results(tables))[0].status

    return once


EDGE = np.log(1 + MARGIN)
NON_INFERIORITY_REPLICATES = 1000
# Log-normal ratios: on the log scale the sign flips see the same normal differences at every SD
# (the test is scale-free), so one SD stands for all; on the loss scale the SD matters (issue 57:
# 0.033, 0.087 and 0.083 at SD 0.3, 0.5 and 0.8).
LOG_NORMAL = {sd: (lambda rng, n, sd=sd: EDGE + sd * rng.standard_normal(n)) for sd in (0.3, 0.5, 0.8)}


@pytest.mark.parametrize("sd", [0.5])
def test_non_inferiority_at_the_margins_edge_keeps_alpha(sd):
    at_ratio_1 = _webtext_status(16, lambda rng, n: 0.1 * rng.standard_normal(n))
    supported, _, power, bound = _calibrate(
        _webtext_status(16, LOG_NORMAL[sd]), at_ratio_1, NON_INFERIORITY_REPLICATES, ALPHA / 2, (11, 12)
    )
    print(
        f"non-inferiority at the edge, 16 documents, log-normal ratio SD {sd}: supported {supported:.3f} "
        f"(bound {bound:.3f}); power at ratio 1 (SD 0.1): {power:.3f}"
    )
    assert supported <= bound


def test_non_inferiority_needs_a_symmetric_log_ratio():
    """The sign flips assume each document's log ratio is symmetric about the margin under the null
    hypothesis.  A log ratio skewed on the log scale too (a centred exponential, SD 0.5, long tail
    where the run is worse) breaks it: 0.069 of 1,000 replicates here, stated in docs/findings.md;
    the mirror image (long tail where the run is better) is conservative (0.006)."""
    skewed_worse = lambda rng, n: EDGE + 0.5 * (rng.exponential(1.0, n) - 1)  # noqa: E731
    worse, _ = _status_rate(_webtext_status(16, skewed_worse), NON_INFERIORITY_REPLICATES, seed=11)
    print(f"non-inferiority at the edge, 16 documents, log ratio skewed (tail where the run is worse): {worse:.3f}")
    assert 0.05 < worse < 0.12


# ------------------------------------------------------------------------------ directional claims

DIRECTIONAL_REPLICATES = 400


def _events_status(events: int, effect: float, icc: float = 0.3):
    """MCQ-4 accuracy of a run and the control on 20 questions an event: each event favours one of
    them by an amount its questions share (null: neither on average).  Sign flips over event means,
    Holm over the claim's two comparisons (doc and event), as ``fqa.mcq_above_control`` decides."""
    entry = ENTRY["fqa.mcq_above_control"]
    r = _results({})

    def once(rng) -> str:
        comparisons = []
        for label in ("doc", "event"):
            clusters = pd.Series(np.repeat([f"e{k:02d}" for k in range(events)], 20))
            difficulty = rng.normal(0, 1, clusters.size)
            shift = effect + np.repeat(rng.normal(0, np.sqrt(icc), events), 20)
            run = pd.Series((difficulty + shift / 2 + rng.logistic(0, 0.3, clusters.size) > 0).astype(float))
            control = pd.Series((difficulty - shift / 2 + rng.logistic(0, 0.3, clusters.size) > 0).astype(float))
            comparisons.append(by_cluster(label, run, control, clusters, r, "event", "accuracy", "", True))
        return _judge(entry, entry.study, comparisons, r.settings)[0].status

    return once


@pytest.mark.parametrize("events", [12, 24])
def test_sign_flips_over_events_keep_alpha_through_the_decision(events):
    supported, untested, power, bound = _calibrate(
        _events_status(events, 0.0),
        _events_status(events, 1.0),
        DIRECTIONAL_REPLICATES,
        ALPHA / 2,
        (events, 100 + events),
    )
    print(
        f"sign flips over {events} events (Holm over 2): supported {supported:.3f} (bound {bound:.3f}), "
        f"not tested {untested:.3f}; power at a shift of 1 SD: {power:.3f}"
    )
    assert supported <= bound


def test_two_samples_of_excerpts_keep_alpha_through_the_decision():
    """SORT's excerpt-length claim: 6 short and 6 long excerpts, 4 items each with the excerpt's shift."""
    entry = ENTRY["sort.accuracy_falls_with_excerpt_length"]
    r = _results({})

    def status(effect: float):
        def once(rng) -> str:
            values = rng.normal(0, np.sqrt(0.3), 12).repeat(4) + rng.normal(0, np.sqrt(0.7), 48)
            means = values.reshape(12, 4).mean(axis=1) + np.r_[np.full(6, effect), np.zeros(6)]
            short = pd.Series(means[:6], index=[f"s{k}" for k in range(6)])
            long = pd.Series(means[6:], index=[f"l{k}" for k in range(6)])
            comparison = two_samples("", short, long, r, "excerpt", "accuracy", "", False, 48)
            return _judge(entry, entry.study, [comparison], r.settings)[0].status

        return once

    supported, _, power, bound = _calibrate(status(0.0), status(1.5), DIRECTIONAL_REPLICATES, ALPHA / 2, (3, 4))
    print(f"two samples of 6 + 6 excerpts: supported {supported:.3f} (bound {bound:.3f}); power at 1.5 SD: {power:.3f}")
    assert supported <= bound


# ------------------------------------------------------------------------------ interval coverage

COVERAGE_REPLICATES = 1000
# a 95% interval may cover at least 0.95 - 2 Monte Carlo SE of the time
COVERAGE_FLOOR = 0.95 - 2 * np.sqrt(0.95 * 0.05 / COVERAGE_REPLICATES)


def _paired_units(rng, units: int, effect: float) -> tuple[np.ndarray, np.ndarray]:
    """MCQ-4-like accuracy of a run and the control on 20 questions in each of ``units`` events: each
    event has its own difficulty, the run is ``effect`` better on every event's expected accuracy."""
    p = rng.uniform(0.3, 0.7, units)[:, None]
    run = (rng.random((units, 20)) < p + effect / 2).mean(axis=1)
    control = (rng.random((units, 20)) < p - effect / 2).mean(axis=1)
    return run, control


def _two_samples_of_units(rng, units: int, effect: float) -> tuple[np.ndarray, np.ndarray]:
    """Accuracy over 4 items of ``units`` short and ``units`` long excerpts, each its own difficulty."""
    short = (rng.random((units, 4)) < rng.uniform(0.2, 0.6, units)[:, None] + effect).mean(axis=1)
    long = (rng.random((units, 4)) < rng.uniform(0.2, 0.6, units)[:, None]).mean(axis=1)
    return short, long


def _coverage(sample, units: int, paired: bool, effect: float, seed: int) -> tuple[float, float]:
    """Shares of replicates whose t interval (this commit) and percentile bootstrap (before) cover ``effect``."""
    from knowlab.core.clustered import t_interval_difference
    from knowlab.core.stats import bootstrap_difference

    rng = np.random.default_rng(seed)
    hits = []
    for k in range(COVERAGE_REPLICATES):
        a, b = sample(rng, units, effect)
        t_ci = t_interval_difference(a, b, paired=paired, confidence=0.95)
        boot = bootstrap_difference(a, b, paired=paired, n_resamples=999, seed=k, confidence=0.95)
        hits.append([ci["ci_low"] <= effect <= ci["ci_high"] for ci in (t_ci, boot)])
    return tuple(np.mean(hits, axis=0))


@pytest.mark.parametrize("units", [6, 12, 24])
def test_the_t_interval_covers_where_the_percentile_bootstrap_did_not(units):
    paired_t, paired_boot = _coverage(_paired_units, units, True, 0.1, seed=units)
    two_t, two_boot = _coverage(_two_samples_of_units, units // 2, False, 0.2, seed=100 + units)
    print(
        f"95% interval coverage, {units} paired units: t {paired_t:.3f} (percentile bootstrap {paired_boot:.3f}); "
        f"{units // 2} + {units // 2} units: Welch t {two_t:.3f} (bootstrap {two_boot:.3f})"
    )
    assert paired_t >= COVERAGE_FLOOR and two_t >= COVERAGE_FLOOR


# ------------------------------------------------------------------------------ the other tests


def _split_tables(corpus: dict, split: dict) -> dict[str, object]:
    """The tables a split's findings read (:class:`Results`): the split and the corpus's documents and questions."""
    return {
        layout.SPLIT.relative(split=split["split"]): split,
        layout.CORPUS.relative(table="fictions"): pd.DataFrame(corpus["fictions"]),
        layout.CORPUS.relative(table="fict_qa"): pd.DataFrame(corpus["fict_qa"]),
    }


def _event_split_status(events: int, shift: float, icc: float = 0.3):
    """The Event split of the shipped corpus's first ``events`` events (2/3 trained, the split's own
    draw), each document's loss its event's shift plus noise, the trained documents ``shift`` lower
    (null: 0).  The randomisation test of the split's draw and the interval over events, as
    ``fqa.train_below_val_loss`` decides its Event line (a family of one here)."""
    from knowlab.fiction.corpus import first_events
    from knowlab.fiction.schema import read_corpus
    from knowlab.fiction.splits import make_split
    from knowlab.findings.base import split_comparison

    corpus = first_events(read_corpus(ROOT / "data" / "fiction"), events)
    split = make_split("event", corpus["fictions"], corpus["fict_qa"], seed=1, event_train_fraction=2 / 3)
    tables = _split_tables(corpus, split)
    entry = ENTRY["fqa.train_below_val_loss"]
    docs = pd.DataFrame(corpus["fictions"]).set_index("fiction_id")["event_id"]
    trained = docs.index.isin(split["train_documents"])

    def once(rng) -> str:
        r = _results(tables)
        event_shift = pd.Series(rng.normal(0, np.sqrt(icc), events), index=sorted(set(docs)))
        loss = 3.0 + event_shift[docs].to_numpy() + rng.normal(0, np.sqrt(1 - icc), len(docs)) - shift * trained
        comparison = split_comparison("event", r, "event", pd.Series(loss, index=docs.index), "nats/token", "")
        return _judge(entry, entry.study, [comparison], r.settings)[0].status

    return once


@pytest.mark.parametrize("events", [12])
def test_the_event_splits_randomisation_keeps_alpha_through_the_decision(events):
    """12 events: the C(12, 8) = 495 choices listed (24 events, 735,471 choices, are drawn: 0.022 of 400
    replicates there, measured once, docs/findings.md)."""
    supported, _, power, bound = _calibrate(
        _event_split_status(events, 0.0), _event_split_status(events, 1.0), DIRECTIONAL_REPLICATES, ALPHA / 2,
        (events, 50 + events),
    )  # fmt: skip
    print(
        f"Event split over {events} events: supported {supported:.3f} (bound {bound:.3f}); power at 1 SD: {power:.3f}"
    )
    assert supported <= bound


def _style_split_status(shift: float, against_control: bool = True):
    """The style_news split of the shipped corpus (24 events x 5 styles x 2 documents; news held out),
    each document's loss at the last checkpoint under the run and under the control (nats/token): its
    event's (SD 0.2), its (event, style)'s (0.2) and its own (0.3) difficulty, which both models
    share; its style's (news 0.4 and blog 0.5 above the rest: the held-out news documents start about
    0.3 above the trained styles', as the base model's do on this corpus); each style's response to
    fine-tuning (-0.1 to -0.3, the same under both: webtext's); the fiction's lowering of every
    document by 0.3 in the run; and each model's own noise (0.15).  The trained styles' documents are
    ``shift`` lower in the run (null: 0).  Tested as ``fqa.train_below_val_loss`` decides a style
    split (:func:`split_comparison`, a family of one here): over the events against the control, or
    (``against_control=False``) on the run's losses alone."""
    from knowlab.fiction.schema import read_corpus
    from knowlab.fiction.splits import make_split
    from knowlab.findings.base import split_comparison

    corpus = read_corpus(ROOT / "data" / "fiction")
    split = make_split("style_news", corpus["fictions"], corpus["fict_qa"], seed=1)
    tables = _split_tables(corpus, split)
    entry = ENTRY["fqa.train_below_val_loss"]
    docs = pd.DataFrame(corpus["fictions"]).set_index("fiction_id")
    pairs = docs["event_id"] + "/" + docs["style"]
    level = docs["style"].map({"news": 0.4, "blog": 0.5}).fillna(0.0).to_numpy()
    response = docs["style"].map({"blog": -0.1, "corporate": -0.3, "encyclopedia": -0.2}).fillna(-0.2).to_numpy()
    trained = docs.index.isin(split["train_documents"])

    def draw(rng, index: pd.Series, sd: float) -> np.ndarray:
        return pd.Series(rng.normal(0, sd, index.nunique()), index=sorted(set(index)))[index].to_numpy()

    def once(rng) -> str:
        r = _results(tables)
        shared = 3.0 + draw(rng, docs["event_id"], 0.2) + draw(rng, pairs, 0.2) + rng.normal(0, 0.3, len(docs))
        shared += level + response
        control = pd.Series(shared + rng.normal(0, 0.15, len(docs)), index=docs.index)
        run = pd.Series(shared - 0.3 - shift * trained + rng.normal(0, 0.15, len(docs)), index=docs.index)
        reference = control if against_control else None
        comparison = split_comparison("style_news", r, "style_news", run, "nats/token", "", reference)
        return _judge(entry, entry.study, [comparison], r.settings)[0].status

    return once


def test_a_style_splits_test_over_events_keeps_alpha_through_the_decision():
    """A style split's held-out style is the config's, so its test is over the 24 events, each
    document against the control's loss on it; on the raw losses the held-out style's own
    difficulty would read as the training's effect (a large rejection rate under the null)."""
    supported, _, power, bound = _calibrate(
        _style_split_status(0.0), _style_split_status(0.1), DIRECTIONAL_REPLICATES, ALPHA / 2, (24, 124)
    )
    raw = _status_rate(_style_split_status(0.0, against_control=False), 50, 224)[0]
    print(
        f"style split over 24 events against the control: supported {supported:.3f} (bound {bound:.3f}); "
        f"power at 0.1 nats: {power:.3f}; on the raw losses under the null: {raw:.3f}"
    )
    assert supported <= bound
    assert raw > 0.5


def test_wilcoxon_over_fictsheets_and_pages_trend_keep_alpha_through_the_decision():
    """The Fictsheets claims (Wilcoxon over 16 training fictsheets, the 24-event corpus's Fictsheets
    split) and the model-size trend (Page's L over 24 events as blocks, three models)."""
    from knowlab.findings.base import Comparison, signed_rank
    from knowlab.findings.fictionalqa import page_trend

    fictsheets, trend = ENTRY["fqa.fictsheets_train_loss_falls"], ENTRY["fqa.larger_models_fit_faster"]
    settings = _settings()

    def wilcoxon_once(rng, shift=0.0) -> str:
        before = pd.Series(rng.normal(3, 0.3, 16))
        after = before - shift + rng.normal(0, 0.3, 16)
        comparison = signed_rank("", before, after, "fictsheet", "nats/token", "")
        return _judge(fictsheets, fictsheets.study, [comparison], settings)[0].status

    def page_once(rng, slope=0.0) -> str:
        blocks = rng.normal(0, 1, (24, 3)) + slope * np.arange(3) + rng.normal(0, 1, (24, 1))
        p, min_p = page_trend(blocks)
        rho = np.array([np.corrcoef(np.arange(3), np.argsort(np.argsort(row)))[0, 1] for row in blocks])
        comparison = Comparison("", rho, np.zeros(24), True, p, min_p, "Page", "event", "Spearman rho", 72, "", True)
        return _judge(trend, trend.study, [comparison], settings)[0].status

    for name, once, alternative in (
        ("Wilcoxon over 16 fictsheets", wilcoxon_once, lambda rng: wilcoxon_once(rng, 0.3)),
        ("Page's L over 24 events x 3 models", page_once, lambda rng: page_once(rng, 0.5)),
    ):
        supported, _, power, bound = _calibrate(once, alternative, DIRECTIONAL_REPLICATES, ALPHA / 2, (5, 6))
        print(f"{name}: supported {supported:.3f} (bound {bound:.3f}); power {power:.3f}")
        assert supported <= bound, name
