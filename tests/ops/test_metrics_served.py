"""/metrics of `crowdqrels serve`: multiprocess mode, so a fit's child process and several API
processes (--workers) add up in one exposition (servers started as tests/jobs/test_serve_workers.py
does)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from tests.conftest import clean_tables
from tests.jobs.test_process_isolation import ROOT, _free_port
from tests.ops.test_metrics import JUDGMENTS, sample


@contextmanager
def served(env: dict[str, str], *args: str) -> Iterator[httpx.Client]:
    port = _free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "app.cli", "serve", "--port", str(port), "--log-level", "warning",
         *args], cwd=ROOT, env={**os.environ, "CROWDQRELS_WARM_STARTUP_S": "0", **env})
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30) as client:
            for _ in range(600):
                try:
                    if client.get("/healthz").status_code == 200:
                        break
                except httpx.HTTPError:
                    time.sleep(0.1)
            yield client
    finally:
        server.terminate()
        server.wait(timeout=30)


# On PostgreSQL only: what this adds (a live server, the fit's own process writing to the shared
# metrics folder) does not depend on the database; both databases' ingestion counts are checked
# in-process by tests/ops/test_metrics.py.
@pytest.mark.slow
@pytest.mark.parametrize("database_url", [pytest.param("postgres", marks=pytest.mark.postgres)],
                         indirect=True)
def test_a_fit_in_its_own_process_is_counted(database_url: str, tmp_path: Path) -> None:
    """Real requests and a real fit (the in-process runner's child process) on a live server."""
    env = {"CROWDQRELS_DATABASE_URL": database_url,
           "CROWDQRELS_METRICS_DIR": str(tmp_path / "metrics")}
    (tmp_path / "metrics").mkdir()
    (tmp_path / "metrics" / "counter_1.db").write_bytes(b"stale")  # emptied at start
    with served(env) as client:
        api = "/api/v1/collections"
        client.post(api, json={"name": "m", "labels": [0, 1]}).raise_for_status()
        client.post(f"{api}/m/judgments/file", content=JUDGMENTS.encode(),
                    headers={"content-type": "text/tab-separated-values"}).raise_for_status()
        job = client.post(f"{api}/m/aggregations", json={"method": "mv"}).json()["id"]
        deadline = time.monotonic() + 120
        while (status := client.get(f"/api/v1/aggregations/{job}").json()["status"]) in (
                "queued", "running"):
            assert time.monotonic() < deadline
            time.sleep(0.2)
        assert status == "succeeded"
        time.sleep(0.5)  # the job's process writes its samples before it exits
        body = client.get("/metrics").text
    assert sample(body, "crowdqrels_job_duration_seconds_count", kind="fit", method="mv",
                  status="succeeded") == 1
    assert sample(body, "crowdqrels_jobs", kind="fit", status="succeeded") == 1
    assert sample(body, "crowdqrels_judgments_ingested_total", source="file") == 36
    assert sample(body, "crowdqrels_http_request_duration_seconds_count",
                  route="/api/v1/collections/{c}/aggregations", method="POST",
                  status="202") == 1
    assert sample(body, "crowdqrels_jobs_failed_total", kind="fit", method="mv") == 0
    assert not (tmp_path / "metrics" / "counter_1.db").exists()


@pytest.mark.slow
@pytest.mark.postgres
def test_two_api_processes_add_up(postgres_url: str, tmp_path: Path) -> None:
    clean_tables(postgres_url)
    metrics = tmp_path / "metrics"
    env = {"CROWDQRELS_DATABASE_URL": postgres_url, "CROWDQRELS_JOBS": "celery",
           "CROWDQRELS_METRICS_DIR": str(metrics)}
    with served(env, "--workers", "2") as client:
        base = str(client.base_url)
        sent = 0

        def answering() -> set[str]:  # the processes that have timed a request
            return {p.name for p in metrics.glob("histogram_*.db")}

        while sent < 400 and (sent < 20 or len(answering()) < 2):
            with httpx.Client(base_url=base, timeout=30) as fresh:  # a new connection each
                assert fresh.get("/api/v1/collections").status_code == 200
            sent += 1
        assert len(answering()) >= 2, "every request went to one process"
        body = client.get("/metrics").text
    assert sample(body, "crowdqrels_http_request_duration_seconds_count",
                  route="/api/v1/collections", method="GET", status="200") == sent
