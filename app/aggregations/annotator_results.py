"""A succeeded fit's per-annotator results: a sorted page (from the listing cache when it holds
the ordering), one annotator across the collection's fits, and their confusion counts."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from app.aggregations.listing import page
from app.aggregations.service import aggregation_not_found, get_aggregation, require_succeeded
from app.aggregations.sorting import sort_key, sort_order
from app.aggregations.tables import Aggregation, AggregationAnnotator, AggregationTask
from app.collections.tables import Collection
from app.core.errors import NotFound
from app.judgments.tables import Annotator, Judgment, Task

ANNOTATOR_SORTS = {
    "competence": AggregationAnnotator.competence,
    "noise_variance": AggregationAnnotator.noise_variance,
    "bias": AggregationAnnotator.bias,
    "n_judgments": AggregationAnnotator.n_judgments,
    "gold_accuracy": AggregationAnnotator.gold_accuracy,
    "annotator": Annotator.external_id,
}


def annotator_results(session: Session, *, aggregation: Aggregation, sort: str,
                      min_judgments: int, limit: int | None, offset: int, q: str | None = None,
                      kind: str | None = None) -> tuple[list[dict[str, Any]], int]:
    """A page of annotator results (``limit=None``: every row); ``q``: annotator id contains;
    ``kind``: crowd, llm or expert only."""
    require_succeeded(aggregation)
    where: tuple[Any, ...] = (AggregationAnnotator.aggregation_id == aggregation.id,
                              AggregationAnnotator.n_judgments >= min_judgments)
    if q:
        where = (*where, AggregationAnnotator.annotator_id.in_(
            select(Annotator.id).where(Annotator.collection_id == aggregation.collection_id,
                                       Annotator.external_id.icontains(q, autoescape=True))))
    if kind:
        where = (*where, AggregationAnnotator.annotator_id.in_(
            select(Annotator.id).where(Annotator.collection_id == aggregation.collection_id,
                                       Annotator.kind == kind)))
    # One result row per annotator: count without the join.
    total = session.scalar(select(func.count()).select_from(AggregationAnnotator)
                           .where(*where)) or 0
    query = (
        select(Annotator.external_id.label("annotator"), Annotator.kind,
               AggregationAnnotator.competence,
               AggregationAnnotator.noise_variance, AggregationAnnotator.bias,
               AggregationAnnotator.n_judgments, AggregationAnnotator.n_gold,
               AggregationAnnotator.gold_accuracy, AggregationAnnotator.extra)
        .join(Annotator, Annotator.id == AggregationAnnotator.annotator_id)
        .where(*where)
    )
    order = sort_order(sort, ANNOTATOR_SORTS, AggregationAnnotator.annotator_id)
    query = query.order_by(*order).offset(offset)
    if limit is not None:
        query = query.limit(limit)
    rows = session.execute(query).mappings()
    return [dict(r) for r in rows], total


def annotator_history(session: Session, *, collection: Collection,
                      annotator: str) -> dict[str, Any]:
    """One annotator across every succeeded aggregation of the collection."""
    found = session.execute(select(Annotator.id, Annotator.kind).where(
        Annotator.collection_id == collection.id, Annotator.external_id == annotator)).first()
    if found is None:
        raise NotFound(f"no annotator {annotator!r} in collection {collection.name!r}",
                       code="annotator_not_found")
    annotator_id, kind = found
    judgments = session.scalar(select(func.count()).select_from(Judgment).where(
        Judgment.annotator_id == annotator_id, Judgment.label.is_not(None))) or 0
    rows = session.execute(
        select(Aggregation.id.label("aggregation_id"), Aggregation.method, Aggregation.graded,
               Aggregation.created_at, AggregationAnnotator.competence,
               AggregationAnnotator.noise_variance, AggregationAnnotator.bias,
               AggregationAnnotator.n_judgments, AggregationAnnotator.n_gold,
               AggregationAnnotator.gold_accuracy, AggregationAnnotator.extra)
        .join(Aggregation, Aggregation.id == AggregationAnnotator.aggregation_id)
        .where(AggregationAnnotator.annotator_id == annotator_id,
               Aggregation.status == "succeeded")
        .order_by(Aggregation.id)
    ).mappings()
    # an ordinal fit's spread (noise in grade units) lives in its extra columns; a graded
    # fit's gold_accuracy is the exact grade, its relevance agreement an extra column
    data = [{**{k: v for k, v in r.items() if k != "extra"},
             "spread": (r["extra"] or {}).get("spread"),
             "gold_relevance_accuracy": (r["extra"] or {}).get("gold_relevance_accuracy")
             if r["graded"] else r["gold_accuracy"]} for r in rows]
    return {"annotator": annotator, "kind": kind, "judgments": judgments, "data": data}


def annotator_confusion(session: Session, *, collection: Collection, annotator: str,
                        aggregation: Aggregation | None) -> dict[str, Any]:
    """The annotator's labels against gold, and against ``aggregation``'s labels: counts
    {(their label, reference label): n} over their latest judgment per task; rows ``labels``
    (theirs), columns ``columns`` (the reference's values: a binary fit's are 0 and 1).
    A fit that has not succeeded has no labels to compare with: 409 aggregation_not_succeeded."""
    if aggregation is not None:
        require_succeeded(aggregation)
    annotator_id = session.scalar(select(Annotator.id).where(
        Annotator.collection_id == collection.id, Annotator.external_id == annotator))
    if annotator_id is None:
        raise NotFound(f"no annotator {annotator!r} in collection {collection.name!r}",
                       code="annotator_not_found")
    query = select(Judgment.id, Judgment.task_id, Judgment.label).where(
        Judgment.annotator_id == annotator_id)
    if aggregation is not None:
        query = query.where(Judgment.id <= aggregation.watermark)
    latest: dict[int, tuple[int, int]] = {}  # task -> (judgment id, label): the latest one
    for judgment_id, task_id, label in session.execute(query):
        if task_id not in latest or judgment_id > latest[task_id][0]:
            latest[task_id] = (judgment_id, label)
    # a withdrawal (label NULL) as the latest: the annotator no longer labels the task
    latest = {t: v for t, v in latest.items() if v[1] is not None}
    tasks = list(latest)
    gold_of: dict[int, int] = {}
    fitted: dict[int, int] = {}
    for chunk in (tasks[i:i + 5000] for i in range(0, len(tasks), 5000)):
        gold_of.update(session.execute(select(Task.id, Task.gold).where(
            Task.id.in_(chunk), Task.gold.in_(collection.labels))).all())
        if aggregation is not None:
            fitted.update(session.execute(select(AggregationTask.task_id, AggregationTask.label)
                                          .where(AggregationTask.aggregation_id == aggregation.id,
                                                 AggregationTask.task_id.in_(chunk))).all())

    def cells(reference: dict[int, int]) -> list[tuple[int, int, int]]:
        counts: dict[tuple[int, int], int] = {}
        for task_id, (_, label) in latest.items():
            if task_id in reference:
                key = (label, reference[task_id])
                counts[key] = counts.get(key, 0) + 1
        return [(a, b, n) for (a, b), n in counts.items()]

    def matrix(cells: list[Any], columns: list[int]) -> dict[str, Any]:
        # rows: the scale and whatever else they said (an ignored value such as -2);
        # columns: the reference's own values (a binary fit's are 0/1: not relevant, relevant)
        rows = sorted(set(collection.labels) | {int(a) for a, _, _ in cells})
        columns = sorted(set(columns) | {int(b) for _, b, _ in cells})
        row, column = ({v: i for i, v in enumerate(rows)}, {v: i for i, v in enumerate(columns)})
        counts = [[0] * len(columns) for _ in rows]
        for mine, reference, n in cells:
            counts[row[int(mine)]][column[int(reference)]] += int(n)
        return {"labels": rows, "columns": columns, "counts": counts,
                "total": sum(int(n) for *_, n in cells)}

    fit_values = list(aggregation.classes or []) if aggregation is not None else []
    return {"annotator": annotator, "aggregation_id": aggregation.id if aggregation else None,
            "aggregation_graded": aggregation.graded if aggregation else None,
            "vs_gold": matrix(cells(gold_of), list(collection.labels)),
            "vs_aggregated": matrix(cells(fitted), fit_values)}


def annotator_page(session: Session, *, cache: Any, aggregation_id: int,
                   visible: Callable[[int], bool], sort: str, min_judgments: int,
                   q: str | None, limit: int, offset: int, kind: str | None = None) -> Any:
    """A page of the annotator listing (``listing.Page``): the rows, order and count of
    ``annotator_results``, sliced from the fit's cached ordering (``listing.ListingCache``).

    A succeeded fit already cached is served without a query; ``visible(collection_id)`` is the
    caller's access check (404 as for any aggregation it may not see)."""
    key = sort_key(sort, ANNOTATOR_SORTS)
    hit = _cached_ordering(cache, aggregation_id, visible, key)
    if hit is None:
        aggregation = get_aggregation(session, aggregation_id=aggregation_id)
        if not visible(aggregation.collection_id):
            raise aggregation_not_found(aggregation_id)
        require_succeeded(aggregation)
        hit = cache.ordering(session, aggregation=aggregation, sort=key, read=annotator_results)
    return page(hit, sort=key, min_judgments=min_judgments, q=q, limit=limit, offset=offset,
                kind=kind)


def _cached_ordering(cache: Any, aggregation_id: int, visible: Callable[[int], bool],
                     key: str) -> Any:
    collection_id = cache.known_succeeded(aggregation_id)
    if collection_id is None or not visible(collection_id):
        return None
    return cache.cached(aggregation_id, key)


def cached_annotator_page(*, cache: Any, aggregation_id: int, visible: Callable[[int], bool],
                          sort: str, min_judgments: int, q: str | None, limit: int,
                          offset: int, kind: str | None = None) -> Any:
    """``annotator_page`` when its ordering is cached (no database needed), else None."""
    key = sort_key(sort, ANNOTATOR_SORTS)
    hit = _cached_ordering(cache, aggregation_id, visible, key)
    if hit is None:
        return None
    return page(hit, sort=key, min_judgments=min_judgments, q=q, limit=limit, offset=offset,
                kind=kind)
