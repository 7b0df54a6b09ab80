"""A succeeded fit's per-task results: every task (the qrels), a sorted page, a summary for the
dashboard, and one task's posterior with its judgments."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Select, func, select
from sqlalchemy.orm import Session

from app.aggregations.service import require_succeeded
from app.aggregations.sorting import sort_order
from app.aggregations.tables import Aggregation, AggregationAnnotator, AggregationTask
from app.collections.tables import Collection
from app.core.errors import NotFound
from app.judgments.tables import Annotator, Document, Judgment, Task, Topic

TASK_SORTS = {
    "difficulty": AggregationTask.difficulty,
    "uncertainty": AggregationTask.uncertainty,
    "p_relevant": AggregationTask.p_relevant,
    "posterior_variance": AggregationTask.posterior_variance,
    "topic": Topic.external_id,
}


def _task_query(aggregation: Aggregation) -> Select[Any]:
    return (
        select(Topic.external_id, Document.external_id, AggregationTask.label,
               AggregationTask.p_relevant, AggregationTask.proba, AggregationTask.uncertainty,
               AggregationTask.posterior_mean, AggregationTask.posterior_variance,
               AggregationTask.difficulty, AggregationTask.bias, Task.gold,
               AggregationTask.extra, AggregationTask.task_id)
        .join(Task, Task.id == AggregationTask.task_id)
        .join(Topic, Topic.id == Task.topic_id)
        .join(Document, Document.id == Task.document_id)
        .where(AggregationTask.aggregation_id == aggregation.id)
    )


TASK_FIELDS = ("topic", "doc", "label", "p_relevant", "proba", "uncertainty", "posterior_mean",
               "posterior_variance", "difficulty", "bias", "gold", "extra", "task_id")


def all_task_results(session: Session, *, aggregation: Aggregation) -> list[dict[str, Any]]:
    """Every task's result, sorted by topic then doc (the qrels order)."""
    require_succeeded(aggregation)
    rows = session.execute(_task_query(aggregation))
    out = [dict(zip(TASK_FIELDS, row, strict=True)) for row in rows]
    out.sort(key=lambda r: (r["topic"], r["doc"]))
    return out


def task_results(session: Session, *, aggregation: Aggregation, topic: str | None, sort: str,
                 limit: int, offset: int) -> tuple[list[dict[str, Any]], int]:
    require_succeeded(aggregation)
    query = _task_query(aggregation)
    if topic is not None:
        query = query.where(Topic.external_id == topic)
    total = session.scalar(select(func.count()).select_from(query.subquery())) or 0
    order = sort_order(sort, TASK_SORTS, AggregationTask.task_id)
    rows = session.execute(query.order_by(*order).limit(limit).offset(offset))
    return [dict(zip(TASK_FIELDS, row, strict=True)) for row in rows], total


def task_summary(session: Session, *, aggregation: Aggregation) -> dict[str, Any]:
    """Per task: uncertainty, difficulty and P(relevant) as arrays, and per topic the share of
    tasks labelled relevant and their mean uncertainty."""
    require_succeeded(aggregation)
    rows = session.execute(
        select(Topic.external_id, AggregationTask.p_relevant, AggregationTask.uncertainty,
               AggregationTask.difficulty, AggregationTask.label)
        .join(Task, Task.id == AggregationTask.task_id)
        .join(Topic, Topic.id == Task.topic_id)
        .where(AggregationTask.aggregation_id == aggregation.id)
    ).all()
    classes = aggregation.classes or []
    collection = session.get(Collection, aggregation.collection_id)
    relevant_from = collection.relevant_from if collection is not None else 1
    topics: dict[str, list[float]] = {}
    uncertainty, difficulty, p_relevant = [], [], []
    for topic, p, u, d, label in rows:
        uncertainty.append(u)
        p_relevant.append(p)
        if d is not None:
            difficulty.append(d)
        t = topics.setdefault(topic, [0.0, 0.0, 0.0])
        t[0] += 1
        t[1] += 1.0 if label >= relevant_from else 0.0
        t[2] += u
    per_topic = [{"topic": k, "tasks": int(v[0]), "share_relevant": v[1] / v[0],
                  "mean_uncertainty": v[2] / v[0]} for k, v in sorted(topics.items())]
    return {"n_tasks": len(rows), "classes": classes, "uncertainty": uncertainty,
            "difficulty": difficulty, "p_relevant": p_relevant, "per_topic": per_topic}


def get_task(session: Session, *, collection_id: int, task_id: int) -> Task:
    task = session.get(Task, task_id)
    if task is None or task.collection_id != collection_id:
        raise NotFound(f"no task {task_id}", code="task_not_found")
    return task


def task_detail(session: Session, *, aggregation: Aggregation, task_id: int) -> dict[str, Any]:
    """One task in one fit: its posterior, and its judgments with each annotator's competence."""
    require_succeeded(aggregation)
    task = get_task(session, collection_id=aggregation.collection_id, task_id=task_id)
    topic = session.get(Topic, task.topic_id)
    document = session.get(Document, task.document_id)
    result = session.execute(
        select(AggregationTask.label, AggregationTask.p_relevant, AggregationTask.proba,
               AggregationTask.uncertainty, AggregationTask.posterior_mean,
               AggregationTask.posterior_variance, AggregationTask.difficulty,
               AggregationTask.bias, AggregationTask.extra)
        .where(AggregationTask.aggregation_id == aggregation.id,
               AggregationTask.task_id == task_id)).mappings().first()
    judgments = session.execute(
        select(Judgment.id, Annotator.external_id.label("annotator"), Judgment.label,
               Judgment.received_at, AggregationAnnotator.competence,
               AggregationAnnotator.gold_accuracy, AggregationAnnotator.n_judgments)
        .join(Annotator, Annotator.id == Judgment.annotator_id)
        .outerjoin(AggregationAnnotator,
                   (AggregationAnnotator.annotator_id == Judgment.annotator_id)
                   & (AggregationAnnotator.aggregation_id == aggregation.id))
        .where(Judgment.task_id == task_id, Judgment.id <= aggregation.watermark,
               Judgment.label.is_not(None))
        .order_by(Judgment.id)).mappings().all()
    return {
        "task_id": task.id, "topic": topic.external_id if topic else None,
        "doc": document.external_id if document else None, "gold": task.gold,
        "classes": aggregation.classes or [], "result": dict(result) if result else None,
        "judgments": [dict(j) for j in judgments],
    }
