"""Paired tests, multiple-comparison correction and bootstrap intervals over item-level tables.

Sources: FictionalQA (Kirchenbauer et al. 2026) compares checkpoints of fine-tuning
runs on the same questions; SORT (Pink et al. 2024, App. E.2-E.3, Figs. 14-15) tests such
checkpoint matrices with McNemar's test on per-question correctness and a paired t-test
on the log-probability of the correct answer normalised over the answer options.  Every
test comes from the field's libraries (statsmodels, scipy); this module only pairs the
items and defines the degenerate cases.

Keys and pairs.  *Item rows* have one row per item and key, with ``item_id`` and the
tested value column.  A *key* is a tuple of values of some key columns, e.g.
``(run, step)`` for a checkpoint (FictionalQA, SORT on the fiction documents, grounding),
``(condition,)`` (SORT's memory conditions) or ``(run, step, condition)`` (SORT's
parametric fine-tuning).  :func:`pair_tests` tests a list of ordered pairs ``(a, b)`` of
keys, e.g. every pair of one run's checkpoints (the matrix, diagonal included) and that run
against the control run at each matched step (:func:`checkpoint_pairs`,
:func:`matched_pairs`).

Pairing.  Two keys are compared on the items both were scored on, joined on ``item_id``
(inner join); an item whose value is missing (NaN) in either is dropped.  Within a key an
``item_id`` appears once.

McNemar (0/1 correctness, e.g. ``acc`` or SORT's ``correct``;
``statsmodels.stats.contingency_tables.mcnemar``).  With discordant counts b (a right,
b wrong) and c (a wrong, b right): the exact binomial test when ``b + c < exact_below``
(default 25), else the chi-square statistic with continuity correction.  Two-sided, so the
(a, b) and (b, a) cells are the same test.  When ``b + c == 0`` (e.g. the diagonal) the two
keys agree on every item and the p-value is defined as 1.0.

Paired t-test (continuous per-item scores; ``scipy.stats.ttest_rel``).  FictionalQA's
``gold_logprob_norm`` is the log-probability of the gold choice normalised over the
choices, i.e. log softmax of the choices' summed log-likelihoods at the gold index (nats,
<= 0); SORT's ``score`` is log(p(correct) / (p(A) + p(B))) (nats, <= 0).  The test is on
the per-item differences d = a - b; ``alternative="greater"`` (default) tests mean(d) > 0,
"the row key gives the correct answer a higher probability than the column key"
(SORT Fig. 15); ``"less"`` and ``"two-sided"`` are as in scipy.  When every difference is 0
(e.g. the diagonal) scipy returns NaN; the statistic is defined as 0.0 and the p-value as
1.0.  A one-sided (a, b) cell and its (b, a) mirror are different tests.

Correction.  Every table of p-values gets ``pvalue_holm``: Holm's step-down adjustment
(:func:`holm_adjust`, the numbers of ``statsmodels.stats.multitest.multipletests`` with
``method="holm"``; named in the ``correction`` column) over a family of tests.  A family is
every distinct test between two different keys among the table's pairs (by default all of
them; ``family`` names key columns that split the table into one family per value, e.g. one
per condition): for McNemar and a two-sided t-test each unordered pair once (copied to its
mirrored cell), for a one-sided t-test every ordered off-diagonal pair.  Diagonal cells keep
p = 1 and are not in any family; a NaN p-value (scipy's, e.g. one item with a non-zero
difference) is left out of its family and stays NaN.

Recomputation.  :func:`recompute_pvalue` recomputes a saved row's uncorrected p-value
straight from the item rows with statsmodels / scipy (:func:`direct_pvalue`), an
independent check of the saved tables.

Sample size.  :func:`mcnemar_sample_size`: paired items McNemar's test needs to detect a
difference in accuracy at a given power (Connor 1987), for sizing a comparison from a pilot.

Bootstrap.  :func:`bootstrap_ci` gives a percentile bootstrap confidence interval of a
mean (``scipy.stats.bootstrap``), used for the accuracy bands of the summary figures
(SORT Figs. 2 and 10 show bootstrapped 95% intervals); :func:`bootstrap_difference` the
difference of two means, paired or not, with its bootstrap standard error, from which
:func:`minimum_detectable_effect` gives the smallest effect a two-sided test at this n
detects with a given power (the headline findings, :mod:`knowlab.findings`).
"""

from __future__ import annotations

import functools
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any

import numpy as np
import pandas as pd

from knowlab.core.settings import StepSettings

# scipy.stats and statsmodels load in the functions that test ("# deferred"): the Snakefile imports
# knowlab.findings, which imports this module, and at module top they add 0.7 s to every Snakemake
# start (each dry run) on a 2-core CPU.

CORRECTION = "holm"
TESTS = ("mcnemar", "ttest")
ALTERNATIVES = ("greater", "less", "two-sided")
CHECKPOINT_COLUMNS = ("run", "step")

Key = tuple
Pair = tuple[Key, Key]


@dataclass(frozen=True)
class StatsSettings(StepSettings):
    """Every statistical knob the studies share, read once from the config (block ``stats`` and the
    project ``seed``), or a slice of them: the fields one step reads, the others left out.

    A rule's param ``stats`` carries only the fields its step reads, ``STATS.param("confidence",
    ...)`` (:meth:`param`; ``STATS`` is the whole record, ``rules/common.smk``), so that a change of
    one key re-runs only the rules that read it (``tests/workflow/test_rerun.py``).  Its script
    rebuilds the slice with :meth:`from_param`; reading a field left out of it raises
    ``AttributeError`` naming the key and where to add it.  The values go to the functions of this
    module and of :mod:`knowlab.core.clustered`, none of which has a default for any of them.  The
    findings' decision knobs (``findings.alpha``, ``power``, ``equivalence_margin``) are the
    findings' own (:class:`knowlab.findings.FindingsSettings`, which holds its own slice of this
    record): no other rule decides anything."""

    confidence: float
    """Level of every interval, bands and findings alike (``stats.confidence``; 0.95)."""
    bootstrap_resamples: int
    """Resamples of every bootstrap interval (``stats.bootstrap_resamples``)."""
    permutation_resamples: int
    """Permutations of a test that cannot list them all, and fresh draws of a randomised split
    (``stats.permutation_resamples``)."""
    mcnemar_exact_below: int
    """McNemar is the exact binomial test below this many discordant pairs (``stats.mcnemar_exact_below``)."""
    ttest_alternative: str
    """The paired t-test's alternative of the checkpoint and condition matrices (``stats.ttest_alternative``)."""
    seed: int
    """Seed of every bootstrap and permutation stream (the project ``seed``)."""

    def __post_init__(self) -> None:
        held = self.held()
        if "confidence" in held and not 0 < self.confidence < 1:
            raise ValueError(f"stats.confidence must be in (0, 1), got {self.confidence}")
        for name, least in (("bootstrap_resamples", 1), ("permutation_resamples", 1), ("mcnemar_exact_below", 0)):
            if name in held and getattr(self, name) < least:
                raise ValueError(f"stats.{name} must be at least {least}, got {getattr(self, name)}")
        if "ttest_alternative" in held and self.ttest_alternative not in ALTERNATIVES:
            raise ValueError(f"stats.ttest_alternative must be one of {ALTERNATIVES}, got {self.ttest_alternative!r}")

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> StatsSettings:
        stats = config["stats"]
        return cls(
            confidence=float(stats["confidence"]),
            bootstrap_resamples=int(stats["bootstrap_resamples"]),
            permutation_resamples=int(stats["permutation_resamples"]),
            mcnemar_exact_below=int(stats["mcnemar_exact_below"]),
            ttest_alternative=str(stats["ttest_alternative"]),
            seed=int(config["seed"]),
        )

    def held(self) -> tuple[str, ...]:
        """The names of the fields this record holds, in field order (all of them unless it is a slice)."""
        return tuple(f.name for f in fields(self) if f.name in vars(self))

    def param(self, *names: str) -> dict[str, Any]:
        """The fields ``names`` (every field held when none is named) as a dict of builtins, in field
        order whatever the order of ``names``: what a rule's param ``stats`` carries, the slice its
        step reads.

        Raises:
            AttributeError: a name is no field, or a field left out of this slice.
        """
        for name in names:
            getattr(self, name)  # raises for a field that is not held (__getattr__)
        return {name: getattr(self, name) for name in self.held() if not names or name in names}

    def only(self, *names: str) -> StatsSettings:
        """The slice of this record that holds only the fields ``names`` (:meth:`param`)."""
        return type(self).from_param(self.param(*names))

    @classmethod
    def from_param(cls, param: Mapping[str, Any]) -> StatsSettings:
        """The record of :meth:`param`'s dict: the fields it holds, checked; any other field left out.

        Raises:
            TypeError: ``param`` has a field the record lacks.
        """
        unknown = set(param) - {f.name for f in fields(cls)}
        if unknown:
            raise TypeError(f"{cls.__name__} has no field(s) {sorted(unknown)}")
        record = object.__new__(cls)
        for f in fields(cls):  # in field order, as the constructor sets them
            if f.name in param:
                object.__setattr__(record, f.name, param[f.name])
        record.__post_init__()
        return record

    def __getattr__(self, name: str) -> Any:
        # reached only when the normal lookup fails: a field left out of this slice, or no field at all
        if name in {f.name for f in fields(self)}:
            key = name if name == "seed" else f"stats.{name}"
            raise AttributeError(
                f"{key} is not in this step's slice of the statistics settings (it holds {list(self.held())}): "
                f"add {name!r} where the slice is made, e.g. its rule's param stats, STATS.param(...)"
            )
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    # equality, hash and repr over the fields held (those dataclass writes read every field)
    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self.param() == other.param()

    def __hash__(self) -> int:
        return hash(tuple(self.param().items()))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(f'{name}={value!r}' for name, value in self.param().items())})"


def paired_items(a: pd.Series, b: pd.Series) -> pd.DataFrame:
    """Columns ``a, b`` of the items present and not NaN in both series (joined on the index).

    Raises:
        ValueError: the series share no item.
    """
    joined = pd.concat([a.rename("a"), b.rename("b")], axis=1, join="inner").dropna()
    if joined.empty:
        raise ValueError("the two checkpoints share no item_id")
    return joined


def mcnemar_pair(a: pd.Series, b: pd.Series, exact_below: int) -> dict[str, Any]:
    """McNemar's test of two 0/1 correctness series indexed by ``item_id``.

    Returns ``n`` (paired items), ``b`` (a right, b wrong), ``c`` (a wrong, b right),
    ``statistic``, ``pvalue``, ``exact`` (the exact binomial test was used).  Items missing
    or NaN in either series are dropped.

    Raises:
        ValueError: the series share no item.
    """
    from statsmodels.stats.contingency_tables import mcnemar as sm_mcnemar  # deferred: see the module's imports

    joined = paired_items(a, b).astype(bool)
    n_b = int((joined["a"] & ~joined["b"]).sum())
    n_c = int((~joined["a"] & joined["b"]).sum())
    both = int((joined["a"] & joined["b"]).sum())
    neither = int((~joined["a"] & ~joined["b"]).sum())
    if n_b + n_c == 0:
        return {"n": len(joined), "b": 0, "c": 0, "statistic": 0.0, "pvalue": 1.0, "exact": True}
    exact = n_b + n_c < exact_below
    result = sm_mcnemar(np.array([[both, n_b], [n_c, neither]]), exact=exact, correction=True)
    return {
        "n": len(joined),
        "b": n_b,
        "c": n_c,
        "statistic": float(result.statistic),
        "pvalue": float(result.pvalue),
        "exact": exact,
    }


def mcnemar_sample_size(p_b: float, p_c: float, *, alpha: float, power: float) -> int:
    """Paired items for McNemar's test (two-sided, level ``alpha``) to reject at ``power``.

    Connor (1987, Biometrics 43:207-211), normal approximation: with discordant proportions
    ``p_b`` (a right, b wrong) and ``p_c`` (a wrong, b right), psi = p_b + p_c and
    delta = p_b - p_c (the difference in accuracy),
    n = (z(1 - alpha/2) sqrt(psi) + z(power) sqrt(psi - delta^2))^2 / delta^2, rounded up.
    For a Holm-corrected family of m tests, ``alpha / m`` bounds the first step.

    Raises:
        ValueError: proportions outside [0, 1] or summing above 1, equal proportions (no
            difference to detect), or ``alpha`` / ``power`` outside (0, 1).
    """
    from scipy.stats import norm  # deferred: see the module's imports

    if not (0 <= p_b <= 1 and 0 <= p_c <= 1 and p_b + p_c <= 1):
        raise ValueError(f"discordant proportions must lie in [0, 1] and sum to at most 1, got {p_b}, {p_c}")
    if p_b == p_c:
        raise ValueError(f"equal discordant proportions ({p_b}): no difference in accuracy to detect")
    if not (0 < alpha < 1 and 0 < power < 1):
        raise ValueError(f"alpha and power must lie in (0, 1), got {alpha}, {power}")
    psi, delta = p_b + p_c, p_b - p_c
    root = norm.ppf(1 - alpha / 2) * np.sqrt(psi) + norm.ppf(power) * np.sqrt(psi - delta**2)
    return int(np.ceil(root**2 / delta**2))


def ttest_pair(a: pd.Series, b: pd.Series, alternative: str) -> dict[str, Any]:
    """Paired t-test of two continuous per-item scores indexed by ``item_id``.

    ``alternative="greater"`` tests mean(a - b) > 0 (``a``, the row key, scores higher than
    ``b``); ``"less"`` and ``"two-sided"`` as in ``scipy.stats.ttest_rel`` (config
    ``stats.ttest_alternative``; no default).  Items missing or
    NaN in either series are dropped.  When every difference is 0 the result is defined as
    ``statistic = 0.0, pvalue = 1.0`` (scipy would return NaN).

    Returns:
        ``n`` (paired items), ``mean_diff`` (mean of a - b, in the scores' unit),
        ``statistic`` (t), ``pvalue``, ``alternative``.

    Raises:
        ValueError: the series share no item, or ``alternative`` is not one of
            :data:`ALTERNATIVES`.
    """
    from scipy.stats import ttest_rel  # deferred: see the module's imports

    if alternative not in ALTERNATIVES:
        raise ValueError(f"alternative must be one of {ALTERNATIVES}, got {alternative!r}")
    joined = paired_items(a, b).astype(float)
    diff = joined["a"] - joined["b"]
    result = {"n": len(joined), "mean_diff": float(diff.mean())}
    if (diff == 0).all():
        return {**result, "statistic": 0.0, "pvalue": 1.0, "alternative": alternative}
    test = ttest_rel(joined["a"], joined["b"], alternative=alternative)
    return {**result, "statistic": float(test.statistic), "pvalue": float(test.pvalue), "alternative": alternative}


def checkpoint_pairs(steps: Sequence[int], run: str, control: str | None = None) -> list[Pair]:
    """Pairs of checkpoint keys ``(run, step)``: every ordered pair of ``run``'s ``steps`` (the
    full matrix, diagonal included, row-major), then, when ``control`` is given, ``run`` vs
    ``control`` at each step (:func:`matched_pairs`)."""
    pairs = [((run, a), (run, b)) for a in steps for b in steps]
    return pairs + matched_pairs(steps, run, control) if control else pairs


def matched_pairs(steps: Sequence[int], run: str, control: str) -> list[Pair]:
    """``run`` vs ``control`` at each matched step: ``((run, s), (control, s))`` for ``s`` in ``steps``."""
    return [((run, s), (control, s)) for s in steps]


def _series_by_key(
    rows: pd.DataFrame, key_columns: Sequence[str], value: str, keys: Sequence[Key]
) -> dict[Key, pd.Series]:
    """``{key: value series indexed by item_id}`` for each of ``keys``."""
    groups = {tuple(k): g for k, g in rows.groupby(list(key_columns), sort=False)}
    absent = [k for k in keys if k not in groups]
    if absent:
        raise ValueError(f"no rows for keys {absent[:3]} (columns {tuple(key_columns)})")
    out = {}
    for key in keys:
        group = groups[key]
        duplicated = group["item_id"].duplicated()
        if duplicated.any():
            first = group.loc[duplicated, "item_id"].iloc[0]
            raise ValueError(
                f"key {key} has {int(duplicated.sum())} repeated item_id (e.g. {first!r}); filter the rows "
                "(e.g. to one model) or add the column that tells them apart to the key columns"
            )
        out[key] = group.set_index("item_id")[value]
    return out


def holm_adjust(pvalues: Sequence[float] | np.ndarray) -> np.ndarray:
    """Holm's step-down adjusted p-values of one family of tests, in the order given.

    Holm (1979), "A simple sequentially rejective multiple test procedure", Scand. J. Statist.
    6:65-70: with the m p-values sorted ascending, p_(1) <= ... <= p_(m),
    q_(i) = max_{j <= i} min(1, (m - j + 1) p_(j)); a test is rejected at level alpha when its
    q <= alpha.  Ties get equal q whatever their order.

    Args:
        pvalues: shape (m,), in [0, 1]; the caller leaves NaN out of the family.

    Returns:
        float64 array of shape (m,); empty for m = 0.

    The same floating-point operations as ``statsmodels.stats.multitest.multipletests(pvalues,
    method="holm")[1]`` (statsmodels 0.15), so the numbers are bit-identical (tested); written
    here because that branch calls ``gc.collect()`` on every call, 0.1 s or more in a process that
    holds torch (a third of the statistics tests' time).
    """
    p = np.asarray(pvalues, dtype=float)
    order = np.argsort(p)
    adjusted = np.maximum.accumulate(p[order] * np.arange(len(p), 0, -1))
    adjusted[adjusted > 1] = 1
    out = np.empty_like(adjusted)
    out[order] = adjusted
    return out


def _holm(pairs: Sequence[Pair], pvalues: Sequence[float], ordered: bool, families: Sequence[Hashable]) -> list[float]:
    """Holm-adjusted p-values of ``pairs``, family by family (see the module docstring)."""
    tests: dict[Hashable, dict[Hashable, float]] = {}
    names = [(a, b) if ordered else frozenset((a, b)) for a, b in pairs]
    for (a, b), name, p, family in zip(pairs, names, pvalues, families):
        if a != b and not np.isnan(p):
            tests.setdefault(family, {}).setdefault(name, p)
    adjusted = {}
    for family, members in tests.items():
        corrected = holm_adjust(list(members.values()))
        adjusted.update({(family, name): float(q) for name, q in zip(members, corrected)})
    return [1.0 if a == b else adjusted.get((f, n), np.nan) for (a, b), n, f in zip(pairs, names, families)]


def pair_tests(
    rows: pd.DataFrame,
    pairs: Sequence[Pair],
    test: str,
    value: str,
    *,
    key_columns: Sequence[str] = CHECKPOINT_COLUMNS,
    alternative: str | None = None,
    exact_below: int | None = None,
    family: Sequence[str] = (),
) -> pd.DataFrame:
    """McNemar or paired t-tests between the keys of each pair, Holm-corrected over a family of tests.

    Args:
        rows: item rows with ``item_id``, the ``key_columns`` and ``value``; within a key an
            ``item_id`` appears once.
        pairs: ordered ``(a, b)`` pairs of keys (tuples of values of ``key_columns``), in
            table order; ``b`` is the column key of a matrix cell, ``a`` the row key.
        test: ``"mcnemar"`` (:func:`mcnemar_pair`; ``value`` is 0/1 correctness) or
            ``"ttest"`` (:func:`ttest_pair`; ``value`` is a continuous score).
        value: the item column tested.
        key_columns: the columns a key's values belong to (default ``("run", "step")``).
        alternative: the t-test's alternative on mean(a - b): ``"greater"``, ``"less"`` or
            ``"two-sided"`` (config ``stats.ttest_alternative``; required for the t-test, unused
            by McNemar, which is always two-sided).
        exact_below: McNemar uses the exact test when fewer items are discordant (config
            ``stats.mcnemar_exact_below``; required for McNemar, unused by the t-test).
        family: key columns that name the Holm families: pairs whose row keys ``a`` share
            the values of these columns form one family (e.g. ``("condition",)``); default
            ``()``, the whole table is one family.

    Returns:
        One row per pair, in order: ``{col}_a`` for each key column, then ``{col}_b``,
        ``n`` (paired items), ``mean_a``, ``mean_b`` (mean of ``value`` on the paired items:
        accuracy, or mean score in the scores' unit), then for McNemar ``b`` (a right, b
        wrong) and ``c`` (a wrong, b right), for the t-test ``mean_diff`` (mean of a - b);
        ``statistic``, ``pvalue``, ``pvalue_holm``, then ``exact`` (McNemar) or
        ``alternative`` (t-test), and ``correction`` (``"holm"``).

    Raises:
        ValueError: no pairs; an unknown ``test``, ``alternative`` or ``family`` column;
            McNemar without ``exact_below``; missing columns; a key of the wrong length; a key
            without rows or with a repeated ``item_id``; two keys that share no item.
    """
    if test not in TESTS:
        raise ValueError(f"test must be one of {TESTS}, got {test!r}")
    if test == "mcnemar" and exact_below is None:
        raise ValueError("McNemar needs exact_below (config stats.mcnemar_exact_below)")
    if test == "ttest" and alternative not in ALTERNATIVES:
        raise ValueError(f"alternative must be one of {ALTERNATIVES}, got {alternative!r}")
    key_columns = tuple(key_columns)
    missing = [c for c in ("item_id", value, *key_columns) if c not in rows.columns]
    if missing:
        raise ValueError(f"pair_tests needs columns {['item_id', value, *key_columns]}; missing {missing}")
    unknown = [c for c in family if c not in key_columns]
    if unknown:
        raise ValueError(f"family columns {unknown} are not key columns {key_columns}")
    pairs = [(tuple(a), tuple(b)) for a, b in pairs]
    if not pairs:
        raise ValueError("pair_tests got no pairs")
    keys = list(dict.fromkeys(k for pair in pairs for k in pair))
    bad = [k for k in keys if len(k) != len(key_columns)]
    if bad:
        raise ValueError(f"keys must have {len(key_columns)} values ({key_columns}); got {bad[:3]}")
    series = _series_by_key(rows, key_columns, value, keys)

    out = []
    for a, b in pairs:
        x, y = series[a], series[b]
        try:
            if test == "mcnemar":
                res = mcnemar_pair(x, y, exact_below)
                stats = {"b": res["b"], "c": res["c"]}
                last = {"exact": res["exact"]}
            else:
                res = ttest_pair(x, y, alternative)
                stats = {"mean_diff": res["mean_diff"]}
                last = {"alternative": res["alternative"]}
        except ValueError as err:
            raise ValueError(f"{a!r} vs {b!r}: {err}") from err
        joined = paired_items(x, y).astype(float)
        row: dict[str, Any] = {f"{c}_a": v for c, v in zip(key_columns, a)}
        row.update({f"{c}_b": v for c, v in zip(key_columns, b)})
        row.update({"n": res["n"], "mean_a": float(joined["a"].mean()), "mean_b": float(joined["b"].mean())})
        row.update(stats)
        row.update({"statistic": res["statistic"], "pvalue": res["pvalue"]})
        row.update(last)
        out.append(row)
    table = pd.DataFrame(out)
    positions = [key_columns.index(c) for c in family]
    families = [tuple(a[i] for i in positions) for a, _ in pairs]
    ordered = test == "ttest" and alternative != "two-sided"
    holm = _holm(pairs, table["pvalue"].tolist(), ordered, families)
    table.insert(table.columns.get_loc("pvalue") + 1, "pvalue_holm", holm)
    table["correction"] = CORRECTION
    return table


def bootstrap_ci(
    values: Sequence[float] | np.ndarray, *, n_resamples: int, seed: int, confidence: float
) -> tuple[float, float]:
    """Percentile bootstrap confidence interval ``(low, high)`` of the mean of ``values``.

    ``n_resamples``, ``seed`` and ``confidence`` have no default: every caller passes the config's
    (:class:`StatsSettings`: ``stats.bootstrap_resamples``, ``seed``, ``stats.confidence``).

    ``scipy.stats.bootstrap(..., method="percentile", rng=np.random.default_rng(seed))``.
    Percentile rather than scipy's default BCa: on 0/1 accuracies over few items BCa's
    jackknife acceleration degenerates (scipy warns and returns NaN bounds), while the
    percentile interval is always defined.  NaN values are dropped first.  Fewer than 2
    values, or all values equal, give ``(mean, mean)`` without resampling (there is no
    spread; scipy would warn or return NaN); no values give ``(nan, nan)``.
    """
    x = np.asarray(values, dtype=float)
    x = x[~np.isnan(x)]
    if x.size == 0:
        return (float("nan"), float("nan"))
    est = bootstrap_difference(x, confidence=confidence, n_resamples=n_resamples, seed=seed)
    return (est["ci_low"], est["ci_high"])


def bootstrap_difference(
    a: Sequence[float] | np.ndarray,
    b: Sequence[float] | np.ndarray | None = None,
    *,
    paired: bool = True,
    n_resamples: int,
    seed: int,
    confidence: float,
) -> dict[str, float]:
    """Difference of means ``mean(a) - mean(b)`` with a percentile bootstrap interval and standard error.

    Paired (``paired=True``): ``a`` and ``b`` are aligned per unit (item, document) and the
    units are resampled together, i.e. the bootstrap of the mean of ``a - b``; ``b=None``
    takes ``a`` as the differences already.  Unpaired: each sample is resampled on its own
    (``scipy.stats.bootstrap(..., paired=False)``), the design of two disjoint sets of units.
    Percentile intervals, as :func:`bootstrap_ci` (BCa degenerates on 0/1 data over few units).
    No spread to resample (every difference equal, paired; each sample constant, unpaired)
    gives ``ci_low = ci_high = effect`` and ``se = 0``.

    Returns:
        ``effect``, ``ci_low``, ``ci_high`` (in the values' unit), ``se`` (standard deviation of
        the bootstrap distribution).

    Raises:
        ValueError: an empty sample, paired samples of different lengths, or NaN values.
    """
    from scipy.stats import bootstrap  # deferred: see the module's imports

    x = np.asarray(a, dtype=float)
    y = None if b is None else np.asarray(b, dtype=float)
    if x.size == 0 or (y is not None and y.size == 0):
        raise ValueError("bootstrap_difference needs at least one value in each sample")
    if np.isnan(x).any() or (y is not None and np.isnan(y).any()):
        raise ValueError("bootstrap_difference got NaN values; drop the units first")
    if paired and y is not None:
        if x.shape != y.shape:
            raise ValueError(f"paired samples differ in length: {x.size} vs {y.size}")
        x, y = x - y, None
    if y is None:
        samples, effect, flat = (x,), float(x.mean()), bool((x == x[0]).all())

        def statistic(d, axis=-1):
            return d.mean(axis=axis)

    else:
        samples, effect = (x, y), float(x.mean() - y.mean())
        flat = bool((x == x[0]).all() and (y == y[0]).all())

        def statistic(u, v, axis=-1):
            return u.mean(axis=axis) - v.mean(axis=axis)

    if flat or all(s.size < 2 for s in samples):
        return {"effect": effect, "ci_low": effect, "ci_high": effect, "se": 0.0}
    result = bootstrap(
        samples,
        statistic,
        paired=False,
        vectorized=True,
        confidence_level=confidence,
        n_resamples=n_resamples,
        method="percentile",
        rng=np.random.default_rng(seed),
    )
    return {
        "effect": effect,
        "ci_low": float(result.confidence_interval.low),
        "ci_high": float(result.confidence_interval.high),
        "se": float(result.standard_error),
    }


@functools.lru_cache(maxsize=256)
def reference_distribution(df: float | None):
    """A test statistic's reference distribution: the standard normal (``df`` None) or Student's t on
    ``df`` degrees of freedom (``scipy.stats`` frozen distributions; one per ``df``, kept: freezing one
    builds a distribution object and its docstring, about 0.6 ms, and the findings' simulations ask
    thousands of times)."""
    from scipy.stats import norm, t  # deferred: see the module's imports

    return norm if df is None else t(df)


def minimum_detectable_effect(se: float, alpha: float, power: float, df: float | None = None) -> float:
    """Smallest true effect a two-sided test at level ``alpha`` detects with probability ``power``.

    Bloom 1995 ("Minimum detectable effects", Evaluation Review 19:547-556): MDE = (q(1 - alpha/2) +
    q(power)) * SE, with SE the standard error of the effect estimate at this n and q the quantiles
    of the normal (``df`` None: 2.80 SE at alpha 0.05 and 80% power) or of Student's t on ``df``
    degrees of freedom (the reference of a t interval over few units); in the effect's unit.  An
    infinite SE, or no degree of freedom, detects nothing: infinity.

    Raises:
        ValueError: ``alpha`` or ``power`` outside (0, 1), or a negative ``se``.
    """
    if not (0 < alpha < 1 and 0 < power < 1):
        raise ValueError(f"alpha and power must lie in (0, 1), got {alpha}, {power}")
    if se < 0:
        raise ValueError(f"a standard error cannot be negative, got {se}")
    if not np.isfinite(se) or (df is not None and df <= 0):
        return float("inf")
    q = reference_distribution(df)
    return float((q.ppf(1 - alpha / 2) + q.ppf(power)) * se)


def _given(row: Mapping[str, Any], name: str) -> Any:
    """``row[name]`` when the row has it and it is not missing, else None."""
    value = row.get(name)
    return None if value is None or (np.ndim(value) == 0 and pd.isna(value)) else value


def recompute_pvalue(
    row: Mapping[str, Any],
    rows: pd.DataFrame,
    *,
    within: Sequence[str] = (),
    key_columns: Sequence[str] | None = None,
    value: str | None = None,
    test: str | None = None,
) -> float:
    """Recompute the uncorrected p-value of one saved pair-test row from the item rows.

    An independent check of a saved table (:func:`pair_tests` and the study tables made
    from it): the row's two keys are re-selected from ``rows`` by its ``{col}_a`` /
    ``{col}_b`` values, each side also restricted to ``rows[col] == row[col]`` for the
    ``within`` columns (e.g. ``("suite",)``), merged on ``item_id`` (NaN dropped) and tested
    directly (:func:`direct_pvalue`): statsmodels ``mcnemar`` with the row's ``exact`` flag
    and the continuity correction, or scipy ``ttest_rel`` with the row's ``alternative``.
    The module's definitions apply: no discordant item / all differences 0 give 1.0.

    What is not given is read from the row: ``key_columns`` from its ``key_columns``
    (comma-joined) else ``("run", "step")``; ``value`` (the item column) from its
    ``metric``; ``test`` from its ``test``, else ``"ttest"`` when it has an ``alternative``
    and ``"mcnemar"`` when it has an ``exact`` flag.

    Raises:
        ValueError: the value column is not in ``rows``, the test is unknown or cannot be
            told from the row, or a key has a repeated ``item_id``.
    """
    if key_columns is None:
        named = _given(row, "key_columns")
        key_columns = str(named).split(",") if named is not None else CHECKPOINT_COLUMNS
    value = value or row.get("metric")
    if value not in rows.columns:
        raise ValueError(f"cannot recompute a p-value: metric {value!r} is not a column of the item rows")
    if test is None:
        test = _given(row, "test")
    if test is None and _given(row, "alternative") is not None:
        test = "ttest"
    elif test is None and _given(row, "exact") is not None:
        test = "mcnemar"
    if test not in TESTS:
        raise ValueError(f"cannot recompute a p-value for test {test!r} (one of {TESTS})")

    def pick(side: str) -> pd.DataFrame:
        mask = np.ones(len(rows), dtype=bool)
        for column in key_columns:
            mask &= (rows[column] == row[f"{column}_{side}"]).to_numpy()
        for column in within:
            mask &= (rows[column] == row[column]).to_numpy()
        part = rows.loc[mask, ["item_id", value]]
        if part["item_id"].duplicated().any():
            raise ValueError(f"key {side} of the row has a repeated item_id")
        return part

    paired = pick("a").merge(pick("b"), on="item_id", suffixes=("_a", "_b")).dropna()
    return direct_pvalue(paired[f"{value}_a"], paired[f"{value}_b"], test, row.get("exact"), row.get("alternative"))


def direct_pvalue(x, y, test: str, exact: bool | None = None, alternative: str | None = None) -> float:
    """The p-value of paired per-item values straight from statsmodels / scipy (checks of saved tables).

    ``test="mcnemar"``: ``x``, ``y`` are 0/1 correctness; statsmodels ``mcnemar`` on their 2x2
    table with ``exact`` and the continuity correction.  ``test="ttest"``: scipy
    ``ttest_rel(x, y, alternative=alternative)``.  No discordant pair / all differences 0
    give 1.0, the definitions of :func:`mcnemar_pair` and :func:`ttest_pair`.
    """
    from scipy.stats import ttest_rel  # deferred: see the module's imports
    from statsmodels.stats.contingency_tables import mcnemar as sm_mcnemar  # deferred: see the module's imports

    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if test == "mcnemar":
        x, y = x.astype(bool), y.astype(bool)
        table = np.array([[(x & y).sum(), (x & ~y).sum()], [(~x & y).sum(), (~x & ~y).sum()]])
        if table[0, 1] + table[1, 0] == 0:
            return 1.0
        return float(sm_mcnemar(table, exact=bool(exact), correction=True).pvalue)
    if (x == y).all():
        return 1.0
    return float(ttest_rel(x, y, alternative=alternative).pvalue)
