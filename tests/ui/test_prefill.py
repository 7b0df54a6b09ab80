"""The dashboard prefill: tallies and fit pages built off the request path, equal to what a page
would build itself, and never built twice at once."""

from __future__ import annotations

import re
import threading
import time
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from app.aggregations.listing import ListingCache
from app.collections import service as collections_service
from app.collections.service import tally_key
from app.collections.tables import Collection
from app.core.db import get_sessionmaker
from app.main import create_app
from app.sampling import estimates as sampling_estimates
from app.sampling.inputs import NextInputs
from app.ui.prefill import page_key
from models.synthetic import generate
from tests.api.helpers import API
from tests.api.sampling.test_sampling import judge
from tests.api.sampling.test_sampling import setup_collection as sampling_collection
from tests.ui.test_pages import seed


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("synth-warm")
    generate(120, 30, redundancy=3, random_state=11).write(directory)
    return directory


@pytest.fixture
def warm_settings(settings):  # type: ignore[no-untyped-def]
    """The served default: start-up builds routes and caches before serving (the suite's other
    applications serve at once)."""
    return settings.model_copy(update={"warm_startup_s": 10.0})


def recount(database_url: str, name: str) -> dict:
    """The collection's distributions counted from scratch (no cache)."""
    with get_sessionmaker(database_url)() as session:
        collection = session.query(Collection).filter_by(name=name).one()
        stats = collections_service.collection_stats(session, collection=collection)
        return {"per_task": stats.judgments_per_task, "per_annotator":
                stats.judgments_per_annotator, "labels": stats.label_distribution,
                "id": collection.id}


def test_ingestion_moves_the_tally_forward_off_the_request_path(client, settings,
                                                                synthetic) -> None:
    seed(client, synthetic, fit=False)
    app = client.app
    assert app.state.prefill.wait_idle(30)
    truth = recount(settings.database_url, "crowd")
    cache = app.state.listing_cache
    assert cache.memoized(tally_key(truth["id"]))
    tally = cache.memo(tally_key(truth["id"]), lambda: pytest.fail("not warmed"))
    assert sum(tally.per_task.values()) == 360

    # More judgments through the JSON API: the warmed tally follows them.
    r = client.post(f"{API}/collections/crowd/judgments", json={"judgments": [
        {"topic": "t-new", "doc": f"d{i}", "annotator": "late", "label": i % 2}
        for i in range(7)]})
    assert r.status_code == 201, r.text
    assert app.state.prefill.wait_idle(30)
    assert sum(tally.per_task.values()) == 367
    truth = recount(settings.database_url, "crowd")
    with get_sessionmaker(settings.database_url)() as session:
        collection = session.get(Collection, truth["id"])
        warmed = collections_service.collection_stats(session, collection=collection, cache=cache)
    assert (warmed.judgments_per_task, warmed.judgments_per_annotator,
            warmed.label_distribution) == (truth["per_task"], truth["per_annotator"],
                                           truth["labels"])
    assert sum(truth["labels"].values()) == 367


def test_a_fresh_process_warms_recent_collections_and_fits(client, settings, warm_settings,
                                                           synthetic) -> None:
    a = seed(client, synthetic)
    cid = recount(settings.database_url, "crowd")["id"]
    # A second application on the same database: a restarted process.
    with TestClient(create_app(warm_settings)) as fresh:
        # Serving starts once the start-up warm-up is done (CROWDQRELS_WARM_STARTUP_S).
        cache = fresh.app.state.listing_cache
        assert cache.memoized(tally_key(cid))
        assert cache.memoized(page_key(a))
        page = fresh.get(f"/ui/aggregations/{a}")
        assert page.status_code == 200 and "Competence" in page.text
    # And the collection page asks for its latest succeeded fits.
    with TestClient(create_app(settings)) as other:
        warmer = other.app.state.prefill
        assert warmer.wait_idle(60)
        other.app.state.listing_cache = cache_ = ListingCache()
        warmer.cache = cache_
        assert other.get("/ui/collections/crowd").status_code == 200
        assert warmer.wait_idle(60)
        assert cache_.memoized(page_key(a))


def test_a_fresh_process_warms_recent_samplings(client, settings, warm_settings,
                                                monkeypatch) -> None:
    """A sampling's estimates (pools, crowd labels, Horvitz–Thompson) are built at start-up and
    when its collection's page is shown: the person's first request of its page builds none."""
    sampling_collection(client)
    sid = client.post(f"{API}/collections/pool/samplings", json={
        "runs": None, "budget_per_round": 6, "seed": 1, "strategy": "active"}).json()["id"]
    drawn = client.post(f"{API}/samplings/{sid}/rounds").json()
    judge(client, drawn["pairs"])
    expected = client.get(f"{API}/samplings/{sid}/estimates").json()

    built: list[int] = []
    real = sampling_estimates._estimates

    def counting(*args, **kwargs):  # type: ignore[no-untyped-def]
        built.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(sampling_estimates, "_estimates", counting)
    with TestClient(create_app(warm_settings)) as fresh:  # a restarted process
        assert len(built) == 1  # at start-up, before serving
        page = fresh.get(f"/ui/samplings/{sid}")
        assert page.status_code == 200 and "Horvitz" in page.text
        assert fresh.get(f"{API}/samplings/{sid}/estimates").json() == expected
        assert len(built) == 1

    # The collection page asks for its latest samplings (a process whose caches were emptied).
    with TestClient(create_app(settings)) as other:
        warmer = other.app.state.prefill
        assert warmer.wait_idle(60)
        other.app.state.next_inputs = warmer.inputs = NextInputs()
        built.clear()
        assert other.get("/ui/collections/pool").status_code == 200
        assert warmer.wait_idle(60)
        assert len(built) == 1
        assert other.get(f"/ui/samplings/{sid}").status_code == 200
        assert len(built) == 1

        # New judgments change the estimates: the page builds them again, once.
        judge(other, drawn["pairs"], annotators=("w4",))
        assert other.get(f"/ui/samplings/{sid}").status_code == 200
        assert len(built) == 2


def test_an_upload_through_the_form_warms_too(client, settings, synthetic) -> None:
    seed(client, synthetic, fit=False)
    client.app.state.prefill.wait_idle(30)
    cid = recount(settings.database_url, "crowd")["id"]
    cache = client.app.state.listing_cache
    tally = cache.memo(tally_key(cid), lambda: pytest.fail("not warmed"))
    before = tally.latest
    page = client.get("/ui/collections/crowd")
    csrf = re.search(r'name="csrf_token" value="([^"]+)"', page.text).group(1)
    r = client.post("/ui/collections/crowd/judgments", data={"csrf_token": csrf},
                    files={"file": ("more.tsv", b"topic\tdoc\tannotator\tlabel\n"
                                                b"t9\td9\tw9\t1\n", "text/tab-separated-values")},
                    follow_redirects=False)
    assert r.status_code == 303, r.text
    assert client.app.state.prefill.wait_idle(30)
    assert tally.latest > before and tally.per_annotator and sum(tally.labels.values()) == 361


def test_memo_builds_once_when_two_threads_ask_at_once() -> None:
    cache = ListingCache()
    calls = []

    def compute() -> str:
        calls.append(1)
        time.sleep(0.2)
        return "built"

    results: list[str] = []
    threads = [threading.Thread(target=lambda: results.append(cache.memo(("k", 1), compute)))
               for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == ["built"] * 4 and len(calls) == 1

    def broken() -> str:
        raise RuntimeError("database away")

    with pytest.raises(RuntimeError):
        cache.memo(("k", 2), broken)
    assert not cache.memoized(("k", 2))
    assert cache.memo(("k", 2), lambda: "second try") == "second try"


def test_next_inputs_memo_builds_once_when_two_threads_ask_at_once() -> None:
    inputs = NextInputs()
    calls = []

    def compute() -> str:
        calls.append(1)
        time.sleep(0.2)
        return "estimates"

    results: list[str] = []
    threads = [threading.Thread(target=lambda: results.append(
        inputs.memo("estimates", (1, 2), compute))) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == ["estimates"] * 4 and len(calls) == 1
    assert inputs.memo("labels", (1, 2), lambda: "other kind") == "other kind"

    def broken() -> str:
        raise RuntimeError("database away")

    with pytest.raises(RuntimeError):
        inputs.memo("estimates", (3,), broken)
    assert inputs.kept("estimates", (3,)) is None
    assert inputs.memo("estimates", (3,), lambda: "second try") == "second try"


def test_a_stopped_warmer_takes_no_more_work(settings) -> None:
    with TestClient(create_app(settings)) as c:
        warmer = c.app.state.prefill
    assert c.app.state.prefill is None
    warmer.collection(1)
    assert warmer.wait_idle(1) and not warmer._pending


def test_routes_are_built_before_the_first_request(warm_settings, monkeypatch) -> None:
    """FastAPI builds an included router's routes when a request first walks past them; the
    lifespan does it at start-up, so a first dashboard request builds nothing."""
    import fastapi.routing as routing

    calls: list[int] = []
    real = routing.get_dependant

    def counting(*args, **kwargs):  # type: ignore[no-untyped-def]
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(routing, "get_dependant", counting)
    with TestClient(create_app(warm_settings)) as c:
        built = len(calls)
        assert built > 50  # every endpoint of the API and the dashboard
        assert c.get("/").status_code == 200
        assert c.get("/api/v1/collections").status_code == 200
        assert len(calls) == built


def test_long_lived_caches_leave_the_garbage_collectors_full_passes(settings) -> None:
    """settle(): what start-up and the caches built is frozen (a full collection no longer walks
    it under load); the application's end hands it back, so nothing stays frozen after it."""
    import gc

    with TestClient(create_app(settings)) as c:
        assert gc.get_freeze_count() > 0

        def collected() -> set[int]:  # gc.get_objects() leaves out the frozen generation
            return {id(o) for o in gc.get_objects()}

        fresh = [[i] for i in range(3)]
        assert {id(x) for x in fresh} <= collected()  # the check can tell a list not frozen
        cache = c.app.state.listing_cache
        value = cache.memo(("test", 1), lambda: [[i] for i in range(5000)])  # lists: GC-tracked
        assert not {id(value), *(id(x) for x in value)} & collected()
        # (Counting gc.get_freeze_count() before and after would not do: frozen objects that
        # start-up left behind are freed by reference counting meanwhile, so the count can grow
        # by less than what was frozen.)
    assert gc.get_freeze_count() == 0
