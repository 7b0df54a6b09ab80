"""The API side of the Celery runner: send and revoke jobs."""

from __future__ import annotations

from app.core.config import Settings
from app.jobs.celery_app import TASK_NAME, make_celery


class CeleryRunner:
    def __init__(self, settings: Settings) -> None:
        self.app = make_celery(settings.broker_url)
        self.queue = settings.celery_queue

    def start(self) -> None:
        pass

    def stop(self) -> None:
        pass

    def submit(self, kind: str, job_id: int) -> str | None:
        result = self.app.send_task(TASK_NAME, args=[kind, job_id], queue=self.queue)
        return str(result.id)

    def cancel(self, kind: str, job_id: int, runner_job_id: str | None) -> None:
        # A fit also sees 'cancelled' in the database at its next progress report and stops.
        if runner_job_id:
            self.app.control.revoke(runner_job_id, terminate=True, signal="SIGTERM")
