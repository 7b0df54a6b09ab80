"""The job starter (app/jobs/starter.py): every job of the in-process runner runs in a process
forked from one preloaded interpreter, shared by the applications of a process; a cancel stops
such a job, a dead starter is replaced, a job sees the environment of its submission, and with
``job_starter`` off each job gets a fresh interpreter."""

from __future__ import annotations

import os
import signal
import subprocess
import time

import pytest
from fastapi.testclient import TestClient

from app.jobs import starter as starter_module
from app.jobs.inline import child_environment
from app.jobs.starter import StartedJob, import_environment, starter_for
from tests.api.helpers import API, create_collection
from tests.api.jobs import wait_for

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="the starter forks")


def _client(database_url: str, **overrides):  # type: ignore[no-untyped-def]
    from app.core.config import Settings
    from app.main import create_app

    settings = Settings(database_url=database_url, environment="test", warm_startup_s=0,
                        **overrides)
    return TestClient(create_app(settings))


def _judged(client: TestClient, name: str = "s") -> None:
    create_collection(client, name=name)
    rows = [{"topic": "t", "doc": f"d{i}", "annotator": f"w{j}", "label": (i + j) % 2}
            for i in range(40) for j in range(3)]
    assert client.post(f"{API}/collections/{name}/judgments",
                       json={"judgments": rows}).status_code == 201


def _fit_process(client: TestClient, body: dict, name: str = "s"):  # type: ignore[no-untyped-def]
    """Submit a fit; return its id and, once it runs, the runner's handle on its process."""
    runner = client.app.state.runner  # type: ignore[attr-defined]
    created = client.post(f"{API}/collections/{name}/aggregations", json=body)
    assert created.status_code == 202, created.text
    ident = created.json()["id"]
    deadline = time.monotonic() + 300  # a GP fit waits for its starter's imports
    while ("fit", ident) not in runner._running:
        assert time.monotonic() < deadline, "the fit never started"
        if client.get(f"{API}/aggregations/{ident}").json()["status"] not in ("queued",
                                                                              "running"):
            return ident, None  # it ended before we looked
        time.sleep(0.01)
    return ident, runner._running.get(("fit", ident))


def _parent_of(pid: int) -> int:
    with open(f"/proc/{pid}/stat") as stat:
        return int(stat.read().rsplit(")", 1)[1].split()[1])


def test_jobs_fork_from_one_starter_shared_by_applications(database_url) -> None:
    seen = set()
    for name in ("a", "b"):  # two applications in turn, as a test suite or a restarted app has
        with _client(database_url) as client:
            _judged(client, name)
            for _ in range(2):
                ident, process = _fit_process(client, {"method": "ds"}, name)
                assert wait_for(client, ident)["status"] == "succeeded"
                if process is not None:
                    assert isinstance(process, StartedJob)
                    assert process.wait(timeout=30) == 0
            env = child_environment(client.app.state.runner.database_url)  # type: ignore
            seen.add(id(starter_for(env)))
    assert len(seen) == 1  # one starter served both applications' four jobs


def test_a_job_process_is_a_child_of_the_starter(database_url) -> None:
    with _client(database_url) as client:
        _judged(client)
        ident, process = _fit_process(client, {"method": "mace", "params": {
            "n_restarts": 1000, "n_iter": 100000, "tol": 0}})
        assert process is not None
        starter = starter_for(child_environment(client.app.state.runner.database_url))  # type: ignore
        assert _parent_of(process.pid) == starter._process.pid
        assert client.delete(f"{API}/aggregations/{ident}").status_code == 200
        assert process.wait(timeout=30) == -signal.SIGTERM  # a cancel terminates it at once
        assert wait_for(client, ident)["status"] == "cancelled"


def test_a_dead_starter_is_replaced(database_url) -> None:
    with _client(database_url) as client:
        _judged(client)
        ident, _ = _fit_process(client, {"method": "mv"})
        assert wait_for(client, ident)["status"] == "succeeded"
        env = child_environment(client.app.state.runner.database_url)  # type: ignore
        dead = starter_for(env)
        dead._process.kill()
        dead._process.wait()
        deadline = time.monotonic() + 10
        while dead.alive:
            assert time.monotonic() < deadline
            time.sleep(0.01)
        for _ in range(2):  # the first after the death, and the one after it
            ident, _ = _fit_process(client, {"method": "ds"})
            assert wait_for(client, ident)["status"] == "succeeded"
        assert starter_for(env) is not dead and starter_for(env).alive


def test_a_job_sees_the_environment_of_its_submission(tmp_path) -> None:
    """The environment travels with each job; a change the imports may have read starts a new
    starter, others do not."""
    env = {**os.environ, "CROWDQRELS_DATABASE_URL": f"sqlite:///{tmp_path}/x.db"}
    first = starter_for(env)
    assert starter_for({**env, "PYTEST_CURRENT_TEST": "another test"}) is first
    assert starter_for({**env, "CROWDQRELS_DATABASE_URL": "sqlite:///other.db"}) is first
    assert "CROWDQRELS_DATABASE_URL" not in import_environment(env)
    second = starter_for({**env, "OMP_NUM_THREADS": "1"})
    assert second is not first
    first._process.wait(timeout=30)  # the replaced starter ended: it had no job
    starter_for(env)  # and back, for the next tests


def test_a_job_of_an_unknown_kind_fails_in_its_process(tmp_path) -> None:
    """A job that raises exits non-zero and is reported ended, like a fresh interpreter's."""
    env = {**os.environ, "CROWDQRELS_DATABASE_URL": f"sqlite:///{tmp_path}/x.db"}
    job = starter_for(env).start("no-such-kind", 1, env)
    assert job.wait(timeout=30) == 1


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_without_the_starter_each_job_gets_a_fresh_interpreter(database_url) -> None:
    with _client(database_url, job_starter=False) as client:
        _judged(client)
        ident, process = _fit_process(client, {"method": "mace", "params": {
            "n_restarts": 1000, "n_iter": 100000, "tol": 0}})
        assert isinstance(process, subprocess.Popen)
        assert _parent_of(process.pid) == os.getpid()
        assert client.delete(f"{API}/aggregations/{ident}").status_code == 200
        assert wait_for(client, ident)["status"] == "cancelled"
        ident, _ = _fit_process(client, {"method": "ds"})
        assert wait_for(client, ident)["status"] == "succeeded"


def test_a_closed_starter_ends_after_its_jobs(tmp_path) -> None:
    env = {**os.environ, "CROWDQRELS_DATABASE_URL": f"sqlite:///{tmp_path}/x.db",
           "CROWDQRELS_STARTER_TEST": "closing"}
    starter = starter_module.Starter(env)
    job = starter.start("no-such-kind", 1, env)
    starter.close()
    assert job.wait(timeout=30) == 1
    assert starter._process.wait(timeout=30) == 0
    with pytest.raises(starter_module.StarterGone):
        starter.start("no-such-kind", 2, env)


def _maps_tensorflow(pid: int) -> bool:
    with open(f"/proc/{pid}/maps") as maps:
        return "libtensorflow" in maps.read()


def test_a_gp_fit_forks_from_the_starter_that_has_imported_tensorflow(database_url) -> None:
    """A GP fit's process is forked from a second starter, one that has imported TensorFlow and
    GPflow (so the job does not pay their import); other jobs keep the starter without them. (That
    a served API process never loads TensorFlow: tests/jobs/test_process_isolation.py.)"""
    with _client(database_url) as client:
        _judged(client)
        env = child_environment(client.app.state.runner.database_url)  # type: ignore
        ident, process = _fit_process(client, {"method": "ds"})
        assert wait_for(client, ident)["status"] == "succeeded"
        assert process is None or isinstance(process, StartedJob)
        plain = starter_for(env)
        assert not _maps_tensorflow(plain._process.pid)
        # A long LK fit, to find its process while it runs (a cancel ends it).
        ident, process = _fit_process(client, {"method": "lk", "params": {
            "n_iter": 10000, "tol": 0}})
        assert process is not None and isinstance(process, StartedJob)
        gp = starter_for(env, tensorflow=True)
        assert gp is not plain and _parent_of(process.pid) == gp._process.pid
        assert _maps_tensorflow(gp._process.pid)
        assert client.delete(f"{API}/aggregations/{ident}").status_code == 200
        assert process.wait(timeout=60) == -signal.SIGTERM
        ident, _ = _fit_process(client, {"method": "lk"})
        done = wait_for(client, ident)
        assert done["status"] == "succeeded", done


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_without_the_tensorflow_starter_a_gp_fit_forks_from_the_plain_one(database_url) -> None:
    with _client(database_url, job_starter_tensorflow=False) as client:
        _judged(client)
        env = child_environment(client.app.state.runner.database_url)  # type: ignore
        ident, process = _fit_process(client, {"method": "lk", "params": {
            "n_iter": 10000, "tol": 0}})
        assert process is not None and isinstance(process, StartedJob)
        assert _parent_of(process.pid) == starter_for(env)._process.pid
        assert client.delete(f"{API}/aggregations/{ident}").status_code == 200
        assert process.wait(timeout=60) == -signal.SIGTERM
