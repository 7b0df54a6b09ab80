"""Aggregations: create (validated, snapshotted, queued), read, cancel, and their results."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from itertools import chain
from typing import Any

import numpy as np
from sqlalchemy import Select, case, func, select
from sqlalchemy.orm import Session

from app.aggregations.gold import GoldStatus, check_fits
from app.aggregations.listing import page
from app.aggregations.schemas import AggregationCreate
from app.aggregations.tables import (
    Aggregation,
    AggregationAnnotator,
    AggregationTask,
)
from app.aggregations.warm import check_warm_start
from app.auth import audit
from app.auth.principal import Principal
from app.collections.service import lock_collection
from app.collections.tables import Collection
from app.core.errors import Conflict, InvalidInput, NotFound
from app.jobs.lifecycle import JobFinished, cancel_job
from app.jobs.runner import JobRunner, submit_job
from app.judgments.columns import current_watermark
from app.judgments.tables import Annotator, Document, Judgment, Task, Topic
from models.registry import (
    ORDINAL_METHODS,
    InvalidParams,
    UnknownMethod,
    validate_params,
    with_seed,
)

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
        raise InvalidInput(str(exc), code="invalid_params", valid=exc.valid,
                           param=exc.param) from None

    warm_from = None
    if spec.warm_start is not None:
        warm_from = check_warm_start(session, collection=collection, spec=spec, params=params)

    lock_collection(session, collection_id=collection.id)
    watermark = current_watermark(session, collection_id=collection.id)
    usable_where = [Judgment.collection_id == collection.id, Judgment.id <= watermark,
                    Judgment.label.is_not(None)]
    if collection.ignore:
        usable_where.append(Judgment.label.not_in(collection.ignore))
    usable = session.scalar(select(func.count()).select_from(Judgment).where(*usable_where))
    if not usable:
        session.rollback()
        raise InvalidInput(
            f"collection {collection.name!r} has no judgments to aggregate",
            code="empty_collection")
    if spec.method in ORDINAL_METHODS:
        _check_ordinal(session, collection=collection, where=usable_where, graded=spec.graded)
    if params.get("calibrate_folds"):
        _check_calibration(session, collection=collection, folds=params["calibrate_folds"])
    aggregation = Aggregation(
        collection_id=collection.id, method=spec.method, params=params, graded=spec.graded,
        seed=spec.seed, status="queued", progress=0.0, progress_message="queued",
        watermark=watermark, warm_start_id=None if warm_from is None else warm_from.id,
    )
    submit_job(session, runner, "fit", aggregation)
    return aggregation


def _check_calibration(session: Session, *, collection: Collection, folds: int) -> None:
    """A fit calibrated on held-out gold (calibrate_folds) needs at least ``folds`` gold tasks,
    relevant and non-relevant ones among them; raises InvalidInput (422) saying what it has."""
    gold = Task.gold
    where = [Task.collection_id == collection.id, gold.is_not(None)]
    if collection.ignore:
        where.append(gold.not_in(collection.ignore))
    relevant = func.sum(case((gold >= collection.relevant_from, 1), else_=0))
    total, n_relevant = session.execute(
        select(func.count(), relevant).select_from(Task).where(*where)).one()
    n_relevant = int(n_relevant or 0)
    if total < folds or n_relevant == 0 or n_relevant == total:
        session.rollback()
        raise InvalidInput(
            f"calibrate_folds={folds} needs at least {folds} gold tasks, relevant and "
            f"non-relevant ones among them; collection {collection.name!r} has {total} "
            f"({n_relevant} relevant)", code="calibration_needs_gold")


def _check_ordinal(session: Session, *, collection: Collection, where: list[Any],
                   graded: bool) -> None:
    """An ordinal method needs an ordered numeric scale and at least two grades judged (binary
    fits: both sides of relevant_from); raises InvalidInput (422) naming the problem."""
    from models.ordinal_ds import OrdinalScaleError, check_ordinal_scale

    scale = list(collection.labels or [])
    present = sorted(session.scalars(select(Judgment.label).where(*where).distinct()))
    if graded:
        present = [v for v in present if v in scale]
    else:
        scale = [0, 1]
        present = sorted({int(v >= collection.relevant_from) for v in present})
    try:
        if not all(isinstance(v, int | float) and not isinstance(v, bool) for v in scale):
            raise OrdinalScaleError(
                f"an ordinal model needs a numeric label scale, got {scale!r}",
                "scale_not_ordinal")
        index = {v: i for i, v in enumerate(scale)}
        check_ordinal_scale(np.asarray(scale), np.asarray([index.get(v, 0) for v in present]))
    except OrdinalScaleError as exc:
        session.rollback()
        raise InvalidInput(f"collection {collection.name!r}: {exc}", code=exc.code,
                           labels=scale, judged=present) from None


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
    """Cancel a queued or running fit. The change is one conditional UPDATE (status still
    queued or running), so of concurrent cancels exactly one changes the row; every other one,
    like a cancel of a fit already finished, is 409 ``aggregation_finished``."""
    try:
        cancel_job(session, runner=runner, kind="fit", job=aggregation)
    except JobFinished as exc:
        raise Conflict(f"aggregation {aggregation.id} has already {exc.status}",
                       code="aggregation_finished", status=exc.status) from None
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


def _order(sort: str, columns: dict[str, Any], tiebreak: Any) -> list[Any]:
    descending = sort.startswith("-")
    name = sort[1:] if sort[:1] in ("-", "+") else sort  # one sign at most: "--x" is no column
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
    order = _order(sort, ANNOTATOR_SORTS, AggregationAnnotator.annotator_id)
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


def gold_statuses(session: Session, *, collection: Collection, fits: Sequence[Aggregation],
                  cache: Any = None) -> dict[int, GoldStatus]:
    """Each succeeded fit of ``fits`` against the collection's current gold (``gold.check_fits``;
    ``cache``: the app's ListingCache, so a gold change is checked once per fit)."""
    return check_fits(session, collection=collection, fits=fits, cache=cache)


def comparison(session: Session, *, collection: Collection,
               cache: Any = None) -> list[dict[str, Any]]:
    """Every succeeded aggregation with its evaluation against the current gold, best first.

    A fit whose tasks' gold changed since it was scored shows its stored posteriors re-scored
    against the current gold (``rescored``) when the fit never used the gold; one that clamped
    the earlier gold cannot be re-scored honestly and keeps its fit-time figures (``stale``),
    as does a clamped fit stored before fits recorded their gold. Stale rows are ranked after
    every row scored against the current gold."""
    rows = session.scalars(select(Aggregation).where(
        Aggregation.collection_id == collection.id, Aggregation.status == "succeeded"
    ).order_by(Aggregation.id)).all()
    statuses = gold_statuses(session, collection=collection, fits=rows, cache=cache)
    out = []
    for a in rows:
        status = statuses.get(a.id)
        rescored = status is not None and status.current is False and status.rescorable
        e = (status.current_evaluation if rescored and status is not None
             else a.evaluation) or {}
        ordinal = e.get("kappa") is not None
        out.append({
            "aggregation_id": a.id, "method": a.method, "params": a.params, "graded": a.graded,
            "n_gold": e.get("n_gold"), "accuracy": e.get("accuracy"),
            "precision": e.get("precision"), "recall": e.get("recall"), "f1": e.get("f1"),
            "log_loss": e.get("log_loss"), "ece": e.get("ece"), "brier": e.get("brier"),
            "mae": e.get("mae"), "kappa": e.get("kappa"),
            "binary_accuracy": e.get("binary_accuracy"),
            "ranked_by": "kappa" if ordinal else "accuracy",
            "fit_seconds": (a.timings or {}).get("fit_s"),
            "gold_current": None if status is None else status.current,
            "rescored": rescored,
            "stale": status is None or (status.current is not True and not rescored),
        })
    # Rows scored against the current gold first. Binary fits first, best accuracy first; then
    # graded fits, best quadratic κ first (exact accuracy ignores how far off a wrong grade is).
    out.sort(key=lambda r: (r["stale"], r["ranked_by"] == "kappa", r[r["ranked_by"]] is None,
                            -(r[r["ranked_by"]] or 0.0), r["aggregation_id"]))
    return out


# --- Dashboards: the JSON API and the pages read these same functions. -----------------------

def sort_key(sort: str, columns: dict[str, Any] | None = None) -> str:
    """``sort`` normalised ("+x" -> "x"); invalid_sort for an unknown column."""
    _order(sort, columns or ANNOTATOR_SORTS, AggregationAnnotator.annotator_id)
    name = sort[1:] if sort[:1] in ("-", "+") else sort
    return f"-{name}" if sort.startswith("-") else name


def annotator_page(session: Session, *, cache: Any, aggregation_id: int,
                   visible: Callable[[int], bool], sort: str, min_judgments: int,
                   q: str | None, limit: int, offset: int, kind: str | None = None) -> Any:
    """A page of the annotator listing (``listing.Page``): the rows, order and count of
    ``annotator_results``, sliced from the fit's cached ordering (``listing.ListingCache``).

    A succeeded fit already cached is served without a query; ``visible(collection_id)`` is the
    caller's access check (404 as for any aggregation it may not see)."""
    key = sort_key(sort)
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
    key = sort_key(sort)
    hit = _cached_ordering(cache, aggregation_id, visible, key)
    if hit is None:
        return None
    return page(hit, sort=key, min_judgments=min_judgments, q=q, limit=limit, offset=offset,
                kind=kind)


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


def task_id_of(session: Session, *, collection_id: int, topic: str, doc: str) -> int | None:
    return session.scalar(
        select(Task.id).join(Topic, Topic.id == Task.topic_id)
        .join(Document, Document.id == Task.document_id)
        .where(Task.collection_id == collection_id, Topic.external_id == topic,
               Document.external_id == doc))


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


def agreement_matrix(session: Session, *, collection: Collection,
                     cache: Any = None) -> dict[str, Any]:
    """For every two succeeded fits: the share of the tasks both labelled with the same label.

    Two graded fits (or two binary ones) agree on a task when their labels are equal; a graded
    and a binary fit when they agree on relevance (grade >= the collection's relevant_from
    against the binary label 1), the only question both answer.

    One read of the fits' labels (linear in the fits), then every pair at once in numpy
    (``agreement_counts``); a self-join of the results on the task, one row per pair of fits
    and task, took seconds at a dozen RF10 fits. A succeeded fit's results never change, so
    with ``cache`` (anything with ``memo(key, compute)``, e.g. the app's ListingCache) the
    matrix of a set of fits is computed once; another fit succeeding makes a new key. The
    answer is then shared between requests: read it, never change it."""
    fits = session.execute(
        select(Aggregation.id, Aggregation.graded, Aggregation.finished_at).where(
            Aggregation.collection_id == collection.id, Aggregation.status == "succeeded")
        .order_by(Aggregation.id)).all()
    if cache is None:
        return _agreement_matrix(session, collection=collection, fits=fits)
    key = ("agreement", collection.id, collection.relevant_from,
           tuple((i, bool(g), finished.isoformat() if finished else None)
                 for i, g, finished in fits))
    return cache.memo(key, lambda: _agreement_matrix(  # type: ignore[no-any-return]
        session, collection=collection, fits=fits))


def _agreement_matrix(session: Session, *, collection: Collection,
                      fits: Sequence[Any]) -> dict[str, Any]:
    ids = [i for i, *_ in fits]
    common = agree = np.zeros((len(ids), len(ids)), dtype=np.int64)
    if ids:
        # Core, not the ORM's result layer: ~20k plain rows a fit
        rows = session.connection().execute(
            select(AggregationTask.aggregation_id, AggregationTask.task_id, AggregationTask.label)
            .where(AggregationTask.aggregation_id.in_(ids)))
        fit_task_label = np.fromiter(chain.from_iterable(rows), dtype=np.int64).reshape(-1, 3)
        common, agree = agreement_counts(
            np.searchsorted(ids, fit_task_label[:, 0]), fit_task_label[:, 1],
            fit_task_label[:, 2], graded=np.array([bool(g) for _, g, *_ in fits]),
            relevant_from=collection.relevant_from)
    n, same = common.tolist(), agree.tolist()
    share = [[same[x][y] / n[x][y] if n[x][y] else None for y in range(len(ids))]
             for x in range(len(ids))]
    return {"aggregation_ids": ids, "agreement": share, "common_tasks": n}


def agreement_counts(fit: np.ndarray, task: np.ndarray, label: np.ndarray, *,
                     graded: np.ndarray, relevant_from: int) -> tuple[np.ndarray, np.ndarray]:
    """(common, agree): for every two fits x, y (rows and columns, ``graded[x]`` tells a graded
    fit), the tasks both labelled and those on which they agree (``agreement_matrix``'s rule).
    Long format in, one (fit, task, label) per result; a fits x tasks indicator per label value
    and a matrix product counts every pair at once: count(x, y) = sum_t [x says v][y says v]."""
    n_fits = len(graded)
    tasks, column = np.unique(task, return_inverse=True)
    shape = (n_fits, len(tasks))

    def indicator(where: np.ndarray) -> np.ndarray:
        out = np.zeros(shape)
        out[fit[where], column[where]] = 1.0
        return out

    def pairs(values: np.ndarray) -> np.ndarray:
        # exact: sums of 0/1 products stay integers far below 2**53
        total = np.zeros((n_fits, n_fits))
        for v in np.unique(values):
            said = indicator(values == v)
            total += said @ said.T
        return np.rint(total).astype(np.int64)

    common = pairs(np.zeros_like(label))
    same_label = pairs(label)
    # each fit's binary view: a binary fit's label, a graded fit's grade >= relevant_from
    relevance = np.where(graded[fit], (label >= relevant_from).astype(label.dtype), label)
    same_relevance = pairs(relevance)
    alike = graded[:, None] == graded[None, :]
    return common, np.where(alike, same_label, same_relevance)


def reference_aggregation(session: Session, *, collection: Collection,
                          aggregation_id: int | None) -> Aggregation | None:
    """The fit ``aggregation_id`` of this collection, or its latest succeeded one (None if none)."""
    if aggregation_id is not None:
        aggregation = session.get(Aggregation, aggregation_id)
        if aggregation is None or aggregation.collection_id != collection.id:
            raise aggregation_not_found(aggregation_id)
        return aggregation
    return session.scalar(select(Aggregation).where(
        Aggregation.collection_id == collection.id, Aggregation.status == "succeeded")
        .order_by(Aggregation.id.desc()).limit(1))


def fit_started(session: Session, principal: Principal, collection: Collection,
                aggregation: Aggregation) -> None:
    """The audit event of a fit started (the API and the dashboard's fit form)."""
    audit.record(session, principal=principal, action="fit_started", collection=collection,
                 target_id=aggregation.id, counts={
                     "method": aggregation.method, "watermark": aggregation.watermark,
                     **({} if aggregation.warm_start_id is None
                        else {"warm_start": aggregation.warm_start_id})})


def fit_cancelled(session: Session, principal: Principal, aggregation: Aggregation) -> None:
    """The audit event of a fit cancelled (the API and the dashboard's cancel button)."""
    audit.record(session, principal=principal, action="fit_cancelled",
                 collection=session.get(Collection, aggregation.collection_id),
                 target_id=aggregation.id)
