"""Held-out evaluation of a model that uses gold during fitting (k-fold over gold tasks).

A model that clamps gold labels (``use_gold``) is perfect on the tasks it was given, so scoring it
on the same gold inflates its accuracy. ``heldout_predictions`` splits the tasks with a gold label
into k folds; for each fold it fits the model on the data with that fold's gold removed (the other
folds' gold stays, to be clamped) and keeps the predictions for the fold's tasks only. Every gold
task is then predicted by a fit that never saw its label, and the concatenated predictions are
scored against all the gold as usual. Tasks without gold take the predictions of the fit on all
gold (the model one would deploy).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from models.base import Aggregator, ProgressCallback, no_progress
from models.data import UNKNOWN, AnnotationData


@dataclass(frozen=True)
class HeldOut:
    """Predictions where every gold task comes from a fit that did not see its label."""

    proba: np.ndarray  # (n_tasks, K)
    labels: np.ndarray  # (n_tasks,) class indices
    fold: np.ndarray  # (n_tasks,) fold of each gold task, -1 for tasks without gold
    n_folds: int


def held_out_seed(seed: int | None, params: dict | None = None) -> int:
    """The seed of the folds: the fit's seed, else the method's ``random_state``, else 0, so that
    a held-out evaluation is reproducible (the service and the CLI both take it from here)."""
    if seed is not None:
        return int(seed)
    state = (params or {}).get("random_state")
    return 0 if state is None else int(state)


def gold_folds(gold: np.ndarray, n_folds: int, random_state: int | None = None,
               order: np.ndarray | None = None) -> np.ndarray:
    """A fold index per task with a gold label (stratified by gold class), -1 elsewhere.
    ``order`` (a permutation of the tasks) is the order the draw sees them in: with the tasks
    ranked by (topic, doc) the folds do not depend on how a file or a database numbered them."""
    if n_folds < 2:
        raise ValueError("held-out evaluation needs at least 2 folds")
    rng = np.random.default_rng(random_state)
    order = np.arange(gold.shape[0]) if order is None else np.asarray(order)
    ranked = gold[order]
    fold = np.full(gold.shape[0], -1, dtype=np.int64)
    for value in np.unique(gold[gold != UNKNOWN]):
        members = order[rng.permutation(np.flatnonzero(ranked == value))]
        fold[members] = np.arange(members.shape[0]) % n_folds
    if (gold != UNKNOWN).sum() < n_folds:
        raise ValueError(f"{int((gold != UNKNOWN).sum())} gold tasks cannot fill {n_folds} folds")
    return fold


def task_order(data: AnnotationData) -> np.ndarray:
    """The tasks ranked by (topic, doc) as Python orders strings."""
    keys = list(zip(data.topic_ids.tolist(), data.doc_ids.tolist(), strict=True))
    return np.array(sorted(range(len(keys)), key=keys.__getitem__), dtype=np.int64)


def heldout_predictions(
    make_model: Callable[[], Aggregator],
    data: AnnotationData,
    n_folds: int = 5,
    *,
    random_state: int | None = None,
    progress: ProgressCallback = no_progress,
    full_model: Aggregator | None = None,
) -> HeldOut:
    """k-fold predictions for the gold tasks (see the module doc); ``full_model`` (a model already
    fitted on all of ``data``) gives the other tasks' predictions, else one more fit does."""
    if data.gold is None or not (data.gold != UNKNOWN).any():
        raise ValueError("held-out evaluation needs gold labels")
    fold = gold_folds(data.gold, n_folds, random_state, task_order(data))
    steps = n_folds + (full_model is None)
    if full_model is None:
        full_model = make_model().fit(
            data, lambda f, msg: progress(f / steps, f"all gold: {msg}"))
    proba = np.array(full_model.proba_, dtype=np.float64, copy=True)
    labels = np.array(full_model.labels_, copy=True)
    for k in range(n_folds):
        held = fold == k
        train = replace(data, gold=np.where(held, UNKNOWN, data.gold))
        done = k + (steps - n_folds)
        model = make_model().fit(
            train, lambda f, msg, d=done, k=k: progress((d + f) / steps,
                                                        f"fold {k + 1}/{n_folds}: {msg}"))
        proba[held] = model.proba_[held]
        labels[held] = np.asarray(model.labels_)[held]
    return HeldOut(proba, labels, fold, n_folds)
