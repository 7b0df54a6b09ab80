"""GET /aggregations/{a}/next: the tasks whose next crowd label helps most, from a fitted
aggregation's stored posterior, each with the annotators not yet asked, best first."""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from typing import Any

import numpy as np
from sqlalchemy import select
from sqlalchemy.orm import Session

from app.aggregations.tables import Aggregation, AggregationAnnotator, AggregationTask
from app.collections.tables import Collection
from app.core.errors import Conflict
from app.judgments.tables import Annotator, Document, Judgment, Task, Topic
from models.sampling.rejudge import NextPlan, plan_next


def next_tasks(session: Session, *, aggregation: Aggregation, n: int, strategy: str,
               max_judgments: int | None = None, n_annotators: int = 10,
               seed: int | None = None) -> dict[str, Any]:
    """The ``n`` tasks to judge next (only tasks with fewer than ``max_judgments`` judgments when
    given). Judgments and annotators are the collection's current ones (including those that
    arrived after the fit); an annotator's competence is the fit's (``competence`` column) or,
    for models without one, their expected agreement with the fitted posterior."""
    if aggregation.status != "succeeded":
        raise Conflict(f"aggregation {aggregation.id} is {aggregation.status}: the next tasks "
                       "come from a succeeded fit", code="aggregation_not_ready",
                       status=aggregation.status)
    collection = session.get(Collection, aggregation.collection_id)
    assert collection is not None
    rows = session.execute(
        select(AggregationTask.task_id, AggregationTask.proba, Topic.external_id,
               Document.external_id, AggregationTask.label, AggregationTask.p_relevant)
        .join(Task, Task.id == AggregationTask.task_id)
        .join(Topic, Topic.id == Task.topic_id)
        .join(Document, Document.id == Task.document_id)
        .where(AggregationTask.aggregation_id == aggregation.id)
    ).all()
    if not rows:
        return {"aggregation_id": aggregation.id, "strategy": strategy, "data": [], "count": 0}
    # tasks by (topic, doc), sorted here rather than by the database's collation: ties in the
    # order then fall as in the CLI's ``next`` on the same judgments
    rows = sorted(rows, key=lambda r: (r[2], r[3]))
    task_ids = np.array([r[0] for r in rows], dtype=np.int64)
    proba = np.array([r[1] for r in rows], dtype=np.float64)

    names = dict(session.execute(
        select(Annotator.id, Annotator.external_id)
        .where(Annotator.collection_id == collection.id)).all())
    annotator_ids = np.array(sorted(names), dtype=np.int64)
    columns = list(zip(*session.execute(  # column by column: numpy reads plain tuples fast
        select(Judgment.task_id, Judgment.annotator_id, Judgment.label)
        .where(Judgment.collection_id == collection.id)).all(), strict=True)) or [(), (), ()]
    judged = np.array(columns, dtype=np.int64).T.reshape(-1, 3)
    # the fitted tasks' judgments, annotators as indices, labels as class indices (−1: an
    # ignored value or one outside the fit's classes: asked, but no label)
    by_id = np.argsort(task_ids)
    found = np.searchsorted(task_ids, judged[:, 0], sorter=by_id)
    found = np.minimum(found, task_ids.shape[0] - 1)
    fitted = task_ids[by_id[found]] == judged[:, 0]
    position, judged = by_id[found[fitted]], judged[fitted]
    classes = np.array(aggregation.classes or range(proba.shape[1]), dtype=np.int64)
    values = judged[:, 2] if aggregation.graded else (
        judged[:, 2] >= collection.relevant_from).astype(np.int64)
    label = np.searchsorted(classes, values)
    label = np.where((label < classes.shape[0])
                     & (classes[np.minimum(label, classes.shape[0] - 1)] == values), label, -1)
    label[np.isin(judged[:, 2], list(collection.ignore or []))] = -1

    stored = dict(session.execute(
        select(AggregationAnnotator.annotator_id, AggregationAnnotator.competence)
        .where(AggregationAnnotator.aggregation_id == aggregation.id)).all())
    competence = np.array([np.nan if stored.get(int(a)) is None else stored[int(a)]
                           for a in annotator_ids])
    external = np.array([names[int(a)] for a in annotator_ids])
    plan = plan_next(proba, task=position, annotator=np.searchsorted(annotator_ids, judged[:, 1]),
                     label=label, competence=competence, annotator_names=external, n=n,
                     strategy=strategy, max_judgments=max_judgments,
                     n_annotators=n_annotators, random_state=seed)
    data = plan_rows(plan, proba=proba, topics=[r[2] for r in rows], docs=[r[3] for r in rows],
                     labels=[r[4] for r in rows], p_relevant=[r[5] for r in rows],
                     annotator_names=external, task_ids=task_ids)
    return {"aggregation_id": aggregation.id, "strategy": strategy, "data": data,
            "count": len(data)}


def plan_rows(plan: NextPlan, *, proba: np.ndarray, topics: Sequence[str], docs: Sequence[str],
              labels: Sequence[int], p_relevant: Sequence[float], annotator_names: np.ndarray,
              task_ids: np.ndarray | None = None) -> list[dict[str, Any]]:
    """The chosen tasks as the API's rows (service and CLI alike); ``task_ids``: the database's
    ids (the service), none for a file (the CLI)."""
    data = []
    for rank, i in enumerate(plan.order.tolist()):
        row: dict[str, Any] = {} if task_ids is None else {"task_id": int(task_ids[i])}
        row.update({
            "topic": str(topics[i]), "doc": str(docs[i]), "label": int(labels[i]),
            "p_relevant": float(p_relevant[i]), "proba": [float(p) for p in proba[i]],
            "uncertainty": float(plan.uncertainty[rank]),
            "expected_gain": float(plan.expected_gain[rank]),
            "p_label_change": float(plan.p_label_change[rank]),
            "expected_change": float(plan.expected_change[rank]),
            "n_judgments": int(plan.n_judgments[rank]),
            "annotators": [{"annotator": str(annotator_names[a]),
                            "competence": float(plan.competence[a])}
                           for a in plan.annotators[rank].tolist()],
        })
        data.append(row)
    return data


TSV_COLUMNS = ("rank", "topic", "doc", "n_judgments", "uncertainty", "p_label_change",
               "expected_change", "annotators")


def next_tasks_tsv(result: dict[str, Any]) -> str:
    """``next_tasks`` as a tab-separated list to hand to a crowd platform: one task per line,
    best first, its scores and the annotators to ask (comma-separated, best first)."""
    out = io.StringIO()
    writer = csv.writer(out, delimiter="\t", lineterminator="\n")
    writer.writerow(TSV_COLUMNS)
    for rank, t in enumerate(result["data"], start=1):
        writer.writerow((rank, t["topic"], t["doc"], t["n_judgments"],
                         f"{t['uncertainty']:.6g}", f"{t['p_label_change']:.6g}",
                         f"{t['expected_change']:.6g}",
                         ",".join(a["annotator"] for a in t["annotators"])))
    return out.getvalue()
