"""The API side of the Celery runner: send and revoke fit tasks."""

from __future__ import annotations

from app.core.config import Settings
from app.jobs.celery_app import FIT_TASK, make_celery


class CeleryRunner:
    def __init__(self, settings: Settings) -> None:
        self.app = make_celery(settings.broker_url)
        self.queue = settings.celery_queue

    def start(self) -> None:
        pass

    def stop(self) -> None:
        pass

    def submit(self, aggregation_id: int) -> str | None:
        result = self.app.send_task(FIT_TASK, args=[aggregation_id], queue=self.queue)
        return str(result.id)

    def cancel(self, aggregation_id: int, job_id: str | None) -> None:
        # The fit also sees 'cancelled' in the database at its next progress report and stops.
        if job_id:
            self.app.control.revoke(job_id, terminate=True, signal="SIGTERM")
