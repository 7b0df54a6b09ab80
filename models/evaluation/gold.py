"""Agreement of aggregated labels with gold (expert) labels."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from models.base import p_relevant
from models.data import UNKNOWN
from models.evaluation.reliability import brier_score, calibration_event, reliability


@dataclass(frozen=True)
class Evaluation:
    """Scores over the tasks that have a gold label.

    accuracy is exact label match (multi-class works); precision / recall / F1 treat the top class
    (binary) or every class from ``relevant_index`` up (graded) as relevant; log loss is the mean
    negative log probability of the gold class, clipped at 1e-12.

    ``ece`` and ``brier`` measure calibration (``models.evaluation.reliability``): for binary
    data of P(relevant), for graded data of the top class (its probability against whether it is
    the gold grade; the Brier score is the multi-class one).

    Graded data (more than two classes) also get the ordinal scores: ``mae``, the mean absolute
    difference between the predicted and the gold grade (on the scale's values); ``kappa``,
    Cohen's κ with quadratic weights (Cohen 1968) between predicted and gold grades; and
    ``binary_accuracy``, the accuracy of the binary view P(grade ≥ relevant_from) ≥ ½ against gold
    ≥ relevant_from. They are None (and left out of ``as_dict``) for binary data.
    """

    n_gold: int
    accuracy: float
    precision: float
    recall: float
    f1: float
    log_loss: float
    ece: float | None = None
    brier: float | None = None
    mae: float | None = None
    kappa: float | None = None
    binary_accuracy: float | None = None
    # the bins behind ``ece`` (``Reliability.as_dict``), for a reliability diagram
    reliability: dict[str, list] | None = None

    def as_dict(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v is not None}


def relevant_index(classes: np.ndarray, relevant_from: int, *, graded: bool) -> int:
    """Index of the first class that counts as relevant (binary data: class 1)."""
    if not graded:
        return 1
    return int(np.searchsorted(classes, relevant_from))


def quadratic_kappa(pred: np.ndarray, gold: np.ndarray, n_classes: int) -> float:
    """Cohen's κ with quadratic weights w_ab = (a − b)² / (K − 1)² between two gradings (class
    indices): 1 − Σ w O / Σ w E, O the observed confusion counts, E their product of marginals."""
    observed = np.bincount(pred * n_classes + gold, minlength=n_classes * n_classes).reshape(
        n_classes, n_classes).astype(np.float64)
    expected = np.outer(observed.sum(axis=1), observed.sum(axis=0)) / max(observed.sum(), 1.0)
    k = np.arange(n_classes, dtype=np.float64)
    weights = (k[:, None] - k[None, :]) ** 2
    denominator = float(np.sum(weights * expected))
    if denominator == 0.0:  # one grade only on both sides: agreement is perfect or undefined
        return 1.0 if np.array_equal(pred, gold) else 0.0
    return 1.0 - float(np.sum(weights * observed)) / denominator


def evaluate(proba: np.ndarray, gold: np.ndarray, *, relevant_index: int = 1,
             classes: np.ndarray | None = None, labels: np.ndarray | None = None,
             ) -> Evaluation | None:
    """Evaluate class probabilities (n_tasks, n_classes) against gold class indices (UNKNOWN = -1).

    ``labels`` (class indices) are the hard labels to score, by default the most probable class;
    ``classes`` the label values (for the MAE on the scale; default 0..K−1). Returns None when no
    task has a gold label.
    """
    known = gold != UNKNOWN
    n = int(known.sum())
    if n == 0:
        return None
    p = proba[known]
    g = gold[known]
    pred = np.argmax(p, axis=1) if labels is None else np.asarray(labels)[known]
    accuracy = float(np.mean(pred == g))
    pred_rel = pred >= relevant_index
    gold_rel = g >= relevant_index
    tp = float(np.sum(pred_rel & gold_rel))
    precision = tp / max(float(pred_rel.sum()), 1.0)
    recall = tp / max(float(gold_rel.sum()), 1.0)
    f1 = 2 * precision * recall / (precision + recall) if precision + recall > 0 else 0.0
    log_loss = float(-np.mean(np.log(np.clip(p[np.arange(n), g], 1e-12, 1.0))))
    bins = reliability(*calibration_event(p, g))
    ece, brier = bins.ece, brier_score(p, g)
    if p.shape[1] <= 2:
        return Evaluation(n, accuracy, precision, recall, f1, log_loss, ece, brier,
                          reliability=bins.as_dict())
    values = np.arange(p.shape[1], dtype=np.float64) if classes is None else np.asarray(
        classes, dtype=np.float64)
    mae = float(np.mean(np.abs(values[pred] - values[g])))
    kappa = quadratic_kappa(pred, g, p.shape[1])
    binary = (p_relevant(p, relevant_index) >= 0.5) == gold_rel
    return Evaluation(n, accuracy, precision, recall, f1, log_loss, ece, brier, mae, kappa,
                      float(np.mean(binary)), bins.as_dict())
