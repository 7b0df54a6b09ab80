"""Aggregations: create (validated, snapshotted, queued), read, cancel, and their results."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Select, func, select, update
from sqlalchemy.orm import Session

from app.aggregations.schemas import AggregationCreate
from app.aggregations.snapshot import current_watermark
from app.aggregations.tables import (
    FINISHED,
    Aggregation,
    AggregationAnnotator,
    AggregationTask,
)
from app.collections.service import lock_collection
from app.collections.tables import Collection
from app.core.errors import Conflict, InvalidInput, NotFound
from app.jobs.runner import JobRunner, submit_job
from app.judgments.tables import Annotator, Document, Judgment, Task, Topic
from models.registry import InvalidParams, UnknownMethod, validate_params, with_seed

ANNOTATOR_SORTS = {
    "competence": AggregationAnnotator.competence,
    "noise_variance": AggregationAnnotator.noise_variance,
    "bias": AggregationAnnotator.bias,
    "n_judgments": AggregationAnnotator.n_judgments,
    "gold_accuracy": AggregationAnnotator.gold_accuracy,
    "annotator": Annotator.external_id,
}
TASK_SORTS = {
    "difficulty": AggregationTask.difficulty,
    "uncertainty": AggregationTask.uncertainty,
    "p_relevant": AggregationTask.p_relevant,
    "posterior_variance": AggregationTask.posterior_variance,
    "topic": Topic.external_id,
}


def create_aggregation(session: Session, *, runner: JobRunner, collection: Collection,
                       spec: AggregationCreate) -> Aggregation:
    try:
        params = with_seed(spec.method, validate_params(spec.method, spec.params), spec.seed)
    except UnknownMethod as exc:
        raise InvalidInput(str(exc), code="unknown_method", valid=exc.valid) from None
    except InvalidParams as exc:
        raise InvalidInput(str(exc), code="invalid_params", valid=exc.valid) from None

    lock_collection(session, collection_id=collection.id)
    watermark = current_watermark(session, collection_id=collection.id)
    usable_where = [Judgment.collection_id == collection.id, Judgment.id <= watermark]
    if collection.ignore:
        usable_where.append(Judgment.label.not_in(collection.ignore))
    usable = session.scalar(select(func.count()).select_from(Judgment).where(*usable_where))
    if not usable:
        session.rollback()
        raise InvalidInput(
            f"collection {collection.name!r} has no judgments to aggregate",
            code="empty_collection")
    aggregation = Aggregation(
        collection_id=collection.id, method=spec.method, params=params, graded=spec.graded,
        status="queued", progress=0.0, progress_message="queued", watermark=watermark,
    )
    submit_job(session, runner, "fit", aggregation)
    return aggregation


def get_aggregation(session: Session, *, aggregation_id: int) -> Aggregation:
    aggregation = session.get(Aggregation, aggregation_id)
    if aggregation is None:
        raise aggregation_not_found(aggregation_id)
    return aggregation


def aggregation_not_found(aggregation_id: int) -> NotFound:
    return NotFound(f"no aggregation {aggregation_id}", code="aggregation_not_found")


def list_aggregations(session: Session, *, collection: Collection, limit: int,
                      offset: int) -> tuple[list[Aggregation], int]:
    where = Aggregation.collection_id == collection.id
    total = session.scalar(select(func.count()).select_from(Aggregation).where(where)) or 0
    rows = session.scalars(select(Aggregation).where(where).order_by(Aggregation.id)
                           .limit(limit).offset(offset))
    return list(rows), total


def cancel_aggregation(session: Session, *, runner: JobRunner,
                       aggregation: Aggregation) -> Aggregation:
    if aggregation.status in FINISHED:
        raise Conflict(f"aggregation {aggregation.id} has already {aggregation.status}",
                       code="aggregation_finished", status=aggregation.status)
    changed = session.execute(
        update(Aggregation)
        .where(Aggregation.id == aggregation.id, Aggregation.status.in_(("queued", "running")))
        .values(status="cancelled", finished_at=datetime.now(UTC), progress_message="cancelled")
    ).rowcount
    session.commit()
    session.refresh(aggregation)
    if changed:
        runner.cancel("fit", aggregation.id, aggregation.job_id)
    elif aggregation.status in FINISHED and aggregation.status != "cancelled":
        raise Conflict(f"aggregation {aggregation.id} has already {aggregation.status}",
                       code="aggregation_finished", status=aggregation.status)
    return aggregation


def require_succeeded(aggregation: Aggregation) -> None:
    if aggregation.status != "succeeded":
        raise Conflict(
            f"aggregation {aggregation.id} is {aggregation.status}: results exist only for a "
            "succeeded fit", code="aggregation_not_succeeded", status=aggregation.status)


def _task_query(aggregation: Aggregation) -> Select[Any]:
    return (
        select(Topic.external_id, Document.external_id, AggregationTask.label,
               AggregationTask.p_relevant, AggregationTask.proba, AggregationTask.uncertainty,
               AggregationTask.posterior_mean, AggregationTask.posterior_variance,
               AggregationTask.difficulty, AggregationTask.bias, Task.gold,
               AggregationTask.extra)
        .join(Task, Task.id == AggregationTask.task_id)
        .join(Topic, Topic.id == Task.topic_id)
        .join(Document, Document.id == Task.document_id)
        .where(AggregationTask.aggregation_id == aggregation.id)
    )


TASK_FIELDS = ("topic", "doc", "label", "p_relevant", "proba", "uncertainty", "posterior_mean",
               "posterior_variance", "difficulty", "bias", "gold", "extra")


def all_task_results(session: Session, *, aggregation: Aggregation) -> list[dict[str, Any]]:
    """Every task's result, sorted by topic then doc (the qrels order)."""
    require_succeeded(aggregation)
    rows = session.execute(_task_query(aggregation))
    out = [dict(zip(TASK_FIELDS, row, strict=True)) for row in rows]
    out.sort(key=lambda r: (r["topic"], r["doc"]))
    return out


def _order(sort: str, columns: dict[str, Any], tiebreak: Any) -> list[Any]:
    descending = sort.startswith("-")
    name = sort.lstrip("-+")
    column = columns.get(name)
    if column is None:
        raise InvalidInput(f"unknown sort {sort!r}; valid: {', '.join(sorted(columns))} "
                           "(prefix '-' for descending)", code="invalid_sort",
                           valid=sorted(columns))
    ordered = column.desc() if descending else column.asc()
    return [ordered.nulls_last(), tiebreak]


def task_results(session: Session, *, aggregation: Aggregation, topic: str | None, sort: str,
                 limit: int, offset: int) -> tuple[list[dict[str, Any]], int]:
    require_succeeded(aggregation)
    query = _task_query(aggregation)
    if topic is not None:
        query = query.where(Topic.external_id == topic)
    total = session.scalar(select(func.count()).select_from(query.subquery())) or 0
    order = _order(sort, TASK_SORTS, AggregationTask.task_id)
    rows = session.execute(query.order_by(*order).limit(limit).offset(offset))
    return [dict(zip(TASK_FIELDS, row, strict=True)) for row in rows], total


def annotator_results(session: Session, *, aggregation: Aggregation, sort: str,
                      min_judgments: int, limit: int, offset: int,
                      ) -> tuple[list[dict[str, Any]], int]:
    require_succeeded(aggregation)
    where = (AggregationAnnotator.aggregation_id == aggregation.id,
             AggregationAnnotator.n_judgments >= min_judgments)
    # One result row per annotator: count without the join.
    total = session.scalar(select(func.count()).select_from(AggregationAnnotator)
                           .where(*where)) or 0
    query = (
        select(Annotator.external_id.label("annotator"), AggregationAnnotator.competence,
               AggregationAnnotator.noise_variance, AggregationAnnotator.bias,
               AggregationAnnotator.n_judgments, AggregationAnnotator.n_gold,
               AggregationAnnotator.gold_accuracy, AggregationAnnotator.extra)
        .join(Annotator, Annotator.id == AggregationAnnotator.annotator_id)
        .where(*where)
    )
    order = _order(sort, ANNOTATOR_SORTS, AggregationAnnotator.annotator_id)
    rows = session.execute(query.order_by(*order).limit(limit).offset(offset)).mappings()
    return [dict(r) for r in rows], total


def annotator_history(session: Session, *, collection: Collection,
                      annotator: str) -> dict[str, Any]:
    """One annotator across every succeeded aggregation of the collection."""
    annotator_id = session.scalar(select(Annotator.id).where(
        Annotator.collection_id == collection.id, Annotator.external_id == annotator))
    if annotator_id is None:
        raise NotFound(f"no annotator {annotator!r} in collection {collection.name!r}",
                       code="annotator_not_found")
    judgments = session.scalar(select(func.count()).select_from(Judgment).where(
        Judgment.annotator_id == annotator_id)) or 0
    rows = session.execute(
        select(Aggregation.id.label("aggregation_id"), Aggregation.method,
               Aggregation.created_at, AggregationAnnotator.competence,
               AggregationAnnotator.noise_variance, AggregationAnnotator.bias,
               AggregationAnnotator.n_judgments, AggregationAnnotator.n_gold,
               AggregationAnnotator.gold_accuracy)
        .join(Aggregation, Aggregation.id == AggregationAnnotator.aggregation_id)
        .where(AggregationAnnotator.annotator_id == annotator_id,
               Aggregation.status == "succeeded")
        .order_by(Aggregation.id)
    ).mappings()
    return {"annotator": annotator, "judgments": judgments, "data": [dict(r) for r in rows]}


def comparison(session: Session, *, collection: Collection) -> list[dict[str, Any]]:
    """Every succeeded aggregation with its evaluation against gold, best accuracy first."""
    rows = session.scalars(select(Aggregation).where(
        Aggregation.collection_id == collection.id, Aggregation.status == "succeeded"
    ).order_by(Aggregation.id)).all()
    out = []
    for a in rows:
        e = a.evaluation or {}
        out.append({
            "aggregation_id": a.id, "method": a.method, "params": a.params, "graded": a.graded,
            "n_gold": e.get("n_gold"), "accuracy": e.get("accuracy"),
            "precision": e.get("precision"), "recall": e.get("recall"), "f1": e.get("f1"),
            "log_loss": e.get("log_loss"), "fit_seconds": (a.timings or {}).get("fit_s"),
        })
    out.sort(key=lambda r: (r["accuracy"] is None, -(r["accuracy"] or 0.0), r["aggregation_id"]))
    return out
