"""The body of a fit job, the same for every runner: read the snapshot, fit, store the results.

Runs in a worker process (a child of the API, or a Celery worker): it is the only place of the
service that imports the models, and so TensorFlow for the GP methods.
"""

from __future__ import annotations

import time
import traceback
from datetime import UTC, datetime

import numpy as np
from sqlalchemy import update
from sqlalchemy.orm import Session

from app.aggregations.results import store_results
from app.aggregations.snapshot import load_snapshot
from app.aggregations.tables import FINISHED, Aggregation
from app.collections.tables import Collection
from app.core.db import get_sessionmaker

PROGRESS_EVERY_S = 0.5


class FitCancelled(Exception):
    """Raised inside the fit's progress callback once the aggregation is cancelled."""


def _set(session: Session, aggregation_id: int, **values: object) -> None:
    session.execute(update(Aggregation).where(Aggregation.id == aggregation_id).values(**values))
    session.commit()


def run_fit(database_url: str, aggregation_id: int) -> str:
    """Fit one aggregation; return its final status. Never raises for a failed fit."""
    make_session = get_sessionmaker(database_url)
    with make_session() as session:
        aggregation = session.get(Aggregation, aggregation_id)
        if aggregation is None:
            return "missing"
        if aggregation.status in FINISHED:
            return aggregation.status  # cancelled before it started
        _set(session, aggregation_id, status="running", started_at=datetime.now(UTC),
             progress=0.0, progress_message="reading judgments")
        timings: dict[str, float] = {}
        try:
            start = time.perf_counter()
            collection = session.get(Collection, aggregation.collection_id)
            assert collection is not None
            snapshot = load_snapshot(session, collection=collection,
                                     watermark=aggregation.watermark, graded=aggregation.graded)
            timings["load_s"] = time.perf_counter() - start

            with make_session() as progress_session:
                progress = _progress_reporter(progress_session, aggregation_id)
                progress(0.0, "fitting")
                start = time.perf_counter()
                from models.features.build import with_kernel_params
                from models.registry import make_aggregator

                params = with_kernel_params(aggregation.method, aggregation.params,
                                            snapshot.feature_groups)
                model = make_aggregator(aggregation.method, params)
                model.fit(snapshot.data, progress)
                result = model.result(snapshot.data)
                timings["fit_s"] = time.perf_counter() - start

            start = time.perf_counter()
            session.refresh(aggregation)
            if aggregation.status == "cancelled":
                return "cancelled"
            store_results(session, aggregation=aggregation, snapshot=snapshot, result=result,
                          model=model, relevant_from=collection.relevant_from)
            timings["store_s"] = time.perf_counter() - start
            _set(session, aggregation_id, status="succeeded", progress=1.0,
                 progress_message="done", finished_at=datetime.now(UTC), timings=timings)
            return "succeeded"
        except FitCancelled:
            session.rollback()
            return "cancelled"
        except Exception as exc:  # a failed fit is recorded, never lost
            session.rollback()
            detail = "".join(traceback.format_exception_only(type(exc), exc)).strip()
            tail = "".join(traceback.format_tb(exc.__traceback__)[-3:])
            _set(session, aggregation_id, status="failed", finished_at=datetime.now(UTC),
                 error=f"{detail}\n{tail}", timings=timings,
                 progress_message="failed")
            return "failed"


def _progress_reporter(session: Session, aggregation_id: int):  # type: ignore[no-untyped-def]
    """A progress callback that writes at most every PROGRESS_EVERY_S and checks for cancel."""
    last = 0.0

    def report(fraction: float, message: str) -> None:
        nonlocal last
        now = time.monotonic()
        if now - last < PROGRESS_EVERY_S and fraction < 1.0:
            return
        last = now
        status = session.execute(
            update(Aggregation)
            .where(Aggregation.id == aggregation_id, Aggregation.status == "running")
            .values(progress=float(np.clip(fraction, 0.0, 1.0)), progress_message=message[:500])
        ).rowcount
        session.commit()
        if status == 0:
            raise FitCancelled

    return report


