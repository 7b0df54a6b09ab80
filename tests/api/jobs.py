"""Fixtures' helpers for aggregation tests: a Celery worker process, waiting for fits."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from typing import Any

from fastapi.testclient import TestClient

from tests.api.helpers import API

FINISHED = {"succeeded", "failed", "cancelled"}


def wait_for(client: TestClient, job_id: int, *, timeout: float = 300,
             kind: str = "aggregations") -> dict[str, Any]:
    """Poll /aggregations/{id} (or /feature-builds/{id}) until the job has finished."""
    deadline = time.monotonic() + timeout
    while True:
        body = client.get(f"{API}/{kind}/{job_id}").json()
        if body["status"] in FINISHED:
            return body  # type: ignore[no-any-return]
        if time.monotonic() > deadline:
            raise AssertionError(f"{kind} {job_id} still {body['status']}: {body}")
        time.sleep(0.2)


def start_celery_worker(*, database_url: str, broker_url: str,
                        queue: str) -> subprocess.Popen[bytes]:
    env = {**os.environ, "CROWDQRELS_DATABASE_URL": database_url,
           "CROWDQRELS_BROKER_URL": broker_url, "CROWDQRELS_CELERY_QUEUE": queue,
           "TF_CPP_MIN_LOG_LEVEL": "2"}
    return subprocess.Popen(
        [sys.executable, "-m", "app.cli", "worker", "--concurrency", "1"], env=env,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
