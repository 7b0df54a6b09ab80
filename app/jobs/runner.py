"""The job runner interface: the API submits and cancels fits; where they run is the runner's."""

from __future__ import annotations

from typing import Protocol

from app.core.config import Settings


class JobRunner(Protocol):
    def start(self) -> None:
        """Called once when the API starts (lifespan)."""

    def stop(self) -> None:
        """Called once when the API stops."""

    def submit(self, aggregation_id: int) -> str | None:
        """Queue a fit; return a job id when the runner has one."""

    def cancel(self, aggregation_id: int, job_id: str | None) -> None:
        """Stop a queued or running fit (its status is already 'cancelled' in the database)."""


def make_runner(settings: Settings) -> JobRunner:
    if settings.jobs == "celery":
        from app.jobs.celery_runner import CeleryRunner

        return CeleryRunner(settings)
    from app.jobs.inline import InlineRunner

    return InlineRunner(settings)
