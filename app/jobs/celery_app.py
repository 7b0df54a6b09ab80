"""Celery for scale-out: the API sends jobs to a Redis broker, `crowdqrels worker` runs them."""

from __future__ import annotations

from celery import Celery

from app.core.config import Settings, get_settings

# One task for every job kind (app.jobs.kinds): a new kind needs no new Celery task.
TASK_NAME = "crowdqrels.job"


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


@celery_app.task(name=TASK_NAME)
def run_job(kind: str, job_id: int) -> str:
    from app.jobs.kinds import get_kind

    # The worker's own settings name the database: the API and the workers share it.
    return get_kind(kind).run(get_settings().database_url, job_id)


def run_worker(*, concurrency: int = 1, queues: str | None = None) -> None:
    celery_app.worker_main(
        ["worker", "--loglevel=INFO", f"--concurrency={concurrency}",
         f"--queues={queues or get_settings().celery_queue}", "--without-gossip",
         "--without-mingle"]
    )


def serve_metrics(settings: Settings) -> None:
    """With CROWDQRELS_WORKER_METRICS_PORT, serve the worker's processes' metrics (its pool's
    jobs: durations, failures) over HTTP for Prometheus (multiprocess mode: `crowdqrels worker`
    set the directory)."""
    if not settings.worker_metrics_port or not settings.metrics_dir:
        return
    from prometheus_client import start_http_server

    from app.core.metrics import multiprocess_registry

    start_http_server(settings.worker_metrics_port,
                      registry=multiprocess_registry(settings.metrics_dir))
