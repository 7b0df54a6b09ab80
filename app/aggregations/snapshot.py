"""The judgments an aggregation reads: a consistent snapshot up to its watermark, as
AnnotationData, with the database ids of its tasks and annotators to write results back."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from app.aggregations.gold import collection_gold
from app.collections.tables import Collection
from app.features.tables import FeatureSet, TaskFeatures
from app.judgments.tables import Annotator, Document, Judgment, Task, Topic
from models.data import AnnotationData


@dataclass(frozen=True)
class Snapshot:
    data: AnnotationData
    task_ids: np.ndarray  # (n_tasks,) database ids aligned with data's task index
    annotator_ids: np.ndarray  # (n_annotators,)
    feature_groups: dict[str, list[int]] | None = None  # columns per kernel group
    # The collection's gold as the fit read it (task id -> value, could-not-judge values too)
    # and every task judged up to the watermark, usable or not: what ``gold.fit_record`` counts.
    gold: dict[int, int] = field(default_factory=dict)
    judged_tasks: frozenset[int] = frozenset()


def current_watermark(session: Session, *, collection_id: int) -> int:
    """The largest judgment id of the collection (0 when empty).

    Ingestion locks the collection row while it writes (see judgments.service), and the caller
    takes the same lock, so no judgment with a smaller id can commit after this read.
    """
    return session.scalar(
        select(func.coalesce(func.max(Judgment.id), 0))
        .where(Judgment.collection_id == collection_id)
    ) or 0


def load_snapshot(session: Session, *, collection: Collection, watermark: int,
                  graded: bool) -> Snapshot:
    # The gold is read once, beside the judgments: the data's gold and the fit's record of it
    # (``Snapshot.gold``) are the same labels.
    gold = collection_gold(session, collection_id=collection.id)
    rows = session.execute(
        select(Topic.external_id, Document.external_id, Annotator.external_id, Judgment.label,
               Task.id, Annotator.id)
        .join(Task, Task.id == Judgment.task_id)
        .join(Topic, Topic.id == Task.topic_id)
        .join(Document, Document.id == Task.document_id)
        .join(Annotator, Annotator.id == Judgment.annotator_id)
        .where(Judgment.collection_id == collection.id, Judgment.id <= watermark)
        .order_by(Judgment.id)  # arrival order: "latest per (task, annotator)" depends on it
    ).all()
    if not rows:
        raise ValueError("the collection has no judgments")
    topics, docs, annotators, labels, task_db, annotator_db = (
        list(c) for c in zip(*rows, strict=True))
    golds = [gold.get(t) for t in task_db]
    data = AnnotationData.from_rows(
        topics, docs, annotators, labels,
        ignore=collection.ignore,
        relevant_from=None if graded else collection.relevant_from,
        scale=collection.labels if graded else None,
        gold=golds,
    )
    task_of = {(t, d): i for t, d, i in zip(topics, docs, task_db, strict=True)}
    annotator_of = dict(zip(annotators, annotator_db, strict=True))
    task_ids = np.array([task_of[(t, d)] for t, d in
                         zip(data.topic_ids.tolist(), data.doc_ids.tolist(), strict=True)])
    annotator_ids = np.array([annotator_of[a] for a in data.annotator_ids.tolist()])

    feature_set = session.get(FeatureSet, collection.id)
    groups = None
    if feature_set is not None:
        groups = feature_set.groups
        vectors = dict(session.execute(
            select(TaskFeatures.task_id, TaskFeatures.vector)
            .where(TaskFeatures.collection_id == collection.id)
        ).all())
        keyed = {
            (t, d): vectors[i]
            for t, d, i in zip(data.topic_ids.tolist(), data.doc_ids.tolist(), task_ids.tolist(),
                               strict=True)
            if i in vectors
        }
        data = data.with_features(keyed, dim=len(feature_set.names))
    return Snapshot(data, task_ids, annotator_ids, groups, gold=gold,
                    judged_tasks=frozenset(task_db))
