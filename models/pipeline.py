"""One fit, the same for the service's job, ``crowdqrels aggregate`` and ``crowdqrels next``.

``FitSpec`` says what to fit (method, params, seed, the relevant grades); ``fit`` builds the
method from the registry, fits it (cold, or warm from ``init``) and reads its posterior;
``Fitted.score`` scores it against gold, held out (K-fold over the gold tasks) when asked. The
callers read ``Fitted``: the hard labels (the model's own tie rule), P(relevant) by one rule
(``models.base.p_relevant``), the model's result (its task and annotator columns) and the
evaluation. They only adapt: the job reads a snapshot and stores rows, the CLI reads files and
writes tables.

The stages, in order, each in one place: ``FitSpec.build`` (the registry) -> ``fit`` (the model)
-> ``_posterior`` (a step after the fit that turns the model's posterior into the one every
caller reads: where a calibration of the posterior goes) -> ``Fitted.score`` (held-out
predictions, then ``_evaluate``: where further evaluation measures go).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from models.base import AggregationResult, Aggregator, ProgressCallback, no_progress, p_relevant
from models.data import AnnotationData
from models.evaluation import Evaluation, evaluate, relevant_index
from models.evaluation.heldout import held_out_seed, heldout_predictions
from models.tempering import readout_info
from models.warm import accepts_init

__all__ = ["FitSpec", "Fitted", "Scores", "fit"]


@dataclass(frozen=True)
class FitSpec:
    """What to fit. ``seed`` becomes ``random_state`` when the method has one and ``params`` do
    not set it, and seeds the held-out folds; ``relevant_from`` is the lowest relevant label
    value (``graded``: the labels are the grades, so it also splits them for a calibrated fit)."""

    method: str
    params: Mapping[str, Any] = field(default_factory=dict)
    seed: int | None = None
    relevant_from: int = 1
    graded: bool = False

    def build(self) -> Aggregator:
        """The registry's aggregator (models.registry: InvalidParams, UnknownMethod)."""
        from models.registry import make_aggregator, with_seed

        return make_aggregator(self.method, with_seed(self.method, dict(self.params), self.seed),
                               relevant_from=self.relevant_from if self.graded else None)

    def relevant_index(self, data: AnnotationData) -> int:
        """Index of the first relevant class of ``data`` (binary data: class 1)."""
        return relevant_index(data.classes, self.relevant_from, graded=self.graded)


@dataclass(frozen=True)
class Scores:
    """A fit scored against gold: the predictions scored (held out: each gold task from a fit
    that did not see its label) and their evaluation (None: no gold task)."""

    labels: np.ndarray  # class indices
    proba: np.ndarray
    held_out: bool
    folds: int | None
    folds_seed: int | None
    evaluation: Evaluation | None


@dataclass
class Fitted:
    """A fitted model and what every caller reads of it, aligned with ``data``'s tasks."""

    spec: FitSpec
    data: AnnotationData
    model: Aggregator
    result: AggregationResult
    labels: np.ndarray  # class indices: the model's own tie rule
    relevant: int  # index of the first relevant class
    p_relevant: np.ndarray  # P(label >= relevant_from)

    @property
    def published(self) -> np.ndarray:
        """The tasks that get a label in the qrels: those with evidence (a judgment, or features
        for a GP method), less the tasks MACE's ``threshold`` left unselected."""
        from models.registry import GP_METHODS

        if self.spec.method in GP_METHODS and self.data.features is not None:
            evidence = np.ones(self.data.n_tasks, dtype=bool)
        else:
            evidence = self.data.judgments_per_task() > 0
        if "selected" in self.result.task_columns:
            evidence &= self.result.task_columns["selected"] > 0
        return evidence

    def score(self, folds: int | None = None, *, tasks: np.ndarray | None = None,
              own_labels: bool = True, progress: ProgressCallback = no_progress) -> Scores:
        """Score against the gold of ``tasks`` (a mask; default all): with ``folds``, K-fold
        held out over the gold tasks (seeded by ``held_out_seed``), else the fit's own posterior
        (inflated when the fit clamped the gold). The hard labels scored are the model's own
        (its tie rule); ``own_labels=False``: the most probable class, the rule by which a
        stored posterior alone can be scored again (the service re-scores it when gold
        changes)."""
        labels, proba, seed = self.labels, self.result.proba, None
        if folds is not None:
            seed = held_out_seed(self.spec.seed, dict(self.spec.params))
            held = heldout_predictions(self.spec.build, self.data, folds, random_state=seed,
                                       full_model=self.model, progress=progress)
            labels, proba = held.labels, held.proba
        gold = self.data.gold
        if gold is not None and tasks is not None:
            gold = np.where(tasks, gold, -1)
        hard = labels if own_labels else None
        evaluation = None if gold is None else _evaluate(self, hard, proba, gold)
        return Scores(labels=labels, proba=proba, held_out=folds is not None, folds=folds,
                      folds_seed=seed, evaluation=evaluation)


def fit(spec: FitSpec, data: AnnotationData, *, init: object | None = None,
        progress: ProgressCallback = no_progress, model: Aggregator | None = None) -> Fitted:
    """Build (unless ``model`` is given, unfitted), fit (warm from ``init`` when given: the
    method must accept it, ``models.warm``) and read the posterior."""
    model = spec.build() if model is None else model
    if init is None:
        model.fit(data, progress)
    else:
        if not accepts_init(model):
            raise ValueError(f"method {spec.method!r} cannot start from an earlier fit")
        model.fit(data, progress, init=init)  # type: ignore[call-arg]
    return _posterior(spec, data, model)


def _posterior(spec: FitSpec, data: AnnotationData, model: Aggregator) -> Fitted:
    """The fitted model's result, labels and P(relevant): the one step after every fit."""
    result = model.result(data)
    result.info.update(readout_info(model))  # the gold-free read-out's τ and ρ̄, if applied
    relevant = spec.relevant_index(data)
    return Fitted(spec=spec, data=data, model=model, result=result,
                  labels=np.asarray(model.labels_), relevant=relevant,
                  p_relevant=p_relevant(np.asarray(result.proba, dtype=float), relevant))


def _evaluate(fitted: Fitted, labels: np.ndarray | None, proba: np.ndarray,
              gold: np.ndarray) -> Evaluation | None:
    """Hard ``labels`` (None: the most probable class) and ``proba`` against ``gold`` (class
    indices, -1 unknown)."""
    return evaluate(proba, gold, relevant_index=fitted.relevant, classes=fitted.data.classes,
                    labels=labels)
