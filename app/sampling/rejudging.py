"""GET /aggregations/{a}/next: the tasks whose next crowd label helps most, from a fitted
aggregation's stored posterior, each with the annotators not yet asked, best first."""

from __future__ import annotations

import csv
import io
from itertools import islice
from typing import Any

import numpy as np
from sqlalchemy import select
from sqlalchemy.orm import Session

from app.aggregations.tables import Aggregation, AggregationAnnotator, AggregationTask
from app.collections.tables import Collection
from app.core.errors import Conflict
from app.judgments.tables import Annotator, Document, Judgment, Task, Topic
from models.sampling.rejudge import entropy, expected_change, rejudge_order


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
        .order_by(AggregationTask.task_id)
    ).all()
    if not rows:
        return {"aggregation_id": aggregation.id, "strategy": strategy, "data": [], "count": 0}
    task_ids = np.array([r[0] for r in rows], dtype=np.int64)
    proba = np.array([r[1] for r in rows], dtype=np.float64)
    position = {int(t): i for i, t in enumerate(task_ids)}

    judged = session.execute(
        select(Judgment.task_id, Judgment.annotator_id, Judgment.label)
        .where(Judgment.collection_id == collection.id)
    ).all()
    ignore = set(collection.ignore or [])
    classes = list(aggregation.classes or range(proba.shape[1]))
    asked: dict[int, set[int]] = {}
    counts = np.zeros(len(rows), dtype=np.int64)
    agree: dict[int, list[float]] = {}
    for task_id, annotator_id, label in judged:
        asked.setdefault(int(task_id), set()).add(int(annotator_id))
        i = position.get(int(task_id))
        if i is None or label in ignore:
            continue
        counts[i] += 1
        value = label if aggregation.graded else int(label >= collection.relevant_from)
        if value in classes:
            agree.setdefault(int(annotator_id), []).append(proba[i, classes.index(value)])

    stored = dict(session.execute(
        select(AggregationAnnotator.annotator_id, AggregationAnnotator.competence)
        .where(AggregationAnnotator.aggregation_id == aggregation.id)).all())
    names = dict(session.execute(
        select(Annotator.id, Annotator.external_id)
        .where(Annotator.collection_id == collection.id)).all())
    competence = {}
    for annotator_id in names:
        value = stored.get(annotator_id)
        if value is None:
            seen = agree.get(annotator_id, [])
            value = (sum(seen) + 0.5) / (len(seen) + 1.0)  # shrunk towards chance
        competence[annotator_id] = float(value)
    ranked = sorted(names, key=lambda a: (-competence[a], names[a]))

    eligible = None if max_judgments is None else counts < max_judgments
    # The next label of a task comes from its best annotator not yet asked: their competence
    # is the accuracy expected-change assumes (clipped to a sensible range).
    free_of: list[list[int]] = []
    best = np.empty(len(rows))
    for i, task_id in enumerate(task_ids.tolist()):
        done = asked.get(task_id, set())
        free = list(islice((a for a in ranked if a not in done), max(n_annotators, 1)))
        free_of.append(free)
        best[i] = competence[free[0]] if free else 0.5
    best = np.clip(best, 0.5, 0.99)
    order = rejudge_order(proba, strategy=strategy, eligible=eligible, accuracy=best,
                          random_state=seed)[:n]
    uncertainty = entropy(proba[order])
    gain, flip, tv = expected_change(proba[order], best[order])
    data = []
    for rank, i in enumerate(order.tolist()):
        task_id = int(task_ids[i])
        free = free_of[i][:n_annotators]
        data.append({
            "task_id": task_id, "topic": rows[i][2], "doc": rows[i][3],
            "label": int(rows[i][4]), "p_relevant": float(rows[i][5]),
            "proba": [float(p) for p in proba[i]], "uncertainty": float(uncertainty[rank]),
            "expected_gain": float(gain[rank]), "p_label_change": float(flip[rank]),
            "expected_change": float(tv[rank]),
            "n_judgments": int(counts[i]),
            "annotators": [{"annotator": names[a], "competence": competence[a]} for a in free],
        })
    return {"aggregation_id": aggregation.id, "strategy": strategy, "data": data,
            "count": len(data)}


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
