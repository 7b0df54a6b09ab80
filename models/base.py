"""The Aggregator contract shared by every model, and the result every consumer reads.

Estimator conventions (scikit-learn): ``__init__`` stores hyperparameters unchanged, ``fit``
returns self, learned attributes end in ``_``. ``result()`` turns a fitted model into an
``AggregationResult`` so the CLI and the service write the same outputs whatever the model.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Self

import numpy as np

from models.data import AnnotationData

# progress(fraction in [0, 1], message); the service stores it, the CLI draws a bar.
ProgressCallback = Callable[[float, str], None]


def no_progress(fraction: float, message: str) -> None:
    """Default progress callback: ignore."""


def p_relevant(proba: np.ndarray, relevant_index: int) -> np.ndarray:
    """P(relevant) per task: the posterior mass of the classes from ``relevant_index`` (the first
    relevant class, ``models.evaluation.relevant_index``) up. The one rule every caller uses."""
    return proba[:, relevant_index:].sum(axis=1)


@dataclass
class AggregationResult:
    """What a fitted aggregator says about tasks and annotators, aligned with its AnnotationData.

    ``proba`` is (n_tasks, n_classes) over ``classes``; ``p_relevant(relevant_index)`` is
    P(label >= the first relevant class). Optional per-task / per-annotator columns are NaN-free
    float arrays keyed by name (difficulty, bias, posterior_mean, competence, noise_variance, ...).
    """

    method: str
    classes: np.ndarray
    proba: np.ndarray
    task_columns: dict[str, np.ndarray] = field(default_factory=dict)
    annotator_columns: dict[str, np.ndarray] = field(default_factory=dict)
    objective_history: list[float] = field(default_factory=list)
    info: dict[str, Any] = field(default_factory=dict)

    @property
    def labels(self) -> np.ndarray:
        """Label values of the most probable class per task (ties: the lowest class). A model's
        own tie rule is in ``Aggregator.labels_``, which the CLI and the service write."""
        return self.classes[np.argmax(self.proba, axis=1)]

    def p_relevant(self, relevant_index: int) -> np.ndarray:
        """P(relevant): the mass of the classes from ``relevant_index`` up (``p_relevant``); not
        1 − P(lowest class), which is wrong for a scale whose relevant grades start at 2."""
        return p_relevant(self.proba, relevant_index)


class Aggregator(ABC):
    """fit(data) -> self; then ``proba_`` (n_tasks, n_classes) and ``result()``."""

    method: str = ""
    proba_: np.ndarray

    @abstractmethod
    def fit(self, data: AnnotationData, progress: ProgressCallback = no_progress) -> Self:
        ...

    @property
    def labels_(self) -> np.ndarray:
        """Class indices of the most probable label per task."""
        return np.argmax(self.proba_, axis=1)

    @abstractmethod
    def result(self, data: AnnotationData) -> AggregationResult:
        ...
