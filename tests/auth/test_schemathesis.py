"""Fuzz every endpoint with Schemathesis (all checks) against a running API with auth required:
with an admin key, a read key and no key. No 5xx, no contract failure.

Bounded for CI: 3 examples per operation and phase with the admin key (the read key and no key:
the fuzzing phase, one example per operation; on SQLite the admin key alone, without the
coverage phase), a fixed seed (tests/auth/schemathesis.toml);
the path parameters point at a collection, a fit, a run, an annotator, an evaluation and a
sampling that exist, so the cases reach the services (with the evaluation and the sampling in
place, the TSV and trec_eval downloads of GET /evaluations/{e}/measures were found undocumented).
On both databases: a NUL character in a query filter was a 500 on PostgreSQL only.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from tests.api.helpers import API
from tests.auth.conftest import bearer, make_key
from tests.auth.test_idempotency import start_server

CONFIG = Path(__file__).with_name("schemathesis.toml")


def wait_succeeded(http: httpx.Client, url: str) -> None:
    for _ in range(600):
        status = http.get(url).json()["status"]
        if status not in ("queued", "running"):
            assert status == "succeeded", http.get(url).text
            return
        time.sleep(0.1)
    raise AssertionError(f"{url} still running")


@pytest.mark.slow
@pytest.mark.parametrize("database_url", ["sqlite", pytest.param(
    "postgres", marks=pytest.mark.postgres)], indirect=True)
def test_schemathesis_finds_nothing(database_url, tmp_path) -> None:
    executable = shutil.which("schemathesis", path=str(Path(sys.executable).parent))
    assert executable, "schemathesis is a dev dependency: pip install -e '.[dev]'"
    admin = make_key(database_url, "admin", "admin")
    reader = make_key(database_url, "reader", "read")
    server, base = start_server(database_url, CROWDQRELS_AUTH="required")
    try:
        with httpx.Client(base_url=base, headers=bearer(admin), timeout=60) as http:
            assert http.post(f"{API}/collections",
                             json={"name": "st", "labels": [0, 1]}).status_code == 201
            assert http.post(f"{API}/collections/st/judgments", json={"judgments": [
                {"topic": "t", "doc": "d1", "annotator": "w1", "label": 1},
                {"topic": "t", "doc": "d2", "annotator": "w2", "label": 0}]}).status_code == 201
            assert http.post(f"{API}/collections/st/aggregations",
                             json={"method": "mv"}).json()["id"] == 1
            wait_succeeded(http, f"{API}/aggregations/1")
            run = "".join(f"t Q0 d{i} {i} {10 - i} r1\n" for i in range(1, 6))
            assert http.put(f"{API}/collections/st/runs/r1", content=run).status_code in (200, 201)
            assert http.post(f"{API}/collections/st/evaluations", json={
                "aggregation": 1, "samples": 5, "seed": 1}).json()["id"] == 1
            wait_succeeded(http, f"{API}/evaluations/1")
            assert http.post(f"{API}/collections/st/samplings", json={
                "budget_per_round": 1, "seed": 1, "strategy": "active"}).json()["id"] == 1
        failures = []
        keys = [("admin", bearer(admin)), ("read", bearer(reader)), ("none", {})]
        sqlite = database_url.startswith("sqlite")
        if sqlite:
            # What differs with a read key or none is the scope check (a write 403, anything
            # without a key 401), not the database; a read key's reads are the admin key's
            # queries: on SQLite the admin key's cases alone.
            keys = keys[:1]
        for who, headers in keys:
            # The admin key's cases: every phase, three examples per operation and phase. The
            # read key's and no key's: the fuzzing phase alone, one example per operation. What
            # they add is the scope check (a write 403, anything without a key 401), which one
            # request per operation checks; the coverage phase's boundary values and unexpected
            # methods (2,300 cases a key, 3/4 of a key's CPU) test the values and the routing,
            # which the admin key's coverage phase tests on the same server.
            # On SQLite the admin key's cases skip the coverage phase too (22 CPU s): what it
            # adds there is the database under the same bounded values, checked before any query
            # (app/core/integers.py, app/api/nul.py). Both database-only 500s (an overflow past
            # 64 bits on SQLite, a NUL on PostgreSQL) came from runs with another seed: the
            # fuzzing phase's random cases, which stay.
            phases = ([] if who == "admin" else ["--phases", "fuzzing"]) if not sqlite else [
                "--phases", "examples,fuzzing,stateful"]
            examples = "3" if who == "admin" else "1"
            command = [executable, "--config-file", str(CONFIG), "run", f"{base}/openapi.json",
                       "--checks", "all", "--max-examples", examples, "--no-color", *phases]
            for name, value in headers.items():
                command += ["-H", f"{name}: {value}"]
            run = subprocess.run(command, capture_output=True, text=True, timeout=600,
                                 cwd=tmp_path)  # its cache stays out of the checkout
            if run.returncode != 0:
                failures.append(f"--- with {who} key:\n{run.stdout[-6000:]}\n{run.stderr[-2000:]}")
        assert not failures, "\n".join(failures)
    finally:
        server.terminate()
        server.wait(timeout=30)
