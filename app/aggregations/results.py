"""Persisting a fitted model's results, and reading them back for downloads and dashboards."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from sqlalchemy import text, update
from sqlalchemy.orm import Session

from app.aggregations.snapshot import Snapshot
from app.aggregations.tables import (
    Aggregation,
    AggregationAnnotator,
    AggregationArtifact,
    AggregationTask,
)
from app.core.db import JsonNumbers, bulk_insert_columns
from models.data import UNKNOWN
from models.pipeline import Fitted, Scores

# Methods with a GP over task features: they can predict tasks nobody judged.
PREDICTING_METHODS = ("magp", "gpmv")

TASK_COLUMNS = ("posterior_mean", "posterior_variance", "difficulty", "bias")
ANNOTATOR_COLUMNS = ("competence", "noise_variance", "bias")


class NonFiniteResults(ValueError):
    """A fit whose posterior or objective is NaN or infinite: a numerical failure, not a result."""


def check_finite(proba: np.ndarray, objective_history: Any) -> None:
    """Raise NonFiniteResults unless every task's posterior and the objective are finite
    numbers: nothing of such a fit is stored (a NaN would otherwise end as a NULL refused by
    the database, or as a "succeeded" fit with null results)."""
    bad_tasks = int((~np.isfinite(proba)).any(axis=1).sum()) if proba.size else 0
    history = np.asarray(list(objective_history or []), dtype=float)
    bad_objective = bool(history.size) and not bool(np.isfinite(history).all())
    if bad_tasks or bad_objective:
        what = (f"NaN or infinite posterior probabilities for {bad_tasks} of {proba.shape[0]} "
                "tasks" if bad_tasks else "a NaN or infinite objective")
        raise NonFiniteResults(
            f"the fit diverged numerically ({what}); nothing was stored. Parameters far from "
            "the defaults (tiny priors or smoothing) are the usual cause")


def store_results(session: Session, *, aggregation: Aggregation, snapshot: Snapshot,
                  fitted: Fitted, scores: Scores,
                  gold_record: dict[str, Any] | None = None) -> None:
    """The fit's labels, P(relevant) and columns (``models.pipeline``) as rows; ``scores``: its
    evaluation against gold (held out for a fit that clamps gold: it is perfect on it), the
    stored results staying the fit's. ``gold_record``: which gold the evaluation is scored
    against (``gold.fit_record``), kept as ``info["gold"]``."""
    data, result, model = snapshot.data, fitted.result, fitted.model
    proba = np.asarray(result.proba, dtype=float)
    check_finite(proba, result.objective_history)
    p_relevant = fitted.p_relevant
    labels = data.classes[fitted.labels]  # the model's own tie rule, as the CLI writes them
    with np.errstate(divide="ignore", invalid="ignore"):
        entropy = -np.sum(np.where(proba > 0, proba * np.log(proba), 0.0), axis=1)

    task_extra = {k: v for k, v in result.task_columns.items()
                  if k not in TASK_COLUMNS and k != "p_relevant"}
    # Columns, formatted a block at a time (bulk_insert_columns): at 2,000,000 tasks a dict,
    # two json.dumps and a driver call per row were most of the stage's client CPU
    bulk_insert_columns(session, AggregationTask.__table__, proba.shape[0], {
        "aggregation_id": aggregation.id, "task_id": np.asarray(snapshot.task_ids),
        "label": np.asarray(labels), "p_relevant": np.asarray(p_relevant, dtype=float),
        "proba": JsonNumbers([proba[:, k] for k in range(proba.shape[1])]),
        "uncertainty": entropy,
        **{name: _float_column(result.task_columns.get(name)) for name in TASK_COLUMNS},
        "extra": JsonNumbers([_float_column(v) for v in task_extra.values()],
                             keys=list(task_extra)),
    })
    _store_annotators(session, aggregation, snapshot, fitted)

    if aggregation.method in PREDICTING_METHODS and not result.info.get("fallback"):
        # What POST /aggregations/{a}/predict needs, in numpy: the API never loads TensorFlow.
        from models.gp.predictor import KIND, export

        session.add(AggregationArtifact(aggregation_id=aggregation.id, kind=KIND,
                                        payload=export(model).to_bytes()))
    from models.gp.joint import joint_posterior

    joint = joint_posterior(aggregation.method, data, model)
    if joint is not None:  # what evaluation draws need to move tasks sharing features together
        from models.evaluation.joint import KIND as JOINT_KIND

        session.add(AggregationArtifact(aggregation_id=aggregation.id, kind=JOINT_KIND,
                                        payload=joint.to_bytes()))

    evaluation = None if scores.evaluation is None else scores.evaluation.as_dict()
    if evaluation is not None:
        evaluation["held_out"] = scores.held_out
    info = dict(result.info)
    if data.notes:
        info["data_notes"] = list(data.notes)
    info["n_tasks"] = data.n_tasks
    info["n_annotators"] = data.n_annotators
    if gold_record is not None:
        info["gold"] = gold_record
    session.execute(update(Aggregation).where(Aggregation.id == aggregation.id).values(
        n_judgments=data.n_judgments,
        objective_history=[float(x) for x in result.objective_history],
        evaluation=evaluation,
        info=_jsonable(info),
        classes=[int(c) for c in data.classes],
    ))
    session.commit()
    if session.get_bind().dialect.name == "postgresql":
        # Fresh statistics, so the dashboards' first queries on this aggregation get good plans
        # (autovacuum would take minutes to notice a bulk load).
        session.execute(text("ANALYZE aggregation_tasks, aggregation_annotators, annotators, "
                             "tasks, topics, documents"))
        session.commit()


def _float_column(column: Any) -> np.ndarray | None:
    """A result column as float64 (a value that is not finite is stored as NULL, a missing
    column as NULL in every row)."""
    return None if column is None else np.asarray(column, dtype=np.float64)


def _store_annotators(session: Session, aggregation: Aggregation, snapshot: Snapshot,
                      fitted: Fitted) -> None:
    """One row per annotator: counts, agreement with gold and the fit's annotator columns."""
    data, result, rel = snapshot.data, fitted.result, fitted.relevant
    per_annotator = data.judgments_per_annotator()
    n_gold, agree = data.gold_agreement()
    gold_j = data.gold[data.task] if data.gold is not None else np.full(data.n_judgments, UNKNOWN)
    has_gold = gold_j != UNKNOWN
    annotator_extra = {k: v for k, v in result.annotator_columns.items()
                       if k not in ANNOTATOR_COLUMNS}
    if aggregation.graded and has_gold.any():
        # gold_accuracy is the exact grade here; relevance (grade >= relevant_from on both
        # sides) is what compares with a binary fit's gold_accuracy
        agree_rel = np.bincount(data.annotator[has_gold], weights=(
            (data.label[has_gold] >= rel) == (gold_j[has_gold] >= rel)).astype(float),
            minlength=data.n_annotators)
        annotator_extra["gold_relevance_accuracy"] = np.where(
            n_gold > 0, agree_rel / np.maximum(n_gold, 1), np.nan)
    # no gold judged: NaN, stored as NULL
    gold_accuracy = np.divide(agree, n_gold, out=np.full(data.n_annotators, np.nan),
                              where=np.asarray(n_gold) > 0)
    bulk_insert_columns(session, AggregationAnnotator.__table__, data.n_annotators, {
        "aggregation_id": aggregation.id,
        "annotator_id": np.asarray(snapshot.annotator_ids, dtype=np.int64),
        "n_judgments": np.asarray(per_annotator, dtype=np.int64),
        "n_gold": np.asarray(n_gold, dtype=np.int64), "gold_accuracy": gold_accuracy,
        **{name: _float_column(result.annotator_columns.get(name))
           for name in ANNOTATOR_COLUMNS},
        "extra": JsonNumbers([_float_column(v) for v in annotator_extra.values()],
                             keys=list(annotator_extra)),
    })


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value
