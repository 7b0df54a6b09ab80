"""Small helpers for the API tests."""

from __future__ import annotations

from typing import Any

from fastapi.testclient import TestClient

API = "/api/v1"
TSV = {"content-type": "text/tab-separated-values"}
RF10_COLLECTION = {"name": "rf10", "labels": [0, 1, 2], "relevant_from": 1, "ignore": [-2]}


def create_collection(client: TestClient, **overrides: Any) -> dict[str, Any]:
    body = {**RF10_COLLECTION, **overrides}
    response = client.post(f"{API}/collections", json=body)
    assert response.status_code == 201, response.text
    return response.json()  # type: ignore[no-any-return]


def counts(client: TestClient, collection: str = "rf10") -> dict[str, int]:
    response = client.get(f"{API}/collections/{collection}")
    assert response.status_code == 200, response.text
    return response.json()["counts"]  # type: ignore[no-any-return]


EMPTY_COUNTS = {
    "topics": 0, "documents": 0, "tasks": 0, "annotators": 0, "judgments": 0,
    "tasks_with_gold": 0, "tasks_with_unjudgeable_gold": 0,
}
