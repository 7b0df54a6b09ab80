"""Horvitz–Thompson estimators of a run's measures from a sample with known inclusion
probabilities (thesis §2.3; Horvitz & Thompson 1952; Thompson, *Sampling*).

Sampled distinct documents i ∈ S' with relevance y_i, first-order π_i and second-order π_ij:

    R̂      = Σ_i y_i / π_i                                            (eq. 2.12)
    P̂@k    = (1/k) Σ_{i: r(i) ≤ k} y_i / π_i                           (eq. 2.13)
    recall = Σ_{i ∈ run} (y_i / π_i) / R̂                               (ratio estimator)
    ÂP     = Q̂ / R̂,  Q̂ = Σ_{i ∈ run} y_i / (r(i) π_i)
                         + Σ_{i ∈ run} Σ_{j ∈ run, r(j) < r(i)} y_i y_j / (r(i) π_ij)

Q̂ is the HT estimator of Σ_i y_i P@r(i) (the numerator of eq. 2.10): each pair is weighted by
its own π_ij, which makes Q̂ unbiased (eq. 2.14 weights the pair by 1/(π_i π_j) instead). The
variance of a linear estimator Σ_i c_i y_i / π_i is (eq. 2.8)

    v̂ar = zᵀ Δ z,  z_i = c_i y_i / π_i,  Δ_ii = 1 − π_i,  Δ_ij = 1 − π_i π_j / π_ij;

the ratio estimators (recall, AP) use the linearised (delta-method) variable
z_i = (c_i − θ̂) y_i / (R̂ π_i) with c_i the document's share of the numerator (P̂@r(i) for AP).
Deterministic pools (depth-k, move-to-front) are the case π = 1: the trec_eval values with
unjudged documents non-relevant, and variance 0.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Estimate:
    value: float
    variance: float


@dataclass(frozen=True)
class RunEstimates:
    precision: dict[int, Estimate]
    recall: Estimate
    ap: Estimate


@dataclass(frozen=True)
class TopicEstimates:
    n_relevant: Estimate
    runs: list[RunEstimates]


def ht_delta(pi: np.ndarray, pi2: np.ndarray) -> np.ndarray:
    """Δ_ij = 1 − π_i π_j / π_ij, Δ_ii = 1 − π_i (computed once per topic)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        delta = np.where(pi2 > 0, 1.0 - np.outer(pi, pi) / pi2, 0.0)
    np.fill_diagonal(delta, 1.0 - pi)
    return delta


def ht_variance(z: np.ndarray, delta: np.ndarray) -> float:
    """zᵀ Δ z (eq. 2.8) with z_i = c_i y_i / π_i; clipped at 0 (the estimator can go negative)."""
    return float(max(z @ delta @ z, 0.0))


def estimate_topic(*, ranks: np.ndarray, y: np.ndarray, pi: np.ndarray, pi2: np.ndarray,
                   cutoffs: Sequence[int] = (5, 10, 20)) -> TopicEstimates:
    """Estimates for one topic. ``ranks`` is (n_runs, m): the rank of each sampled doc in each
    run (0 when the run does not retrieve it); ``y`` (m,) relevance in [0, 1]; ``pi`` (m,);
    ``pi2`` (m, m) with π_i on the diagonal."""
    y = np.asarray(y, dtype=np.float64)
    pi = np.asarray(pi, dtype=np.float64)
    u = y / pi
    r_hat = float(u.sum())
    delta = ht_delta(pi, pi2)
    n_relevant = Estimate(r_hat, ht_variance(u, delta))
    runs = []
    with np.errstate(divide="ignore", invalid="ignore"):
        inv_pi2 = np.where(pi2 > 0, 1.0 / pi2, 0.0)
    for rank in ranks:
        inside = rank > 0
        precision = {}
        for k in cutoffs:
            c = ((rank > 0) & (rank <= k)).astype(np.float64) / k
            precision[k] = Estimate(float((c * u).sum()), ht_variance(c * u, delta))
        if r_hat <= 0:
            runs.append(RunEstimates(precision, Estimate(float("nan"), 0.0), Estimate(0.0, 0.0)))
            continue
        rec = float(u[inside].sum()) / r_hat
        z = (inside.astype(np.float64) - rec) * u / r_hat
        recall = Estimate(rec, ht_variance(z, delta))
        # Q: the own term y_i/(r_i π_i) plus pairs above i weighted by 1/π_ij.
        idx = np.flatnonzero(inside & (y > 0))
        prec_at = np.zeros(y.shape[0])  # P̂@r(i): each doc's share of Q̂ per unit y_i/π_i
        if idx.size:
            r = rank[idx]
            above = r[None, :] < r[:, None]  # [i, j]: j ranked above i
            pair = (inv_pi2[np.ix_(idx, idx)] * above) @ y[idx]  # Σ_{j above i} y_j / π_ij
            q_i = y[idx] * (1.0 / pi[idx] + pair) / r
            q_hat = float(q_i.sum())
            prec_at[idx] = q_i / np.where(u[idx] > 0, u[idx], 1.0)
        else:
            q_hat = 0.0
        ap = q_hat / r_hat
        z = (prec_at - ap) * u / r_hat
        runs.append(RunEstimates(precision, recall, Estimate(ap, ht_variance(z, delta))))
    return TopicEstimates(n_relevant, runs)


def true_measures(*, ranking: Sequence[str], qrels: dict[str, float], cutoffs: Sequence[int]
                  ) -> dict[str, float]:
    """Exact P@k, recall and AP of one ranking with full judgments (unjudged = non-relevant)."""
    rel = np.array([qrels.get(d, 0.0) for d in ranking], dtype=np.float64)
    r_total = float(sum(qrels.values()))
    out = {f"P@{k}": float(rel[:k].sum()) / k for k in cutoffs}
    if r_total <= 0:
        out.update(recall=float("nan"), AP=0.0)
        return out
    out["recall"] = float(rel.sum()) / r_total
    out["AP"] = float(np.sum(rel * np.cumsum(rel) / np.arange(1, rel.size + 1))) / r_total
    return out
