"""``models.tempering``'s per-judgment table of the held-out judgments, compiled (numba).

numpy built it by masked copies of the judgments' columns, a gather of every held-out judgment's
confusion cell, a log of each, a weighted ``np.bincount`` per class and a gather back (10,000,000
judgments: 0.4 s of CPU per fold, 2026-11-28). Here one pass per class over the held-out
judgments, reading a table of log π already taken (a log of the same numbers by the same numpy
routine: the same bits), with the bincount's additions in its order (each task's sum from 0,
its judgments in row order): the same table.
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True)
def judgment_table(task: np.ndarray, annotator: np.ndarray, label: np.ndarray,
                   rows: np.ndarray, n_tasks: int, log_prior: np.ndarray,
                   log_confusion: np.ndarray, table: np.ndarray, others: np.ndarray) -> None:
    """For the judgments where ``rows`` (in order): table[t, a] = log π_j(a)[t, y_a] and
    others[t, a] = (log ρ_t + Σ_{b ∈ task(a), b in rows} table[t, b]) − table[t, a]."""
    sums = np.empty(n_tasks)
    for t in range(table.shape[0]):
        sums[:] = 0.0
        a = 0
        for r in range(task.shape[0]):
            if rows[r]:
                value = log_confusion[annotator[r], t, label[r]]
                table[t, a] = value
                sums[task[r]] += value
                a += 1
        a = 0
        for r in range(task.shape[0]):
            if rows[r]:
                others[t, a] = (log_prior[t] + sums[task[r]]) - table[t, a]
                a += 1

