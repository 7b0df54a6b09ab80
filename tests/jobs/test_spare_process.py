"""The in-process runner's spare: once a job has run, the next job's child is started ahead and
takes its job on standard input; a dead spare is replaced by a fresh child, a cancel stops a job
that runs in the spare, and stopping the API ends the spare."""

from __future__ import annotations

import time

import pytest
from fastapi.testclient import TestClient

from tests.api.helpers import API, create_collection
from tests.api.jobs import wait_for


def _client(database_url: str, **overrides):  # type: ignore[no-untyped-def]
    from app.core.config import Settings
    from app.main import create_app

    settings = Settings(database_url=database_url, environment="test", warm_startup_s=0,
                        **overrides)
    return TestClient(create_app(settings))


def _fit(client: TestClient, **body) -> dict:  # type: ignore[no-untyped-def]
    created = client.post(f"{API}/collections/s/aggregations", json={"method": "ds", **body})
    assert created.status_code == 202, created.text
    return wait_for(client, created.json()["id"], timeout=120)


def _judged(client: TestClient) -> None:
    create_collection(client, name="s")
    rows = [{"topic": "t", "doc": f"d{i}", "annotator": f"w{j}", "label": (i + j) % 2}
            for i in range(40) for j in range(3)]
    assert client.post(f"{API}/collections/s/judgments",
                       json={"judgments": rows}).status_code == 201


def _spare(client: TestClient, timeout: float = 60):  # type: ignore[no-untyped-def]
    """The runner's spare: started when the last job was dispatched (it may still be importing:
    a job written to its standard input waits in the pipe)."""
    runner = client.app.state.runner  # type: ignore[attr-defined]
    deadline = time.monotonic() + timeout
    while runner._spare is None:
        assert time.monotonic() < deadline, "no spare process"
        time.sleep(0.05)
    return runner._spare


def test_jobs_run_in_the_spare_started_ahead(database_url) -> None:
    with _client(database_url) as client:
        runner = client.app.state.runner  # type: ignore[attr-defined]
        _judged(client)
        assert runner._spare is None  # nothing started before a first job
        assert _fit(client)["status"] == "succeeded"  # a fresh child
        for _ in range(2):
            spare = _spare(client)
            done = _fit(client)
            assert done["status"] == "succeeded", done["error"]
            assert spare.wait(timeout=30) == 0  # it ran that job and ended
            assert runner._spare is not spare
        # a spare that died before its job: the job gets a fresh child
        dead = _spare(client)
        dead.kill()
        dead.wait()
        assert _fit(client)["status"] == "succeeded"
        last = _spare(client)
    assert last.wait(timeout=30) is not None  # stopping the API ended the spare


def test_a_cancel_stops_a_job_running_in_the_spare(database_url) -> None:
    with _client(database_url) as client:
        _judged(client)
        assert _fit(client)["status"] == "succeeded"
        spare = _spare(client)
        # MACE with many restarts runs long enough to be cancelled while it fits
        created = client.post(f"{API}/collections/s/aggregations", json={
            "method": "mace", "params": {"n_restarts": 1000, "n_iter": 100000, "tol": 0}})
        ident = created.json()["id"]
        deadline = time.monotonic() + 60
        while client.get(f"{API}/aggregations/{ident}").json()["status"] != "running":
            assert time.monotonic() < deadline
            time.sleep(0.05)
        assert client.delete(f"{API}/aggregations/{ident}").status_code == 200
        assert spare.wait(timeout=30) != 0  # terminated
        assert wait_for(client, ident)["status"] == "cancelled"


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_without_a_spare_each_job_starts_its_child(database_url) -> None:
    with _client(database_url, spare_job_process=False) as client:
        _judged(client)
        assert _fit(client)["status"] == "succeeded"
        assert _fit(client)["status"] == "succeeded"
        assert client.app.state.runner._spare is None  # type: ignore[attr-defined]
