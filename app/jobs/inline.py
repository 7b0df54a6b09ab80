"""The embedded runner: each job (a fit, a feature build, an evaluation) in a process of its own,
a few at a time.

A process per job keeps TensorFlow out of the API process, lets a cancel stop a fit at once
(terminate), and survives a model that crashes the interpreter. The process is forked from the
job starter (``app.jobs.starter``: an interpreter that has imported every job's modules once, so
a job starts in milliseconds instead of the second an interpreter and its imports cost), or,
where there is no ``os.fork`` or ``settings.job_starter`` is off, a fresh interpreter
(``python -m app.jobs.child KIND ID``). Nothing of the API process (its ``__main__``, its
threads) is inherited either way: the starter is a fresh interpreter of its own.
"""

from __future__ import annotations

import queue
import subprocess
import sys
import threading
from datetime import UTC, datetime

from sqlalchemy import select, update
from sqlalchemy.exc import SQLAlchemyError

from app.core.config import Settings
from app.core.db import get_sessionmaker
from app.core.metrics import process_ended
from app.jobs.kinds import KINDS, get_kind
from app.jobs.starter import StartedJob, StarterGone, can_fork, starter_for

JobProcess = subprocess.Popen[bytes] | StartedJob


def child_environment(database_url: str) -> dict[str, str]:
    import os

    # The database URL travels in the environment, not argv (it may hold a password).
    return {**os.environ, "CROWDQRELS_DATABASE_URL": database_url,
            "TF_CPP_MIN_LOG_LEVEL": os.environ.get("TF_CPP_MIN_LOG_LEVEL", "3")}


class InlineRunner:
    def __init__(self, settings: Settings) -> None:
        self.database_url = settings.database_url
        self.max_parallel = settings.max_parallel_fits
        self._queue: queue.Queue[tuple[str, int] | None] = queue.Queue()
        self._running: dict[tuple[str, int], JobProcess] = {}
        self._cancelled: set[tuple[str, int]] = set()
        self._lock = threading.Lock()
        self._slots = threading.Semaphore(self.max_parallel)
        self._dispatcher: threading.Thread | None = None
        self.use_starter = settings.job_starter and can_fork()
        self.tensorflow_starter = self.use_starter and settings.job_starter_tensorflow
        self._stopped = False

    # -- lifecycle ---------------------------------------------------------------------------
    def start(self) -> None:
        self._recover()
        self._dispatcher = threading.Thread(target=self._dispatch, name="crowdqrels-fits",
                                            daemon=True)
        self._dispatcher.start()

    def stop(self) -> None:
        self._queue.put(None)
        with self._lock:
            # No job starts after this: one the dispatcher took from the queue before it saw
            # the end would otherwise start after the snapshot below and outlive the API (the
            # job stays queued, for the next start's _recover).
            self._stopped = True
            running = list(self._running.items())
        for key, process in running:
            process.terminate()
            process.wait(timeout=10)
            self._mark_failed(key, "the API stopped while the job was running")
        if self._dispatcher is not None:
            self._dispatcher.join(timeout=10)

    def _recover(self) -> None:
        """Jobs left 'running' by an earlier API process died with it; 'queued' ones restart."""
        with get_sessionmaker(self.database_url)() as session:
            for kind in KINDS.values():
                table = kind.table_class()
                session.execute(
                    update(table).where(table.status == "running").values(
                        status="failed", error="interrupted: the API restarted during the job",
                        finished_at=datetime.now(UTC))
                )
                session.commit()
                queued = session.scalars(
                    select(table.id).where(table.status == "queued").order_by(table.id)
                ).all()
                for job_id in queued:
                    self._queue.put((kind.name, job_id))

    # -- jobs --------------------------------------------------------------------------------
    def submit(self, kind: str, job_id: int) -> str | None:
        self._queue.put((kind, job_id))
        return None

    def cancel(self, kind: str, job_id: int, runner_job_id: str | None) -> None:
        with self._lock:
            self._cancelled.add((kind, job_id))
            process = self._running.get((kind, job_id))
        if process is not None:
            process.terminate()

    def _dispatch(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            self._slots.acquire()
            tensorflow = self.tensorflow_starter and self._uses_tensorflow(*item)
            with self._lock:
                if self._stopped:
                    self._slots.release()
                    return
                if item in self._cancelled:
                    self._slots.release()
                    continue
                process = self._process_for(*item, tensorflow=tensorflow)
                self._running[item] = process
            threading.Thread(target=self._watch, args=(item, process), daemon=True).start()

    def _uses_tensorflow(self, kind: str, job_id: int) -> bool:
        """Whether the job will import TensorFlow (a GP fit: its row's ``uses_tensorflow``), so
        that it is forked from the starter that has imported it already."""
        table = get_kind(kind).table_class()
        if not hasattr(table, "uses_tensorflow"):
            return False
        try:
            with get_sessionmaker(self.database_url)() as session:
                row = session.get(table, job_id)
                return bool(row is not None and row.uses_tensorflow)
        except SQLAlchemyError:
            return False  # the job reads its row itself, and reports what is wrong with it

    def _process_for(self, kind: str, job_id: int, *, tensorflow: bool = False) -> JobProcess:
        """The job's process (called holding the lock): forked by the job starter (the one that
        has imported TensorFlow for a GP fit), or, without one, a fresh interpreter."""
        if self.use_starter:
            env = child_environment(self.database_url)
            try:
                return starter_for(env, tensorflow=tensorflow).start(kind, job_id, env)
            except StarterGone:
                pass  # it died (e.g. killed): this job in a fresh interpreter, the next forks anew
        return subprocess.Popen([sys.executable, "-m", "app.jobs.child", kind, str(job_id)],
                                env=child_environment(self.database_url))

    def _watch(self, key: tuple[str, int], process: JobProcess) -> None:
        process.wait()
        process_ended(process.pid)
        with self._lock:
            self._running.pop(key, None)
            cancelled = key in self._cancelled
        self._slots.release()
        if process.returncode != 0 and not cancelled:
            self._mark_failed(key, f"the job process died (exit code {process.returncode})")

    def _mark_failed(self, key: tuple[str, int], error: str) -> None:
        kind, job_id = key
        table = get_kind(kind).table_class()
        with get_sessionmaker(self.database_url)() as session:
            session.execute(
                update(table)
                .where(table.id == job_id, table.status.in_(("queued", "running")))
                .values(status="failed", error=error, finished_at=datetime.now(UTC))
            )
            session.commit()

