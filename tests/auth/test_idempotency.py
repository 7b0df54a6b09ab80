"""Idempotency-Key: retries return the first response and store nothing, even in flight."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta

import httpx
import pytest
from sqlalchemy import func, select, update

from app.auth.idempotency import REPLAYED_HEADER, purge_expired
from app.auth.tables import IdempotencyRecord
from app.core.db import get_sessionmaker
from app.judgments.tables import Batch, Judgment
from tests.api.helpers import API, TSV, counts, create_collection
from tests.api.jobs import wait_for
from tests.auth.conftest import bearer, make_key

ROWS = b"topic\tdoc\tannotator\tlabel\n1\td1\tw1\t1\n1\td2\tw2\t0\n"


def _judgments(n: int, tag: str) -> dict[str, list[dict[str, object]]]:
    return {"judgments": [{"topic": f"t{tag}", "doc": f"d{i}", "annotator": f"w{i % 50}",
                           "label": i % 2} for i in range(n)]}


def test_retries_store_nothing(client, database_url) -> None:
    create_collection(client, name="c", labels=[0, 1], ignore=[])
    key = {"Idempotency-Key": "batch-1"}
    first = client.post(f"{API}/collections/c/judgments", json=_judgments(5, "a"), headers=key)
    assert first.status_code == 201 and REPLAYED_HEADER not in first.headers
    again = client.post(f"{API}/collections/c/judgments", json=_judgments(5, "a"), headers=key)
    assert again.status_code == 201 and again.json() == first.json()
    assert again.headers[REPLAYED_HEADER] == "true"
    assert counts(client, "c")["judgments"] == 5

    other = client.post(f"{API}/collections/c/judgments", json=_judgments(6, "a"), headers=key)
    assert other.status_code == 422 and other.json()["code"] == "idempotency_key_reused"
    # The same key on another endpoint is another request too.
    elsewhere = client.post(f"{API}/collections/c/judgments/file", content=ROWS,
                            headers={**TSV, **key})
    assert elsewhere.status_code == 422

    file_key = {**TSV, "Idempotency-Key": "file-1"}
    one = client.post(f"{API}/collections/c/judgments/file", content=ROWS, headers=file_key)
    two = client.post(f"{API}/collections/c/judgments/file", content=ROWS, headers=file_key)
    assert one.status_code == two.status_code == 201 and one.json() == two.json()
    assert counts(client, "c")["judgments"] == 7

    # A request that fails leaves its key free: the corrected retry is stored.
    bad = client.post(f"{API}/collections/c/judgments", headers={"Idempotency-Key": "b2"},
                      json={"judgments": [{"topic": "1", "doc": "x", "annotator": "w",
                                           "label": 7}]})
    assert bad.status_code == 422 and bad.json()["code"] == "label_out_of_scale"
    fixed = client.post(f"{API}/collections/c/judgments", headers={"Idempotency-Key": "b2"},
                        json={"judgments": [{"topic": "1", "doc": "x", "annotator": "w",
                                             "label": 1}]})
    assert fixed.status_code == 201
    assert counts(client, "c")["judgments"] == 8

    gold_key = {"content-type": "text/plain", "Idempotency-Key": "gold-1"}
    gold = client.put(f"{API}/collections/c/gold", content=b"1 0 d1 1\n", headers=gold_key)
    assert gold.status_code == 200
    assert client.put(f"{API}/collections/c/gold", content=b"1 0 d1 1\n",
                      headers=gold_key).json() == gold.json()
    assert client.put(f"{API}/collections/c/gold?mode=merge", content=b"1 0 d1 1\n",
                      headers=gold_key).status_code == 422  # another query: another request

    fit_key = {"Idempotency-Key": "fit-1"}
    fit = client.post(f"{API}/collections/c/aggregations", json={"method": "mv"},
                      headers=fit_key)
    assert fit.status_code == 202
    retry = client.post(f"{API}/collections/c/aggregations", json={"method": "mv"},
                        headers=fit_key)
    assert retry.status_code == 202 and retry.json()["id"] == fit.json()["id"]
    assert client.get(f"{API}/collections/c/aggregations").json()["count"] == 1
    wait_for(client, fit.json()["id"])

    # Kept for the retention period, then purged: the key is free again.
    with get_sessionmaker(database_url)() as session:
        assert purge_expired(session, retention_h=24) == 0
        session.execute(update(IdempotencyRecord).values(
            created_at=datetime.now(UTC) - timedelta(hours=25)))
        session.commit()
        assert purge_expired(session, retention_h=24) == 5
    assert client.post(f"{API}/collections/c/judgments", json=_judgments(5, "a"),
                       headers=key).headers.get(REPLAYED_HEADER) is None


def test_retries_of_samplings_rounds_and_evaluations(client) -> None:
    """A sampling, a round and an evaluation started again with the same key are the first
    ones: no second sampling, no second round (the retry of a round is not refused as a draw
    before the last round was judged), no second evaluation job."""
    from tests.api.sampling.test_sampling import judge, setup_collection

    setup_collection(client)
    spec = {"budget_per_round": 4, "strategy": "active", "seed": 3}
    key = {"Idempotency-Key": "sampling-1"}
    created = client.post(f"{API}/collections/pool/samplings", json=spec, headers=key)
    again = client.post(f"{API}/collections/pool/samplings", json=spec, headers=key)
    assert created.status_code == again.status_code == 201
    assert again.json() == created.json() and again.headers[REPLAYED_HEADER] == "true"
    assert client.get(f"{API}/collections/pool/samplings").json()["count"] == 1
    other = client.post(f"{API}/collections/pool/samplings", json={**spec, "seed": 4},
                        headers=key)
    assert other.status_code == 422 and other.json()["code"] == "idempotency_key_reused"

    sid = created.json()["id"]
    rounds = f"{API}/samplings/{sid}/rounds"
    first = client.post(rounds, headers={"Idempotency-Key": "round-1"})
    retry = client.post(rounds, headers={"Idempotency-Key": "round-1"})
    assert first.status_code == retry.status_code == 201 and retry.json() == first.json()
    assert client.get(rounds).json()["count"] == 1
    # A new key is a new draw: refused (nothing judged yet), and the refusal keeps no key.
    refused = client.post(rounds, headers={"Idempotency-Key": "round-2"})
    assert refused.status_code == 409 and refused.json()["code"] == "round_not_judged"
    judge(client, first.json()["pairs"])
    second = client.post(rounds, headers={"Idempotency-Key": "round-2"})
    assert second.status_code == 201 and second.json()["number"] == 2
    forced = client.post(f"{rounds}?force=true", headers={"Idempotency-Key": "round-2"})
    assert forced.status_code == 422  # the same key with another query: another request
    assert client.get(rounds).json()["count"] == 2

    fit = client.post(f"{API}/collections/pool/aggregations", json={"method": "mv"}).json()
    wait_for(client, fit["id"])
    body = {"aggregation": fit["id"], "measures": ["P@5"], "samples": 10}
    evaluation = client.post(f"{API}/collections/pool/evaluations", json=body,
                             headers={"Idempotency-Key": "evaluation-1"})
    repeat = client.post(f"{API}/collections/pool/evaluations", json=body,
                         headers={"Idempotency-Key": "evaluation-1"})
    assert evaluation.status_code == repeat.status_code == 202
    assert repeat.json()["id"] == evaluation.json()["id"]
    assert client.get(f"{API}/collections/pool/evaluations").json()["count"] == 1


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_server(database_url: str, **env: str) -> tuple[subprocess.Popen[bytes], str]:
    port = _free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "uvicorn", "app.main:create_app", "--factory", "--host",
         "127.0.0.1", "--port", str(port), "--log-level", "warning"],
        env={**os.environ, "CROWDQRELS_DATABASE_URL": database_url,
             "CROWDQRELS_ENVIRONMENT": "test", **env})
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{base}/healthz", timeout=1).status_code == 200:
                return process, base
        except httpx.HTTPError:
            time.sleep(0.2)
    process.kill()
    raise AssertionError("the server did not start")


def _post_retrying(http: httpx.Client, url: str, **kwargs: object) -> httpx.Response:
    """POST, sent again with the same Idempotency-Key when the connection drops before an answer
    (as a client of the contract does: a kept-alive connection the server closes as the request
    leaves; seen once in 16 × 10 requests under a loaded full suite). A server that is down
    fails the test on the last try; what was stored is checked exactly once either way."""
    for attempt in range(3):
        try:
            return http.post(url, **kwargs)  # type: ignore[arg-type]
        except (httpx.RemoteProtocolError, httpx.ReadError):
            if attempt == 2:
                raise
    raise AssertionError("unreachable")


@pytest.mark.postgres
@pytest.mark.parametrize("database_url", ["postgres"], indirect=True)
def test_concurrent_duplicates_store_exactly_once(database_url) -> None:
    """8 clients × 5,000 judgments (5 batches of 1,000), every batch sent twice at once: 40
    batches in flight twice (each as large as before, so the two copies overlap as long)."""
    admin = make_key(database_url, "admin", "admin")
    ingest = make_key(database_url, "platform", "ingest")
    server, base = start_server(database_url, CROWDQRELS_AUTH="required")
    try:
        assert httpx.post(f"{base}{API}/collections", headers=bearer(admin),
                          json={"name": "crowd", "labels": [0, 1]}).status_code == 201

        def client(number: int) -> list[tuple[str, int, dict[str, object]]]:
            results = []
            with httpx.Client(base_url=base, timeout=120, headers=bearer(ingest)) as http:
                for batch in range(5):
                    key = f"client{number}-batch{batch}"
                    response = _post_retrying(http, f"{API}/collections/crowd/judgments",
                                              json=_judgments(1000, f"{number}-{batch}"),
                                              headers={"Idempotency-Key": key})
                    results.append((key, response.status_code, response.json()))
            return results

        # Each client runs twice at once: every batch is in flight twice.
        with ThreadPoolExecutor(16) as pool:
            runs = list(pool.map(client, [n for n in range(8) for _ in range(2)]))
    finally:
        server.terminate()
        server.wait(timeout=30)

    by_key: dict[str, list[dict[str, object]]] = {}
    for run in runs:
        for key, status, body in run:
            assert status == 201, body
            by_key.setdefault(key, []).append(body)
    assert len(by_key) == 40
    assert all(len(bodies) == 2 and bodies[0] == bodies[1] for bodies in by_key.values())
    with get_sessionmaker(database_url)() as session:
        assert session.scalar(select(func.count()).select_from(Judgment)) == 40_000
        assert session.scalar(select(func.count()).select_from(Batch)) == 40
        assert session.scalar(select(func.count()).select_from(IdempotencyRecord)) == 40


@pytest.mark.postgres
@pytest.mark.parametrize("database_url", ["postgres"], indirect=True)
def test_a_duplicate_blocked_longer_than_the_wait_gets_the_response(database_url,
                                                                     monkeypatch) -> None:
    """The duplicate's INSERT blocks while the first request's transaction runs (behind other
    writers of the collection under load, longer than WAIT_S); once the first request stores
    its response a moment after its data commit, the duplicate answers with it, not a 409."""
    from app.auth import idempotency

    monkeypatch.setattr(idempotency, "WAIT_S", 0.5)
    sessions = get_sessionmaker(database_url)
    started, release = threading.Event(), threading.Event()

    def first() -> object:
        with sessions() as session:
            def work() -> dict[str, int]:
                started.set()  # the claim is flushed: the duplicate's INSERT now blocks
                release.wait(10)
                session.commit()  # the data (and the claim) commit ...
                time.sleep(0.2)  # ... and the response is stored a moment later
                return {"stored": 1}
            key = idempotency.Idempotency(key="k", owner="o", method="POST", path="/p", query="")
            return key.run(session, body=b"x", status_code=201, work=work)

    def duplicate() -> object:
        started.wait(10)
        with sessions() as session:
            key = idempotency.Idempotency(key="k", owner="o", method="POST", path="/p", query="")
            return key.run(session, body=b"x", status_code=201, work=lambda: {"stored": 2})

    with ThreadPoolExecutor(2) as pool:
        one = pool.submit(first)
        two = pool.submit(duplicate)
        time.sleep(1.5)  # three times WAIT_S blocked on the INSERT
        release.set()
        assert one.result(30) == {"stored": 1}
        replayed = two.result(30)
    assert replayed.status_code == 201 and json.loads(replayed.body) == {"stored": 1}
    with sessions() as session:
        assert session.scalar(select(func.count()).select_from(IdempotencyRecord)) == 1
