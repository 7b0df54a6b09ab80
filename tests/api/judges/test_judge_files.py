"""Judge files (PUT/GET/DELETE /collections/{c}/judges[/{name}]): stored as judgments of one
annotator of a kind; sent again, a file replaces the judge's judgments (withdrawals in the
append-only log) so that a fit reads exactly the new file; bad files change nothing."""

from __future__ import annotations

import numpy as np
import pytest

from app.aggregations.snapshot import load_snapshot
from app.collections.tables import Collection
from app.core.db import get_sessionmaker
from app.judgments.columns import KeptColumns, current_watermark
from tests.api.helpers import API, create_collection

SCALE = {"name": "llm", "labels": [0, 1, 2, 3], "relevant_from": 1, "ignore": [-2]}
FIRST = b"1 0 d1 2\n1 0 d2 0\n1 0 d3 3\n2 0 d1 1\n"
# d1 regraded, d2 and 2/d1 left out, d3 'could not judge', d4 new
SECOND = b"1 0 d1 1\n1 0 d3 -2\n1 0 d4 0\n"


def put(client, name: str, body: bytes, **params):  # type: ignore[no-untyped-def]
    return client.put(f"{API}/collections/llm/judges/{name}", content=body,
                      params=params, headers={"content-type": "text/plain"})


def judge_view(database_url: str, kept: KeptColumns | None = None) -> dict[tuple[str, str, str],
                                                                          int]:
    """What a graded fit of the collection reads now: {(topic, doc, annotator): grade}."""
    with get_sessionmaker(database_url)() as session:
        collection = session.query(Collection).filter_by(name="llm").one()
        snapshot = load_snapshot(
            session, collection=collection, graded=True, kept=kept or KeptColumns(0),
            watermark=current_watermark(session, collection_id=collection.id))
    data = snapshot.data
    return {(str(data.topic_ids[t]), str(data.doc_ids[t]), str(data.annotator_ids[a])):
            int(data.classes[y])
            for t, a, y in zip(data.task.tolist(), data.annotator.tolist(), data.label.tolist(),
                               strict=True)}


@pytest.fixture
def llm(client):  # type: ignore[no-untyped-def]
    create_collection(client, **SCALE)
    # a crowd worker beside the judge
    crowd = client.post(f"{API}/collections/llm/judgments", json={"judgments": [
        {"topic": "1", "doc": "d1", "annotator": "w1", "label": 1},
        {"topic": "1", "doc": "d2", "annotator": "w1", "label": 0}]})
    assert crowd.status_code == 201, crowd.text
    return client


def test_a_judge_file_is_stored_as_one_annotators_judgments(llm) -> None:
    r = put(llm, "gpt-4o", FIRST)
    assert r.status_code == 200, r.text
    assert r.json() == {"judge": "gpt-4o", "kind": "llm", "batch_id": r.json()["batch_id"],
                        "judgments": 4, "withdrawn": 0, "new_tasks": 2, "replaced": False}
    listed = llm.get(f"{API}/collections/llm/judges").json()
    assert listed["count"] == 1
    judge = listed["data"][0]
    assert (judge["name"], judge["kind"], judge["judgments"], judge["could_not_judge"]) == (
        "gpt-4o", "llm", 4, 0)
    assert judge["grades"] == {"0": 1, "1": 1, "2": 1, "3": 1}
    rows = llm.get(f"{API}/collections/llm/judgments", params={"annotator": "gpt-4o"}).json()
    assert sorted((j["topic"], j["doc"], j["label"]) for j in rows["data"]) == [
        ("1", "d1", 2), ("1", "d2", 0), ("1", "d3", 3), ("2", "d1", 1)]


def test_sending_again_replaces_and_a_fit_reads_exactly_the_new_file(llm, database_url) -> None:
    kept = KeptColumns(max_collections=2)  # a process that read the collection before
    assert put(llm, "gpt-4o", FIRST).status_code == 200
    before = judge_view(database_url, kept)
    assert {k: v for k, v in before.items() if k[2] == "gpt-4o"} == {
        ("1", "d1", "gpt-4o"): 2, ("1", "d2", "gpt-4o"): 0, ("1", "d3", "gpt-4o"): 3,
        ("2", "d1", "gpt-4o"): 1}
    r = put(llm, "gpt-4o", SECOND)
    assert r.status_code == 200, r.text
    # 1/d2 and 2/d1 left out, 1/d3 now 'could not judge': withdrawn; d1 regraded, d4 new
    assert (r.json()["judgments"], r.json()["withdrawn"], r.json()["replaced"]) == (3, 3, True)
    expected = {("1", "d1", "gpt-4o"): 1, ("1", "d4", "gpt-4o"): 0,
                ("1", "d1", "w1"): 1, ("1", "d2", "w1"): 0}
    assert judge_view(database_url) == expected
    assert judge_view(database_url, kept) == expected  # read forward from the earlier columns
    # nothing was overwritten: the log holds the first file, the withdrawals and the second
    log = llm.get(f"{API}/collections/llm/judgments", params={"annotator": "gpt-4o"}).json()
    assert log["count"] == 4 + 3 + 3
    assert sum(j["label"] is None for j in log["data"]) == 3
    listed = llm.get(f"{API}/collections/llm/judges").json()["data"][0]
    assert (listed["judgments"], listed["could_not_judge"], listed["grades"]) == (
        3, 1, {"0": 1, "1": 1})
    # the collection's counts are judgments received (withdrawals are not judgments)
    assert llm.get(f"{API}/collections/llm").json()["counts"]["judgments"] == 2 + 4 + 3


def test_a_fit_reads_the_replaced_judge(llm) -> None:
    from tests.api.jobs import wait_for

    assert put(llm, "gpt-4o", FIRST).status_code == 200
    assert put(llm, "gpt-4o", SECOND).status_code == 200
    fit = llm.post(f"{API}/collections/llm/aggregations",
                   json={"method": "mv", "graded": True}).json()
    assert wait_for(llm, fit["id"])["status"] == "succeeded"
    qrels = llm.get(f"{API}/aggregations/{fit['id']}/qrels", params={"format": "json"}).json()
    # 2/d1 was only the judge's, and is withdrawn; 1/d3 only 'could not judge'
    assert sorted((r["topic"], r["doc"]) for r in qrels["data"]) == [
        ("1", "d1"), ("1", "d2"), ("1", "d4")]


def test_delete_withdraws_every_judgment_of_the_judge(llm, database_url) -> None:
    assert put(llm, "gpt-4o", FIRST).status_code == 200
    r = llm.delete(f"{API}/collections/llm/judges/gpt-4o")
    assert r.status_code == 200, r.text
    assert r.json()["withdrawn"] == 4
    assert all(k[2] == "w1" for k in judge_view(database_url))
    assert llm.get(f"{API}/collections/llm/judges").json() == {"data": [], "count": 0}
    again = llm.delete(f"{API}/collections/llm/judges/gpt-4o")
    assert again.status_code == 404 and again.json()["code"] == "judge_not_found"
    # sent again after removal: a judge again, nothing withdrawn
    back = put(llm, "gpt-4o", SECOND)
    assert back.status_code == 200 and back.json()["withdrawn"] == 0
    events = llm.get(f"{API}/audit", params={"collection": "llm"}).json()["data"]
    assert [e["action"] for e in events][:3] == ["judge_stored", "judge_removed", "judge_stored"]


def test_the_kind_is_stored_and_shown(llm) -> None:
    assert put(llm, "nist", FIRST, kind="expert").status_code == 200
    assert put(llm, "w2", SECOND, kind="crowd").status_code == 200
    kinds = {j["name"]: j["kind"] for j in llm.get(f"{API}/collections/llm/judges").json()["data"]}
    assert kinds == {"nist": "expert", "w2": "crowd"}
    refused = put(llm, "nist", FIRST, kind="chatbot")
    assert refused.status_code == 422 and refused.json()["code"] == "invalid_body"


@pytest.mark.parametrize(("name", "body", "params", "status", "code", "line"), [
    ("gpt", b"1 0 d1 2\n1 0 d2 7\n", {}, 422, "label_out_of_scale", 2),
    ("gpt", b"1 0 d1 -1\n", {}, 422, "label_out_of_scale", 1),
    ("gpt", b"", {}, 422, "empty_file", None),
    ("gpt", b"\n  \n", {}, 422, "empty_file", None),
    ("gpt", b"1 0 d1\n", {}, 422, "invalid_row", 1),
    ("w1", FIRST, {}, 409, "judge_kind_conflict", None),  # w1 is a crowd worker
    ("w1", FIRST, {"kind": "expert"}, 409, "judge_kind_conflict", None),
])
def test_bad_files_change_nothing(llm, name, body, params, status, code, line) -> None:
    assert put(llm, "gpt", b"1 0 d1 3\n").status_code == 200
    before = llm.get(f"{API}/collections/llm/judgments", params={"limit": 1000}).json()
    r = put(llm, name, body, **params)
    assert r.status_code == status, r.text
    assert r.json()["code"] == code
    assert r.json().get("line") == line
    assert llm.get(f"{API}/collections/llm/judgments",
                   params={"limit": 1000}).json() == before


def test_a_judge_of_another_kind_is_named_in_the_conflict(llm) -> None:
    assert put(llm, "nist", FIRST, kind="expert").status_code == 200
    r = put(llm, "nist", FIRST)
    assert r.status_code == 409 and r.json()["kind"] == "expert"
    # a crowd worker's name sent as a crowd judge replaces that worker's judgments
    ok = put(llm, "w1", b"1 0 d1 0\n", kind="crowd")
    assert ok.status_code == 200 and ok.json()["withdrawn"] == 1


def test_idempotency_key_stores_once(llm) -> None:
    headers = {"content-type": "text/plain", "Idempotency-Key": "judge-1"}
    first = llm.put(f"{API}/collections/llm/judges/gpt", content=FIRST, headers=headers)
    again = llm.put(f"{API}/collections/llm/judges/gpt", content=FIRST, headers=headers)
    assert first.status_code == again.status_code == 200
    assert again.json() == first.json() and again.headers["idempotency-replayed"] == "true"
    other = llm.put(f"{API}/collections/llm/judges/gpt", content=SECOND, headers=headers)
    assert other.status_code == 422 and other.json()["code"] == "idempotency_key_reused"
    log = llm.get(f"{API}/collections/llm/judgments", params={"annotator": "gpt"}).json()
    assert log["count"] == 4


def test_withdrawals_apply_to_the_latest_only() -> None:
    from app.judgments.columns import WITHDRAWN, apply_withdrawals

    task = np.array([1, 1, 2, 1, 2, 1])
    annotator = np.array([7, 7, 7, 7, 8, 7])
    label = np.array([1, 2, 0, WITHDRAWN, 1, 0])
    # task 1 / annotator 7: rows 0, 1 and the withdrawal go, the later 0 counts
    assert apply_withdrawals(task, annotator, label).tolist() == [
        False, False, True, False, True, True]


def test_kind_in_the_annotator_listings_and_their_filter(llm) -> None:
    from tests.api.jobs import wait_for

    assert put(llm, "gpt-4o", FIRST).status_code == 200
    fit = llm.post(f"{API}/collections/llm/aggregations", json={"method": "mv"}).json()
    assert wait_for(llm, fit["id"])["status"] == "succeeded"
    listing = f"{API}/aggregations/{fit['id']}/annotators"
    rows = llm.get(listing).json()["data"]
    assert {r["annotator"]: r["kind"] for r in rows} == {"gpt-4o": "llm", "w1": "crowd"}
    for kind, names in (("llm", ["gpt-4o"]), ("crowd", ["w1"]), ("expert", [])):
        body = llm.get(listing, params={"kind": kind}).json()  # cached ordering, filtered
        assert [r["annotator"] for r in body["data"]] == names and body["count"] == len(names)
    assert llm.get(listing, params={"kind": "robot"}).status_code == 422
    history = llm.get(f"{API}/collections/llm/annotators/gpt-4o").json()
    assert history["kind"] == "llm" and history["judgments"] == 4
    page = llm.get("/ui/collections/llm/annotators/gpt-4o")
    assert page.status_code == 200 and "LLM judge" in page.text
