"""Persisting a fitted model's results, and reading them back for downloads and dashboards."""

from __future__ import annotations

import math
from collections.abc import Iterator
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
from app.core.db import bulk_insert
from models.data import UNKNOWN
from models.pipeline import Fitted, Scores

# Methods with a GP over task features: they can predict tasks nobody judged.
PREDICTING_METHODS = ("magp", "gpmv")

TASK_COLUMNS = ("posterior_mean", "posterior_variance", "difficulty", "bias")
ANNOTATOR_COLUMNS = ("competence", "noise_variance", "bias")


def _float(value: Any) -> float | None:
    number = float(value)
    return number if math.isfinite(number) else None


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

    def task_rows() -> Iterator[dict[str, Any]]:
        # A row at a time, from columns turned into Python lists once (2,000,000 tasks: never
        # all the rows as dicts at once, and no numpy scalar per cell)
        columns = {name: result.task_columns.get(name) for name in TASK_COLUMNS}
        extras = {k: np.asarray(v) for k, v in task_extra.items()}
        for i, (task_id, label, p_rel, p_row, h) in enumerate(zip(
                snapshot.task_ids.tolist(), labels.tolist(), np.asarray(p_relevant).tolist(),
                proba.tolist(), entropy.tolist(), strict=True)):
            row: dict[str, Any] = {
                "aggregation_id": aggregation.id, "task_id": task_id, "label": label,
                "p_relevant": p_rel, "proba": p_row, "uncertainty": h,
            }
            for name, column in columns.items():
                row[name] = None if column is None else _float(column[i])
            row["extra"] = {k: _float(v[i]) for k, v in extras.items()} or None
            yield row

    bulk_insert(session, AggregationTask.__table__, task_rows())

    bulk_insert(session, AggregationAnnotator.__table__,
                _annotator_rows(aggregation, snapshot, fitted))

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


def _annotator_rows(aggregation: Aggregation, snapshot: Snapshot,
                    fitted: Fitted) -> list[dict[str, Any]]:
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
    annotator_rows = []
    for j in range(data.n_annotators):
        row = {
            "aggregation_id": aggregation.id, "annotator_id": int(snapshot.annotator_ids[j]),
            "n_judgments": int(per_annotator[j]), "n_gold": int(n_gold[j]),
            "gold_accuracy": float(agree[j] / n_gold[j]) if n_gold[j] else None,
        }
        for name in ANNOTATOR_COLUMNS:
            column = result.annotator_columns.get(name)
            row[name] = None if column is None else _float(column[j])
        row["extra"] = {k: _float(v[j]) for k, v in annotator_extra.items()} or None
        annotator_rows.append(row)
    return annotator_rows


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
