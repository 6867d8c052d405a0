"""Exact one-sided tests and the Benjamini-Hochberg procedure, without scipy.

Fisher's exact test, one-sided: a runner ran n of its pool's N jobs and had k of the pool's K infra
failures. Under "the runner is no different from the rest of its pool" the runner's count is
hypergeometric (N, K, n), and the p-value is P(X >= k). Every term is computed in log space from one
table of log-factorials, so 10^6 jobs neither overflow nor lose the tail; the terms of all runners are
summed at once with numpy (their total count is at most the number of jobs), each tail only as far
as its terms can still change the float sum (_last_term: the p-values are those of the whole tail,
to the bit).

Benjamini-Hochberg (1995): sort the m p-values, q_(i) = min over j >= i of p_(j) * m / j, capped at 1;
rejecting q < alpha controls the false discovery rate at alpha for independent or positively
dependent tests.
"""

from __future__ import annotations

import numpy as np


def log_factorials(n: int) -> np.ndarray:
    """log(i!) for i in 0..n."""
    table = np.zeros(n + 1, dtype=np.float64)
    if n >= 1:
        table[1:] = np.cumsum(np.log(np.arange(1, n + 1, dtype=np.float64)))
    return table


def fisher_greater(k, n, K, N) -> np.ndarray:
    """P(X >= k) for X ~ Hypergeometric(population N, successes K, draws n), elementwise.

    All four arguments are integer arrays (or scalars) of one shape, with 0 <= k <= n <= N and
    0 <= K <= N. The p-value of "this runner's share of the pool's infra failures is larger than its
    share of the pool's jobs" (Fisher's exact test, one-sided).
    """
    k, n, K, N = (np.atleast_1d(np.asarray(v, dtype=np.int64)) for v in (k, n, K, N))
    if not len(k):
        return np.zeros(0, dtype=np.float64)
    lf = log_factorials(int(N.max(initial=0)))
    low = np.maximum(k, np.maximum(0, n - (N - K)))  # X >= n - (N - K) always
    high = _last_term(lf, low, np.minimum(n, K), n, K, N)
    terms = np.maximum(high - low + 1, 0)
    owner = np.repeat(np.arange(len(k)), terms)
    starts = np.repeat(np.cumsum(terms) - terms, terms)
    x = np.repeat(low, terms) + (np.arange(int(terms.sum())) - starts)
    log_term = _log_term(lf, x, n[owner], K[owner], N[owner])
    # log-sum-exp per owner: shift by each owner's largest term.
    peak = np.full(len(k), -np.inf)
    np.maximum.at(peak, owner, log_term)
    sums = np.zeros(len(k), dtype=np.float64)
    np.add.at(sums, owner, np.exp(log_term - peak[owner]))
    with np.errstate(divide="ignore"):
        p = np.where(terms > 0, np.exp(np.log(np.where(sums > 0, sums, 1.0)) + np.where(terms > 0, peak, 0.0)), 0.0)
    # k <= lowest possible value: the tail is everything.
    p = np.where(k <= np.maximum(0, n - (N - K)), 1.0, p)
    return np.clip(p, 0.0, 1.0)


def _log_term(lf: np.ndarray, x, n, K, N):
    """log P(X = x), X ~ Hypergeometric(N, K, n)."""
    return (lf[K] - lf[x] - lf[K - x] + lf[N - K] - lf[n - x] - lf[N - K - n + x]
            - (lf[N] - lf[n] - lf[N - n]))


def _last_term(lf: np.ndarray, low: np.ndarray, high: np.ndarray, n, K, N) -> np.ndarray:
    """The last x of each tail [low, high] whose term can change the sum: past the mode the terms only
    fall, and one below e^-50 of a term already summed (>= 1 once scaled by the largest) is less than
    half an ulp of the sum, so adding it, and every later one, leaves the float sum as it was. The
    p-values are the same to the bit as summing the whole tail; the work is the bulk of each tail."""
    mode = (n + 1) * (K + 1) // (N + 2)  # the hypergeometric pmf rises up to here, then falls
    top = np.clip(mode, low, np.maximum(high, low))
    asks = high > top
    if not asks.any():
        return high
    rows = np.flatnonzero(asks)
    t, h, nn, KK, NN = top[rows], high[rows], n[rows], K[rows], N[rows]
    floor = _log_term(lf, t, nn, KK, NN) - 50.0
    # Binary search of the first x in (top, high] below the floor (the terms fall monotonically there).
    below, above = t, h + 1  # below: known not below the floor; above: below it (or past the tail)
    while True:
        open_ = above - below > 1
        if not open_.any():
            break
        middle = (below + above) // 2
        low_enough = open_ & (_log_term(lf, np.where(open_, middle, t), nn, KK, NN) < floor)
        above = np.where(low_enough, middle, above)
        below = np.where(open_ & ~low_enough, middle, below)
    cut = high.copy()
    cut[rows] = above - 1
    return cut


def benjamini_hochberg(p_values) -> np.ndarray:
    """BH-adjusted q-values, in the order given."""
    p = np.asarray(p_values, dtype=np.float64)
    m = len(p)
    if not m:
        return p.copy()
    order = np.argsort(p, kind="stable")
    scaled = p[order] * m / np.arange(1, m + 1)
    adjusted = np.minimum.accumulate(scaled[::-1])[::-1]
    q = np.empty(m, dtype=np.float64)
    q[order] = np.minimum(adjusted, 1.0)
    return q


def sick_mask(k, n, K, N, *, alpha: float, min_infra_failures: int, comparable=None):
    """(p, q, sick) for entities with k of their n jobs failing for infra reasons, in pools of N jobs
    with K such failures: Fisher one-sided per entity, BH across all of them, and sick only with
    q < alpha and at least `min_infra_failures` failures. `comparable` False: no pool to compare with."""
    k, n, K, N = (np.atleast_1d(np.asarray(v, dtype=np.int64)) for v in (k, n, K, N))
    comparable = np.ones(len(k), dtype=bool) if comparable is None else np.asarray(comparable, dtype=bool)
    p = np.where(comparable, fisher_greater(k, n, K, N), 1.0)
    q = benjamini_hochberg(p)
    return p, q, (q < alpha) & (k >= min_infra_failures) & comparable
