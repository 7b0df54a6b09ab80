"""Majority vote: P(class) = the task's share of votes for that class.

    P(y_i = k) = n_ik / n_i        (n_ik: votes for class k on task i, n_i: all votes on task i)

A task nobody judged gets the uniform distribution. The hard label is the class with most votes;
ties are broken by the ``tie`` parameter, never by the order of a dict or of the input:

- ``"lowest"`` (default): the lowest tied class (for relevance: the less relevant grade);
- ``"highest"``: the highest tied class;
- ``"random"``: uniformly among the tied classes, reproducible with ``random_state``.
"""

from __future__ import annotations

from typing import Literal, Self

import numpy as np

from models.base import AggregationResult, Aggregator, ProgressCallback, no_progress
from models.data import AnnotationData
from models.params import Seed, validated

TieRule = Literal["lowest", "highest", "random"]


class MajorityVote(Aggregator):
    method = "mv"

    @validated
    def __init__(self, tie: TieRule = "lowest", random_state: Seed = None) -> None:
        self.tie = tie
        self.random_state = random_state

    def fit(self, data: AnnotationData, progress: ProgressCallback = no_progress) -> Self:
        # Column by column (K is small): numpy's reductions along a row of K elements cost a
        # call per task, while a column operation is one pass over the tasks.
        counts = data.counts().astype(np.float64)
        columns = [counts[:, c] for c in range(data.n_classes)]
        totals = data.judgments_per_task().astype(np.float64)
        judged = totals > 0
        proba = np.divide(counts, np.maximum(totals, 1.0)[:, None])
        proba[~judged] = 1.0 / data.n_classes
        self.counts_ = counts
        self.proba_ = proba
        top = columns[0].copy()
        for column in columns[1:]:
            np.maximum(top, column, out=top)
        tied = np.stack([column == top for column in columns], axis=1)  # the top classes
        n_top = sum(column == top for column in columns[1:]) + (columns[0] == top)
        self.tied_ = (n_top > 1) & judged
        self.hard_labels_ = self._break_ties(tied)
        progress(1.0, "majority vote")
        return self

    def _break_ties(self, tied: np.ndarray) -> np.ndarray:
        n_classes = tied.shape[1]
        if self.tie == "lowest":
            return np.argmax(tied, axis=1)
        if self.tie == "highest":
            return n_classes - 1 - np.argmax(tied[:, ::-1], axis=1)
        # Random: a uniform key per (task, class); the tied class with the largest key wins.
        rng = np.random.default_rng(self.random_state)
        keys = np.where(tied, rng.random(tied.shape), -1.0)
        return np.argmax(keys, axis=1)

    @property
    def labels_(self) -> np.ndarray:
        """Class index per task after the tie rule (``proba_`` itself stays the vote shares)."""
        return self.hard_labels_

    def result(self, data: AnnotationData) -> AggregationResult:
        n_votes = data.judgments_per_task().astype(np.float64)
        agreement = self.proba_[np.arange(data.n_tasks), self.hard_labels_]
        # Annotator agreement with the majority label of the tasks they judged.
        agrees = (data.label == self.hard_labels_[data.task]).astype(np.float64)
        n_judged = data.judgments_per_annotator().astype(np.float64)
        agree_share = np.bincount(data.annotator, weights=agrees, minlength=data.n_annotators)
        agree_share = np.divide(agree_share, n_judged, out=np.zeros_like(agree_share),
                                where=n_judged > 0)
        return AggregationResult(
            method=self.method,
            classes=data.classes,
            proba=self.proba_,
            task_columns={
                "n_judgments": n_votes,
                "agreement": agreement,
                "tie": self.tied_.astype(np.float64),
            },
            annotator_columns={
                "n_judgments": n_judged,
                "competence": agree_share,
            },
            info={"tie": self.tie, "n_ties": int(self.tied_.sum())},
        )
