"""The compiled loop: every measure of every run of one topic, for every draw of its labels.

For draw s and run r, one pass over the run's judged documents reads their classes in the
(draws x judged tasks) label matrix and collects the relevant ones (positions, judged indices)
and those with a positive gain; each measure is then a short loop over those (the measures
modules). Family codes are ``models.evaluation.measures``'.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from models.evaluation import recall, standard, unjudged


@njit(cache=True)
def _measure(code: int, param: int, relpos: np.ndarray, reljidx: np.ndarray, nrel: int,
             gpos: np.ndarray, gval: np.ndarray, ng: int, R: int, E: int, n_judged: int,
             n_ret: int, idcg: float, judged_upto: int, disc: np.ndarray) -> float:
    if code == 0:
        return standard.precision(relpos, nrel, param)
    if code == 1:
        return standard.recall(relpos, nrel, param, R)
    if code == 2:
        return standard.ndcg(gpos, gval, ng, param, idcg, disc)
    if code == 3:
        return standard.average_precision(relpos, nrel, R)
    if code == 4:
        return standard.r_precision(relpos, nrel, R)
    if code == 5:
        return standard.bpref(reljidx, nrel, R, E)
    if code == 6:
        return standard.reciprocal_rank(relpos, nrel)
    if code == 7:
        return recall.pres(relpos, nrel, param, R)
    if code == 8:
        return recall.normalised_precision(relpos, nrel, param, R, E)
    if code == 9:
        return math.sqrt(recall.normalised_precision(relpos, nrel, param, R, E))
    if code == 10:
        return recall.true_negative_rate(relpos, nrel, param, R, E)
    if code == 11:
        return recall.last_relevant(relpos, nrel, R, n_judged)
    if code == 12:
        return unjudged.unjudged_at(param, n_ret, judged_upto)
    if code == 13:
        return unjudged.simulated_precision(relpos, nrel, param, n_ret, judged_upto)
    return math.nan


@njit(cache=True)
def score_topic(labels: np.ndarray, rel_class: np.ndarray, gain_class: np.ndarray,
                binary_gain: bool, cols: np.ndarray, pos: np.ndarray, offsets: np.ndarray,
                n_ret: np.ndarray, codes: np.ndarray, params: np.ndarray, R: np.ndarray,
                E: np.ndarray, n_judged: int, idcg: np.ndarray, judged_upto: np.ndarray,
                disc: np.ndarray, out: np.ndarray) -> None:
    """out[m, s, r] = measure m of run r in draw s.

    labels (S, J) class per draw and judged task; cols / pos the judged documents of the runs
    (task column, 1-based position), run r's at offsets[r]:offsets[r + 1]; R, E (S,); idcg
    (S, M); judged_upto (R_runs, M) judged documents in the top ``params[m]``.
    """
    n_draws = labels.shape[0]
    n_runs = offsets.shape[0] - 1
    longest = 1
    for r in range(n_runs):
        longest = max(longest, offsets[r + 1] - offsets[r])
    relpos = np.empty(longest, np.int64)
    reljidx = np.empty(longest, np.int64)
    gpos = np.empty(longest, np.int64)
    gval = np.empty(longest, np.float64)
    ones = np.ones(longest, np.float64)
    for s in range(n_draws):
        row = labels[s]
        for r in range(n_runs):
            start = offsets[r]
            nrel = 0
            ng = 0
            for j in range(start, offsets[r + 1]):
                c = row[cols[j]]
                if rel_class[c]:
                    relpos[nrel] = pos[j]
                    reljidx[nrel] = j - start
                    nrel += 1
                if not binary_gain and gain_class[c] > 0.0:
                    gpos[ng] = pos[j]
                    gval[ng] = gain_class[c]
                    ng += 1
            for m in range(codes.shape[0]):
                if binary_gain:
                    value = _measure(codes[m], params[m], relpos, reljidx, nrel, relpos, ones,
                                     nrel, R[s], E[s], n_judged, n_ret[r], idcg[s, m],
                                     judged_upto[r, m], disc)
                else:
                    value = _measure(codes[m], params[m], relpos, reljidx, nrel, gpos, gval, ng,
                                     R[s], E[s], n_judged, n_ret[r], idcg[s, m],
                                     judged_upto[r, m], disc)
                out[m, s, r] = value
