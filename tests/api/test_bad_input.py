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
    # a judgment of the wrong shape names its index as well
    for bad in ({"label": "x"}, {"label": None}):
        shaped = [dict(j, label=1) for j in judgments]
        shaped[2] = {**shaped[2], **bad}
        response = client.post(f"{API}/collections/rf10/judgments", json={"judgments": shaped})
        assert response.status_code == 422
        assert response.json()["code"] == "invalid_body" and response.json()["index"] == 2
    missing = [dict(j, label=1) for j in judgments]
    del missing[4]["label"]
    response = client.post(f"{API}/collections/rf10/judgments", json={"judgments": missing})
    assert response.json()["index"] == 4
    assert counts(client) == EMPTY_COUNTS
    # other lists (a collection's labels) are not a bulk: their errors carry no index
    labels = client.post(f"{API}/collections", json={"name": "x", "labels": [0, "a"]})
    assert labels.status_code == 422 and "index" not in labels.json()


@pytest.mark.parametrize("content_type", ["text/plain", None, "application/x-www-form-urlencoded",
                                          "text/json"])
@pytest.mark.parametrize("path", ["/collections", "/collections/rf10/judgments"])
def test_json_sent_without_a_json_content_type_is_415(client, path, content_type) -> None:
    """FastAPI reads a body as JSON only under a JSON media type (a CSRF guard): the answer
    says so, rather than "Input should be a valid dictionary"."""
    create_collection(client)
    body = ('{"name": "other", "labels": [0, 1]}' if path == "/collections" else
            '{"judgments": [{"topic": "t", "doc": "d", "annotator": "a", "label": 1}]}')
    headers = {"content-type": content_type} if content_type else {}
    response = client.post(f"{API}{path}", content=body.encode(), headers=headers)
    assert response.status_code == 415, response.text
    assert response.json()["code"] == "unsupported_media_type"
    assert response.json()["expected"] == "application/json"
    assert "Content-Type: application/json" in response.json()["detail"]
    assert (content_type or "no Content-Type") in response.json()["detail"]
    assert counts(client) == EMPTY_COUNTS
    assert client.get(f"{API}/collections").json()["count"] == 1
    # a JSON media type, with a parameter, is read as JSON
    response = client.post(f"{API}{path}", content=body.encode(),
                           headers={"content-type": "application/json; charset=utf-8"})
    assert response.status_code == 201, response.text


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


# PostgreSQL's text cannot hold U+0000: a NUL anywhere in a request was a 500 there (schemathesis
# found it in a query filter) and a stored value on SQLite. Both databases now answer the same 422
# and store nothing.
NUL_JUDGMENT = {"topic": "t", "doc": "d1", "annotator": "w1", "label": 1}


@pytest.mark.parametrize(("method", "path", "kwargs", "where"), [
    ("post", "/collections/rf10/judgments",
     {"json": {"judgments": [NUL_JUDGMENT, {**NUL_JUDGMENT, "doc": "d\x002"}]}},
     "request body"),
    ("post", "/collections", {"json": {"name": "other", "labels": [0, 1],
                                       "description": "a\x00b"}}, "request body"),
    ("post", "/collections/rf10/judgments",  # the escape split between two chunks of a stream
     {"chunks": [b'{"judgments": [{"topic": "t\\u00', b'00", "doc": "d", "annotator": '
                 b'"w", "label": 1}]}'], "headers": {"content-type": "application/json"}},
     "request body"),
    ("get", "/collections/rf10/judgments?annotator=w%001", {}, "query string"),
    ("get", "/aggregations/1/tasks?topic=4%005", {}, "query string"),
    ("get", "/collections/rf%0010", {}, "path"),
])
def test_nul_in_a_request_is_422_and_stores_nothing(client, method, path, kwargs, where) -> None:
    create_collection(client)
    if "chunks" in kwargs:  # a streamed body, sent chunk by chunk
        kwargs = {"content": iter(kwargs["chunks"]), "headers": kwargs["headers"]}
    response = getattr(client, method)(f"{API}{path}", **kwargs)
    assert response.status_code == 422, response.text
    assert response.json()["code"] == "invalid_text"
    assert f"the {where} contains a NUL" in response.json()["detail"]
    assert counts(client) == EMPTY_COUNTS
    assert [c["name"] for c in client.get(f"{API}/collections").json()["data"]] == ["rf10"]


def test_nul_in_a_file_names_its_line_and_stores_nothing(client) -> None:
    create_collection(client)
    response = upload(client, HEADER + GOOD + "20002\tw3\td\x002\t-1\t1\n")
    assert response.status_code == 422, response.text
    assert response.json() == {"code": "invalid_encoding", "line": 4,
                               "detail": "line 4: a NUL character (U+0000) is not text"}
    response = client.put(f"{API}/collections/rf10/gold", content=b"t 0 d 1\nt 0 d\x00 1\n",
                          headers={"content-type": "text/plain"})
    assert (response.status_code, response.json()["line"]) == (422, 2)
    assert counts(client) == EMPTY_COUNTS


def test_an_escaped_backslash_before_u0000_is_text(client) -> None:
    # JSON "a\\u0000" is the six characters \u0000 after "a", not a NUL: accepted, stored as sent
    create_collection(client)
    body = b'{"judgments": [{"topic": "t", "doc": "a\\\\u0000", "annotator": "w", "label": 1}]}'
    response = client.post(f"{API}/collections/rf10/judgments", content=body,
                           headers={"content-type": "application/json"})
    assert response.status_code == 201, response.text
    rows = client.get(f"{API}/collections/rf10/judgments").json()["data"]
    assert [r["doc"] for r in rows] == ["a\\u0000"]


def test_nul_in_a_dashboard_form_is_422(client) -> None:
    create_collection(client)
    response = client.post("/ui/collections/rf10/aggregations", content=b"method=mv&params=%00",
                           headers={"content-type": "application/x-www-form-urlencoded"})
    assert response.status_code == 422
    assert response.json()["code"] == "invalid_text"


# A scale value is stored as INTEGER (labels, gold, relevant_from): one beyond 32 bits was a 500
# ("integer out of range" on PostgreSQL, OverflowError on SQLite; schemathesis, another seed).
@pytest.mark.parametrize("body", [
    {"name": "big", "labels": [0, 2**31]},
    {"name": "big", "labels": [-(2**31) - 1, 0, 1]},
    {"name": "big", "labels": [0, 576460752303423489], "relevant_from": 576460752303423489},
    {"name": "big", "labels": [0, 1], "ignore": [-(2**40)]},
])
def test_scale_values_beyond_32_bits_are_422(client, body) -> None:
    response = client.post(f"{API}/collections", json=body)
    assert response.status_code == 422, response.text
    assert response.json()["code"] == "invalid_body"
    assert response.json()["detail"].startswith(("body.labels", "body.relevant_from",
                                                 "body.ignore"))
    assert client.get(f"{API}/collections").json()["count"] == 0
    edge = client.post(f"{API}/collections", json={"name": "edge", "labels": [-(2**31), 2**31 - 1],
                                                    "relevant_from": 2**31 - 1})
    assert edge.status_code == 201, edge.text  # the range's ends are stored and read back
    assert edge.json()["labels"] == [-(2**31), 2**31 - 1]


def test_an_evaluations_aggregation_id_beyond_the_ids_is_422(client) -> None:
    create_collection(client)
    for source in (2**63, {"union": [1, 2**64]}):
        response = client.post(f"{API}/collections/rf10/evaluations",
                               json={"aggregation": source, "runs": None})
        assert response.status_code == 422, response.text
        assert response.json()["code"] == "invalid_body"
    missing = client.post(f"{API}/collections/rf10/evaluations", json={"aggregation": 2**63 - 1})
    assert missing.status_code == 404  # within the ids' range: an id that does not exist


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_a_busy_database_is_503_and_a_bug_is_a_json_500(settings, monkeypatch) -> None:
    """QA: 30 concurrent uploads on SQLite drew 500s (the connection pool timed out), and every
    500 was text/plain. A busy or unreachable database is 503 database_busy with Retry-After
    (the request changed nothing: send it again); an unexpected error keeps the JSON contract
    on the API and is a page on the dashboard."""
    from fastapi.testclient import TestClient
    from sqlalchemy.exc import OperationalError
    from sqlalchemy.exc import TimeoutError as PoolTimeout

    from app.collections import service
    from app.main import create_app

    failures = iter([PoolTimeout("QueuePool limit of size 5 overflow 10 reached"),
                     OperationalError("SELECT 1", {}, Exception("database is locked")),
                     RuntimeError("a bug")])

    def broken(*args, **kwargs):  # type: ignore[no-untyped-def]
        raise next(failures)

    monkeypatch.setattr(service, "list_collections", broken)
    with TestClient(create_app(settings), raise_server_exceptions=False) as client:
        for detail in ("every database connection is busy", "database is locked"):
            response = client.get(f"{API}/collections")
            assert response.status_code == 503 and response.headers["retry-after"] == "1"
            assert response.json()["code"] == "database_busy"
            assert detail in response.json()["detail"]
        response = client.get(f"{API}/collections")
        assert response.status_code == 500
        assert response.json() == {"code": "internal_error", "detail": "something went wrong "
                                   "on our side; the error has been logged"}
