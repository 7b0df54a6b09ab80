"""The judgments an aggregation reads: a consistent snapshot up to its watermark, as
AnnotationData, with the database ids of its tasks and annotators to write results back."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from sqlalchemy import select
from sqlalchemy.orm import Session

from app.aggregations.gold import collection_gold
from app.collections.tables import Collection
from app.features.tables import FeatureSet, TaskFeatures
from app.judgments.columns import KeptColumns, annotation_data
from models.data import AnnotationData


@dataclass(frozen=True)
class Snapshot:
    data: AnnotationData
    task_ids: np.ndarray  # (n_tasks,) database ids aligned with data's task index
    annotator_ids: np.ndarray  # (n_annotators,)
    feature_groups: dict[str, list[int]] | None = None  # columns per kernel group
    # The collection's gold as the fit read it (task id -> value, could-not-judge values too)
    # and every task judged up to the watermark, usable or not (sorted ids): what
    # ``gold.fit_record`` counts.
    gold: dict[int, int] = field(default_factory=dict)
    judged_tasks: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))


# A process that fits the same collection again (a Celery worker, after a batch) reads only the
# judgments that arrived since its last fit of it, and names only the tasks that are new.
KEPT = KeptColumns(max_collections=2)


def load_snapshot(session: Session, *, collection: Collection, watermark: int,
                  graded: bool, kept: KeptColumns = KEPT) -> Snapshot:
    # The gold is read once, beside the judgments: the data's gold and the fit's record of it
    # (``Snapshot.gold``) are the same labels.
    gold = collection_gold(session, collection_id=collection.id)
    columns = kept.judgments(session, collection, upto=watermark)
    if not columns.task_id.shape[0]:
        raise ValueError("the collection has no judgments")
    names = kept.task_names(session, collection, np.unique(columns.task_id))
    data, task_ids, annotator_ids = annotation_data(columns, names, collection=collection,
                                                    graded=graded, gold=gold)

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
                    judged_tasks=np.unique(columns.task_id))
