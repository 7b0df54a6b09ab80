"""The trec_eval measures (ir_measures names P@k, R@k, nDCG[@k], AP, Rprec, Bpref, RR), for one
run, one topic and one draw of the qrels, compiled.

Every function takes the run's relevant judged documents in that draw, best first: ``relpos``
their 1-based positions in the ranking and ``reljidx`` their indices among the ranking's judged
documents (the first ``nrel`` entries are valid); ``R`` and ``E`` count the topic's judged
relevant and non-relevant documents. nDCG takes the documents with a positive gain instead
(``gpos``, ``gval``, ``ng``), the ideal DCG (``idcg``) and ``disc[p] = 1 / log2(p + 1)``.
Checked against ir_measures (pytrec_eval) in tests/models/test_evaluation_measures.py.
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True)
def count_upto(relpos: np.ndarray, nrel: int, k: int) -> int:
    """Relevant documents in the top k."""
    i = 0
    while i < nrel and relpos[i] <= k:
        i += 1
    return i


@njit(cache=True)
def precision(relpos: np.ndarray, nrel: int, k: int) -> float:
    return count_upto(relpos, nrel, k) / k


@njit(cache=True)
def recall(relpos: np.ndarray, nrel: int, k: int, R: int) -> float:
    return count_upto(relpos, nrel, k) / R if R > 0 else 0.0


@njit(cache=True)
def r_precision(relpos: np.ndarray, nrel: int, R: int) -> float:
    return count_upto(relpos, nrel, R) / R if R > 0 else 0.0


@njit(cache=True)
def average_precision(relpos: np.ndarray, nrel: int, R: int) -> float:
    """(1/R) * sum over relevant retrieved of (relevant at or above) / position."""
    if R == 0:
        return 0.0
    total = 0.0
    for i in range(nrel):
        total += (i + 1.0) / relpos[i]
    return total / R


@njit(cache=True)
def reciprocal_rank(relpos: np.ndarray, nrel: int) -> float:
    return 1.0 / relpos[0] if nrel > 0 else 0.0


@njit(cache=True)
def bpref(reljidx: np.ndarray, nrel: int, R: int, E: int) -> float:
    """trec_eval: (1/R) * sum over relevant retrieved r of
    1 - min(judged non-relevant above r, R) / min(R, E); unjudged documents are skipped."""
    if R == 0:
        return 0.0
    cap = min(R, E)
    total = 0.0
    for i in range(nrel):
        nonrel_above = reljidx[i] - i
        if nonrel_above > 0:
            total += 1.0 - min(nonrel_above, R) / cap
        else:
            total += 1.0
    return total / R


@njit(cache=True)
def ndcg(gpos: np.ndarray, gval: np.ndarray, ng: int, k: int, idcg: float,
         disc: np.ndarray) -> float:
    """DCG of the top k (k = 0: all) with gain / log2(position + 1), over the ideal DCG."""
    if idcg <= 0.0:
        return 0.0
    total = 0.0
    for i in range(ng):
        if k > 0 and gpos[i] > k:
            break
        total += gval[i] * disc[gpos[i]]
    return total / idcg


def ideal_dcg(level_counts: np.ndarray, gain_levels: np.ndarray, k: int) -> np.ndarray:
    """(S,) DCG of the ideal ranking, cut at k (0: none), from the number of judged documents
    at each positive gain level (``level_counts`` (S, G), levels descending) per draw."""
    n_draws = level_counts.shape[0]
    if level_counts.shape[1] == 0:
        return np.zeros(n_draws)
    total = int(level_counts.sum(axis=1).max())
    depth = total if k == 0 else min(k, total)
    cum_disc = np.concatenate([[0.0], np.cumsum(1.0 / np.log2(np.arange(2, depth + 2)))])
    ends = np.minimum(np.cumsum(level_counts, axis=1), depth)
    starts = np.concatenate([np.zeros((n_draws, 1), dtype=ends.dtype), ends[:, :-1]], axis=1)
    return ((cum_disc[ends] - cum_disc[starts]) * gain_levels[None, :]).sum(axis=1)
