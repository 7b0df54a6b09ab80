"""``models.onehot``'s passes over the judgments grouped by task, compiled (numba).

scipy's sparse products did these sums in two matrices (the one-hot rows by task and their
transpose by column), one product per class, each reading the whole index again; built from
coordinates by a conversion, a sort of every row and a transpose (10,000,000 judgments: 0.9 s of
CPU per build, 0.24 GiB, 2026-11-28). Here the index is built by counting (no comparison sort),
and each pass reads it once for every class. The additions are scipy's, in scipy's order (each
output from 0, its terms in the order of the row's sorted columns, or of the tasks): the same
bits.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from models.data_kernels import task_starts


@njit(cache=True)
def group_by_task(task: np.ndarray, column: np.ndarray, n_tasks: int, ptr: np.ndarray,
                  col: np.ndarray, count: np.ndarray) -> int:
    """The judgments (task, column) as rows by task: ``ptr`` (n_tasks + 1) the rows' starts,
    ``col`` each row's distinct columns ascending, ``count`` how many judgments each entry
    holds (both ``task``-long, filled to the number of entries returned). A counting sort by
    task (stable), then each row's few columns sorted by insertion and repeats merged."""
    n = task.shape[0]
    start = task_starts(task, n_tasks)
    fill = start[:-1].copy()
    for r in range(n):
        t = task[r]
        col[fill[t]] = column[r]
        fill[t] += 1
    nnz = 0
    ptr[0] = 0
    for i in range(n_tasks):
        lo, hi = start[i], start[i + 1]
        for x in range(lo + 1, hi):  # insertion sort of the row's columns
            value = col[x]
            y = x - 1
            while y >= lo and col[y] > value:
                col[y + 1] = col[y]
                y -= 1
            col[y + 1] = value
        x = lo
        while x < hi:  # one entry per distinct column, with its count
            value = col[x]
            repeats = 1.0
            x += 1
            while x < hi and col[x] == value:
                repeats += 1.0
                x += 1
            col[nnz] = value
            count[nnz] = repeats
            nnz += 1
        ptr[i + 1] = nnz
    return nnz


@njit(cache=True)
def row_sums(ptr: np.ndarray, col: np.ndarray, count: np.ndarray, table: np.ndarray,
             out: np.ndarray) -> None:
    """out[i, c] = Σ_{e in row i} count[e] · table[col[e], c] (``count`` empty: every entry
    once), each sum from 0 in the row's column order (scipy's ``csr_matvec(s)``)."""
    n_out = table.shape[1]
    if count.shape[0] > 0:
        _row_sums_weighted(ptr, col, count, table, out)
    elif n_out == 2:
        for i in range(ptr.shape[0] - 1):
            s0 = 0.0
            s1 = 0.0
            for e in range(ptr[i], ptr[i + 1]):
                j = col[e]
                s0 += table[j, 0]
                s1 += table[j, 1]
            out[i, 0] = s0
            out[i, 1] = s1
    else:
        acc = np.empty(n_out)
        for i in range(ptr.shape[0] - 1):
            acc[:] = 0.0
            for e in range(ptr[i], ptr[i + 1]):
                j = col[e]
                for c in range(n_out):
                    acc[c] += table[j, c]
            for c in range(n_out):
                out[i, c] = acc[c]


@njit(cache=True)
def _row_sums_weighted(ptr: np.ndarray, col: np.ndarray, count: np.ndarray, table: np.ndarray,
                       out: np.ndarray) -> None:
    n_out = table.shape[1]
    acc = np.empty(n_out)
    for i in range(ptr.shape[0] - 1):
        acc[:] = 0.0
        for e in range(ptr[i], ptr[i + 1]):
            j = col[e]
            w = count[e]
            for c in range(n_out):
                acc[c] += w * table[j, c]
        for c in range(n_out):
            out[i, c] = acc[c]


@njit(cache=True)
def column_sums(ptr: np.ndarray, col: np.ndarray, count: np.ndarray, weights: np.ndarray,
                out: np.ndarray) -> None:
    """out[j, c] = Σ_{entries e in column j} count[e] · weights[task(e), c] (``count`` empty:
    every entry once), each sum from 0 in task order (scipy's products by the transpose,
    ``csr_matvec`` on the column-major copy, ``csc_matvecs``); ``out`` C-contiguous."""
    weighted = count.shape[0] > 0
    n_out = weights.shape[1]
    out[:] = 0.0
    if n_out == 2 and not weighted:
        for i in range(ptr.shape[0] - 1):
            w0 = weights[i, 0]
            w1 = weights[i, 1]
            for e in range(ptr[i], ptr[i + 1]):
                j = col[e]
                out[j, 0] += w0
                out[j, 1] += w1
        return
    row = np.empty(n_out)
    for i in range(ptr.shape[0] - 1):
        for c in range(n_out):
            row[c] = weights[i, c]
        for e in range(ptr[i], ptr[i + 1]):
            j = col[e]
            w = count[e] if weighted else 1.0
            for c in range(n_out):
                out[j, c] += w * row[c] if weighted else row[c]
