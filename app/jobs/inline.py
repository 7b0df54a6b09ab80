"""The embedded runner: each fit in a fresh child interpreter (`python -m app.jobs.child`),
a few at a time.

A child process keeps TensorFlow out of the API process, lets a cancel stop a fit at once
(terminate), and survives a model that crashes the interpreter. A plain subprocess rather than
multiprocessing: nothing of the parent (its __main__, its threads) is re-imported or inherited.
"""

from __future__ import annotations

import queue
import subprocess
import sys
import threading
from datetime import UTC, datetime

from sqlalchemy import update

from app.aggregations.tables import Aggregation
from app.core.config import Settings
from app.core.db import get_sessionmaker



def child_environment(database_url: str) -> dict[str, str]:
    import os

    # The database URL travels in the environment, not argv (it may hold a password).
    return {**os.environ, "CROWDQRELS_DATABASE_URL": database_url,
            "TF_CPP_MIN_LOG_LEVEL": os.environ.get("TF_CPP_MIN_LOG_LEVEL", "2")}


class InlineRunner:
    def __init__(self, settings: Settings) -> None:
        self.database_url = settings.database_url
        self.max_parallel = settings.max_parallel_fits
        self._queue: queue.Queue[int | None] = queue.Queue()
        self._running: dict[int, subprocess.Popen[bytes]] = {}
        self._cancelled: set[int] = set()
        self._lock = threading.Lock()
        self._slots = threading.Semaphore(self.max_parallel)
        self._dispatcher: threading.Thread | None = None

    # -- lifecycle ---------------------------------------------------------------------------
    def start(self) -> None:
        self._recover()
        self._dispatcher = threading.Thread(target=self._dispatch, name="crowdqrels-fits",
                                            daemon=True)
        self._dispatcher.start()

    def stop(self) -> None:
        self._queue.put(None)
        with self._lock:
            running = list(self._running.items())
        for aggregation_id, process in running:
            process.terminate()
            process.wait(timeout=10)
            self._mark_failed(aggregation_id, "the API stopped while the fit was running")
        if self._dispatcher is not None:
            self._dispatcher.join(timeout=10)

    def _recover(self) -> None:
        """Fits left 'running' by an earlier API process died with it; 'queued' ones restart."""
        with get_sessionmaker(self.database_url)() as session:
            session.execute(
                update(Aggregation).where(Aggregation.status == "running").values(
                    status="failed", error="interrupted: the API restarted during the fit",
                    finished_at=datetime.now(UTC))
            )
            session.commit()
            queued = session.scalars(
                Aggregation.__table__.select().with_only_columns(Aggregation.id)
                .where(Aggregation.status == "queued").order_by(Aggregation.id)
            ).all()
        for aggregation_id in queued:
            self._queue.put(aggregation_id)

    # -- jobs --------------------------------------------------------------------------------
    def submit(self, aggregation_id: int) -> str | None:
        self._queue.put(aggregation_id)
        return None

    def cancel(self, aggregation_id: int, job_id: str | None) -> None:
        with self._lock:
            self._cancelled.add(aggregation_id)
            process = self._running.get(aggregation_id)
        if process is not None:
            process.terminate()

    def _dispatch(self) -> None:
        while True:
            aggregation_id = self._queue.get()
            if aggregation_id is None:
                return
            self._slots.acquire()
            with self._lock:
                if aggregation_id in self._cancelled:
                    self._slots.release()
                    continue
                process = subprocess.Popen(
                    [sys.executable, "-m", "app.jobs.child", str(aggregation_id)],
                    env=child_environment(self.database_url))
                self._running[aggregation_id] = process
            threading.Thread(target=self._watch, args=(aggregation_id, process),
                             daemon=True).start()

    def _watch(self, aggregation_id: int, process: subprocess.Popen[bytes]) -> None:
        process.wait()
        with self._lock:
            self._running.pop(aggregation_id, None)
            cancelled = aggregation_id in self._cancelled
        self._slots.release()
        if process.returncode != 0 and not cancelled:
            self._mark_failed(aggregation_id,
                              f"the fit process died (exit code {process.returncode})")

    def _mark_failed(self, aggregation_id: int, error: str) -> None:
        with get_sessionmaker(self.database_url)() as session:
            session.execute(
                update(Aggregation)
                .where(Aggregation.id == aggregation_id,
                       Aggregation.status.in_(("queued", "running")))
                .values(status="failed", error=error, finished_at=datetime.now(UTC))
            )
            session.commit()
