"""Topic and document texts, runs, and features built from them by a job."""

from __future__ import annotations

import pytest
from sqlalchemy import select

from app.core.db import get_sessionmaker
from app.judgments.tables import Topic
from tests.api.helpers import API, create_collection
from tests.api.jobs import wait_for

TOPICS = "id\ttext\nt1\tblack bear attacks\nt2\tsolar panel efficiency\n"
DOCS = {
    "d1": "a black bear attacks hikers near the camp; bear attacks are rare",
    "d2": "the bear market hit solar stocks",
    "d3": "solar panel efficiency reached a record for silicon panels",
    "d4": "cooking pasta with tomato sauce",
}
RUN_A = "t1 Q0 d1 1 9.5 runA\nt1 Q0 d2 2 3.1 runA\nt2 Q0 d3 1 7.0 runA\n"
RUN_B = "t1 Q0 d2 1 2.0 runB\nt2 Q0 d3 1 5.0 runB\nt2 Q0 d2 2 1.0 runB\n"


def setup_collection(client) -> None:
    create_collection(client, name="c", labels=[0, 1], relevant_from=1, ignore=[])
    judgments = [{"topic": t, "doc": d, "annotator": a, "label": y} for t, d, a, y in [
        ("t1", "d1", "a", 1), ("t1", "d2", "a", 0), ("t1", "d4", "b", 0),
        ("t2", "d3", "a", 1), ("t2", "d2", "b", 0), ("t2", "d4", "b", 0),
    ]]
    assert client.post(f"{API}/collections/c/judgments",
                       json={"judgments": judgments}).status_code == 201


def test_texts_runs_and_feature_build(jobs_client) -> None:
    client = jobs_client
    setup_collection(client)
    topics = client.put(f"{API}/collections/c/topics", content=TOPICS.encode(),
                        headers={"content-type": "text/tab-separated-values"})
    assert topics.status_code == 200, topics.text
    assert topics.json() == {"texts": 2, "new": 0}
    docs = client.put(f"{API}/collections/c/documents",
                      json=[{"id": k, "text": v} for k, v in DOCS.items()])
    assert docs.status_code == 200, docs.text
    assert docs.json() == {"texts": 4, "new": 0}
    for name, run in (("runA", RUN_A), ("runB", RUN_B)):
        response = client.put(f"{API}/collections/c/runs/{name}", content=run.encode(),
                              headers={"content-type": "text/plain"})
        assert response.status_code == 200, response.text
    runs = client.get(f"{API}/collections/c/runs").json()
    assert [(r["name"], r["n_lines"], r["n_topics"], r["max_depth"]) for r in runs["data"]] == [
        ("runA", 3, 2, 2), ("runB", 3, 2, 2)]

    build = client.post(f"{API}/collections/c/features/build", json={})
    assert build.status_code == 202, build.text
    assert build.json()["params"]["lexical"] and build.json()["params"]["ranking"]
    done = wait_for(client, build.json()["id"], kind="feature-builds")
    assert done["status"] == "succeeded", done["error"]
    assert done["report"]["tasks"] == 6
    # progress reads as every job's does (fits, evaluations): {fraction, message}
    assert set(build.json()["progress"]) == {"fraction", "message"}
    assert done["progress"]["fraction"] == 1.0 and isinstance(done["progress"]["message"], str)

    described = client.get(f"{API}/collections/c/features").json()
    assert described["source"] == "built" and described["tasks"] == 6
    names = described["names"]
    assert {"lexical", "ranking"} <= set(described["groups"])
    assert any("bm25" in n for n in names)
    assert any(n.startswith("run:runA:") for n in names)

    # the runs' normal scores by default (docs/features.md); log rank and reciprocal rank asked
    assert {"run:runA:normal", "run:runB:normal"} <= set(names)
    assert build.json()["params"]["rank_transform"] == "normal"
    again = client.post(f"{API}/collections/c/features/build",
                        json={"lexical": False, "rank_transform": "log_rr"})
    assert again.status_code == 202, again.text
    assert wait_for(client, again.json()["id"], kind="feature-builds")["status"] == "succeeded"
    names = client.get(f"{API}/collections/c/features").json()["names"]
    assert {"run:runA:log_rank", "run:runA:rr"} <= set(names) and "run:runA:normal" not in names
    wrong = client.post(f"{API}/collections/c/features/build", json={"rank_transform": "log"})
    assert wrong.status_code == 422

    # The built features are what an aggregation sees.
    fit = client.post(f"{API}/collections/c/aggregations", json={"method": "mv"}).json()
    assert wait_for(client, fit["id"])["status"] == "succeeded"


def test_feature_build_needs_inputs(client) -> None:
    setup_collection(client)
    response = client.post(f"{API}/collections/c/features/build", json={})
    assert response.status_code == 422 and response.json()["code"] == "missing_inputs"
    # no body at all means every default, as {} does
    response = client.post(f"{API}/collections/c/features/build")
    assert response.status_code == 422 and response.json()["code"] == "missing_inputs"
    response = client.post(f"{API}/collections/c/features/build", json={"ranking": True})
    assert response.status_code == 422 and response.json()["code"] == "missing_runs"
    response = client.post(f"{API}/collections/c/features/build", json={"lexical": True})
    assert response.status_code == 422 and response.json()["code"] == "missing_texts"
    assert client.get(f"{API}/feature-builds/999").json()["code"] == "feature_build_not_found"


@pytest.mark.parametrize(("run", "code", "line"), [
    ("t1 Q0 d1 1 9.5 r\nt1 Q0 d1 2 3.1 r\n", "duplicate_row", 2),
    ("t1 Q0 d1 1 9.5 r\nt1 Q0 d2 2 high r\n", "invalid_row", 2),
    ("t1 Q0 d1 1 9.5\n", "invalid_row", 1),
])
def test_bad_runs_name_the_line(client, run, code, line) -> None:
    setup_collection(client)
    response = client.put(f"{API}/collections/c/runs/r", content=run.encode(),
                          headers={"content-type": "text/plain"})
    assert response.status_code == 422, response.text
    assert response.json()["code"] == code
    assert response.json()["line"] == line
    assert client.get(f"{API}/collections/c/runs").json()["count"] == 0


def test_run_with_unknown_topics_is_kept_and_counted(client) -> None:
    setup_collection(client)
    response = client.put(f"{API}/collections/c/runs/r", content=b"t1 Q0 d1 1 9.5 r\n"
                          b"t9 Q0 d2 1 3.0 r\nt8 Q0 d2 1 3.0 r\n",
                          headers={"content-type": "text/plain"})
    assert response.status_code == 200, response.text
    assert response.json()["unknown_topics"] == 2 and response.json()["n_topics"] == 3
    # An upload-time fact: the listing does not carry it (it said null before).
    listed = client.get(f"{API}/collections/c/runs").json()["data"]
    assert [r["name"] for r in listed] == ["r"] and "unknown_topics" not in listed[0]


def test_bad_texts(client) -> None:
    setup_collection(client)
    dup = client.put(f"{API}/collections/c/topics", content=b"t1\ta\nt1\tb\n",
                     headers={"content-type": "text/tab-separated-values"})
    assert dup.status_code == 422 and dup.json()["code"] == "duplicate_row"
    assert dup.json()["line"] == 2
    empty = client.put(f"{API}/collections/c/documents", content=b"",
                       headers={"content-type": "text/tab-separated-values"})
    assert empty.status_code == 422 and empty.json()["code"] == "empty_file"


@pytest.mark.parametrize("content_type", ["application/json", "text/plain"])
@pytest.mark.parametrize(("body", "key", "line"), [
    ('{"t1": "first",\n "t2": "x",\n "t1": "second"}', "t1", 3),
    ('{"topics": [{"id": "t1", "text": "a"}],\r"topics": [{"id": "t2", "text": "b"}]}',
     "topics", 2),
    ('[{"id": "t1", "text": "a", "text": "b"}]', "text", 1),
])
def test_json_texts_with_a_key_twice_are_refused(client, content_type, body, key, line) -> None:
    """A JSON body, as a JSON file, refuses a key given twice (json.loads kept the last one
    silently: the first topic's text was lost), naming the key and its line."""
    setup_collection(client)
    response = client.put(f"{API}/collections/c/topics", content=body.encode(),
                          headers={"content-type": content_type})
    assert response.status_code == 422, response.text
    assert response.json() == {"code": "duplicate_row", "line": line, "column": key,
                               "detail": f"line {line}: duplicate key {key!r}"}
    with get_sessionmaker(client.app.state.settings.database_url)() as session:
        assert session.execute(select(Topic.external_id, Topic.text)
                               .order_by(Topic.external_id)).all() == [("t1", None), ("t2", None)]


def test_json_lines_texts_with_a_key_twice_are_refused(client) -> None:
    setup_collection(client)
    body = '{"id": "t1", "text": "a"}\n{"id": "t2", "text": "b", "text": "c"}\n'
    response = client.put(f"{API}/collections/c/topics", content=body.encode(),
                          headers={"content-type": "text/plain"})
    assert response.status_code == 422, response.text
    assert response.json() == {"code": "duplicate_row", "line": 2, "column": "text",
                               "detail": "line 2: duplicate key 'text'"}


# The embedded default and the runner furthest from it (GP jobs, 6-9 CPU s each: the fallback's
# on Celery only, the build's on both); the inline runner on PostgreSQL adds no path of its own
# (the runners' tests cover it).
@pytest.mark.parametrize("runner_settings", ["inline-sqlite", pytest.param(
    "celery-postgres", marks=[pytest.mark.postgres, pytest.mark.redis])], indirect=True)
def test_gp_fit_builds_missing_features_first(jobs_client, request) -> None:
    """magp on a collection with texts and runs but no features: the job builds them (no silent
    fallback to LK); without texts or runs it still falls back, and says so."""
    client = jobs_client
    setup_collection(client)
    # The fallback is decided in the job before the fit (nothing to build from), whichever
    # runner started it: checked through Celery on PostgreSQL only (a GP job, 6-9 CPU s).
    if request.node.callspec.params["runner_settings"] == "celery-postgres":
        fit = client.post(f"{API}/collections/c/aggregations", json={"method": "magp"}).json()
        done = wait_for(client, fit["id"])
        assert done["status"] == "succeeded", done["error"]
        assert done["fallback"] == "lk" and "features_built" not in done["info"]

    client.put(f"{API}/collections/c/topics", content=TOPICS.encode(),
               headers={"content-type": "text/tab-separated-values"})
    client.put(f"{API}/collections/c/documents",
               json=[{"id": k, "text": v} for k, v in DOCS.items()])
    fit = client.post(f"{API}/collections/c/aggregations", json={"method": "magp"}).json()
    done = wait_for(client, fit["id"])
    assert done["status"] == "succeeded", done["error"]
    assert done["fallback"] is None and done["info"]["features_built"] is True
    assert any(k.startswith("features_") for k in done["timings"])
    described = client.get(f"{API}/collections/c/features").json()
    assert described["source"] == "built" and described["tasks"] == 6


def upload_texts(client) -> None:
    topics = client.put(f"{API}/collections/c/topics", content=TOPICS.encode(),
                        headers={"content-type": "text/tab-separated-values"})
    assert topics.status_code == 200, topics.text
    docs = client.put(f"{API}/collections/c/documents",
                      json=[{"id": k, "text": v} for k, v in DOCS.items()])
    assert docs.status_code == 200, docs.text


def test_cancel_feature_builds(jobs_client) -> None:
    """DELETE /feature-builds/{id} cancels as DELETE /aggregations/{a} does: a queued build
    ends cancelled without running or storing features, is audited, and a finished build
    (cancelled or succeeded) is 409 feature_build_finished."""
    client = jobs_client
    setup_collection(client)
    upload_texts(client)
    # A long fit holds the one job slot (inline: CROWDQRELS_MAX_PARALLEL_FITS=1; Celery: a
    # worker of concurrency 1), so the build behind it stays queued.
    slow = client.post(f"{API}/collections/c/aggregations",
                       json={"method": "mace", "params": {"n_restarts": 1000, "n_iter": 100000}})
    assert slow.status_code == 202, slow.text
    build = client.post(f"{API}/collections/c/features/build", json={})
    assert build.status_code == 202, build.text
    build_id = build.json()["id"]

    cancelled = client.delete(f"{API}/feature-builds/{build_id}")
    assert cancelled.status_code == 200, cancelled.text
    body = cancelled.json()
    assert body["status"] == "cancelled" and body["started_at"] is None
    assert body["finished_at"] is not None and body["progress"]["message"] == "cancelled"
    assert client.delete(f"{API}/aggregations/{slow.json()['id']}").status_code == 200
    done = wait_for(client, build_id, kind="feature-builds")
    assert done["status"] == "cancelled" and done["started_at"] is None
    assert client.get(f"{API}/collections/c/features").json()["code"] == "no_features"
    again = client.delete(f"{API}/feature-builds/{build_id}")
    assert again.status_code == 409
    assert again.json()["code"] == "feature_build_finished"
    assert again.json()["status"] == "cancelled"
    audit = client.get(f"{API}/audit", params={"action": "feature_build_cancelled"}).json()
    assert [(e["action"], e["collection"], e["target_id"]) for e in audit["data"]] == [
        ("feature_build_cancelled", "c", build_id)]

    # The job slot is free again: the next build runs; cancelling it once it succeeded is 409.
    second = client.post(f"{API}/collections/c/features/build", json={}).json()
    assert wait_for(client, second["id"], kind="feature-builds")["status"] == "succeeded"
    late = client.delete(f"{API}/feature-builds/{second['id']}")
    assert late.status_code == 409, late.text
    assert late.json()["code"] == "feature_build_finished"
    assert late.json()["status"] == "succeeded"
    assert client.get(f"{API}/collections/c/features").json()["source"] == "built"

    missing = client.delete(f"{API}/feature-builds/999")
    assert missing.status_code == 404 and missing.json()["code"] == "feature_build_not_found"
