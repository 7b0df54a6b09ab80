"""Compiled per-task passes of EBCC's E step (``models.bcc``), one pass where numpy made several.

The E step's (n_tasks × K·M) table of log joints was built and normalised by a dozen numpy passes
(sums with broadcasts, a repeat, row maxima and row sums over rows of K·M = 20 numbers, which
numpy reduces one short row at a time). These loops do the same arithmetic in the same order, so
the results are bit-identical to the numpy expressions they replace; exp and log stay with numpy,
whose vectorised versions round differently from the C library's.
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True)
def _pairwise_block(row: np.ndarray, start: int, n: int) -> float:
    """numpy's sum of up to 128 contiguous terms: eight running sums, then the rest."""
    if n < 8:
        total = 0.0
        for i in range(n):
            total += row[start + i]
        return total
    r0 = row[start]
    r1 = row[start + 1]
    r2 = row[start + 2]
    r3 = row[start + 3]
    r4 = row[start + 4]
    r5 = row[start + 5]
    r6 = row[start + 6]
    r7 = row[start + 7]
    i = 8
    while i < n - (n % 8):
        r0 += row[start + i]
        r1 += row[start + i + 1]
        r2 += row[start + i + 2]
        r3 += row[start + i + 3]
        r4 += row[start + i + 4]
        r5 += row[start + i + 5]
        r6 += row[start + i + 6]
        r7 += row[start + i + 7]
        i += 8
    total = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    while i < n:
        total += row[start + i]
        i += 1
    return total


@njit(cache=True)
def _pairwise_sum(row: np.ndarray, start: int, n: int) -> float:
    """numpy's pairwise summation of ``row[start:start + n]`` (the order of ``ndarray.sum``
    over a contiguous axis: blocks of up to 128 terms, halves, multiples of 8, above), so the
    sum has numpy's bits. The halving runs on an explicit stack (no recursion in compiled
    code)."""
    if n <= 128:
        return _pairwise_block(row, start, n)
    starts = np.empty(64, dtype=np.int64)
    sizes = np.empty(64, dtype=np.int64)
    stage = np.zeros(64, dtype=np.int64)
    values = np.empty(64)
    starts[0], sizes[0], depth, n_values = start, n, 1, 0
    while depth > 0:
        top = depth - 1
        size = sizes[top]
        if size <= 128:
            values[n_values] = _pairwise_block(row, starts[top], size)
            n_values += 1
            depth -= 1
            continue
        half = size // 2
        half -= half % 8
        if stage[top] < 2:  # push the left half, then the right half
            offset = 0 if stage[top] == 0 else half
            stage[top] += 1
            starts[depth] = starts[top] + offset
            sizes[depth] = half if offset == 0 else size - half
            stage[depth] = 0
            depth += 1
        else:  # both halves summed: left + right
            values[n_values - 2] = values[n_values - 2] + values[n_values - 1]
            n_values -= 1
            depth -= 1
    return values[0]


@njit(cache=True)
def _row_sum(row: np.ndarray, start: int, n: int) -> float:
    """``_pairwise_sum``, calling the block sum directly for a short run (the rows here are
    K·M numbers): the stack machinery stays out of the common case's compiled code."""
    return _pairwise_block(row, start, n) if n <= 128 else _pairwise_sum(row, start, n)


@njit(cache=True)
def shift_log_joint(scores: np.ndarray, e_log_weights: np.ndarray, e_log_prior: np.ndarray,
                    n_subtypes: int, impossible: np.ndarray, top: np.ndarray) -> None:
    """In place: scores[i, t·M + m] + E[ln π_t[m]] + E[ln κ_{i, t}] (−∞ where ``impossible[i, t]``;
    ``impossible`` may have no rows), then minus the row's maximum, which goes to ``top[i]``.
    The columns class by class, then subtype by subtype (no division of the column index by M
    per entry: that division was most of this pass)."""
    n_classes = scores.shape[1] // n_subtypes
    clamp = impossible.shape[0] > 0
    for i in range(scores.shape[0]):
        row = scores[i]
        best = -np.inf
        c = 0
        for t in range(n_classes):
            prior = e_log_prior[i, t]
            ruled_out = clamp and impossible[i, t]
            for _ in range(n_subtypes):
                value = (row[c] + e_log_weights[c]) + prior
                if ruled_out:
                    value = -np.inf
                row[c] = value
                if value > best:
                    best = value
                c += 1
        top[i] = best
        for c in range(row.shape[0]):
            row[c] = row[c] - best


@njit(cache=True)
def normalise_rows(p: np.ndarray, n_subtypes: int, total: np.ndarray, by_class: np.ndarray
                   ) -> None:
    """In place: each row of p divided by its sum (to ``total``); ``by_class[i, t]`` = the sum of
    row i's M subtype columns of class t after the division."""
    width = p.shape[1]
    for i in range(p.shape[0]):
        row = p[i]
        s = _row_sum(row, 0, width)
        total[i] = s
        for c in range(width):
            row[c] = row[c] / s
        for t in range(by_class.shape[1]):
            by_class[i, t] = _row_sum(row, t * n_subtypes, n_subtypes)


@njit(cache=True)
def shift_rows(log_joint: np.ndarray, top: np.ndarray, shifted: np.ndarray) -> None:
    """IBCC's ``_normalise_log`` before its exp: top[i] = the row's maximum (numpy's
    ``maximum`` column by column, NaN kept), shifted = log_joint − top."""
    k = log_joint.shape[1]
    for i in range(log_joint.shape[0]):
        best = log_joint[i, 0]
        for c in range(1, k):
            v = log_joint[i, c]
            if v > best or v != v:
                best = v
        top[i] = best
        for c in range(k):
            shifted[i, c] = log_joint[i, c] - best


@njit(cache=True)
def divide_rows(p: np.ndarray, total: np.ndarray) -> None:
    """After the exp: total[i] = the row's sum (column 0, then each next column added), and
    the row divided by it, in place."""
    k = p.shape[1]
    for i in range(p.shape[0]):
        s = p[i, 0]
        for c in range(1, k):
            s += p[i, c]
        total[i] = s
        for c in range(k):
            p[i, c] = p[i, c] / s
