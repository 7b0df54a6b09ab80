"""The job runner interface: the API submits and cancels fits; where they run is the runner's."""

from __future__ import annotations

from typing import Literal, Protocol

from app.core.config import Settings

# "fit": an aggregation (app.jobs.fit); "features": a feature build (app.jobs.build_features).
JobKind = Literal["fit", "features"]
JOB_KINDS: tuple[JobKind, ...] = ("fit", "features")


class JobRunner(Protocol):
    def start(self) -> None:
        """Called once when the API starts (lifespan)."""

    def stop(self) -> None:
        """Called once when the API stops."""

    def submit(self, kind: JobKind, job_id: int) -> str | None:
        """Queue a job (a fit or a feature build); return the runner's own job id if it has one."""

    def cancel(self, kind: JobKind, job_id: int, runner_job_id: str | None) -> None:
        """Stop a queued or running job (its status is already 'cancelled' in the database)."""


def make_runner(settings: Settings) -> JobRunner:
    if settings.jobs == "celery":
        from app.jobs.celery_runner import CeleryRunner

        return CeleryRunner(settings)
    from app.jobs.inline import InlineRunner

    return InlineRunner(settings)
