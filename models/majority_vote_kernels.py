"""Majority vote's passes and the exchangeable crowd's fit, compiled (``models.majority_vote``).

At 1,000,000 judgments numpy's majority vote cost 20 ms of CPU, crowd-kit's 340 (2026-11-27):
half of ours went to scipy's optimisers (the bounded search and Nelder–Mead, ~470 calls of a
20 µs loss on a handful of distinct vote rows, the calls' interpreter overhead the cost), the
other half to column-by-column passes over the tasks (counts, totals, top class, ties, shares,
the distinct rows, the posterior's gather), each re-reading a (tasks × K) table.

Here: one pass over the judgments (the counts), one over the tasks (totals, majority, ties,
shares), one to count the distinct vote rows and one to gather each task's posterior row; and
scipy's two searches, step for step (the same points and values when given the same loss:
tests/models/test_majority_vote.py), on the loss of ``majority_vote._fit_rows`` computed in the
same order. Its exp and log are the C library's where numpy's (with AVX-512) are its own, and
its weighted sum adds the rows in order where numpy's dot calls BLAS, so a loss value may differ
from numpy's in the last bit; on the likelihood's flat ridge that moves where Nelder–Mead stops
by ~1e-6 (relative) in (p, s), among points whose loss is the same to ~1e-15 (docs/models.md).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

# scipy's Nelder–Mead defaults (its ``_minimize_neldermead``, not adaptive)
_RHO, _CHI, _PSI, _SIGMA = 1.0, 2.0, 0.5, 0.5
_NONZDELT, _ZDELT = 0.05, 0.00025


@njit(cache=True)
def vote_counts(task: np.ndarray, label: np.ndarray, counts: np.ndarray) -> int:
    """Adds each judgment's vote to ``counts`` (n_tasks, K), float64, zeros: one pass over the
    judgments. Returns the largest count."""
    largest = 0.0
    for a in range(task.shape[0]):
        value = counts[task[a], label[a]] + 1.0
        counts[task[a], label[a]] = value
        largest = max(largest, value)
    return int(largest)


@njit(cache=True)
def summarise(counts: np.ndarray, highest: bool, base: int, shares: np.ndarray,
              labels: np.ndarray, tied: np.ndarray, tally: np.ndarray) -> int:
    """One pass over the tasks' ``counts`` (whole numbers, float64). Writes ``shares``
    (n_ik / n_i, 1/K for an unjudged task; not if it has no rows), ``labels`` (the lowest
    class with most votes, or the highest if ``highest``; an unjudged task's: 0, or K − 1),
    ``tied`` (more than one class with most votes, on a judged task) and, unless ``tally`` is
    empty, how many tasks have each row of votes, the row read as a number in base ``base``
    (its first column the most significant: ``unique_rows``' numbers). Returns the largest
    number of votes a task has."""
    n, k = counts.shape
    count_rows = tally.shape[0] > 0
    most = 0.0
    for i in range(n):
        total = 0.0
        top = counts[i, 0]
        key = 0
        for c in range(k):
            value = counts[i, c]
            total += value
            top = max(top, value)
            key = key * base + int(value)
        most = max(most, total)
        if count_rows:
            tally[key] += 1
        n_top = 0
        label = -1
        for c in range(k):
            if counts[i, c] == top:
                n_top += 1
                if highest or label < 0:
                    label = c
        labels[i] = label
        tied[i] = n_top > 1 and total > 0
        if shares.shape[0] > 0:
            denominator = max(total, 1.0)
            for c in range(k):
                shares[i, c] = counts[i, c] / denominator if total > 0 else 1.0 / k
    return int(most)


@njit(cache=True)
def gather_rows(counts: np.ndarray, base: int, position: np.ndarray, row_proba: np.ndarray,
                proba: np.ndarray) -> None:
    """``proba[i] = row_proba[position[key of task i's votes]]``, 1/K for an unjudged task."""
    n, k = counts.shape
    for i in range(n):
        key = 0
        total = 0.0
        for c in range(k):
            key = key * base + int(counts[i, c])
            total += counts[i, c]
        row = position[key]
        for c in range(k):
            proba[i, c] = row_proba[row, c] if total > 0 else 1.0 / k


@njit(cache=True)
def _log_rising(a: float, out: np.ndarray) -> None:
    """``out[v]`` = log Γ(v + a) − log Γ(a) = Σ_{j<v} log(a + j) for v = 0, 1, ... (whole
    numbers of votes: ``majority_vote._log_rising``, a sum of logs, no difference of two large
    log Γ)."""
    out[0] = 0.0
    for v in range(1, out.shape[0]):
        out[v] = out[v - 1] + math.log(a + (v - 1))


@njit(cache=True)
def _loss(a: float, b: float, rows: np.ndarray, totals: np.ndarray, weight: np.ndarray,
          hit_terms: np.ndarray, miss_terms: np.ndarray, sum_terms: np.ndarray,
          joint: np.ndarray) -> float:
    """−Σ_r w_r log Σ_t P(votes_r | t) at a (p = 1/K + (1 − 1/K) σ(a)) and log s = b:
    ``majority_vote._fit_rows``' loss (``_log_votes``, then logsumexp's steps; log space: a
    task's likelihood is a product over its votes). ``rows`` (int64) and ``totals`` index the
    log-rising tables, one per (p, s): a log per possible count, not per cell."""
    n_rows, k = rows.shape
    p = 1.0 / k + (1.0 - 1.0 / k) / (1.0 + math.exp(-a))
    s = math.exp(b)
    _log_rising(s * p, hit_terms)
    _log_rising(s * (1.0 - p) / (k - 1), miss_terms)
    _log_rising(s, sum_terms)
    total = 0.0
    for r in range(n_rows):
        shared = miss_terms[rows[r, 0]]
        for c in range(1, k):
            shared += miss_terms[rows[r, c]]
        shared -= sum_terms[totals[r]]
        top = -np.inf
        for c in range(k):
            value = (shared + hit_terms[rows[r, c]]) - miss_terms[rows[r, c]]
            joint[c] = value
            if c == 0 or value > top:
                top = value
        if not np.isfinite(top):
            top = 0.0
        norm = 0.0
        for c in range(k):
            norm += math.exp(joint[c] - top)
        total += (math.log(norm) + top) * weight[r]
    return -total


@njit(cache=True)
def _sign(x: float) -> float:
    """np.sign of a float: −1, 0 or 1 (NaN for NaN)."""
    if x > 0:
        return 1.0
    if x < 0:
        return -1.0
    return x


@njit(cache=True)
def _sort3(sim: np.ndarray, fsim: np.ndarray) -> None:
    """``np.argsort(fsim)`` then both taken in that order: an insertion sort, stable, NaN last
    (numpy's sort of so few elements)."""
    n = fsim.shape[0]
    for i in range(1, n):
        j = i
        while j > 0 and (fsim[j] < fsim[j - 1]
                         or (np.isnan(fsim[j - 1]) and not np.isnan(fsim[j]))):
            fsim[j], fsim[j - 1] = fsim[j - 1], fsim[j]
            for d in range(sim.shape[1]):
                sim[j, d], sim[j - 1, d] = sim[j - 1, d], sim[j, d]
            j -= 1


@njit(cache=True)
def exchangeable_search(rows: np.ndarray, weight: np.ndarray, grid_a: np.ndarray,
                        grid_b: np.ndarray, lower: np.ndarray, upper: np.ndarray
                        ) -> tuple[float, float, float, float, float]:
    """The two searches of ``majority_vote._fit_rows`` over its loss, as scipy runs them:
    ``minimize_scalar(method="bounded", bounds=(lower[0], upper[0]))`` in a with log s at
    ``upper[1]`` (xatol 1e-5, 500 calls), and ``minimize(method="Nelder-Mead", bounds=...,
    xatol=1e-6, fatol=1e-9, maxiter=2000)`` from the first least point of the grid
    ``grid_a × grid_b`` (``min(grid, key=loss)``). Returns (a, loss) of the first and
    (a, log s, loss) of the second."""
    n_rows, k = rows.shape
    totals = np.zeros(n_rows, dtype=np.int64)
    for r in range(n_rows):
        for c in range(k):
            totals[r] += rows[r, c]
    largest = rows.max() if n_rows else 0
    hit_terms = np.empty(largest + 1)
    miss_terms = np.empty(largest + 1)
    sum_terms = np.empty((totals.max() if n_rows else 0) + 1)
    joint = np.empty(k)

    def loss(a: float, b: float) -> float:
        return _loss(a, b, rows, totals, weight, hit_terms, miss_terms, sum_terms, joint)

    # -- scipy.optimize._optimize._minimize_scalar_bounded, xatol 1e-5, maxiter 500
    high = upper[1]
    xatol, maxfun = 1e-5, 500
    sqrt_eps = math.sqrt(2.2e-16)
    golden_mean = 0.5 * (3.0 - math.sqrt(5.0))
    lo, hi = lower[0], upper[0]
    fulc = lo + golden_mean * (hi - lo)
    nfc, xf = fulc, fulc
    rat = e = 0.0
    x = xf
    fx = loss(x, high)
    num = 1
    ffulc = fnfc = fx
    xm = 0.5 * (lo + hi)
    tol1 = sqrt_eps * abs(xf) + xatol / 3.0
    tol2 = 2.0 * tol1
    while abs(xf - xm) > (tol2 - 0.5 * (hi - lo)):
        golden = True
        if abs(e) > tol1:  # a parabolic step?
            golden = False
            r = (xf - nfc) * (fx - ffulc)
            q = (xf - fulc) * (fx - fnfc)
            pp = (xf - fulc) * q - (xf - nfc) * r
            q = 2.0 * (q - r)
            if q > 0.0:
                pp = -pp
            q = abs(q)
            r = e
            e = rat
            if abs(pp) < abs(0.5 * q * r) and pp > q * (lo - xf) and pp < q * (hi - xf):
                rat = (pp + 0.0) / q
                x = xf + rat
                if ((x - lo) < tol2) or ((hi - x) < tol2):
                    si = _sign(xm - xf) + (1.0 if (xm - xf) == 0 else 0.0)
                    rat = tol1 * si
            else:
                golden = True
        if golden:
            e = lo - xf if xf >= xm else hi - xf
            rat = golden_mean * e
        si = _sign(rat) + (1.0 if rat == 0 else 0.0)
        x = xf + si * max(abs(rat), tol1)
        fu = loss(x, high)
        num += 1
        if fu <= fx:
            if x >= xf:
                lo = xf
            else:
                hi = xf
            fulc, ffulc = nfc, fnfc
            nfc, fnfc = xf, fx
            xf, fx = x, fu
        else:
            if x < xf:
                lo = x
            else:
                hi = x
            if (fu <= fnfc) or (nfc == xf):
                fulc, ffulc = nfc, fnfc
                nfc, fnfc = x, fu
            elif fu <= ffulc or fulc in (xf, nfc):
                fulc, ffulc = x, fu
        xm = 0.5 * (lo + hi)
        tol1 = sqrt_eps * abs(xf) + xatol / 3.0
        tol2 = 2.0 * tol1
        if num >= maxfun:
            break
    single_a, single_fun = xf, fx

    # -- min(grid, key=loss): the first point with the least loss
    start_a, start_b = grid_a[0], grid_b[0]
    least = loss(start_a, start_b)
    for i in range(grid_a.shape[0]):
        for j in range(grid_b.shape[0]):
            if i == 0 and j == 0:
                continue
            value = loss(grid_a[i], grid_b[j])
            if value < least:
                least, start_a, start_b = value, grid_a[i], grid_b[j]

    # -- scipy.optimize._optimize._minimize_neldermead with bounds (clipping), not adaptive
    xatol, fatol, maxiter = 1e-6, 1e-9, 2000
    dim = 2
    sim = np.empty((dim + 1, dim))
    sim[0, 0] = min(max(start_a, lower[0]), upper[0])
    sim[0, 1] = min(max(start_b, lower[1]), upper[1])
    for d in range(dim):
        for c in range(dim):
            sim[d + 1, c] = sim[0, c]
        y = sim[0, d]
        sim[d + 1, d] = (1 + _NONZDELT) * y if y != 0 else _ZDELT
    for v in range(dim + 1):
        for c in range(dim):
            if sim[v, c] > upper[c]:  # reflected into the interior, then clipped
                sim[v, c] = 2 * upper[c] - sim[v, c]
            sim[v, c] = min(max(sim[v, c], lower[c]), upper[c])
    fsim = np.empty(dim + 1)
    for v in range(dim + 1):
        fsim[v] = loss(sim[v, 0], sim[v, 1])
    _sort3(sim, fsim)
    xbar = np.empty(dim)
    xr = np.empty(dim)
    xe = np.empty(dim)
    iterations = 1
    while iterations < maxiter:
        done = True
        for v in range(1, dim + 1):
            for c in range(dim):
                if not abs(sim[v, c] - sim[0, c]) <= xatol:
                    done = False
            if not abs(fsim[0] - fsim[v]) <= fatol:
                done = False
        if done:
            break
        for c in range(dim):
            xbar[c] = (sim[0, c] + sim[1, c]) / dim  # np.add.reduce(sim[:-1], 0) / N
            xr[c] = min(max((1 + _RHO) * xbar[c] - _RHO * sim[-1, c], lower[c]), upper[c])
        fxr = loss(xr[0], xr[1])
        shrink = False
        if fxr < fsim[0]:
            for c in range(dim):
                xe[c] = min(max((1 + _RHO * _CHI) * xbar[c] - _RHO * _CHI * sim[-1, c],
                                lower[c]), upper[c])
            fxe = loss(xe[0], xe[1])
            if fxe < fxr:
                sim[-1, :] = xe
                fsim[-1] = fxe
            else:
                sim[-1, :] = xr
                fsim[-1] = fxr
        elif fxr < fsim[-2]:
            sim[-1, :] = xr
            fsim[-1] = fxr
        elif fxr < fsim[-1]:  # contraction
            for c in range(dim):
                xe[c] = min(max((1 + _PSI * _RHO) * xbar[c] - _PSI * _RHO * sim[-1, c],
                                lower[c]), upper[c])
            fxc = loss(xe[0], xe[1])
            if fxc <= fxr:
                sim[-1, :] = xe
                fsim[-1] = fxc
            else:
                shrink = True
        else:  # inside contraction
            for c in range(dim):
                xe[c] = min(max((1 - _PSI) * xbar[c] + _PSI * sim[-1, c], lower[c]),
                            upper[c])
            fxcc = loss(xe[0], xe[1])
            if fxcc < fsim[-1]:
                sim[-1, :] = xe
                fsim[-1] = fxcc
            else:
                shrink = True
        if shrink:
            for v in range(1, dim + 1):
                for c in range(dim):
                    sim[v, c] = min(max(sim[0, c] + _SIGMA * (sim[v, c] - sim[0, c]),
                                        lower[c]), upper[c])
                fsim[v] = loss(sim[v, 0], sim[v, 1])
        iterations += 1
        _sort3(sim, fsim)
    best = fsim[0]  # np.min(fsim): the first after the sort, NaN if any is NaN
    for v in range(1, dim + 1):
        if np.isnan(fsim[v]):
            best = fsim[v]
    return single_a, single_fun, sim[0, 0], sim[0, 1], best
