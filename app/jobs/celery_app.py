"""Celery for scale-out: the API sends jobs to a Redis broker, `crowdqrels worker` runs them."""

from __future__ import annotations

from celery import Celery

from app.core.config import get_settings

TASK_NAMES = {"fit": "crowdqrels.fit", "features": "crowdqrels.build_features"}


def make_celery(broker_url: str) -> Celery:
    app = Celery("crowdqrels", broker=broker_url)
    app.conf.update(
        task_acks_late=True,  # a worker that dies mid-job leaves the message for another
        worker_prefetch_multiplier=1,  # jobs are long: take one at a time
        task_serializer="json",
        accept_content=["json"],
        broker_connection_retry_on_startup=True,
        task_ignore_result=True,
        worker_hijack_root_logger=False,
    )
    return app


celery_app = make_celery(get_settings().broker_url)


def _run(kind: str, job_id: int) -> str:
    from app.jobs.dispatch import run_job

    # The worker's own settings name the database: the API and the workers share it.
    return run_job(kind, get_settings().database_url, job_id)


@celery_app.task(name=TASK_NAMES["fit"])
def fit(aggregation_id: int) -> str:
    return _run("fit", aggregation_id)


@celery_app.task(name=TASK_NAMES["features"])
def build_features(feature_build_id: int) -> str:
    return _run("features", feature_build_id)


def run_worker(*, concurrency: int = 1, queues: str | None = None) -> None:
    celery_app.worker_main(
        ["worker", "--loglevel=INFO", f"--concurrency={concurrency}",
         f"--queues={queues or get_settings().celery_queue}", "--without-gossip",
         "--without-mingle"]
    )
