"""Bad input gets a 4xx with a stable code and changes nothing."""

from __future__ import annotations

import pytest

from tests.api.helpers import API, EMPTY_COUNTS, TSV, counts, create_collection

HEADER = "topicID\tworkerID\tdocID\tgold\tlabel\n"
GOOD = "20002\tw1\td1\t-1\t0\n20002\tw2\td1\t1\t2\n"


def upload(client, text: str | bytes, content_type: str = "text/tab-separated-values"):
    body = text.encode() if isinstance(text, str) else text
    return client.post(f"{API}/collections/rf10/judgments/file", content=body,
                       headers={"content-type": content_type})


@pytest.mark.parametrize(("text", "code", "line", "column"), [
    (HEADER + GOOD + "20002\tw3\td2\t-1\tabc\n", "invalid_row", 4, "label"),
    (HEADER + GOOD + "20002\tw3\td2\tx\t1\n", "invalid_row", 4, "gold"),
    (HEADER + GOOD + "20002\tw3\td2\n", "invalid_row", 4, "gold"),
    (HEADER + "20002\t\td2\t-1\t1\n", "invalid_row", 2, "workerID"),
    (HEADER + GOOD + "20002\tw3\td2\t-1\t7\n", "label_out_of_scale", 4, "label"),
    (HEADER + GOOD + "20002\tw3\td2\t-1\t-1\n", "label_out_of_scale", 4, "label"),
    (HEADER + GOOD + "20002\tw3\td2\t5\t1\n", "gold_out_of_scale", 4, "gold"),
    ("topic,doc,annotator,label\nt,d,a,1\nt,d,b,1.5\n", "invalid_row", 3, "label"),
])
def test_bad_row_names_line_and_column_and_stores_nothing(client, text, code, line, column):
    create_collection(client)
    response = upload(client, text)
    assert response.status_code == 422, response.text
    body = response.json()
    assert body["code"] == code
    assert body["line"] == line
    assert body["column"] == column
    assert f"line {line}" in body["detail"]
    assert counts(client) == EMPTY_COUNTS


@pytest.mark.parametrize(("text", "code"), [
    ("", "empty_file"),
    ("\n\n", "empty_file"),
    (HEADER, "empty_file"),
    ("a\tb\tc\n1\t2\t3\n", "invalid_header"),
    ("20002\tw1\td1\t-1\t0\n", "invalid_header"),  # data without a header
    (b"topic\tdoc\tannotator\tlabel\n\xff\xfe\t1\t2\t3\n", "invalid_encoding"),
])
def test_empty_or_headerless_file_is_refused(client, text, code) -> None:
    create_collection(client)
    response = upload(client, text)
    assert response.status_code == 422, response.text
    assert response.json()["code"] == code
    assert response.json()["detail"]
    assert counts(client) == EMPTY_COUNTS


def test_multipart_without_file_field(client) -> None:
    create_collection(client)
    response = client.post(f"{API}/collections/rf10/judgments/file",
                           files={"other": ("x.tsv", HEADER + GOOD, "text/plain")})
    assert response.status_code == 422
    assert response.json()["code"] == "missing_file"
    assert counts(client) == EMPTY_COUNTS


def test_body_over_the_limit_is_413(client, settings) -> None:
    create_collection(client)
    big = HEADER + GOOD * (settings.max_body_bytes // len(GOOD) + 1)
    response = upload(client, big)
    assert response.status_code == 413
    assert response.json()["code"] == "payload_too_large"
    assert counts(client) == EMPTY_COUNTS


def test_streamed_body_over_the_limit_is_413(client, settings) -> None:
    create_collection(client)
    chunk = (GOOD * 10_000).encode()

    def chunks():
        sent = 0
        while sent <= settings.max_body_bytes:
            sent += len(chunk)
            yield chunk

    response = client.post(f"{API}/collections/rf10/judgments/file",
                           content=chunks(), headers=TSV)
    assert response.status_code == 413
    assert response.json()["code"] == "payload_too_large"
    assert counts(client) == EMPTY_COUNTS


@pytest.mark.parametrize("body", [
    {},
    {"judgments": []},
    {"judgments": {"topic": "t"}},
    {"judgments": [{"topic": "t", "doc": "d", "annotator": "a"}]},  # no label
    {"judgments": [{"topic": "t", "doc": "d", "annotator": "a", "label": "high"}]},
    {"judgments": [{"topic": "t", "doc": "d", "annotator": "a", "label": 1, "extra": 1}]},
    [{"topic": "t", "doc": "d", "annotator": "a", "label": 1}],
])
def test_json_of_the_wrong_shape_is_422(client, body) -> None:
    create_collection(client)
    response = client.post(f"{API}/collections/rf10/judgments", json=body)
    assert response.status_code == 422, response.text
    assert response.json()["code"] == "invalid_body"
    assert counts(client) == EMPTY_COUNTS


def test_json_label_out_of_scale_names_the_index(client) -> None:
    create_collection(client)
    judgments = [{"topic": "t", "doc": f"d{i}", "annotator": "a", "label": 1} for i in range(5)]
    judgments[3]["label"] = 9
    response = client.post(f"{API}/collections/rf10/judgments", json={"judgments": judgments})
    assert response.status_code == 422
    assert response.json()["code"] == "label_out_of_scale"
    assert response.json()["index"] == 3
    assert counts(client) == EMPTY_COUNTS


def test_malformed_json_is_422(client) -> None:
    create_collection(client)
    response = client.post(f"{API}/collections/rf10/judgments", content=b"{not json",
                           headers={"content-type": "application/json"})
    assert response.status_code == 422
    assert response.json()["code"] == "invalid_body"


@pytest.mark.parametrize(("text", "code", "line"), [
    ("t 0 d 1\nt 0 d2\n", "invalid_row", 2),
    ("t 0 d 1\nt 0 d2 x\n", "invalid_row", 2),
    ("t 0 d 1\nt 0 d 2\n", "duplicate_row", 2),
    ("t 0 d 1\nt 0 d2 7\n", "gold_out_of_scale", 2),
    ("", "empty_file", None),
])
def test_bad_gold_file(client, text, code, line) -> None:
    create_collection(client)
    response = client.put(f"{API}/collections/rf10/gold", content=text.encode(),
                          headers={"content-type": "text/plain"})
    assert response.status_code == 422, response.text
    assert response.json()["code"] == code
    assert response.json().get("line") == line
    assert counts(client) == EMPTY_COUNTS
