"""Celery for scale-out: the API sends fits to a Redis broker, `crowdqrels worker` runs them."""

from __future__ import annotations

from celery import Celery

from app.core.config import get_settings

FIT_TASK = "crowdqrels.fit"


def make_celery(broker_url: str) -> Celery:
    app = Celery("crowdqrels", broker=broker_url)
    app.conf.update(
        task_acks_late=True,  # a worker that dies mid-fit leaves the message for another
        worker_prefetch_multiplier=1,  # fits are long: take one at a time
        task_serializer="json",
        accept_content=["json"],
        broker_connection_retry_on_startup=True,
        task_ignore_result=True,
        worker_hijack_root_logger=False,
    )
    return app


celery_app = make_celery(get_settings().broker_url)


@celery_app.task(name=FIT_TASK)
def fit(aggregation_id: int) -> str:
    from app.jobs.fit import run_fit

    # The worker's own settings name the database: the API and the worker share it.
    return run_fit(get_settings().database_url, aggregation_id)


def run_worker(*, concurrency: int = 1, queues: str | None = None) -> None:
    celery_app.worker_main(
        ["worker", "--loglevel=INFO", f"--concurrency={concurrency}", f"--queues={queues or get_settings().celery_queue}",
         "--without-gossip", "--without-mingle"]
    )
