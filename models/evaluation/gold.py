"""Agreement of aggregated labels with gold (expert) labels."""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from models.data import UNKNOWN


@dataclass(frozen=True)
class Evaluation:
    """Scores over the tasks that have a gold label.

    accuracy is exact label match (multi-class works); precision / recall / F1 treat the top class
    (binary) or every class from ``relevant_index`` up (graded) as relevant; log loss is the mean
    negative log probability of the gold class, clipped at 1e-12.
    """

    n_gold: int
    accuracy: float
    precision: float
    recall: float
    f1: float
    log_loss: float

    def as_dict(self) -> dict[str, float | int]:
        return asdict(self)


def relevant_index(classes: np.ndarray, relevant_from: int, *, graded: bool) -> int:
    """Index of the first class that counts as relevant (binary data: class 1)."""
    if not graded:
        return 1
    return int(np.searchsorted(classes, relevant_from))


def evaluate(proba: np.ndarray, gold: np.ndarray, *, relevant_index: int = 1) -> Evaluation | None:
    """Evaluate class probabilities (n_tasks, n_classes) against gold class indices (UNKNOWN = -1).

    Returns None when no task has a gold label.
    """
    known = gold != UNKNOWN
    n = int(known.sum())
    if n == 0:
        return None
    p = proba[known]
    g = gold[known]
    pred = np.argmax(p, axis=1)
    accuracy = float(np.mean(pred == g))
    pred_rel = pred >= relevant_index
    gold_rel = g >= relevant_index
    tp = float(np.sum(pred_rel & gold_rel))
    precision = tp / max(float(pred_rel.sum()), 1.0)
    recall = tp / max(float(gold_rel.sum()), 1.0)
    f1 = 2 * precision * recall / (precision + recall) if precision + recall > 0 else 0.0
    log_loss = float(-np.mean(np.log(np.clip(p[np.arange(n), g], 1e-12, 1.0))))
    return Evaluation(n, accuracy, precision, recall, f1, log_loss)
