"""The job runner interface: the API submits and cancels fits; where they run is the runner's."""

from __future__ import annotations

from typing import Any, Protocol

from sqlalchemy.orm import Session

from app.core.config import Settings


class JobRunner(Protocol):
    def start(self) -> None:
        """Called once when the API starts (lifespan)."""

    def stop(self) -> None:
        """Called once when the API stops."""

    def submit(self, kind: str, job_id: int) -> str | None:
        """Queue a job of a kind of app.jobs.kinds; return the runner's own job id if it has one."""

    def cancel(self, kind: str, job_id: int, runner_job_id: str | None) -> None:
        """Stop a queued or running job (its status is already 'cancelled' in the database)."""


def make_runner(settings: Settings) -> JobRunner:
    if settings.jobs == "celery":
        from app.jobs.celery_runner import CeleryRunner

        return CeleryRunner(settings)
    from app.jobs.inline import InlineRunner

    return InlineRunner(settings)


def submit_job(session: Session, runner: JobRunner, kind: str, job: Any) -> None:
    """Store a new job row (a table with JobColumns, status "queued") and queue it;
    the runner's own id (Celery's) is kept on the row so the job can be revoked."""
    session.add(job)
    session.commit()  # committed before queueing: the worker must find the row
    runner_job_id = runner.submit(kind, job.id)
    if runner_job_id is not None:
        job.job_id = runner_job_id
        session.commit()
