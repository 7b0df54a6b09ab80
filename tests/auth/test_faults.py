"""Faults with real processes: a fit's process killed (inline child, Celery worker), the API
killed during an upload. A dead job is failed within a bound; nothing half-stored remains."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import func, select

from app.aggregations.tables import Aggregation
from app.core.config import Settings
from app.core.db import get_sessionmaker
from app.jobs.maintenance import fail_stale_jobs
from app.judgments.tables import Batch, Judgment
from app.main import create_app
from models.synthetic import generate
from tests.api.helpers import API, TSV, create_collection
from tests.api.jobs import wait_for
from tests.auth.test_idempotency import start_server
from tests.conftest import BROKER_URL, clean_tables


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("faults")
    generate(300, 30, noise_level=(2.0, 4.0), redundancy=5, random_state=3).write(directory)
    return directory


def _ingest(client: TestClient, directory: Path) -> None:
    create_collection(client, name="synth", labels=[0, 1], relevant_from=1, ignore=[])
    response = client.post(f"{API}/collections/synth/judgments/file",
                           content=(directory / "judgments.tsv").read_bytes(), headers=TSV)
    assert response.status_code == 201, response.text


def _wait_running(client: TestClient, fit_id: int, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while client.get(f"{API}/aggregations/{fit_id}").json()["status"] != "running":
        assert time.monotonic() < deadline, "the fit never started"
        time.sleep(0.1)


SLOW_FIT = {"method": "mace", "params": {"n_restarts": 1000, "n_iter": 100_000}}


def _killed_fit_then_recovery(client: TestClient, kill, *, new_worker=None) -> str:
    """A succeeded fit, a slow one killed while running, then a new fit: returns the error."""
    first = client.post(f"{API}/collections/synth/aggregations", json={"method": "mv"}).json()
    assert wait_for(client, first["id"])["status"] == "succeeded"
    qrels_before = client.get(f"{API}/aggregations/{first['id']}/qrels").text

    slow = client.post(f"{API}/collections/synth/aggregations", json=SLOW_FIT).json()
    _wait_running(client, slow["id"])
    kill(slow["id"])
    failed = wait_for(client, slow["id"], timeout=60)
    assert failed["status"] == "failed"

    if new_worker is not None:
        new_worker()
    again = client.post(f"{API}/collections/synth/aggregations", json={"method": "ds"}).json()
    assert wait_for(client, again["id"])["status"] == "succeeded"
    assert client.get(f"{API}/aggregations/{first['id']}/qrels").text == qrels_before
    return str(failed["error"])


def test_kill_9_of_the_inline_child(sqlite_url, synthetic) -> None:
    clean_tables(sqlite_url)
    with TestClient(create_app(Settings(database_url=sqlite_url, environment="test"))) as client:
        _ingest(client, synthetic)
        runner = client.app.state.runner  # type: ignore[attr-defined]

        def kill(fit_id: int) -> None:
            process = runner._running[("fit", fit_id)]
            os.kill(process.pid, signal.SIGKILL)

        error = _killed_fit_then_recovery(client, kill)
    assert "died" in error and "-9" in error


def _start_worker(database_url: str, queue: str) -> subprocess.Popen[bytes]:
    # Its own process group: kill -9 of the group is the worker and its pool dying at once.
    env = {**os.environ, "CROWDQRELS_DATABASE_URL": database_url,
           "CROWDQRELS_BROKER_URL": BROKER_URL, "CROWDQRELS_CELERY_QUEUE": queue,
           "CROWDQRELS_JOB_HEARTBEAT_S": "0.5", "TF_CPP_MIN_LOG_LEVEL": "2"}
    return subprocess.Popen([sys.executable, "-m", "app.cli", "worker", "--concurrency", "1"],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)


@pytest.mark.postgres
@pytest.mark.redis
def test_kill_9_of_a_celery_worker(postgres_url, synthetic) -> None:
    clean_tables(postgres_url)
    queue = f"crowdqrels-faults-{uuid.uuid4().hex[:8]}"
    workers = [_start_worker(postgres_url, queue)]
    settings = Settings(database_url=postgres_url, environment="test", jobs="celery",
                        broker_url=BROKER_URL, celery_queue=queue, job_heartbeat_s=0.5,
                        job_stale_after_s=3, job_check_s=0.5)
    try:
        with TestClient(create_app(settings)) as client:
            _ingest(client, synthetic)

            def kill(fit_id: int) -> None:
                os.killpg(workers[0].pid, signal.SIGKILL)
                workers[0].wait(timeout=10)

            error = _killed_fit_then_recovery(
                client, kill, new_worker=lambda: workers.append(_start_worker(postgres_url,
                                                                              queue)))
        assert "no heartbeat for over 3 s" in error
    finally:
        for worker in workers:
            if worker.poll() is None:
                os.killpg(worker.pid, signal.SIGKILL)
                worker.wait(timeout=10)


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_stale_heartbeats_fail_running_jobs_only(database_url) -> None:
    now = datetime.now(UTC)
    with get_sessionmaker(database_url)() as session:
        from app.collections.tables import Collection

        collection = Collection(name="c", labels=[0, 1], relevant_from=1, ignore=[])
        session.add(collection)
        session.flush()

        def job(status: str, heartbeat_s_ago: float | None, started_s_ago: float) -> Aggregation:
            row = Aggregation(
                collection_id=collection.id, method="mv", params={}, graded=False,
                status=status, progress=0.0, watermark=0, started_at=now - timedelta(
                    seconds=started_s_ago),
                heartbeat_at=None if heartbeat_s_ago is None else now - timedelta(
                    seconds=heartbeat_s_ago))
            session.add(row)
            return row

        rows = [job("running", 120, 300), job("running", 5, 300), job("running", None, 120),
                job("running", None, 5), job("succeeded", 500, 600), job("queued", None, 0)]
        session.commit()
        assert fail_stale_jobs(session, stale_after_s=60) == 2
        session.expire_all()
        statuses = [session.get(Aggregation, r.id).status for r in rows]  # type: ignore[union-attr]
        assert statuses == ["failed", "running", "failed", "running", "succeeded", "queued"]
        assert "no heartbeat" in (session.get(Aggregation, rows[0].id).error or "")


def _counts(url: str) -> tuple[int, int]:
    with get_sessionmaker(url)() as session:
        return (session.scalar(select(func.count()).select_from(Judgment)) or 0,
                session.scalar(select(func.count()).select_from(Batch)) or 0)


@pytest.mark.postgres
def test_api_killed_during_an_upload_stores_nothing(postgres_url, rf10_bytes) -> None:
    clean_tables(postgres_url)
    server, base = start_server(postgres_url)
    try:
        import httpx

        assert httpx.post(f"{base}{API}/collections", json={
            "name": "rf10", "labels": [0, 1, 2], "relevant_from": 1, "ignore": [-2]}
        ).status_code == 201
        host, port = base.removeprefix("http://").split(":")
        # Half of the RF10 file sent, then the API process is killed mid-request.
        with socket.create_connection((host, int(port))) as sock:
            sock.sendall(
                f"POST {API}/collections/rf10/judgments/file HTTP/1.1\r\nHost: {host}\r\n"
                f"Content-Type: text/tab-separated-values\r\n"
                f"Content-Length: {len(rf10_bytes)}\r\n\r\n".encode()
                + rf10_bytes[: len(rf10_bytes) // 2])
            time.sleep(0.5)
            server.send_signal(signal.SIGKILL)
            server.wait(timeout=10)
    finally:
        if server.poll() is None:
            server.kill()
    assert _counts(postgres_url) == (0, 0)

    # The whole file sent, killed while it is being stored: all of it or nothing, never part.
    server, base = start_server(postgres_url)
    try:
        with socket.create_connection((host, int(base.rsplit(":", 1)[1]))) as sock:
            sock.sendall(
                f"POST {API}/collections/rf10/judgments/file HTTP/1.1\r\nHost: {host}\r\n"
                f"Content-Type: text/tab-separated-values\r\n"
                f"Content-Length: {len(rf10_bytes)}\r\n\r\n".encode() + rf10_bytes)
            time.sleep(0.3)
            server.send_signal(signal.SIGKILL)
            server.wait(timeout=10)
    finally:
        if server.poll() is None:
            server.kill()
    judgments, batches = _counts(postgres_url)
    assert (judgments, batches) in {(0, 0), (rf10_bytes.count(b"\n") - 1, 1)}
