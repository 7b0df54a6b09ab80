"""MACE's E step and its expected counts in one compiled sweep over the judgments (``models.mace``).

The judgments are held in task order (``ptr``: where each task's run starts; ``cell``: annotator·K
+ label; ``label``). One sweep per E step reads each task's run twice while it is in cache: first
to sum the task's log joint (Σ_a log g_a, plus log(g_a + h_a) − log g_a where t = l_a), then,
once the task's posterior is normalised, to add each judgment's P(knew) = P(T_i = l_a) h/(g + h)
into its (annotator, label) cell. numpy and scipy needed five sparse or dense passes for the same
(three sparse products, the per-class column passes, the exp), each re-reading the judgments or a
(tasks × K) table from memory.

Each task's sums add the same terms in the same order as the sparse products did (its judgments
in input order), exp is the C library's, as numpy's is for float64 without AVX-512 (the log of
each task's normaliser, which only the log-likelihood reads, is numpy's, taken after the sweep);
only the (annotator, label) counts add their terms in task order rather than input order, which
moves them in the last bits when the input is not sorted by task.
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, inline="always")
def _task_posterior(joint: np.ndarray, base: float, log_prior: np.ndarray, row: int,
                    clamp: bool, impossible: np.ndarray, i: int, proba: np.ndarray,
                    norm: np.ndarray, top: np.ndarray) -> None:
    """Task i's posterior from its log joint (``joint[t] + base``, plus the prior's ``row``),
    normalised into ``proba[i]``, with its normaliser and maximum in ``norm[i]``, ``top[i]``:
    the part ``e_step`` and ``e_step_weighted`` share (inlined: the same operations in the same
    order as when it was written out in each)."""
    k = joint.shape[0]
    best = -np.inf
    for t in range(k):
        value = (joint[t] + base) + log_prior[row, t]
        if clamp and impossible[i, t]:
            value = -np.inf
        joint[t] = value
        if t == 0 or value > best:
            best = value
    total = 0.0
    for t in range(k):
        shifted = joint[t] - best
        p = 1.0 if shifted == 0.0 else np.exp(shifted)
        proba[i, t] = p
        total = p if t == 0 else total + p
    for t in range(k):
        proba[i, t] = proba[i, t] / total
    norm[i] = total
    top[i] = best


@njit(cache=True)
def e_step(ptr: np.ndarray, cell: np.ndarray, label: np.ndarray, table: np.ndarray,
           log_prior: np.ndarray, impossible: np.ndarray, proba: np.ndarray,
           norm: np.ndarray, top: np.ndarray, know: np.ndarray,
           class_total: np.ndarray) -> None:
    """In place: ``proba`` (n_tasks, K) the posterior, ``norm`` and ``top`` per task (the
    log-likelihood is Σ log(norm) + Σ top, the log taken by the caller, numpy's vectorised one:
    a log per task here cost a quarter of the sweep at 1 M judgments), ``know``
    (n_cells,) Σ_a P(T_i = l_a) h/(g + h) per (annotator, label) cell, ``class_total`` (K,)
    Σ P(T_i = t) over the judged tasks, added in task order (numpy's ``sum(axis=0)`` of those
    rows adds them one row after another: the same bits).

    ``table`` (n_cells, 3): log g, log(g + h) − log g, h/(g + h) per cell; ``log_prior`` (1, K)
    or (n_tasks, K); ``impossible`` (n_tasks, K), or no rows when no class is ruled out.

    The most probable class's exp(joint − best) is exp(0) = 1 exactly, so it is not computed
    (for two classes: one exp per task instead of two, the same bits)."""
    n_tasks, k = proba.shape
    shared_prior = log_prior.shape[0] == 1
    clamp = impossible.shape[0] > 0
    know[:] = 0.0
    class_total[:] = 0.0
    joint = np.empty(k)
    for i in range(n_tasks):
        start, end = ptr[i], ptr[i + 1]
        for t in range(k):
            joint[t] = 0.0
        base = 0.0
        for a in range(start, end):
            c = cell[a]
            base += table[c, 0]
            joint[label[a]] += table[c, 1]
        _task_posterior(joint, base, log_prior, 0 if shared_prior else i, clamp, impossible, i,
                        proba, norm, top)
        if end > start:
            for t in range(k):
                class_total[t] += proba[i, t]
        for a in range(start, end):
            c = cell[a]
            know[c] += table[c, 2] * proba[i, label[a]]


@njit(cache=True)
def e_step_binary(ptr: np.ndarray, cell: np.ndarray, table: np.ndarray, log_prior: np.ndarray,
                  impossible: np.ndarray, proba: np.ndarray, norm: np.ndarray, top: np.ndarray,
                  know: np.ndarray, class_total: np.ndarray) -> None:
    """``e_step`` for two classes, the same operations in the same order (so the same bits),
    with the two classes' sums in registers instead of a small array (its read-modify-writes
    were the sweep's longest dependency chain) and the label read from the cell's parity
    (cell = annotator·2 + label) instead of a second array."""
    n_tasks = proba.shape[0]
    shared_prior = log_prior.shape[0] == 1
    clamp = impossible.shape[0] > 0
    know[:] = 0.0
    total0 = 0.0
    total1 = 0.0
    for i in range(n_tasks):
        start, end = ptr[i], ptr[i + 1]
        joint0 = 0.0
        joint1 = 0.0
        base = 0.0
        for a in range(start, end):
            c = cell[a]
            base += table[c, 0]
            bonus = table[c, 1]
            # adding +0.0 leaves a sum that starts at +0.0 unchanged, bit for bit
            zero = (c & 1) == 0
            joint0 += bonus if zero else 0.0
            joint1 += 0.0 if zero else bonus
        row = 0 if shared_prior else i
        value0 = (joint0 + base) + log_prior[row, 0]
        value1 = (joint1 + base) + log_prior[row, 1]
        if clamp:
            if impossible[i, 0]:
                value0 = -np.inf
            if impossible[i, 1]:
                value1 = -np.inf
        best = value1 if value1 > value0 else value0  # e_step's rule: the first of equals
        shifted0 = value0 - best
        shifted1 = value1 - best
        p0 = 1.0 if shifted0 == 0.0 else np.exp(shifted0)
        p1 = 1.0 if shifted1 == 0.0 else np.exp(shifted1)
        total = p0 + p1
        q0 = p0 / total
        q1 = p1 / total
        proba[i, 0] = q0
        proba[i, 1] = q1
        norm[i] = total
        top[i] = best
        if end > start:
            total0 += q0
            total1 += q1
        for a in range(start, end):
            c = cell[a]
            know[c] += table[c, 2] * (q0 if (c & 1) == 0 else q1)
    class_total[0] = total0
    class_total[1] = total1


@njit(cache=True)
def task_order(task: np.ndarray, ptr: np.ndarray, annotator: np.ndarray, label: np.ndarray,
               k: int, cell: np.ndarray, label_out: np.ndarray) -> None:
    """The judgments in task order, input order within a task (what a stable argsort of
    ``task`` gives) by counting: ``ptr`` is where each task's run starts. Writes ``cell``
    (annotator·k + label) and ``label_out`` in that order: one pass, no sort."""
    cursor = ptr[:-1].copy()
    for a in range(task.shape[0]):
        t = task[a]
        dst = cursor[t]
        cursor[t] = dst + 1
        cell[dst] = annotator[a] * k + label[a]
        label_out[dst] = label[a]


@njit(cache=True)
def e_step_weighted(ptr: np.ndarray, cell: np.ndarray, label: np.ndarray, weight: np.ndarray,
                    table: np.ndarray, log_prior: np.ndarray, impossible: np.ndarray,
                    proba: np.ndarray, norm: np.ndarray, top: np.ndarray, know: np.ndarray,
                    class_total: np.ndarray) -> None:
    """``e_step`` with judgment a's likelihood raised to the power ``weight[a]`` (task order):
    its log terms and its expected knowing count weighted by it (``models.mace``, a dense panel's
    design effect). Any K; a fit without weights never runs it (``e_step`` and
    ``e_step_binary`` are unchanged)."""
    n_tasks, k = proba.shape
    shared_prior = log_prior.shape[0] == 1
    clamp = impossible.shape[0] > 0
    know[:] = 0.0
    class_total[:] = 0.0
    joint = np.empty(k)
    for i in range(n_tasks):
        start, end = ptr[i], ptr[i + 1]
        for t in range(k):
            joint[t] = 0.0
        base = 0.0
        for a in range(start, end):
            c = cell[a]
            w = weight[a]
            base += w * table[c, 0]
            joint[label[a]] += w * table[c, 1]
        _task_posterior(joint, base, log_prior, 0 if shared_prior else i, clamp, impossible, i,
                        proba, norm, top)
        if end > start:
            for t in range(k):
                class_total[t] += proba[i, t]
        for a in range(start, end):
            c = cell[a]
            know[c] += weight[a] * table[c, 2] * proba[i, label[a]]
