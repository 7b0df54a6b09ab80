"""A feature build cancelled while it runs ends 'cancelled' and stores no features, on SQLite
and PostgreSQL: the job's body runs for real (app.features.job) and the cancel comes through
the API (DELETE /feature-builds/{id}) at a chosen point of it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from sqlalchemy import func, select

from app.core.db import get_sessionmaker
from app.features.job import DEFAULT_BUILD, _build
from app.features.tables import FeatureBuild, TaskFeatures
from app.jobs.lifecycle import JobContext, run_tracked
from tests.api.corpus.test_corpus import setup_collection, upload_texts
from tests.api.helpers import API


def queued_build(database_url: str, collection_id: int) -> int:
    """A build row as POST .../features/build stores it, not handed to a runner: the test
    runs its body itself."""
    with get_sessionmaker(database_url)() as session:
        build = FeatureBuild(collection_id=collection_id, status="queued", progress=0.0,
                             progress_message="queued",
                             params={**DEFAULT_BUILD, "lexical": True, "ranking": False})
        session.add(build)
        session.commit()
        return build.id


def run_with_cancel(client, database_url: str,
                    body: Callable[[JobContext, Callable[[], None]], dict[str, Any]]
                    ) -> tuple[str, dict[str, Any]]:
    setup_collection(client)
    upload_texts(client)
    collection_id = client.get(f"{API}/collections/c").json()["id"]
    build_id = queued_build(database_url, collection_id)

    def cancel() -> None:
        response = client.delete(f"{API}/feature-builds/{build_id}")
        assert response.status_code == 200, response.text
        assert response.json()["status"] == "cancelled"

    status = run_tracked(database_url, FeatureBuild, build_id, lambda ctx: body(ctx, cancel))
    with get_sessionmaker(database_url)() as session:
        stored = session.scalar(select(func.count()).select_from(TaskFeatures))
    assert stored == 0
    assert client.get(f"{API}/collections/c/features").json()["code"] == "no_features"
    return status, client.get(f"{API}/feature-builds/{build_id}").json()


def test_cancelled_while_building_stops_at_the_next_progress_report(client,
                                                                    database_url) -> None:
    def body(context: JobContext, cancel: Callable[[], None]) -> dict[str, Any]:
        assert context.job.status == "running"
        cancel()
        return _build(context)  # its first progress report sees the cancel

    status, build = run_with_cancel(client, database_url, body)
    assert status == "cancelled"
    assert build["status"] == "cancelled" and build["started_at"] is not None
    assert build["report"] is None


def test_cancelled_after_storing_drops_the_features(client, database_url) -> None:
    """The cancel arrives once the features are written, before the build is marked
    succeeded: the features were never committed and go with the cancel."""
    if database_url.startswith("sqlite"):
        pytest.skip("SQLite has one writer: the DELETE would wait for the build's transaction "
                    "to end, so it cannot come between storing and 'succeeded'")

    def body(context: JobContext, cancel: Callable[[], None]) -> dict[str, Any]:
        result = _build(context)
        assert context.session.scalar(select(func.count()).select_from(TaskFeatures)) == 6
        cancel()
        return result

    status, build = run_with_cancel(client, database_url, body)
    assert status == "cancelled"
    assert build["status"] == "cancelled" and build["report"] is None


def test_a_build_left_alone_stores_its_features(client, database_url) -> None:
    setup_collection(client)
    upload_texts(client)
    collection_id = client.get(f"{API}/collections/c").json()["id"]
    build_id = queued_build(database_url, collection_id)
    assert run_tracked(database_url, FeatureBuild, build_id, _build) == "succeeded"
    assert client.get(f"{API}/collections/c/features").json()["tasks"] == 6
    assert client.get(f"{API}/feature-builds/{build_id}").json()["report"]["tasks"] == 6
