"""Times the database fills in (a collection's created_at, a judgment's received_at, an audit
event's at, ...) keep their fraction of a second on SQLite as on PostgreSQL (SQLite's
CURRENT_TIMESTAMP, the columns' server default, has whole seconds)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import DateTime

import app.tables  # noqa: F401  (every table on Base.metadata)
from app.core.config import Settings
from app.core.db import Base
from app.main import create_app
from tests.api.helpers import API, RF10_COLLECTION
from tests.api.jobs import wait_for
from tests.auth.conftest import bearer, make_key


@pytest.fixture
def admin(database_url: str) -> Iterator[TestClient]:
    settings = Settings(database_url=database_url, environment="test", auth="required",
                        warm_startup_s=0)
    with TestClient(create_app(settings)) as client:
        client.headers.update(bearer(make_key(database_url, "admin", "admin")))
        yield client


def _time(value: str) -> datetime:
    return datetime.fromisoformat(value)


def test_times_the_database_fills_in_keep_microseconds(admin) -> None:
    client = admin
    before = datetime.now(UTC)
    collection = client.post(f"{API}/collections", json=RF10_COLLECTION).json()
    judgments = [{"topic": "t", "doc": f"d{i}", "annotator": "a", "label": i % 2}
                 for i in range(3)]
    assert client.post(f"{API}/collections/rf10/judgments",
                       json={"judgments": judgments}).status_code == 201
    fit = client.post(f"{API}/collections/rf10/aggregations", json={"method": "mv"}).json()
    key = client.post(f"{API}/keys", json={"name": "reader", "scope": "read"}).json()
    run = client.put(f"{API}/collections/rf10/runs/r", content=b"t Q0 d1 1 2.5 r\n",
                     headers={"content-type": "text/plain"}).json()
    assert client.put(f"{API}/collections/rf10/features", content=b"topic\tdoc\tf1\nt\td0\t1\n",
                      headers={"content-type": "text/tab-separated-values"}).status_code == 200
    features = client.get(f"{API}/collections/rf10/features").json()
    after = datetime.now(UTC)
    received = [j["received_at"] for j in client.get(f"{API}/collections/rf10/judgments")
                .json()["data"]]
    events = client.get(f"{API}/audit").json()["data"]
    times = {
        "collections.created_at": collection["created_at"],
        "jobs.created_at": fit["created_at"],
        "api_keys.created_at": key["created_at"],
        "runs.uploaded_at": run["uploaded_at"],
        "task_feature_sets.updated_at": features["updated_at"],
        **{f"judgments.received_at[{i}]": t for i, t in enumerate(received)},
        **{f"audit_events.at[{e['action']}]": e["at"] for e in events},
    }
    assert len(events) >= 3 and len(received) == 3
    # Whole seconds would fall before `before` (but for 1 in a million runs).
    wrong = {name: t for name, t in times.items() if not before <= _time(t) <= after}
    assert not wrong, (before, after, wrong)
    assert len(set(received)) == 1  # one request, one time, as PostgreSQL's now()
    # `since` is inclusive: an event is found from its own time (SQLite compared the stored
    # "12:00:01" with "12:00:01.000000" as text and left it out).
    since = events[-1]["at"]
    found = client.get(f"{API}/audit", params={"since": since}).json()["data"]
    assert events[-1]["id"] in [e["id"] for e in found]
    assert wait_for(client, fit["id"])["status"] == "succeeded"


def test_every_time_the_database_fills_in_is_set_by_the_service() -> None:
    """The columns of the test above and every other: a time left to the server default would
    have whole seconds on SQLite."""
    left = [f"{table.name}.{column.name}" for table in Base.metadata.sorted_tables
            for column in table.columns
            if isinstance(column.type, DateTime) and column.server_default is not None
            and column.default is None]
    assert left == []
