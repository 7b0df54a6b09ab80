"""Housekeeping in the API process: jobs whose process died, and expired idempotency keys.

A running job writes ``heartbeat_at`` every ``job_heartbeat_s`` (app.jobs.lifecycle). A job
still 'running' whose heartbeat (or, before the first one, its start) is older than
``job_stale_after_s`` lost its process — a kill -9, an out-of-memory kill, a worker machine that
stopped — and is marked failed, so a new fit can start and nothing waits on it forever. The check
runs when fits are listed or started and every ``job_check_s`` in each API process, so a dead job
is failed at most ``job_stale_after_s + job_check_s`` after its last heartbeat (defaults: 60 s +
15 s = 75 s).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta

from sqlalchemy import and_, or_, update
from sqlalchemy.orm import Session

from app.core.config import Settings
from app.core.db import get_sessionmaker
from app.jobs.kinds import KINDS

log = logging.getLogger("crowdqrels.jobs")


def fail_stale_jobs(session: Session, *, stale_after_s: float) -> int:
    """Mark failed every running job of every kind whose heartbeat is stale; return how many."""
    now = datetime.now(UTC)
    cutoff = now - timedelta(seconds=stale_after_s)
    failed = 0
    for kind in KINDS.values():
        table = kind.table_class()
        stale = and_(table.status == "running", or_(
            table.heartbeat_at < cutoff,
            and_(table.heartbeat_at.is_(None), table.started_at < cutoff)))
        failed += session.execute(update(table).where(stale).values(
            status="failed", finished_at=now, progress_message="failed",
            error=f"the job's process stopped: no heartbeat for over {stale_after_s:g} s (it was "
                  "killed, ran out of memory or its machine stopped); start a new fit",
        ).execution_options(synchronize_session=False)).rowcount or 0
    session.commit()
    if failed:
        log.warning("marked %d job(s) failed: no heartbeat for %g s", failed, stale_after_s)
    return failed


class Maintenance:
    """A daemon thread: stale jobs, then the domains' ``sweeps`` (the idempotency purge, wired
    in by app/main.py, so that jobs/ imports no domain), every ``job_check_s``."""

    def __init__(self, settings: Settings,
                 sweeps: Sequence[Callable[[Session], object]] = ()) -> None:
        self.settings = settings
        self.sweeps = tuple(sweeps)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name="crowdqrels-maintenance",
                                        daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)

    def run_once(self) -> None:
        with get_sessionmaker(self.settings.database_url)() as session:
            fail_stale_jobs(session, stale_after_s=self.settings.job_stale_after_s)
            for sweep in self.sweeps:
                sweep(session)

    def _loop(self) -> None:
        while not self._stop.wait(self.settings.job_check_s):
            try:
                self.run_once()
            except Exception:  # the database may be briefly away: try again next time
                log.exception("maintenance failed")
