from __future__ import annotations

import pytest

from tests.api.helpers import API, EMPTY_COUNTS, create_collection


def test_create_get_and_list(client) -> None:
    created = create_collection(client, description="TREC 2010 RF crowd judgments")
    assert created["name"] == "rf10"
    assert created["labels"] == [0, 1, 2]
    assert created["relevant_from"] == 1
    assert created["ignore"] == [-2]
    assert created["counts"] == EMPTY_COUNTS

    by_id = client.get(f"{API}/collections/{created['id']}")
    by_name = client.get(f"{API}/collections/rf10")
    assert by_id.status_code == by_name.status_code == 200
    assert by_id.json() == by_name.json()

    create_collection(client, name="binary", labels=[1, 0], relevant_from=1, ignore=[])
    listing = client.get(f"{API}/collections").json()
    assert listing["count"] == 2
    assert [c["name"] for c in listing["data"]] == ["rf10", "binary"]
    assert listing["data"][1]["labels"] == [0, 1]  # stored sorted

    page = client.get(f"{API}/collections", params={"limit": 1, "offset": 1}).json()
    assert page["count"] == 2 and [c["name"] for c in page["data"]] == ["binary"]


def test_duplicate_name_is_a_conflict(client) -> None:
    create_collection(client)
    response = client.post(f"{API}/collections", json={"name": "rf10", "labels": [0, 1]})
    assert response.status_code == 409
    assert response.json()["code"] == "collection_exists"
    assert client.get(f"{API}/collections").json()["count"] == 1


@pytest.mark.parametrize("body", [
    {"name": "x", "labels": [0, 1, 2], "relevant_from": 0},  # nothing would be non-relevant
    {"name": "x", "labels": [0, 1, 2], "relevant_from": 3},  # nothing would be relevant
    {"name": "x", "labels": [0, 1, 1]},  # repeated label
    {"name": "x", "labels": [0]},  # a scale needs two labels
    {"name": "x", "labels": [0, 1], "ignore": [1]},  # a label cannot be ignored
    {"name": "", "labels": [0, 1]},
    {"name": "42", "labels": [0, 1]},  # would read as an id
    {"name": "has space", "labels": [0, 1]},
    {"name": "x", "labels": "0,1"},
    {"name": "x", "labels": [0, 1], "unknown_field": True},
])
def test_invalid_collection_is_refused(client, body) -> None:
    response = client.post(f"{API}/collections", json=body)
    assert response.status_code == 422, response.text
    assert response.json()["code"] == "invalid_body"
    assert response.json()["detail"]
    assert client.get(f"{API}/collections").json()["count"] == 0


def test_unknown_collection_is_404(client) -> None:
    for path in ("/collections/nope", "/collections/999", "/collections/nope/judgments",
                 "/collections/nope/stats"):
        response = client.get(API + path)
        assert response.status_code == 404
        assert response.json()["code"] == "collection_not_found"
    response = client.post(f"{API}/collections/nope/judgments/file", content=b"a\tb\n",
                           headers={"content-type": "text/tab-separated-values"})
    assert response.status_code == 404
    assert response.json()["code"] == "collection_not_found"


def test_health(client) -> None:
    assert client.get("/healthz").json()["status"] == "ok"
    assert client.get(f"{API}/healthz").status_code == 200
