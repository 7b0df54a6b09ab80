"""``models.data``'s latest judgment per (task, annotator) in two compiled passes (numba).

At 10,000,000 judgments numpy's way, a stable argsort of the (task, annotator) keys, took about a
second of CPU and three judgment-sized int64 arrays (2026-11-27). Here the judgments are grouped
by task by counting (no comparison sort), and within a task an annotator's last row is found by
writing each row's number at its annotator, in row order: O(judgments + tasks + annotators), one
int64 array of judgments besides the mask.
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True)
def task_starts(task: np.ndarray, n_tasks: int) -> np.ndarray:
    """(n_tasks + 1,) where each task's rows start once the rows are grouped by task: the
    offsets of a counting sort (stable, no comparison sort), shared by the compiled passes that
    group judgments by task."""
    start = np.zeros(n_tasks + 1, dtype=np.int64)
    for r in range(task.shape[0]):
        start[task[r] + 1] += 1
    for i in range(n_tasks):
        start[i + 1] += start[i]
    return start


@njit(cache=True)
def latest_per_pair(task: np.ndarray, annotator: np.ndarray, n_tasks: int,
                    n_annotators: int) -> np.ndarray:
    """Mask of the rows that are the last (largest index) of their (task, annotator) pair."""
    n = task.shape[0]
    start = task_starts(task, n_tasks)
    cursor = start[:-1].copy()
    grouped = np.empty(n, dtype=np.int64)  # row numbers by task, ascending within a task
    for r in range(n):
        t = task[r]
        grouped[cursor[t]] = r
        cursor[t] += 1
    last_row = np.empty(n_annotators, dtype=np.int64)  # within the task at hand
    keep = np.zeros(n, dtype=np.bool_)
    for i in range(n_tasks):
        for g in range(start[i], start[i + 1]):
            r = grouped[g]
            a = annotator[r]
            last_row[a] = r  # rows ascending: the last one stays
        for g in range(start[i], start[i + 1]):
            r = grouped[g]
            keep[r] = last_row[annotator[r]] == r
    return keep
