"""The life of one job, the same for every kind: queued -> running -> succeeded | failed |
cancelled, with throttled progress reports that also notice a cancel.

``run_tracked`` marks the row running, calls the kind's body with a ``JobContext``, and records
the outcome; the body does the work and returns the columns to set on success. A failed job
keeps its error; nothing a body raises escapes (a worker must never die of a bad job).

``cancel_job`` is the API's side of a cancel, the same for every kind. A cancel and the job's
own end are each one conditional UPDATE of the row's status, so exactly one of them wins; what
a body writes without committing is committed with 'succeeded' or dropped with a cancel.
"""

from __future__ import annotations

import logging
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import numpy as np
from sqlalchemy import update
from sqlalchemy.orm import Session

from app.core.db import get_sessionmaker
from app.core.logs import JOB_ID
from app.core.metrics import JOB_SECONDS, JOBS_FAILED
from app.jobs.kinds import kind_of_table
from app.jobs.runner import JobRunner
from app.jobs.tables import ACTIVE, FINISHED

PROGRESS_EVERY_S = 0.5
log = logging.getLogger(__name__)


class JobCancelled(Exception):
    """Raised by a progress report once the job's row says 'cancelled'."""


class JobFinished(Exception):
    """A cancel that changed nothing: the job had already finished with ``status``."""

    def __init__(self, status: str) -> None:
        super().__init__(f"the job has already {status}")
        self.status = status


def cancel_job(session: Session, *, runner: JobRunner, kind: str, job: Any) -> None:
    """Cancel a queued or running job of ``kind`` (a row of a table with JobColumns).

    One conditional UPDATE (queued or running -> cancelled) decides against the job's own end
    and against other cancels, then the runner drops the job from its queue or stops its
    process. Raises ``JobFinished`` when this call did not change the row: the job had already
    finished (cancelled included), or it finished or was cancelled by another request between
    the caller's read and the UPDATE.
    """
    if job.status not in FINISHED:
        table = type(job)
        changed = session.execute(
            update(table).where(table.id == job.id, table.status.in_(ACTIVE)).values(
                status="cancelled", finished_at=datetime.now(UTC), progress_message="cancelled")
        ).rowcount
        session.commit()
        session.refresh(job)
        if changed:
            runner.cancel(kind, job.id, job.job_id)
            return
    raise JobFinished(job.status)


@dataclass
class JobContext:
    """What a job body gets: its session, its row, a progress callback, its timings."""

    session: Session
    table: Any
    job: Any
    progress: Callable[[float, str], None]
    timings: dict[str, Any] = field(default_factory=dict)

    def set(self, **values: object) -> None:
        """Write columns of the job's row now (committed)."""
        _set(self.session, self.table, self.job.id, **values)

    def cancelled(self) -> bool:
        self.session.refresh(self.job)
        return bool(self.job.status == "cancelled")


def _set(session: Session, table: Any, job_id: int, **values: object) -> None:
    session.execute(update(table).where(table.id == job_id).values(**values))
    session.commit()


def run_tracked(database_url: str, table: Any, job_id: int,
                body: Callable[[JobContext], dict[str, Any] | None], *,
                first_message: str = "starting") -> str:
    """Run ``body`` for the job row ``table.id == job_id``; return its final status.

    ``body`` returns extra columns to store with status 'succeeded' (or None). A row already
    finished (cancelled before it started) is left alone.
    """
    make_session = get_sessionmaker(database_url)
    with make_session() as session:
        job = session.get(table, job_id)
        if job is None:
            return "missing"
        if job.status in FINISHED:
            return str(job.status)
        started = session.execute(
            update(table).where(table.id == job_id, table.status.in_(ACTIVE)).values(
                status="running", started_at=datetime.now(UTC), heartbeat_at=datetime.now(UTC),
                progress=0.0, progress_message=first_message)
        ).rowcount
        session.commit()
        if not started:
            return "cancelled"
        session.refresh(job)
        kind = kind_of_table(table)
        method = str(getattr(job, "method", None) or "")  # a fit's; other kinds have none
        token = JOB_ID.set(f"{kind}/{job_id}")  # on every line logged while the body runs
        began = time.perf_counter()
        try:
            status = _run_body(database_url, session, make_session, table, job, body)
        finally:
            JOB_ID.reset(token)
        JOB_SECONDS.labels(kind, method, status).observe(time.perf_counter() - began)
        if status == "failed":
            JOBS_FAILED.labels(kind, method).inc()
        return status


def _run_body(database_url: str, session: Session, make_session: Callable[[], Session],
              table: Any, job: Any, body: Callable[[JobContext], dict[str, Any] | None]) -> str:
    """``body`` with its heartbeat and progress reports; the job's final status, recorded."""
    job_id = job.id
    with make_session() as progress_session, Heartbeat(database_url, table, job_id):
        context = JobContext(session=session, table=table, job=job,
                             progress=progress_reporter(progress_session, table, job_id))
        try:
            values = body(context) or {}
            timings = {**context.timings, **values.pop("timings", {})}
            # Conditional, in the body's transaction: a cancel that came first wins, and
            # whatever the body left uncommitted is dropped with it.
            succeeded = session.execute(
                update(table).where(table.id == job_id, table.status != "cancelled").values(
                    status="succeeded", progress=1.0, progress_message="done",
                    finished_at=datetime.now(UTC), timings=timings or None, **values)
            ).rowcount
            if not succeeded:
                session.rollback()
                return "cancelled"
            session.commit()
            return "succeeded"
        except JobCancelled:
            session.rollback()
            return "cancelled"
        except Exception as exc:  # a failed job is recorded, never lost
            session.rollback()
            # The caller reads what went wrong; the traceback (the server's file paths and
            # code) goes to the worker's log, not into the resource.
            detail = "".join(traceback.format_exception_only(type(exc), exc)).strip()
            log.error("job %s %s failed", table.__tablename__, job_id, exc_info=exc)
            session.execute(
                update(table).where(table.id == job_id, table.status == "running").values(
                    status="failed", finished_at=datetime.now(UTC),
                    error=detail, timings=context.timings or None,
                    progress_message="failed"))
            session.commit()
            return "failed"


class Heartbeat:
    """While the body runs, a thread writes the row's ``heartbeat_at`` every
    ``CROWDQRELS_JOB_HEARTBEAT_S``; the API fails running jobs whose heartbeat went stale
    (app.jobs.maintenance). It shows the process is alive, whatever the body is doing."""

    def __init__(self, database_url: str, table: Any, job_id: int,
                 every_s: float | None = None) -> None:
        from app.core.config import get_settings

        self.database_url = database_url
        self.table = table
        self.job_id = job_id
        self.every_s = every_s if every_s is not None else get_settings().job_heartbeat_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, name="crowdqrels-heartbeat",
                                        daemon=True)

    def __enter__(self) -> Heartbeat:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    def _beat(self) -> None:
        table = self.table
        with get_sessionmaker(self.database_url)() as session:
            while not self._stop.wait(self.every_s):
                try:
                    session.execute(update(table).where(
                        table.id == self.job_id, table.status == "running").values(
                        heartbeat_at=datetime.now(UTC)))
                    session.commit()
                except Exception:  # a missed beat is harmless; the next one may pass
                    session.rollback()


def progress_reporter(session: Session, table: Any, job_id: int) -> Callable[[float, str], None]:
    """A progress callback that writes at most every PROGRESS_EVERY_S and raises JobCancelled
    once the row is no longer running (cancelled through the API)."""
    last = 0.0

    def report(fraction: float, message: str) -> None:
        nonlocal last
        now = time.monotonic()
        if now - last < PROGRESS_EVERY_S and fraction < 1.0:
            return
        last = now
        changed = session.execute(
            update(table).where(table.id == job_id, table.status == "running").values(
                progress=float(np.clip(fraction, 0.0, 1.0)), progress_message=message[:500])
        ).rowcount
        session.commit()
        if changed == 0:
            raise JobCancelled

    return report
