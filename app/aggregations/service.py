"""Aggregations: create (validated, snapshotted, queued), read, cancel, and their audit events.
The results of a succeeded fit are read in task_results, annotator_results, comparison and
agreement."""

from __future__ import annotations

from typing import Any

import numpy as np
from sqlalchemy import case, func, select
from sqlalchemy.orm import Session

from app.aggregations.schemas import AggregationCreate
from app.aggregations.tables import Aggregation
from app.aggregations.warm import check_warm_start
from app.auth import audit
from app.auth.principal import Principal
from app.collections.service import lock_collection
from app.collections.tables import Collection
from app.core.errors import Conflict, InvalidInput, NotFound
from app.jobs.lifecycle import JobFinished, cancel_job
from app.jobs.runner import JobRunner, submit_job
from app.judgments.columns import current_watermark
from app.judgments.tables import Judgment, Task
from models.registry import (
    ORDINAL_METHODS,
    InvalidParams,
    UnknownMethod,
    validate_params,
    with_seed,
)


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
    from models.ordinal_scale import OrdinalScaleError, check_ordinal_scale

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
