"""Recall-oriented measures that trec_eval and ir_measures lack (compiled; one run, topic and
draw per call, with the arguments of ``models.evaluation.standard``).

PRES (Magdy & Jones, SIGIR 2010, eq. 3-4): with n relevant documents and a user who reads N_max,

    PRES = 1 - (sum_i r_i - n (n + 1) / 2) / (n * N_max)

where r_i are the ranks of the relevant documents in the top N_max and every relevant document
not found there is placed just after N_max (the i-th missing one at N_max + i, i counted over all
n), so that finding none scores 0 and finding all at the top scores 1. Worked example of the
paper: relevant at {32, 35, 46}, n = 3, N_max = 1000 -> 0.964.

Normalised precision at r % recall (Kusa et al., ICTIR 2024, eq. 10): read the ranking until
TP = ceil(r/100 * |I|) relevant documents are found; FP is the non-relevant documents read on the
way (unjudged ones count as non-relevant), |E| the topic's judged non-relevant documents, and

    nP@r% = TP / (TP + FP) * TN / (TN + FP) = P@r% * TNR@r%,   TN = |E| - FP (FP capped at |E|);

snP@r% is its square root. A run that never reaches r % recall scores the worst case, 0 (all of
|E| read). LastRel (the same paper, after Cormack & Grossman) is the position of the last
relevant document as a percentage of the topic's judged documents (capped at 100; 100 when a
relevant document is missing from the run; 0 for a topic without relevant documents) — lower is
better.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from models.evaluation.standard import count_upto


@njit(cache=True)
def pres(relpos: np.ndarray, nrel: int, n_max: int, R: int) -> float:
    if R == 0:
        return 0.0
    n = float(R)
    found = count_upto(relpos, nrel, n_max)
    rank_sum = 0.0
    for i in range(found):
        rank_sum += relpos[i]
    # The missing ones at N_max + found + 1 .. N_max + n.
    rank_sum += (n - found) * n_max + (n * (n + 1) - found * (found + 1.0)) / 2
    return 1.0 - (rank_sum - n * (n + 1) / 2) / (n * n_max)


@njit(cache=True)
def _false_positives(relpos: np.ndarray, nrel: int, percent: int, R: int, E: int
                     ) -> tuple[bool, int, int]:
    """(reached, TP, FP) at ``percent`` % recall."""
    target = int(math.ceil(R * (percent / 100.0) - 1e-9))
    if target <= 0 or target > nrel:
        return False, target, E
    return True, target, min(relpos[target - 1] - target, E)


@njit(cache=True)
def true_negative_rate(relpos: np.ndarray, nrel: int, percent: int, R: int, E: int) -> float:
    reached, _, fp = _false_positives(relpos, nrel, percent, R, E)
    if not reached:
        return 0.0
    return (E - fp) / E if E > 0 else 1.0


@njit(cache=True)
def normalised_precision(relpos: np.ndarray, nrel: int, percent: int, R: int, E: int
                         ) -> float:
    reached, tp, fp = _false_positives(relpos, nrel, percent, R, E)
    if not reached:
        return 0.0
    tnr = (E - fp) / E if E > 0 else 1.0
    return tp / (tp + fp) * tnr


@njit(cache=True)
def last_relevant(relpos: np.ndarray, nrel: int, R: int, n_judged: int) -> float:
    if R == 0:
        return 0.0
    if nrel < R:
        return 100.0
    return 100.0 * min(relpos[nrel - 1], n_judged) / max(n_judged, 1)
