"""knowlab.core.clustered: tests at the unit of the design.  Exact p-values are checked against
permutations listed by hand and Tango's interval against the score test inverted numerically.
Calibration: null data simulated with the real designs' clustering (questions in documents in
events, segments in excerpts, documents in events under the Event and Doc splits).  At intra-cluster
correlations 0.3 and 0.7, every new test rejects at most alpha + 2 Monte-Carlo standard errors, while
the item-level tests it replaces reject far more often (since issue 45 also SORT's excerpt-length
comparison of two samples of excerpts, and its distance trend within excerpts).  Training seeds: with a random effect of
each run's seed, the test over the units alone rejects far too often; taking the larger of its p
and the t-test over the seeds' effects keeps alpha."""

from __future__ import annotations

import itertools
from functools import partial

import numpy as np
import pandas as pd
import pytest
from scipy.optimize import brentq, minimize_scalar
from scipy.stats import chi2, mannwhitneyu, norm, rankdata, spearmanr, wilcoxon
from statsmodels.stats.contingency_tables import mcnemar

from knowlab.core.clustered import (
    cluster_means,
    crossed_bootstrap_difference,
    paired_design_effect,
    paired_equivalence,
    randomization_test,
    seed_test,
    sign_flip_test,
    tango_interval,
    two_sample_test,
)

ALPHA = 0.05
REPLICATES = 400
# a test keeps its level when it rejects at most alpha + 2 Monte-Carlo standard errors of a true alpha
BOUND = ALPHA + 2 * np.sqrt(ALPHA * (1 - ALPHA) / REPLICATES)


def test_cluster_means_average_within_each_cluster():
    values = pd.Series({"q1": 1.0, "q2": 0.0, "q3": 1.0, "q4": np.nan})
    clusters = {"q1": "e2", "q2": "e2", "q3": "e1", "q4": "e1"}
    assert cluster_means(values, clusters).to_dict() == {"e1": 1.0, "e2": 0.5}
    with pytest.raises(KeyError, match="no cluster for 1 unit"):
        cluster_means(pd.Series({"q9": 1.0}), clusters)


def test_sign_flip_test_is_exact_over_every_sign():
    d = np.array([0.4, 0.1, -0.2, 0.3, 0.25])
    signs = np.array(list(itertools.product((1, -1), repeat=d.size)))
    means = (signs * d).mean(axis=1)
    by_hand = 2 * min(np.mean(means >= d.mean() - 1e-12), np.mean(means <= d.mean() + 1e-12))
    p, min_p = sign_flip_test(d, 9999, 0)
    assert p == pytest.approx(by_hand) and min_p == 2 / 32
    assert sign_flip_test(np.abs(d), 9999, 0) == (pytest.approx(2 / 32), 2 / 32)  # every unit one way
    assert sign_flip_test(np.zeros(4), 9999, 0) == (1.0, 1.0)  # no unit can move the statistic
    # zero differences cannot be flipped: the smallest p is 2 / 2^k for the k non-zero ones (issue 57)
    assert sign_flip_test(np.r_[np.abs(d[:3]), 0.0, 0.0], 9999, 0) == (pytest.approx(2 / 8), 2 / 8)
    assert sign_flip_test(np.ones(20), 999, 0)[1] == 2 / 1000  # Monte Carlo: no p below 2 / (R + 1)


def test_randomization_test_lists_or_draws_the_designs_assignments():
    events = [f"e{k}" for k in range(6)]
    docs = {f"{e}-d{j}": e for e in events for j in range(3)}
    values = pd.Series({doc: 1.0 + (docs[doc] in ("e4", "e5")) for doc in docs})  # e4, e5 the highest
    assignments = [frozenset(d for d in docs if docs[d] in chosen) for chosen in itertools.combinations(events, 4)]
    treated = assignments[0]  # e0..e3 trained, e4 and e5 held out: the most extreme of the 15
    assert randomization_test(values, treated, assignments, 999, 0) == (pytest.approx(1 / 15), pytest.approx(1 / 15))
    # only some documents scored: two assignments that put them on the same sides count once each
    scored = values[[d for d in docs if docs[d] != "e0"]]
    assert randomization_test(scored, treated, assignments, 999, 0)[1] == pytest.approx(1 / 15)

    def draw(rng):
        return assignments[rng.integers(len(assignments))]

    p, min_p = randomization_test(values, treated, draw, 999, 0)
    assert min_p == 1 / 1000 and abs(p - 1 / 15) < 0.03
    with pytest.raises(ValueError, match="no scored unit on one side"):
        randomization_test(values, frozenset(docs), assignments, 99, 0)
    # 3 of 6 events: an assignment and its complement give the same absolute statistic, so the
    # smallest p is 2 of the 20 choices, not 1 (issue 57)
    halves = [frozenset(d for d in docs if docs[d] in chosen) for chosen in itertools.combinations(events, 3)]
    top = pd.Series({doc: float(docs[doc] in ("e3", "e4", "e5")) for doc in docs})
    assert randomization_test(top, halves[0], halves, 999, 0) == (pytest.approx(2 / 20), pytest.approx(2 / 20))
    # tied values: every event the same, nothing can move the statistic
    assert randomization_test(pd.Series(1.0, index=list(docs)), treated, assignments, 999, 0) == (1.0, 1.0)
    assert randomization_test(pd.Series(1.0, index=list(docs)), treated, draw, 999, 0) == (1.0, 1.0)


def _score_interval_by_hand(b, c, n, confidence):
    """Tango's interval by brute force: the profile likelihood's constrained maximum found
    numerically at each difference, and each end of the interval where the score statistic crosses
    z, found by bisection between the point estimate and the edge of the differences (a grid of
    9,991 differences gave the same ends to 2e-4, at 40 times the time)."""
    z = norm.ppf(0.5 + confidence / 2)

    def statistic(delta):
        def nll(q):
            p10, p01 = q + delta, q
            rest = 1 - p10 - p01
            if min(p10, p01, rest) <= 0:
                return np.inf
            return -(b * np.log(p10) + c * np.log(p01) + (n - b - c) * np.log(rest))

        lo, hi = max(0.0, -delta) + 1e-12, (1 - delta) / 2 - 1e-12
        q = minimize_scalar(nll, bounds=(lo, hi), method="bounded", options={"xatol": 1e-12}).x
        return (b - c - n * delta) / np.sqrt(n * (2 * q + delta - delta**2))

    def end(edge):
        outside = abs(statistic(edge)) - z
        return edge if outside <= 0 else brentq(lambda d: abs(statistic(d)) - z, (b - c) / n, edge, xtol=1e-9)

    return end(-0.999), end(0.999)


@pytest.mark.parametrize("b, c, n", [(0, 0, 24), (3, 1, 24), (10, 2, 50), (1, 9, 40)])
def test_tango_interval_inverts_the_score_test(b, c, n):
    low, high = tango_interval(b, c, n, 0.95)
    by_hand = _score_interval_by_hand(b, c, n, 0.95)
    assert (low, high) == pytest.approx(by_hand, abs=3e-4)
    assert low <= (b - c) / n <= high


def test_tango_interval_at_no_discordant_pair_is_not_a_point():
    """The old TOST on 0/1 differences returned [0, 0] at 0 discordant pairs of 24 (issue 44)."""
    low, high = tango_interval(0, 0, 24, 0.90)
    assert high == pytest.approx(0.1013, abs=1e-4) and low == pytest.approx(-high)
    with pytest.raises(ValueError, match=r"tango_interval needs 0 <= b \+ c <= n and n > 0, got b=20, c=10, n=24"):
        tango_interval(20, 10, 24, 0.9)


def test_design_effect_grows_with_clustered_differences():
    rng = np.random.default_rng(0)
    independent = rng.integers(-1, 2, 200)
    assert paired_design_effect(independent, np.arange(200)) == 1.0  # every pair its own cluster
    clustered = np.repeat(rng.choice([-1, 1], 20), 10)  # ten pairs that always agree, in 20 clusters
    assert paired_design_effect(clustered, np.repeat(np.arange(20), 10)) == pytest.approx(10, rel=0.2)


def test_equivalence_needs_enough_effective_pairs():
    same = np.ones(24)
    small = paired_equivalence(same, same, np.arange(24), margin=0.05, alpha=ALPHA)
    assert small["min_p"] >= ALPHA and small["high"] > 0.05  # 24 pairs cannot show a difference below 0.05
    rng = np.random.default_rng(1)
    a = rng.integers(0, 2, 2000).astype(float)
    large = paired_equivalence(a, a, np.arange(2000), margin=0.05, alpha=ALPHA)
    assert large["p"] < ALPHA and -0.05 < large["low"] and large["high"] < 0.05
    # the same 2000 pairs in 20 excerpts, B wrong on every item A gets right in 3 of them: the
    # differences cluster, and the pairs count far less
    b = a.copy()
    lost = np.repeat(np.arange(20) < 3, 100) & (a == 1)
    b[lost] = 0.0
    clustered = paired_equivalence(a, b, np.repeat(np.arange(20), 100), margin=0.05, alpha=ALPHA)
    assert clustered["deff"] > 5 and clustered["n_effective"] < 400
    with pytest.raises(ValueError, match="paired_equivalence takes 0/1 correctness"):
        paired_equivalence(np.full(3, 0.5), np.ones(3), np.arange(3), 0.05, ALPHA)


# ------------------------------------------------------------------------------ calibration
# Each design returns (new p, old p) for one replicate: null data when ``effect`` is 0, else with
# ``effect`` (in standard deviations of a unit's value) planted in the claimed direction.


def _effects(rng, n_clusters, per_cluster, icc):
    """Values with intra-cluster correlation ``icc``: a cluster effect plus noise, unit variance."""
    cluster = np.repeat(rng.normal(0, np.sqrt(icc), n_clusters), per_cluster)
    return cluster + rng.normal(0, np.sqrt(1 - icc), n_clusters * per_cluster)


def _old_mcnemar(a, b):
    """McNemar over 0/1 items: the 2 x 2 table of (a, b) counted with numpy (a pandas crosstab per
    replicate was most of this calibration's time)."""
    table = np.bincount(2 * a.astype(int) + b.astype(int), minlength=4).reshape(2, 2)
    return mcnemar(table, exact=table[0, 1] + table[1, 0] < 25).pvalue


def _mcq(rng, icc, effect):
    """Questions (4 a document, 5 documents an event, 6 events) answered by a run and the control:
    each question has its own difficulty, and each event favours one of the two by an amount all
    its questions share (null: no run better on average).  New: sign flips over event means; old:
    McNemar over questions."""
    events = np.repeat(np.arange(6), 20)
    difficulty = rng.normal(0, 1, 120)
    shift = effect + _effects(rng, 6, 20, icc)
    run = (difficulty + shift / 2 + rng.logistic(0, 0.3, 120) > 0).astype(float)
    control = (difficulty - shift / 2 + rng.logistic(0, 0.3, 120) > 0).astype(float)
    means = cluster_means(pd.Series(run - control), pd.Series(events))
    return sign_flip_test(means.to_numpy(), 9999, 0)[0], _old_mcnemar(run, control)


def _sort_nll(rng, icc, effect):
    """Segment nll differences (instructions minus books) of 8 segments in each of 6 excerpts, each
    excerpt shifted at random.  New: sign flips over excerpt means; old: Wilcoxon over segments."""
    d = effect + _effects(rng, 6, 8, icc)
    means = cluster_means(pd.Series(d), pd.Series(np.repeat(np.arange(6), 8)))
    return sign_flip_test(means.to_numpy(), 9999, 0)[0], wilcoxon(d).pvalue


def _losses(rng, n_events, icc):
    """Document losses, 10 documents an event (null: training leaves them unchanged)."""
    index = [f"e{k:02d}-d{j}" for k in range(n_events) for j in range(10)]
    return pd.Series(_effects(rng, n_events, 10, icc), index=index)


# The Event split with 10 events, 6 of them trained: C(10, 6) = 210 assignments, so that the test
# can reject at all (with the shipped corpus's 6 events, C(6, 4) = 15 makes 1/15 its smallest p).
EVENT_ASSIGNMENTS = [
    frozenset(f"e{k:02d}-d{j}" for k in chosen for j in range(10)) for chosen in itertools.combinations(range(10), 6)
]


def _old_rank_sum(losses, treated):
    held, values = ~losses.index.isin(treated), losses.to_numpy()
    return mannwhitneyu(values[held], values[~held]).pvalue


def _event_split(rng, icc, effect):
    """New: the randomisation test over the 210 event choices; old: Mann-Whitney over documents."""
    losses = _losses(rng, 10, icc)
    treated = EVENT_ASSIGNMENTS[rng.integers(len(EVENT_ASSIGNMENTS))]
    losses[list(treated)] -= effect
    return randomization_test(losses, treated, EVENT_ASSIGNMENTS, 0, 0)[0], _old_rank_sum(losses, treated)


# the documents of each (event, style) pair of the Doc split's design: 6 events x 5 styles, 2 each
DOC_PAIRS = np.array([[f"e{g // 5:02d}-d{2 * (g % 5) + k}" for k in (0, 1)] for g in range(30)])


def _doc_draw(rng):
    """The Doc split's draw: one of the 2 documents of each (event, style) held out, the other trained."""
    held = rng.integers(0, 2, 30)
    return frozenset(DOC_PAIRS[np.arange(30), 1 - held])


def _doc_split(rng, icc, effect):
    """New: the randomisation test over 99 fresh draws of the split; old: Mann-Whitney over documents."""
    losses = _losses(rng, 6, icc)
    treated = _doc_draw(rng)
    losses[list(treated)] -= effect
    new = randomization_test(losses, treated, _doc_draw, 99, int(rng.integers(2**31)))[0]
    return new, _old_rank_sum(losses, treated)


def _equivalence(rng, icc, effect):
    """SORT's no-change claim on 24 items in each of 12 excerpts.  ``effect`` 0 puts the true
    difference at the margin (0.1: the null hypothesis of equivalence), any other value at 0.
    The other condition gets each excerpt's own share of the items wrong, so that the
    differences cluster.  New: Tango's interval with the design effect; old: TOST of paired t on
    the 0/1 differences, every item its own unit."""
    from statsmodels.stats.weightstats import ttost_paired

    excerpts = np.repeat(np.arange(12), 24)
    base = (rng.random(288) < 0.6).astype(float)
    mean_loss = 0.1 if effect == 0 else 0.0
    spread = np.sqrt(icc) * 0.15 * rng.standard_normal(12)
    share = np.clip(mean_loss + spread - spread.mean(), 0, 1).repeat(24)
    other = base.copy()
    lose = (base == 1) & (rng.random(288) < share / 0.6)
    gain = (base == 0) & (rng.random(288) < np.clip(-(spread - spread.mean()), 0, 1).repeat(24) / 0.4)
    other[lose], other[gain] = 0.0, 1.0
    new = paired_equivalence(base, other, excerpts, 0.1, ALPHA)["p"]
    d = base - other
    old = 0.0 if np.ptp(d) == 0 else ttost_paired(base, other, -0.1, 0.1)[0]
    return new, old


def _excerpt_lengths(rng, icc, effect):
    """SORT's excerpt-length claim: 6 short and 6 long excerpts (different excerpts), 4 items each,
    each excerpt's items sharing its shift.  New: the permutation test of two samples of excerpt
    means; old: Mann-Whitney over items."""
    values = _effects(rng, 12, 4, icc) + np.repeat(np.r_[np.full(6, effect), np.zeros(6)], 4)
    means = values.reshape(12, 4).mean(axis=1)
    return two_sample_test(means[:6], means[6:], 9999, 0)[0], mannwhitneyu(values[:24], values[24:]).pvalue


def _distance_trend(rng, icc, effect):
    """SORT's distance claim: 12 excerpts of 4 items at distance bins 0-3, correctness with an
    excerpt shift (null: not depending on the bin).  New: sign flips of each excerpt's Spearman rho
    (0 where constant); old: Spearman over all items."""
    bins = np.tile(np.arange(4), 12)
    correct = (_effects(rng, 12, 4, icc) + effect * (bins - 1.5) / 1.5 > 0).astype(float)
    rho = []
    for x, y in zip(bins.reshape(12, 4), correct.reshape(12, 4)):
        rho.append(0.0 if np.ptp(y) == 0 else np.corrcoef(rankdata(x), rankdata(y))[0, 1])
    return sign_flip_test(np.array(rho), 9999, 0)[0], spearmanr(bins, correct).pvalue


DESIGNS = {
    "MCQ, questions in events": _mcq,
    "SORT segment nll, segments in excerpts": _sort_nll,
    "Event split, documents in events": _event_split,
    "Doc split, documents in (event, style) pairs": _doc_split,
    "SORT excerpt lengths, items in excerpts (two samples)": _excerpt_lengths,
    "SORT distance trend, items in excerpts": _distance_trend,
}
# the effect planted for power, in standard deviations of a unit's value
PLANTED = {_mcq: 1.0, _sort_nll: 1.5, _event_split: 1.0, _doc_split: 0.5, _excerpt_lengths: 1.5, _distance_trend: 1.5}
# designs whose old test was already at the unit: the Doc split randomises documents; the items of
# an excerpt span every distance bin, so an excerpt's shift does not confound the bins
AT_THE_UNIT = (_doc_split, _distance_trend)


def _rates(design, icc, effect, seed, replicates=REPLICATES):
    """Share of ``replicates`` in which the new and the old test reject at alpha."""
    rng = np.random.default_rng(seed)
    return np.mean([[p < ALPHA for p in design(rng, icc, effect)] for _ in range(replicates)], axis=0)


@pytest.mark.slow
@pytest.mark.parametrize("icc", [0.3, 0.7])
def test_each_unit_level_test_keeps_alpha_where_the_item_level_test_does_not(icc):
    for k, (name, design) in enumerate(DESIGNS.items()):
        new, old = _rates(design, icc, 0.0, k)
        power = _rates(design, icc, PLANTED[design], 100 + k, replicates=100)[0]
        print(f"{name}, ICC {icc}: rejects {new:.3f} (old {old:.3f}) of null replicates; power {power:.3f}")
        assert new <= BOUND, f"{name} at ICC {icc}: the unit-level test rejects {new:.3f} of null replicates"
        if design not in AT_THE_UNIT:
            assert old > BOUND, f"{name} at ICC {icc}: the old item-level test rejects only {old:.3f}"
        assert power > 0.3, f"{name} at ICC {icc}: power {power:.3f} against {PLANTED[design]} SD"
    new, old = _rates(_equivalence, icc, 0.0, 7)
    print(f"equivalence at the margin's edge, ICC {icc}: declared {new:.3f} (old TOST {old:.3f})")
    assert new <= BOUND


# ------------------------------------------------------------------------------ training seeds


def test_two_sample_test_lists_every_relabelling_or_draws_them():
    a, b = np.array([3.0, 2.5, 4.0]), np.array([1.0, 0.5, 2.0, 1.5])
    splits = [set(c) for c in itertools.combinations(range(7), 3)]  # C(7, 3) = 35 relabellings
    pooled = np.r_[a, b]
    diffs = np.array([pooled[list(c)].mean() - np.delete(pooled, list(c)).mean() for c in splits])
    observed = a.mean() - b.mean()
    by_hand = 2 * min(np.mean(diffs >= observed - 1e-12), np.mean(diffs <= observed + 1e-12))
    assert two_sample_test(a, b, 999, 0) == (pytest.approx(by_hand), pytest.approx(2 / 35))
    assert by_hand == pytest.approx(2 / 35)  # a above every b: the most extreme relabelling
    assert two_sample_test(np.ones(3), np.ones(2), 999, 0) == (1.0, 1.0)
    # ties: three 1s and three 0s, groups of 2 and 4: 3 of the 15 relabellings put two 1s in the
    # first group and 3 put two 0s there, so the smallest p is 2 x 3 / 15, not 2 / 15 (issue 57)
    assert two_sample_test(np.ones(2), np.r_[1.0, 0.0, 0.0, 0.0], 999, 0) == (pytest.approx(0.4), pytest.approx(0.4))
    assert two_sample_test(np.arange(10.0), np.arange(10.0) + 5, 99, 0)[1] == 2 / 100  # Monte Carlo
    with pytest.raises(ValueError, match="at least one unit in each group"):
        two_sample_test([], [1.0], 99, 0)


def test_seed_test_is_the_t_test_over_the_seeds_effects():
    effects = np.array([0.3, 0.5, 0.4])
    t = effects.mean() / (effects.std(ddof=1) / np.sqrt(3))
    from scipy.stats import t as student_t

    assert seed_test(effects) == pytest.approx(2 * student_t.sf(t, df=2), rel=1e-12)
    # no spread between the seeds, or a spread of rounding error: nothing to test against
    assert seed_test([0.2, 0.2, 0.2]) == 1.0 and seed_test([0.2, 0.2 + 1e-15, 0.2]) == 1.0
    with pytest.raises(ValueError, match="seed_test needs at least two seeds' effects, got 1"):
        seed_test([0.2])


def test_crossed_bootstrap_resamples_seeds_and_units():
    rng = np.random.default_rng(0)
    units = rng.normal(0, 1, 20)
    calm = np.stack([units + rng.normal(0, 0.01, 20) for _ in range(3)])
    shifted = calm + np.array([[-1.0], [0.0], [1.0]])  # the seeds disagree by a whole unit each
    zeros = np.zeros_like(calm)
    a, b = (crossed_bootstrap_difference(x, zeros, paired=True, n_resamples=2000, seed=1, confidence=0.95)
            for x in (calm, shifted))  # fmt: skip
    assert a["effect"] == pytest.approx(calm.mean()) and b["effect"] == pytest.approx(shifted.mean())
    assert b["ci_high"] - b["ci_low"] > 2 * (a["ci_high"] - a["ci_low"]) and b["se"] > a["se"]
    # unpaired: two sets of units of their own sizes, the seeds drawn once for both
    two = crossed_bootstrap_difference(calm, calm[:, :5] - 1, paired=False, n_resamples=500, seed=1, confidence=0.95)
    assert two["effect"] == pytest.approx(calm.mean() - calm[:, :5].mean() + 1) and two["ci_low"] < two["effect"]
    with pytest.raises(
        ValueError, match=r"crossed_bootstrap_difference needs \(seeds, units\) arrays, got \(3, 20\) and \(2, 20\)"
    ):
        crossed_bootstrap_difference(calm, calm[:2], paired=True, n_resamples=10, seed=1, confidence=0.95)


def _seeded(rng, icc, effect, n_seeds, tau):
    """A run-vs-control difference per training seed and event (12 events): each seed's training
    shifts every event by its own amount (standard deviation ``tau``), and events cluster (``icc``).
    New: the larger of the sign-flip p over the events' seed means and the t-test over the seeds'
    effects; old: the sign flips alone, as if the seeds' runs were the only ones."""
    events = rng.normal(0, np.sqrt(icc), (1, 12))  # what each event's questions share across seeds
    d = effect + rng.normal(0, tau, (n_seeds, 1)) + events + rng.normal(0, np.sqrt(1 - icc), (n_seeds, 12))
    unit = sign_flip_test(d.mean(axis=0), 999, int(rng.integers(2**31)))[0]
    return max(unit, seed_test(d.mean(axis=1))), unit


@pytest.mark.slow
@pytest.mark.parametrize("n_seeds", [2, 3])
def test_seeds_as_replicates_keep_alpha_where_the_units_alone_do_not(n_seeds):
    for tau in (0.3, 1.0):
        for icc in (0.3, 0.7):
            new, old = _rates(partial(_seeded, n_seeds=n_seeds, tau=tau), icc, 0.0, 11)
            power = _rates(partial(_seeded, n_seeds=n_seeds, tau=tau), icc, 1.0, 12, replicates=200)[0]
            print(
                f"{n_seeds} seeds, seed SD {tau}, ICC {icc}: rejects {new:.3f} (units alone {old:.3f}); power {power:.3f}"
            )
            assert new <= BOUND, f"{n_seeds} seeds, tau {tau}, ICC {icc}: rejects {new:.3f} of null replicates"
            if tau == 1.0:
                assert old > BOUND, f"the test over units alone rejects only {old:.3f} with seed SD {tau}"
