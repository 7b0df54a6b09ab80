"""Prediction-powered inference (PPI) of run scores from a posterior and a gold sample of pairs.

Angelopoulos et al. (2023), "Prediction-powered inference": a model predicts every unit, a
labelled sample measures the model's error (the *rectifier*), and the prediction plus the
estimated rectifier is an unbiased estimate with a CLT confidence interval, however wrong the
model is. Oosterhuis et al. (2024) apply it to IR metrics with gold on whole queries. Here gold
lies on a sample of (topic, doc) pairs, so the rectifier is per pair:

- the estimand: run r's mean over the topics it answered, θ_r = (1/n_r) Σ_t m_rt(y);
- the prediction: the posterior mean P_r = (1/n_r) Σ_t E_q[m_rt(Y)] over ``PPI_DRAWS`` draws,
  q the posterior recalibrated on the gold sample (``recalibrate``: binary posteriors);
- a pair p of topic t contributes d_rp = h_rtp(y_p) / n_r with h_rtp(c) = E_q[m_rt | Y_p = c]
  − E_q[m_rt], the first-order (Hájek) projection of the measure on the pair's label under the
  posterior q (tasks independent). Σ_p d_rp is the prediction's error up to interactions between
  pairs; it is exact for measures linear in the labels (P@k, DCG@k, R@k with R known);
- gold on a simple random sample G of n of the N judged pairs: D̂_r = (N/n) Σ_{p∈G} d_rp,
  θ̂_r = P_r + D̂_r, standard error N √((1 − n/N) s²_r / n), s²_r the sample variance of d_rp over
  G (finite population correction: the pairs are a finite set), interval θ̂_r ± z·se.

The paired difference of two runs takes d_ap − d_bp. E_q[m | Y_p = c] is averaged over
``PPI_DRAWS`` posterior draws in which only pair p's label is set to c (common random numbers,
so the difference of two classes is not swamped by the draws' noise); a fixed posterior has one
"draw", its labels. The guarantee needs the gold pairs to be a random sample of the judged pairs
and a posterior that did not see their labels (a fit without gold, or one whose gold was held
out); gold on one class only or fewer than two gold pairs cannot estimate the rectifier's
variance: ``PPINeedsGold``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

PPI_DRAWS = 200  # posterior draws behind each E_q[m | Y_p = c]
LEVEL = 0.95
_CHUNK_ROWS = 4000  # label rows scored at once (rows x judged tasks int8, scores M x rows x R)


class PPINeedsGold(ValueError):
    """PPI asked for without gold on at least two judged pairs of both classes."""

    def __init__(self, counts: dict[str, int]) -> None:
        self.counts = counts
        super().__init__(
            "prediction-powered intervals need gold labels on at least 2 judged pairs, "
            f"relevant and non-relevant: {counts['gold_pairs']} gold pair(s) among the "
            f"{counts['judged_pairs']} judged ({counts['relevant']} relevant, "
            f"{counts['non_relevant']} non-relevant)")


def gold_classes(classes: np.ndarray, relevant_index: int, topics: np.ndarray, docs: np.ndarray,
                 gold: Mapping[tuple[str, str], int], relevant_from: int) -> np.ndarray:
    """(J,) the class index of each task's gold label, -1 without gold. A binary posterior takes
    gold ≥ ``relevant_from`` as class 1; a graded one the largest class ≤ the gold value."""
    out = np.full(len(topics), -1, dtype=np.int64)
    binary = classes.tolist() == [0, 1]
    for i, key in enumerate(zip(topics.tolist(), docs.tolist(), strict=True)):
        value = gold.get(key)
        if value is None:
            continue
        if binary:
            out[i] = int(value >= relevant_from)
        else:
            out[i] = max(int(np.searchsorted(classes, value, side="right")) - 1, 0)
    return out


def check_gold(gold_class: np.ndarray, relevant_index: int) -> dict[str, int]:
    """The counts behind a PPI; ``PPINeedsGold`` when they cannot carry one."""
    known = gold_class >= 0
    relevant = int(np.count_nonzero(gold_class[known] >= relevant_index))
    counts = {"judged_pairs": int(len(gold_class)), "gold_pairs": int(known.sum()),
              "relevant": relevant, "non_relevant": int(known.sum()) - relevant}
    if counts["gold_pairs"] < 2 or counts["relevant"] == 0 or counts["non_relevant"] == 0:
        raise PPINeedsGold(counts)
    return counts


def recalibrate(proba: np.ndarray, gold_class: np.ndarray, relevant_index: int) -> np.ndarray:
    """The posterior refitted to the gold sample (Platt 2000): P(relevant) ← σ(a + b·logit q),
    a and b the logistic regression of the gold pairs' relevance on logit q (a few Newton steps,
    a N(0, 1) prior on a and on b − 1 keeping it near the identity with little gold). Binary
    posteriors only (the others are returned as they are). It only sharpens the prediction:
    the rectifier stays unbiased for any prediction, but the projection on single pairs is
    first order, and a prediction near the truth leaves less for the interactions to miss."""
    if proba.shape[1] != 2:
        return proba
    known = gold_class >= 0
    q = np.clip(proba[:, 1], 1e-6, 1 - 1e-6)
    z = np.log(q / (1 - q))
    x, y = np.stack([np.ones(int(known.sum())), z[known]], axis=1), gold_class[known] >= 1
    w = np.array([0.0, 1.0])
    for _ in range(25):
        p = 1 / (1 + np.exp(-np.clip(x @ w, -30, 30)))
        grad = x.T @ (y - p) - (w - [0.0, 1.0])
        hess = (x * (p * (1 - p))[:, None]).T @ x + np.eye(2)
        step = np.linalg.solve(hess, grad)
        w = w + step
        if np.max(np.abs(step)) < 1e-8:
            break
    p_rel = 1 / (1 + np.exp(-np.clip(w[0] + w[1] * z, -30, 30)))
    return np.stack([1 - p_rel, p_rel], axis=1)


def projections(score, base: np.ndarray, proba: np.ndarray, gold_cols: np.ndarray,
                n_measures: int, n_runs: int) -> np.ndarray:
    """(M, G, C, R) h_p(c) = E[m | Y_p = c] − E[m] for each gold pair p of one topic and class c.

    ``score(labels)`` gives (M, rows, R) scores of the topic's located runs for rows of class
    labels; ``base`` (S, J) the posterior draws whose column p is overwritten by each class in
    turn; ``proba`` (J, C) the topic's posterior; ``gold_cols`` the gold pairs' columns.
    E[m] is Σ_c q_p(c) E[m | Y_p = c] over the same draws, so h averages exactly to 0 under q."""
    n_draws, n_classes = base.shape[0], proba.shape[1]
    out = np.empty((n_measures, len(gold_cols), n_classes, n_runs))
    per_pair = n_classes * n_draws
    step = max(1, _CHUNK_ROWS // per_pair)
    for start in range(0, len(gold_cols), step):
        cols = gold_cols[start:start + step]
        labels = np.repeat(base[None, None], len(cols), axis=0)
        labels = np.repeat(labels, n_classes, axis=1)  # (g, C, S, J)
        for k, col in enumerate(cols):
            labels[k, :, :, col] = np.arange(n_classes, dtype=labels.dtype)[:, None]
        scored = score(labels.reshape(-1, base.shape[1]))  # (M, g*C*S, R)
        cond = scored.reshape(n_measures, len(cols), n_classes, n_draws, n_runs).mean(axis=3)
        expected = np.einsum("mgcr,gc->mgr", cond, proba[cols])
        out[:, start:start + len(cols)] = cond - expected[:, :, None, :]
    return out


@dataclass(frozen=True)
class Interval:
    estimate: np.ndarray
    se: np.ndarray
    low: np.ndarray
    high: np.ndarray


def interval(prediction: np.ndarray, contributions: np.ndarray, n_pairs: int,
             bounds: tuple[float, float] = (-np.inf, np.inf), level: float = LEVEL,
             model_variance: np.ndarray | None = None) -> Interval:
    """θ̂ = prediction + (N/n) Σ d and its CLT interval; ``contributions`` (..., n) are the d of
    the n gold pairs (last axis), ``n_pairs`` N the judged pairs they were sampled from. The
    estimate and the interval are clipped to ``bounds``, the measure's range (the true score
    lies in it, so clipping never loses coverage). ``model_variance`` (..., n): each gold pair's
    variance of d under the posterior, Σ_c q_p(c) d_p(c)²; their mean floors the sample variance.
    A measure's error often rests on a few pairs (P@10: the top 10 of each topic), of which the
    sample holds fewer still; when it happens to hold no error, the sample variance is 0 and
    the CLT interval a point (the Wald interval's failure for a rare event), while the
    posterior still expects errors there."""
    n = contributions.shape[-1]
    scale = n_pairs / n
    estimate = prediction + scale * contributions.sum(axis=-1)
    variance = contributions.var(axis=-1, ddof=1) if n > 1 else np.zeros(prediction.shape)
    if model_variance is not None:  # a floor where the sample saw too few errors
        variance = np.maximum(variance, model_variance.mean(axis=-1))
    se = n_pairs * np.sqrt(max(1.0 - n / n_pairs, 0.0) * variance / n)
    z = NormalDist().inv_cdf(0.5 + level / 2)
    lo, hi = bounds
    return Interval(estimate=np.clip(estimate, lo, hi), se=se,
                    low=np.clip(estimate - z * se, lo, hi), high=np.clip(estimate + z * se, lo, hi))
