"""Errors that say what is wrong (issue 35, item 7)."""

from __future__ import annotations

import json

import pytest
from fastapi.testclient import TestClient

from app.formats.errors import FileFormatError
from app.formats.judgments_file import parse_judgments
from tests.api.helpers import API, create_collection
from tests.api.jobs import wait_for


def test_a_space_separated_file_blames_the_delimiter() -> None:
    with pytest.raises(FileFormatError) as refused:
        parse_judgments("topic doc annotator label\nt1 d1 w1 1\n")
    assert refused.value.code == "invalid_header"
    assert "delimiter is likely the problem" in str(refused.value)


def test_json_sent_as_a_judgment_file_points_to_the_json_endpoint(client: TestClient) -> None:
    create_collection(client, name="j", labels=[0, 1])
    body = json.dumps({"judgments": [{"topic": "t", "doc": "d", "annotator": "w", "label": 1}]})
    reply = client.post(f"{API}/collections/j/judgments/file", content=body.encode(),
                        headers={"content-type": "text/csv"})
    assert reply.status_code == 422 and reply.json()["code"] == "invalid_header"
    assert "looks like JSON" in reply.json()["detail"]
    assert "/collections/{c}/judgments" in reply.json()["detail"]
    # a proper header is not blamed on anything
    with pytest.raises(FileFormatError) as refused:
        parse_judgments("topic,doc,worker\nt,d,w\n")
    assert "JSON" not in str(refused.value) and "delimiter" not in str(refused.value)


def test_threshold_nan_says_not_a_number(client: TestClient) -> None:
    create_collection(client, name="t", labels=[0, 1])
    judgments = [{"topic": "t", "doc": f"d{i}", "annotator": f"w{j}", "label": (i + j) % 2}
                 for i in range(4) for j in range(3)]
    assert client.post(f"{API}/collections/t/judgments",
                       json={"judgments": judgments}).status_code == 201
    fit = client.post(f"{API}/collections/t/aggregations", json={"method": "mv"}).json()
    assert wait_for(client, fit["id"])["status"] == "succeeded"
    for value, says in (("nan", "not a number"), ("inf", "not a finite number"),
                        ("2", "less than or equal to 1")):
        reply = client.get(f"{API}/aggregations/{fit['id']}/qrels", params={"threshold": value})
        assert reply.status_code == 422 and reply.json()["code"] == "invalid_body"
        assert says in reply.json()["detail"], reply.json()
