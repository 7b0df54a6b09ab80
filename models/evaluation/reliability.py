"""Calibration of predicted probabilities against gold: reliability bins, ECE and Brier score.

A probability is calibrated when, of the tasks given P = 0.7, 70 % are relevant. With gold this
is measured by binning: 10 equal-width bins of the predicted probability, and in each the mean
prediction against the share of positives (a reliability diagram plots the two). The expected
calibration error (ECE) is their absolute difference weighted by the bin's share of the tasks
(Naeini, Cooper & Hauskrecht 2015); the Brier score the mean squared error of the probability
(Brier 1950), which also rewards sharpness.

Binary data: the event is "relevant", the probability P(relevant). Graded data: *top-class*
calibration (Guo et al. 2017): the event is "the most probable grade is the gold grade", the
probability that grade's; the Brier score is the multi-class one, Σ_k (p_k − [k = gold])².
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

N_BINS = 10


@dataclass(frozen=True)
class Reliability:
    """Per bin of equal width on [0, 1]: tasks, mean prediction, share of positives (NaN where
    the bin is empty); ``lower`` the bins' left edges."""

    lower: np.ndarray
    count: np.ndarray
    mean_p: np.ndarray
    share: np.ndarray

    @property
    def ece(self) -> float:
        used = self.count > 0
        n = self.count.sum()
        if n == 0:
            return float("nan")
        return float(np.sum(self.count[used] * np.abs(self.mean_p[used] - self.share[used])) / n)

    def as_dict(self) -> dict[str, list]:
        """JSON-ready: empty bins' means are None."""
        def clean(x: np.ndarray) -> list:
            return [None if not np.isfinite(v) else float(v) for v in x]
        return {"lower": self.lower.tolist(), "count": self.count.astype(int).tolist(),
                "mean_p": clean(self.mean_p), "share": clean(self.share)}


def reliability(p: np.ndarray, outcome: np.ndarray, n_bins: int = N_BINS) -> Reliability:
    """Bins of ``p`` (probabilities of an event) against ``outcome`` (bool: it happened)."""
    p = np.clip(np.asarray(p, dtype=np.float64), 0.0, 1.0)
    y = np.asarray(outcome, dtype=np.float64)
    which = np.minimum((p * n_bins).astype(np.int64), n_bins - 1)
    count = np.bincount(which, minlength=n_bins).astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_p = np.bincount(which, weights=p, minlength=n_bins) / count
        share = np.bincount(which, weights=y, minlength=n_bins) / count
    return Reliability(np.arange(n_bins) / n_bins, count, mean_p, share)


def calibration_event(proba: np.ndarray, gold: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(probability, outcome) of the event calibration is measured on: P(relevant) and gold
    relevant (2 classes), else the top class's probability and whether it is the gold class.
    ``proba`` (n, K) and ``gold`` (n,) class indices, gold tasks only."""
    proba = np.asarray(proba, dtype=np.float64)
    if proba.shape[1] <= 2:
        return proba[:, -1], gold == proba.shape[1] - 1
    top = np.argmax(proba, axis=1)
    return proba[np.arange(proba.shape[0]), top], top == gold


def brier_score(proba: np.ndarray, gold: np.ndarray) -> float:
    """Binary: mean (P(relevant) − [relevant])²; graded: mean Σ_k (p_k − [k = gold])²."""
    proba = np.asarray(proba, dtype=np.float64)
    if proba.shape[1] <= 2:
        return float(np.mean((proba[:, -1] - (gold == proba.shape[1] - 1)) ** 2))
    onehot = np.zeros_like(proba)
    onehot[np.arange(proba.shape[0]), gold] = 1.0
    return float(np.mean(np.sum((proba - onehot) ** 2, axis=1)))
