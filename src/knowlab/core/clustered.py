"""Inference at the unit the design samples or assigns.

Measurements nest: SORT items in excerpts, FictionalQA questions in documents and documents in
events.  Counting the nested values as independent treats correlated values as separate
evidence and makes p-values too small.  This module provides three ways to test at the right
unit:

- **Aggregate, then test** (:func:`cluster_means`): one value per unit (an excerpt's accuracy, an
  event's mean loss); the effect, its bootstrap interval and the test all use these values.
- **Permutation tests at the unit** (:func:`sign_flip_test`, for units paired between two
  conditions): exact when every sign pattern can be listed within ``n_resamples``, else Monte
  Carlo (``scipy.stats.permutation_test``).  They assume only that each unit's two conditions are
  exchangeable under the null hypothesis, and so keep their level with as few units as the shipped
  designs have (6 events, 6 excerpts; simulated in ``tests/core/test_clustered.py``), where a
  cluster-robust sandwich variance is known to be too small (Cameron & Miller 2015).
- **Re-randomisation** (:func:`randomization_test`): the design's own random assignment drawn
  again, for a split that randomised which documents or events are trained on.

Each test also returns ``min_p``, the smallest p it can give at this number of units, for the
findings' ``not tested`` rule.

Training seeds (:func:`seed_test`, :func:`crossed_bootstrap_difference`): when every run is trained
with several seeds, each seed's checkpoints are measured on the same units, so seeds and units
are crossed.  A test over the units alone, on values averaged over the seeds, treats the seeds'
runs as fixed: a difference that one seed's training order happened to give counts as an effect.
The seeds' own effects, tested against each other, carry that variance; an interval resampling
seeds and units together (Owen's pigeonhole bootstrap) contains both.

Equivalence of two paired proportions (a claim of no difference in accuracy):
:func:`tango_interval`, the score interval of Tango (1998) for the difference of paired
proportions.  With clustered pairs, the counts are first divided by the design effect
(:func:`paired_design_effect`; Rao & Scott 1992), and the score statistic is compared with
Student's t on K - 1 degrees of freedom for K clusters.  :func:`paired_equivalence` takes the
interval form of the two one-sided tests (Schuirmann 1987): equivalence at level alpha when the
``1 - 2 alpha`` interval lies inside ``(-margin, margin)``; whether the design can show it at all
is decided from the design (pairs, clusters, margin), not from the estimated design effect.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Collection, Mapping, Sequence

import numpy as np
import pandas as pd

from knowlab.core.stats import reference_distribution


def cluster_means(values: pd.Series, clusters: Mapping[str, str] | pd.Series) -> pd.Series:
    """The mean of ``values`` per cluster (NaN values dropped first), indexed by cluster id in sorted order.

    Args:
        values: one value per measured unit (question, segment, item), indexed by its id.
        clusters: unit id -> cluster id (event, excerpt, document).

    Raises:
        KeyError: a unit of ``values`` has no cluster (the message names it).
    """
    values = values.dropna()
    lookup = pd.Series(clusters) if not isinstance(clusters, pd.Series) else clusters
    missing = values.index.difference(lookup.index)
    if len(missing):
        raise KeyError(f"no cluster for {len(missing)} unit(s), e.g. {missing[0]!r}")
    return values.groupby(lookup.loc[values.index].to_numpy()).mean().sort_index()


def _mean(x, axis=-1):
    return x.mean(axis=axis)


def sign_flip_test(
    d: Sequence[float] | np.ndarray, n_resamples: int, seed: int, p_value: bool = True
) -> tuple[float, float]:
    """Two-sided paired permutation test of mean(d) = 0. Each unit's difference ``d`` (for example, one
    excerpt's accuracy in condition A minus condition B) has its sign flipped at random.

    The test is exact when ``2 ** len(d) <= n_resamples``; otherwise it is Monte Carlo with
    ``n_resamples`` draws (``scipy.stats.permutation_test``, ``permutation_type="samples"``).
    Under the null hypothesis, each unit's two conditions are exchangeable.

    Returns:
        ``(p, min_p)``: the two-sided p-value, and the smallest p-value the test can give with these
        differences (as :func:`attainable_p` counts it): only the units whose difference is not 0 can move the
        statistic, so it is ``2 / 2**k`` for ``k`` non-zero differences (each zero unit doubles
        the sign patterns that reach the largest mean), and at least ``2 / (n_resamples + 1)``
        when Monte Carlo (scipy's p counts the observed statistic).  If every difference is 0, p
        and ``min_p`` are 1.  With ``p_value`` False, p is not computed (1.0) and ``min_p`` is the
        same: the design planner's use (:mod:`knowlab.findings.planner`).

    Raises:
        ValueError: no unit.
    """
    from scipy.stats import permutation_test  # deferred: scipy loads where a test runs

    d = np.asarray(d, dtype=float)
    if not d.size:
        raise ValueError("sign_flip_test needs at least one unit")
    min_p = min(1.0, 0.5 ** (int(np.count_nonzero(d)) - 1))  # 2 / 2**k, 0 (not an overflow) at paper scale
    if not d.any():
        return 1.0, min_p
    if 2**d.size > n_resamples:
        min_p = max(min_p, 2.0 / (n_resamples + 1))
    if not p_value:
        return 1.0, min_p
    result = permutation_test(
        (d,), _mean, permutation_type="samples", vectorized=True, n_resamples=n_resamples, random_state=seed
    )
    return float(result.pvalue), min_p


def attainable_p(null: np.ndarray, doubled: bool = False) -> float:
    """The smallest two-sided p a permutation test can give with these values, from its listed null
    statistics (every permutation, equally likely).  It reads the data, not the design: tied values,
    units that cannot move the statistic, and an assignment whose complement gives the same
    absolute statistic (3 of 6 events: 2 of the 20 choices, 0.10, not 1/20) all raise it.  Under the
    null hypothesis the listed statistics are the same whichever permutation was observed, so a rule
    on it keeps the test's level.

    Args:
        null: the statistic of every permutation.
        doubled: the test's two-sided p is twice its smaller one-sided p (``scipy.stats.permutation_test``):
            the smallest is twice the share at the more extreme end, at most 1.  Else (the default)
            the p is the share of statistics at least as large in absolute value, and so is the
            smallest.

    Raises:
        ValueError: no finite statistic.
    """
    stats = np.asarray(null, dtype=float)
    stats = stats[np.isfinite(stats)]
    if not stats.size:
        raise ValueError("attainable_p needs at least one finite statistic")

    def share_at_or_beyond(top: float, values: np.ndarray) -> float:
        return float(np.mean(values >= top - 1e-12 * max(1.0, abs(top))))

    if doubled:
        return min(1.0, 2 * min(share_at_or_beyond(stats.max(), stats), share_at_or_beyond(-stats.min(), -stats)))
    return share_at_or_beyond(np.abs(stats).max(), np.abs(stats))


def two_sample_test(
    a: Sequence[float] | np.ndarray,
    b: Sequence[float] | np.ndarray,
    n_resamples: int,
    seed: int,
    p_value: bool = True,
) -> tuple[float, float]:
    """Two-sided permutation test of mean(a) = mean(b) for two independent samples of units (for
    example, the excerpts of 250 and of 1,000 words): the group labels are permuted.

    The test is exact when the ``C(n_a + n_b, n_a)`` relabellings number at most ``n_resamples``;
    otherwise it is Monte Carlo with ``n_resamples`` draws (``scipy.stats.permutation_test``,
    ``permutation_type="independent"``).  Under the null hypothesis, every unit's value is
    exchangeable between the groups.

    Returns:
        ``(p, min_p)``: the two-sided p-value, and the smallest p the test can give with these
        values: when exact, twice the share of relabellings at the more extreme end of their
        statistics (:func:`attainable_p`: ``2 / C(n_a + n_b, n_a)`` for distinct values, more with
        ties); at least ``2 / (n_resamples + 1)`` when Monte Carlo.  If every value is
        the same, p and ``min_p`` are 1.  With ``p_value`` False, a Monte Carlo test draws nothing
        (p 1.0, the same ``min_p``): the design planner's use.

    Raises:
        ValueError: a group without a unit.
    """
    from scipy.stats import permutation_test  # deferred: scipy loads where a test runs

    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if not a.size or not b.size:
        raise ValueError("two_sample_test needs at least one unit in each group")
    exact = math.comb(a.size + b.size, a.size) <= n_resamples
    if np.ptp(np.concatenate([a, b])) == 0:
        return 1.0, 1.0
    if not (exact or p_value):
        return 1.0, min(1.0, 2.0 / (n_resamples + 1))
    result = permutation_test(
        (a, b),
        lambda x, y, axis=-1: x.mean(axis=axis) - y.mean(axis=axis),
        permutation_type="independent",
        vectorized=True,
        n_resamples=n_resamples,
        random_state=seed,
    )
    min_p = attainable_p(result.null_distribution, doubled=True) if exact else min(1.0, 2.0 / (n_resamples + 1))
    return float(min(1.0, result.pvalue)), min_p


def randomization_test(
    values: pd.Series,
    treated: Collection[str],
    assignments: Sequence[frozenset[str]] | Callable[[np.random.Generator], frozenset[str]],
    n_resamples: int,
    seed: int,
    clusters: Mapping[str, str] | pd.Series | None = None,
    p_value: bool = True,
) -> tuple[float, float]:
    """Two-sided randomisation test of mean(values of the untreated) - mean(values of the treated).
    The design's random assignment is drawn again, and only it.  With ``clusters`` (unit id ->
    cluster id), each side's mean is the mean of its clusters' means (every event weighs the same).

    Each unit (a scored document) is fixed.  Under the null hypothesis, its value does not depend on
    which side it is on, so the statistic's distribution over the design's possible assignments is
    the reference distribution.
    For example, the Event split trains on 4 of 6 events: every one of the C(6, 4) = 15 event
    choices is an assignment, and the documents follow their event.

    Args:
        values: one value per unit, indexed by unit id; only these units enter the statistic.
        treated: the ids of the units the run's actual assignment treated (its training documents).
        assignments: either every assignment the design could have drawn, equally likely, as
            sets of treated ids (the test is then exact), or a function that draws one from a
            generator (Monte Carlo with ``n_resamples`` draws, p = (1 + #as extreme) / (1 +
            n_resamples); Phipson & Smyth 2010).

    Returns:
        ``(p, min_p)``.  Listed assignments: ``min_p`` is the smallest p any of them would give
        with these values (:func:`attainable_p`): assignments that put the scored units on the
        same sides, and an assignment whose complement gives the same absolute statistic (a
        balanced split), count together.  Drawn assignments: ``min_p`` is ``1 / (n_resamples + 1)``.
        Every value the same: ``(1, 1)``, listed or drawn.  With ``p_value`` False, drawn
        assignments are not drawn (p 1.0, the same ``min_p``): the design planner's use.

    Raises:
        ValueError: the actual assignment leaves a side of ``values`` empty.
    """
    ids = values.index.to_numpy()
    x = values.to_numpy(dtype=float)
    lookup = pd.Series(clusters if clusters is not None else dict(zip(ids, ids)))
    codes, _ = pd.factorize(lookup.loc[ids].to_numpy())
    order = np.argsort(codes, kind="stable")  # units grouped by cluster, for np.add.reduceat
    starts = np.r_[0, np.flatnonzero(np.diff(codes[order])) + 1]

    def side_means(side: np.ndarray) -> np.ndarray:
        side = side[:, order]
        sums = np.add.reduceat(side * x[order], starts, axis=1)
        counts = np.add.reduceat(side.astype(float), starts, axis=1)
        means = np.divide(sums, counts, out=np.full_like(sums, np.nan), where=counts > 0)
        return np.nanmean(means, axis=1)  # a side with no unit: NaN

    def statistics(masks: np.ndarray) -> np.ndarray:
        """The statistic of every assignment (rows of ``masks``: unit treated); NaN where a side is empty."""
        return side_means(~masks) - side_means(masks)

    position = {unit: i for i, unit in enumerate(ids)}

    def masks_of(chosen: Sequence[Collection[str]]) -> np.ndarray:
        masks = np.zeros((len(chosen), len(ids)), dtype=bool)
        for row, units in enumerate(chosen):
            masks[row, [position[u] for u in units if u in position]] = True
        return masks

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # an empty side's mean: NaN, then left out
        observed = float(statistics(masks_of([frozenset(treated)]))[0])
        if np.isnan(observed):
            raise ValueError("the assignment leaves no scored unit on one side")
        if np.ptp(x) == 0:  # every unit the same value: no assignment can move the statistic
            return 1.0, 1.0
        if callable(assignments):
            if not p_value:
                return 1.0, 1.0 / (n_resamples + 1)
            rng = np.random.default_rng(seed)
            drawn = statistics(masks_of([assignments(rng) for _ in range(n_resamples)]))
            extreme = np.sum(np.abs(drawn[~np.isnan(drawn)]) >= abs(observed) - 1e-12)
            return float((1 + extreme) / (1 + n_resamples)), 1.0 / (n_resamples + 1)
        masks = masks_of(list(assignments))
        stats = statistics(masks)
    valid = ~np.isnan(stats)
    p = float(np.sum(np.abs(stats[valid]) >= abs(observed) - 1e-12) / valid.sum())
    return p, attainable_p(stats[valid])


def paired_design_effect(d: Sequence[float] | np.ndarray, clusters: Sequence[str] | np.ndarray) -> float:
    """The design effect of the mean paired difference when the pairs come in clusters (Kish 1965).

    The design effect is the ratio of two variances of the mean: the cluster-robust (ratio
    estimator) variance and the variance that treats every pair as independent.  It is at least
    1, and exactly 1 when every difference is equal or every pair is its own cluster.  Rao &
    Scott (1992) divide a clustered binary table's counts by it before using a method made for
    independent pairs.

    Args:
        d: the paired differences (for 0/1 correctness: -1, 0 or 1).
        clusters: each pair's cluster id, in the same order.
    """
    d = np.asarray(d, dtype=float)
    n = d.size
    frame = pd.DataFrame({"d": d, "k": np.asarray(clusters)})
    k = frame["k"].nunique()
    if n < 2 or k < 2 or k == n or np.ptp(d) == 0:
        return 1.0
    theta = d.mean()
    srs = d.var(ddof=1) / n
    sums = frame.groupby("k")["d"].agg(["sum", "size"])
    robust = k / (k - 1) * float(((sums["sum"] - theta * sums["size"]) ** 2).sum()) / n**2
    return max(1.0, robust / srs)


def _tango_z(delta: float, b: float, c: float, n: float) -> float:
    """Tango's score statistic at difference ``delta``. The restricted maximum-likelihood estimate
    of the ``c`` cell's probability solves ``2n q^2 + W q - c delta (1 - delta) = 0``, where
    ``W = -b - c + (2n - b + c) delta``."""
    w = -b - c + (2 * n - b + c) * delta
    q = (np.sqrt(max(w * w + 8 * n * c * delta * (1 - delta), 0.0)) - w) / (4 * n)
    variance = n * (2 * q + delta * (1 - delta))
    if variance <= 0:
        return np.inf if b - c - n * delta > 0 else -np.inf if b - c - n * delta < 0 else 0.0
    return float((b - c - n * delta) / np.sqrt(variance))


def tango_interval(b: float, c: float, n: float, confidence: float, df: float | None = None) -> tuple[float, float]:
    """Score interval of the difference of two paired proportions (Tango 1998, Stat. Med. 17:891).

    Args:
        b: pairs correct under A only; c: pairs correct under B only; n: all pairs.  The counts may
            be fractional, for example when divided by a design effect.
        confidence: the interval's level. For equivalence at alpha, use ``1 - 2 alpha``.
        df: compare the score statistic with Student's t on ``df`` degrees of freedom instead of the
            standard normal (None): with pairs in K clusters whose design effect is estimated,
            ``K - 1`` (:func:`paired_equivalence`).

    Returns:
        ``(low, high)`` of ``p_A - p_B``. The interval contains every difference that the score test
        does not reject at level ``1 - confidence``.  Unlike a Wald interval, it is not a point at
        ``b = c = 0``: for example, 0 of 24 discordant pairs gives (-0.101, 0.101) at 90%.

    Raises:
        ValueError: no pair, or counts that do not fit ``n``.
    """
    from scipy.optimize import brentq  # deferred: scipy loads where a test runs

    if n <= 0 or b < 0 or c < 0 or b + c > n + 1e-9:
        raise ValueError(f"tango_interval needs 0 <= b + c <= n and n > 0, got b={b}, c={c}, n={n}")
    z = float(reference_distribution(df).ppf(0.5 + confidence / 2))
    edge = 1 - 1e-12

    def bound(target: float, side: float) -> float:
        f = lambda delta: _tango_z(delta, b, c, n) - target  # noqa: E731
        inside = (b - c) / n
        if f(side * edge) * f(inside) > 0:
            return side
        lo, hi = sorted((inside, side * edge))
        return float(brentq(f, lo, hi, xtol=1e-12))

    return bound(z, -1.0), bound(-z, 1.0)


def paired_equivalence(
    a: Sequence[float] | np.ndarray,
    b: Sequence[float] | np.ndarray,
    clusters: Sequence[str] | np.ndarray,
    margin: float,
    alpha: float,
) -> dict[str, float]:
    """Equivalence of two paired accuracies within ``(-margin, margin)``.  This is the interval form
    of the two one-sided tests (Schuirmann 1987): Tango's ``1 - 2 alpha`` score interval, on
    counts divided by the design effect of the clusters (Rao & Scott 1992), with Student's t on
    ``K - 1`` degrees of freedom as the reference for K clusters (the design effect is estimated
    from K clusters, so the score statistic is studentized by a variance with K - 1 degrees of
    freedom; Donner & Klar 2000, ch. 6, for cluster-level inference).  With every item its own
    cluster, K - 1 is large and the reference is the normal.

    Whether the claim can be tested at all is a property of the design, not of the data: ``min_p``
    is the equivalence p with every pair agreeing, at design effect 1 (its smallest) and the same
    reference.  It depends on the number of pairs, of clusters, the margin and alpha only.

    Args:
        a, b: 0/1 correctness of the same items under conditions A and B.
        clusters: each item's cluster (its excerpt).  Use the item ids for independent items.

    Returns:
        A dict with these keys:

        - ``low``, ``high``: the interval of ``accuracy(a) - accuracy(b)``.
        - ``p``: the equivalence p-value, the larger of the two one-sided score tests' p-values at
          ``-margin`` and ``margin``.  It is below alpha exactly when the interval lies inside
          the margin.
        - ``min_p``: the equivalence p-value if every pair agreed at design effect 1; not below
          alpha when the design cannot show equivalence.
        - ``deff``: the design effect; ``n_effective``: the number of pairs divided by it.
        - ``df``: the reference's degrees of freedom (``K - 1``).

    Raises:
        ValueError: no pair, fewer than two clusters, a value other than 0/1, or sides of different
            lengths.
    """
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if x.shape != y.shape or not x.size:
        raise ValueError(f"paired_equivalence needs two equal, non-empty sides, got {x.size} and {y.size}")
    if not np.isin(np.concatenate([x, y]), (0.0, 1.0)).all():
        raise ValueError("paired_equivalence takes 0/1 correctness")
    k = pd.unique(np.asarray(clusters)).size
    if k < 2:
        raise ValueError(f"paired_equivalence needs pairs in at least two clusters, got {k}")
    df = float(k - 1)
    reference = reference_distribution(df)
    deff = paired_design_effect(x - y, clusters)
    n = x.size / deff
    only_a, only_b = float(((x == 1) & (y == 0)).sum()) / deff, float(((x == 0) & (y == 1)).sum()) / deff
    low, high = tango_interval(only_a, only_b, n, 1 - 2 * alpha, df=df)

    def p_at(b_: float, c_: float, n_: float) -> float:
        return float(max(reference.sf(_tango_z(-margin, b_, c_, n_)), reference.cdf(_tango_z(margin, b_, c_, n_))))

    return {
        "low": low,
        "high": high,
        "p": p_at(only_a, only_b, n),
        "min_p": p_at(0.0, 0.0, float(x.size)),
        "deff": deff,
        "n_effective": n,
        "df": df,
    }


def t_interval_difference(
    a: Sequence[float] | np.ndarray, b: Sequence[float] | np.ndarray, *, paired: bool, confidence: float
) -> dict[str, float]:
    """``mean(a) - mean(b)`` over units with a small-sample t interval: one value per unit (a cluster's
    mean), so the interval is the textbook one at the unit of inference.

    - Paired (the same units on both sides): Student's one-sample interval of the differences,
      ``mean(d) +/- t(K - 1) sd(d) / sqrt(K)`` for K units.
    - Unpaired (two sets of units): Welch's interval (Welch 1947), ``t`` on the Welch-Satterthwaite
      degrees of freedom.

    It replaced the percentile bootstrap over units in the findings (issue 57), which covered the
    true value 0.80 of the time over 6 units and 0.90 over 12 where it claimed 0.95: the
    bootstrap's distribution has the spread of the plug-in variance (divided by K, not K - 1) and
    normal tails.  Coverage measured in tests/test_findings_calibration.py and docs/findings.md.

    Returns:
        ``effect``, ``ci_low``, ``ci_high``, ``se`` (the standard error of the effect) and ``df``.
        No spread (every difference equal; each sample constant) gives ``ci_low = ci_high = effect``
        and ``se = 0``; fewer than two units on a side gives an interval of +/- infinity.

    Raises:
        ValueError: an empty side, paired sides of different lengths, or NaN values.
    """
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if not x.size or not y.size or (paired and x.shape != y.shape):
        raise ValueError(f"t_interval_difference needs non-empty sides (equal when paired), got {x.size} and {y.size}")
    if np.isnan(x).any() or np.isnan(y).any():
        raise ValueError("t_interval_difference got NaN values; drop the units first")
    if paired:
        d = x - y
        effect, k = float(d.mean()), d.size
        variance, df = (d.var(ddof=1) / k if k > 1 else np.inf), float(k - 1)
    else:
        effect = float(x.mean() - y.mean())
        va = x.var(ddof=1) / x.size if x.size > 1 else np.inf
        vb = y.var(ddof=1) / y.size if y.size > 1 else np.inf
        variance = va + vb
        terms = (va**2 / (x.size - 1) if x.size > 1 else np.inf) + (vb**2 / (y.size - 1) if y.size > 1 else np.inf)
        df = float(variance**2 / terms) if np.isfinite(terms) and terms > 0 else float(x.size + y.size - 2)
    se = float(np.sqrt(variance))
    if se == 0:
        return {"effect": effect, "ci_low": effect, "ci_high": effect, "se": 0.0, "df": df}
    half = float(reference_distribution(df).ppf(0.5 + confidence / 2)) * se if np.isfinite(se) and df > 0 else np.inf
    return {"effect": effect, "ci_low": effect - half, "ci_high": effect + half, "se": se, "df": df}


def seed_test(effects: Sequence[float] | np.ndarray) -> float:
    """Two-sided one-sample t-test that the per-seed effects' mean is 0: training seeds as
    replicates, each seed's effect one observation (``scipy.stats.ttest_1samp``, ``S - 1`` degrees of
    freedom).  It assumes the seeds' effects are normal around the effect of training in general:
    each is a mean over all units, and the seeds are drawn independently.  Effects that are all
    equal (to 1e-9 relative) give no variance to test against: p = 1 (no evidence either way), not
    0, and not a t statistic made of rounding error.

    Raises:
        ValueError: fewer than two effects.
    """
    from scipy.stats import ttest_1samp  # deferred: scipy loads where a test runs

    d = np.asarray(effects, dtype=float)
    if d.size < 2:
        raise ValueError(f"seed_test needs at least two seeds' effects, got {d.size}")
    if np.allclose(d, d[0], rtol=1e-9, atol=1e-12):
        return 1.0
    return float(ttest_1samp(d, 0.0).pvalue)


def crossed_bootstrap_difference(
    a: np.ndarray,
    b: np.ndarray,
    *,
    paired: bool,
    n_resamples: int,
    seed: int,
    confidence: float,
) -> dict[str, float]:
    """``mean(a) - mean(b)`` over training seeds and units, with a percentile interval from Owen's
    pigeonhole bootstrap (Owen 2007, *Ann. Appl. Stat.* 1(2)) for a crossed design: each resample
    draws the seeds (rows) and the units (columns) independently, with replacement, so the
    interval holds the variance between seeds and between units.

    Args:
        a, b: shape (seeds, units): one value per training seed and unit.  Paired: the same units
            in ``a`` and ``b``, resampled together.  Unpaired: two sets of units, each resampled
            on its own; the seeds are drawn once for both (the runs they compare share their seeds).

    Returns:
        ``effect``, ``ci_low``, ``ci_high`` and ``se`` (the bootstrap distribution's standard deviation).

    Raises:
        ValueError: not two-dimensional, different numbers of seeds (or of units, paired), or NaN.
    """
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if x.ndim != 2 or y.ndim != 2 or x.shape[0] != y.shape[0] or (paired and x.shape != y.shape):
        raise ValueError(f"crossed_bootstrap_difference needs (seeds, units) arrays, got {x.shape} and {y.shape}")
    if np.isnan(x).any() or np.isnan(y).any():
        raise ValueError("crossed_bootstrap_difference got NaN values; drop the units first")
    rng = np.random.default_rng(seed)
    n_seeds = x.shape[0]

    def weights(n: int) -> np.ndarray:  # (resamples, n): how often each row or column is drawn, / n
        return rng.multinomial(n, np.full(n, 1 / n), size=n_resamples) / n

    w = weights(n_seeds)
    if paired:
        d = x - y
        effect, draws = float(d.mean()), np.einsum("rs,su,ru->r", w, d, weights(d.shape[1]))
    else:
        effect = float(x.mean() - y.mean())
        draws = np.einsum("rs,su,ru->r", w, x, weights(x.shape[1]))
        draws -= np.einsum("rs,su,ru->r", w, y, weights(y.shape[1]))
    tail = (1 - confidence) / 2
    low, high = np.quantile(draws, [tail, 1 - tail])
    return {"effect": effect, "ci_low": float(low), "ci_high": float(high), "se": float(draws.std(ddof=1))}
