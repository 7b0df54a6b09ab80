"""The embedded runner: each job (a fit or a feature build) in a fresh child interpreter
(`python -m app.jobs.child KIND ID`), a few at a time.

A child process keeps TensorFlow out of the API process, lets a cancel stop a fit at once
(terminate), and survives a model that crashes the interpreter. A plain subprocess rather than
multiprocessing: nothing of the parent (its __main__, its threads) is re-imported or inherited.

Starting an interpreter and importing the job's modules costs about 0.9 s, more than a warm
refit itself. Once a first job has run, the runner keeps one child started ahead (a spare,
``settings.spare_job_process``): it imports while nothing waits for it, then takes the next job
on its standard input. It is still one job per process, so a cancel or a crash is as before.
"""

from __future__ import annotations

import contextlib
import queue
import subprocess
import sys
import threading
from datetime import UTC, datetime

from sqlalchemy import select, update

from app.core.config import Settings
from app.core.db import get_sessionmaker
from app.core.metrics import process_ended
from app.jobs.kinds import KINDS, get_kind


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
        self._running: dict[tuple[str, int], subprocess.Popen[bytes]] = {}
        self._cancelled: set[tuple[str, int]] = set()
        self._lock = threading.Lock()
        self._slots = threading.Semaphore(self.max_parallel)
        self._dispatcher: threading.Thread | None = None
        self.keep_spare = settings.spare_job_process
        self._spare: subprocess.Popen[bytes] | None = None

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
        for key, process in running:
            process.terminate()
            process.wait(timeout=10)
            self._mark_failed(key, "the API stopped while the job was running")
        with self._lock:
            spare, self._spare = self._spare, None
        if spare is not None:
            _end(spare)
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
            with self._lock:
                if item in self._cancelled:
                    self._slots.release()
                    continue
                process = self._child_for(*item)
                self._running[item] = process
                if self.keep_spare:  # the next job's process imports while this one runs
                    self._spare = subprocess.Popen(
                        [sys.executable, "-m", "app.jobs.child"], stdin=subprocess.PIPE,
                        env=child_environment(self.database_url))
            threading.Thread(target=self._watch, args=(item, process), daemon=True).start()

    def _child_for(self, kind: str, job_id: int) -> subprocess.Popen[bytes]:
        """The process of a job (called holding the lock): the spare, given the job on its
        standard input, or, without a live one, a new child started with the job."""
        spare, self._spare = self._spare, None
        if spare is not None:
            try:
                if spare.poll() is None:
                    assert spare.stdin is not None
                    spare.stdin.write(f"{kind} {job_id}\n".encode())
                    spare.stdin.close()
                    return spare
            except OSError:  # it died meanwhile: a fresh child instead
                pass
            _end(spare)
        return subprocess.Popen([sys.executable, "-m", "app.jobs.child", kind, str(job_id)],
                                env=child_environment(self.database_url))

    def _watch(self, key: tuple[str, int], process: subprocess.Popen[bytes]) -> None:
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


def _end(spare: subprocess.Popen[bytes]) -> None:
    """Stop a spare that has no job (it exits at the end of its input; terminate if it does not
    at once) and release its pipe."""
    if spare.stdin is not None:
        with contextlib.suppress(OSError):
            spare.stdin.close()
    try:
        spare.wait(timeout=0.5)
    except subprocess.TimeoutExpired:
        spare.terminate()
        spare.wait(timeout=10)
