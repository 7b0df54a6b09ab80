"""Unjudged documents in a run's top k (thesis of seed 004, section 7.2.1).

``unjudged@k`` is the share of the top k without a judgment (1 - ir_measures' ``Judged@k``; the
denominator is k, or the ranking's length when it is shorter). ``SimP@k``, the "simulated"
precision, counts each unjudged document of the top k as relevant at the rate the judged ones
of the same top k are: P(r | U) = |judged relevant| / |judged| in the top k, so

    SimP@k = (relevant + unjudged * P(r | U)) / k.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from models.evaluation.standard import count_upto


@njit(cache=True)
def unjudged_at(k: int, n_ret: int, judged_upto: int) -> float:
    """``judged_upto``: judged documents in the run's top k."""
    depth = min(k, n_ret)
    return (depth - judged_upto) / depth if depth > 0 else 0.0


@njit(cache=True)
def simulated_precision(relpos: np.ndarray, nrel: int, k: int, n_ret: int,
                        judged_upto: int) -> float:
    relevant = count_upto(relpos, nrel, k)
    unjudged = min(k, n_ret) - judged_upto
    rate = relevant / judged_upto if judged_upto > 0 else 0.0
    return (relevant + unjudged * rate) / k
