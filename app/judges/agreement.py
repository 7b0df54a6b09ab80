"""Judging the judges: the one query behind ``GET /collections/{c}/judge-agreement``, the
dashboard's judges page (and, on files, ``crowdqrels agreement``: ``app.judges.cli``).

Reads the judgments that count now (withdrawals applied), each annotator's latest label per task
on the scale, the gold, and optionally a succeeded fit's labels and the collection's runs; the
figures are ``models.agreement.report`` and ``run_rankings``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from sqlalchemy import select
from sqlalchemy.orm import Session

from app.aggregations.service import require_succeeded
from app.aggregations.tables import Aggregation, AggregationTask
from app.collections.tables import Collection
from app.core.errors import InvalidInput
from app.corpus.service import load_runs
from app.judges.service import judge_names
from app.judgments.columns import read_judgments, task_names
from app.judgments.tables import Annotator, Task
from models.agreement import Labels, latest_labels, report, run_rankings
from models.evaluation.measures import UnknownMeasure, parse_measure

DEFAULT_MEASURE = "nDCG@10"


def _judge_ids(session: Session, *, collection: Collection) -> set[int]:
    """Annotators stored by a judge file, and every annotator not of kind crowd."""
    return set(session.scalars(select(Annotator.id).where(
        Annotator.collection_id == collection.id,
        Annotator.external_id.in_(judge_names(collection_id=collection.id))
        | (Annotator.kind != "crowd"))))


def _gold(session: Session, collection: Collection) -> Labels | None:
    rows = np.array(session.execute(select(Task.id, Task.gold).where(
        Task.collection_id == collection.id, Task.gold.in_(list(collection.labels)))).all(),
        dtype=np.int64).reshape(-1, 2)
    rows = rows[np.argsort(rows[:, 0])]
    return Labels(rows[:, 0], rows[:, 1]) if rows.shape[0] else None


def _fit_labels(session: Session, aggregation: Aggregation) -> Labels:
    rows = np.array(session.execute(
        select(AggregationTask.task_id, AggregationTask.label)
        .where(AggregationTask.aggregation_id == aggregation.id)).all(),
        dtype=np.int64).reshape(-1, 2)
    rows = rows[np.argsort(rows[:, 0])]
    return Labels(rows[:, 0], rows[:, 1])


def judge_agreement(session: Session, *, collection: Collection,
                    aggregation: Aggregation | None = None, min_tasks: int = 20,
                    measure: str = DEFAULT_MEASURE) -> dict[str, Any]:
    """Every judge, and every other annotator with at least ``min_tasks`` tasks, against the
    gold and ``aggregation`` (a succeeded fit of the collection); Krippendorff's α; the judges'
    pairwise agreement; with runs, the run rankings on each judge's qrels against the
    aggregate's and the gold's (``measure``)."""
    if aggregation is not None:
        require_succeeded(aggregation)
    columns = read_judgments(session, collection)
    scale = sorted(collection.labels)
    on_scale = np.isin(columns.label, scale)
    task, who, label = latest_labels(columns.task_id[on_scale],
                                     columns.annotator_id[on_scale], columns.label[on_scale])
    ids, rater = np.unique(who, return_inverse=True)
    kinds = dict(session.execute(select(Annotator.id, Annotator.kind).where(
        Annotator.collection_id == collection.id)).all())
    judges = _judge_ids(session, collection=collection)
    gold = _gold(session, collection)
    fit = None if aggregation is None else _fit_labels(session, aggregation)
    out = report(task, rater.reshape(-1), label,
                 names=[columns.annotators[int(a)] for a in ids],
                 kinds=[kinds[int(a)] for a in ids], judges=[int(a) in judges for a in ids],
                 scale=scale, gold=gold, aggregate=fit,
                 aggregate_scale=None if aggregation is None else aggregation.classes,
                 relevant_from=collection.relevant_from, min_tasks=min_tasks)
    out["aggregation_id"] = None if aggregation is None else aggregation.id
    out["rankings"] = _rankings(session, collection=collection, task=task, who=who,
                                label=label, judges=judges, names=columns.annotators,
                                gold=gold, fit=fit, measure=measure)
    return out


def _rankings(session: Session, *, collection: Collection, task: np.ndarray, who: np.ndarray,
              label: np.ndarray, judges: set[int], names: dict[int, str], gold: Labels | None,
              fit: Labels | None, measure: str) -> dict[str, Any] | None:
    """The run rankings on each judge's qrels against the aggregate's and the gold's; None
    without runs, or without a reference to compare with."""
    try:
        parse_measure(measure)
    except UnknownMeasure as exc:
        raise InvalidInput(str(exc), code="unknown_measure", valid=exc.valid) from None
    runs = load_runs(session, collection_id=collection.id)
    if not runs or (gold is None and fit is None) or not judges:
        return None
    pair = task_names(session, collection_id=collection.id)

    def qrels(labels: Labels) -> dict[tuple[str, str], int]:
        topics, docs = pair.at(labels.task)
        return {(t, d): g for t, d, g in zip(topics.tolist(), docs.tolist(),
                                             labels.label.tolist(), strict=True)}

    mine = {}
    for judge in sorted(judges, key=lambda a: names[a]):
        rows = who == judge
        if rows.any():
            mine[names[judge]] = qrels(Labels(task[rows], label[rows]))
    references = {}
    if fit is not None:
        references["aggregate"] = qrels(fit)
    if gold is not None:
        references["gold"] = qrels(gold)
    return run_rankings(mine, references, dict(runs), measure=measure,
                        relevant_from=collection.relevant_from)
