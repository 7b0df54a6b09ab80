"""Files and bodies that once parsed wrongly or reached the database unchecked (a QA pass): each is
refused with a 4xx naming its line (or index) and stores nothing, or is read as written."""

from __future__ import annotations

import gzip

import pytest
from sqlalchemy import select, update

from app.core.db import get_sessionmaker
from app.judgments.tables import Batch, Document, Task
from tests.api.helpers import API, EMPTY_COUNTS, TSV, counts, create_collection
from tests.api.jobs import wait_for

CSV = {"content-type": "text/csv"}
PLAIN = {"content-type": "text/plain"}


def upload(client, text: str, headers=TSV, query: str = ""):
    return client.post(f"{API}/collections/rf10/judgments/file{query}", content=text.encode(),
                       headers=headers)


def send(client, path: str, content: str):
    """``content`` to one of the collection's file endpoints (``judgments/file``, ``gold``,
    ``runs/r``, texts, features) with the method and content type it takes."""
    method = client.post if path == "judgments/file" else client.put
    return method(f"{API}/collections/rf10/{path}", content=content.encode(),
                  headers=PLAIN if path in ("gold", "runs/r") else TSV)


def refused(response, code: str, *, line: int | None = None, column: str | None = None,
            detail: str | None = None) -> dict:
    assert response.status_code == 422, response.text
    body = response.json()
    assert body["code"] == code, body
    if line is not None:
        assert body["line"] == line and f"line {line}" in body["detail"], body
    if column is not None:
        assert body["column"] == column, body
    if detail is not None:
        assert detail in body["detail"], body
    return body


# 1. Line breaks inside a quoted CSV field ------------------------------------------------------

def test_csv_id_with_a_quoted_line_break_is_refused_with_its_line(client) -> None:
    create_collection(client)
    text = 'topic,doc,annotator,label\n1,"d\n1",w1,1\n1,d2,w1,5\n'
    refused(upload(client, text, CSV), "invalid_row", line=2, column="doc",
            detail="control character (U+000A)")
    assert counts(client) == EMPTY_COUNTS


def test_line_numbers_count_the_lines_of_a_quoted_field(client) -> None:
    create_collection(client)
    # The quoted label spans lines 2-3 (its spaces and line break are stripped: label 1); the bad
    # label is on line 4 of the file, not on the third row's "line 3".
    text = 'topic,doc,annotator,label\n1,d1,w1,"1\n"\n1,d2,w1,7\n'
    refused(upload(client, text, CSV), "label_out_of_scale", line=4, column="label")
    ok = upload(client, 'topic,doc,annotator,label\n1,d1,w1,"1\n"\n1,d2,w1,2\n', CSV)
    assert ok.status_code == 201, ok.text
    lines = client.get(f"{API}/collections/rf10/judgments").json()["data"]
    assert [(j["doc"], j["label"]) for j in lines] == [("d1", 1), ("d2", 2)]


def test_tsv_does_not_read_quotes(client) -> None:
    create_collection(client)
    # 3. A field starting with a quote is that text: no CSV quoting in TSV (it was "found 2").
    response = upload(client, 'topic\tdoc\tannotator\tlabel\n1\t"d1\tw1\t1\n1\td"2"\tw1\t2\n')
    assert response.status_code == 201, response.text
    docs = [j["doc"] for j in client.get(f"{API}/collections/rf10/judgments").json()["data"]]
    assert docs == ['"d1', 'd"2"']
    # ... so a quote cannot carry a line break into a TSV field: the row is short, on its line.
    refused(upload(client, 'topic\tdoc\tannotator\tlabel\n1\t"d\n1"\tw1\t1\n'), "invalid_row",
            line=2, detail="expected at least 4 columns, found 2")


# 2. Control characters in ids; lines end at \n, \r\n, \r only --------------------------------

@pytest.mark.parametrize("char", ["\u2028", "\u2029", "\u0085", "\f", "\v", "\x1c", "\x1d",
                                  "\x1e", "\x1f", "\x07"])
@pytest.mark.parametrize("delimiter", [",", "\t"])
def test_control_character_in_an_id_is_refused_with_its_line(client, char, delimiter) -> None:
    create_collection(client)
    rows = [["topic", "doc", "annotator", "label"], ["1", "d1", "w1", "1"],
            ["1", "d2", f"w{char}1", "1"], ["1", "d3", "w1", "2"]]
    text = "".join(delimiter.join(r) + "\n" for r in rows)
    refused(upload(client, text, CSV if delimiter == "," else TSV), "invalid_row", line=3,
            column="annotator", detail=f"control character (U+{ord(char):04X})")
    # At the end of an id too, where stripping would have dropped it silently (d1 = d1\x1c).
    rows[2][1], rows[2][2] = f"d1{char}", "w1"
    text = "".join(delimiter.join(r) + "\n" for r in rows)
    refused(upload(client, text, CSV if delimiter == "," else TSV), "invalid_row", line=3,
            column="doc")
    assert counts(client) == EMPTY_COUNTS


def test_lines_end_at_cr_lf_and_cr(client) -> None:
    create_collection(client)
    text = "topic\tdoc\tannotator\tlabel\r\n1\td1\tw1\t1\r1\td2\tw1\t2\n1\td3\tw1\t9\r\n"
    refused(upload(client, text), "label_out_of_scale", line=4)
    response = upload(client, text.replace("\t9", "\t0"))
    assert response.status_code == 201 and response.json()["judgments"] == 3


@pytest.mark.parametrize(("bad", "code", "line", "column"), [
    ("t Q0 d3 3 high r", "invalid_row", 4, "score"),
    ("t Q0 d3 x 0.5 r", "invalid_row", 4, "rank"),
    ("t Q0 d3 3 0.5", "invalid_row", 4, None),
    ("t Q0 d1 3 0.5 r", "duplicate_row", 4, None),
    ("t Q0 d\x1d3 3 0.5 r", "invalid_row", 4, None),
])
def test_run_lines_end_at_cr_lf_and_cr(client, bad, code, line, column) -> None:
    """As every other file: a bare \\r ends a run line (it was read as one line of 12 fields),
    and an error names the line as counted that way."""
    create_collection(client)
    good = "t Q0 d1 1 2.5 r\r\nt Q0 d2 2 1.5 r\r\r"
    ok = client.put(f"{API}/collections/rf10/runs/r", content=(good + "t Q0 d3 3 0.5 r\r").encode(),
                    headers=PLAIN)
    assert ok.status_code == 200, ok.text
    assert ok.json()["n_lines"] == 3 and ok.json()["max_depth"] == 3
    body = refused(client.put(f"{API}/collections/rf10/runs/r2", headers=PLAIN,
                              content=(good + bad + "\rt Q0 d4 4 0.1 r").encode()),
                   code, line=line, column=column)
    if code == "duplicate_row":
        assert "first on line 1" in body["detail"]
    assert [r["name"] for r in client.get(f"{API}/collections/rf10/runs").json()["data"]] == ["r"]


@pytest.mark.parametrize(("qrels", "line"), [
    ("t 0 d1 1\nt 0 d\u20282 1\n", 2),
    ("t 0 d1 1\nt\x1c0 d2 1\n", 2),
    ("t 0 d1 1\n\nt 0 d2 1\u0085\n", 3),
])
def test_control_character_in_qrels_is_refused_with_its_line(client, qrels, line) -> None:
    create_collection(client)
    refused(client.put(f"{API}/collections/rf10/gold", content=qrels.encode(), headers=PLAIN),
            "invalid_row", line=line, detail="control character")
    assert counts(client) == EMPTY_COUNTS


def test_qrels_fields_split_on_ascii_whitespace_only(client) -> None:
    create_collection(client)
    # A non-breaking space does not split a field (str.split() made it five fields): the line
    # has four, and its doc id holds whitespace, which no id may (README, invalid_row).
    refused(client.put(f"{API}/collections/rf10/gold", headers=PLAIN,
                       content="t\t0\td2 1\r\nt 0 d\u00a01 2\n".encode()),
            "invalid_row", line=2, column="doc", detail="whitespace (U+00A0 at character 2)")
    response = client.put(f"{API}/collections/rf10/gold",
                          content=b"t 0 d1 2\r\nt\t0\td2 1\n", headers=PLAIN)
    assert response.status_code == 200, response.text
    assert response.json()["gold_labels"] == 2
    with get_sessionmaker(client.app.state.settings.database_url)() as session:
        docs = set(session.scalars(select(Document.external_id)))
    assert docs == {"d1", "d2"}


def test_run_fields_split_on_ascii_whitespace_and_controls_are_refused(client) -> None:
    create_collection(client)
    ok = client.put(f"{API}/collections/rf10/runs/r", content=b"t Q0 d1 1 2.5 r\n",
                    headers=PLAIN)
    assert ok.status_code == 200, ok.text
    assert ok.json()["n_lines"] == 1
    refused(client.put(f"{API}/collections/rf10/runs/r2", headers=PLAIN,
                       content="t Q0 d1 1 2.5 r\nt Q0 d\u00a02 2 1.5 r\n".encode()),
            "invalid_row", line=2, column="doc", detail="whitespace (U+00A0 at character 2)")
    refused(client.put(f"{API}/collections/rf10/runs/r2",
                       content=b"t Q0 d1 1 2.5 r\nt Q0 d\x1d2 2 1.5 r\n", headers=PLAIN),
            "invalid_row", line=2, detail="control character (U+001D)")


def test_texts_keep_form_feeds_and_refuse_them_in_ids(client) -> None:
    create_collection(client)
    response = client.put(f"{API}/collections/rf10/documents", headers=TSV,
                          content="d1\tpage one\fpage two\u2028end\nd2\tother\n".encode())
    assert response.status_code == 200, response.text
    assert response.json() == {"texts": 2, "new": 2}
    refused(client.put(f"{API}/collections/rf10/documents", headers=TSV,
                       content="d1\ta\nd\u20282\tb\n".encode()),
            "invalid_row", line=2, column="id", detail="control character (U+2028)")


# 4. Labels, gold and relevance are ASCII whole numbers -----------------------------------------

@pytest.mark.parametrize(("column", "value"), [
    ("label", "1_0"), ("label", "\u0661"), ("label", "\uff11"), ("label", "1e1"),
    ("gold", "1_0"), ("gold", "\u0661"),
])
def test_labels_are_ascii_digits(client, column, value) -> None:
    create_collection(client, labels=[0, 1, 2, 10])
    label, gold = (value, "-1") if column == "label" else ("1", value)
    text = f"topic\tdoc\tannotator\tlabel\tgold\n1\td1\tw1\t1\t-1\n1\td2\tw1\t{label}\t{gold}\n"
    refused(upload(client, text), "invalid_row", line=3, column=column,
            detail="must be an integer")
    assert counts(client) == EMPTY_COUNTS


def test_labels_with_spaces_minus_and_a_whole_float_are_read(client) -> None:
    create_collection(client, labels=[0, 1, 2, 10])
    text = "topic,doc,annotator,label,gold\n1,d1,w1, 10 ,2.0\n1,d2,w1,-2,\n1,d3,w1,1.0, -1\n"
    response = upload(client, text, CSV)
    assert response.status_code == 201, response.text
    data = client.get(f"{API}/collections/rf10/judgments").json()["data"]
    assert [j["label"] for j in data] == [10, -2, 1]
    assert response.json()["gold_labels"] == 1


@pytest.mark.parametrize("relevance", ["1_0", "\u0661"])
def test_qrels_relevance_is_ascii_digits(client, relevance) -> None:
    create_collection(client, labels=[0, 1, 10])
    refused(client.put(f"{API}/collections/rf10/gold", content=f"t 0 d {relevance}\n".encode(),
                       headers=PLAIN), "invalid_row", line=1, column="relevance")
    assert counts(client) == EMPTY_COUNTS


# 5. A field over the csv module's size limit ---------------------------------------------------

@pytest.mark.parametrize(("header", "row"), [
    ("topic,doc,annotator,label\n", "1,{},w1,1\n"),
    ("topic\tdoc\tannotator\tlabel\n", "1\t{}\tw1\t1\n"),
    ("topic,doc,annotator,label\n", '1,"{}",w1,1\n'),
])
def test_a_field_over_the_csv_limit_is_422_with_its_line(client, header, row) -> None:
    create_collection(client)
    text = header + row.format("d1") + row.format("x" * 200_000)
    body = refused(upload(client, text, CSV if "," in header else TSV), "invalid_row", line=3)
    assert "longer than" in body["detail"]
    assert counts(client) == EMPTY_COUNTS


# 6. Ids and names longer than their columns, on every path ------------------------------------

@pytest.mark.parametrize(("qrels", "column"), [
    ("t 0 d1 1\nt 0 " + "d" * 501 + " 1\n", "doc"),
    ("t 0 d1 1\n" + "t" * 201 + " 0 d1 1\n", "topic"),
])
def test_gold_with_an_over_long_id_is_422(client, qrels, column) -> None:
    create_collection(client)
    refused(client.put(f"{API}/collections/rf10/gold", content=qrels.encode(), headers=PLAIN),
            "invalid_row", line=2, column=column, detail="longer than")
    assert counts(client) == EMPTY_COUNTS


def test_ids_at_their_limit_are_stored(client) -> None:
    create_collection(client)
    response = client.put(f"{API}/collections/rf10/gold", headers=PLAIN,
                          content=("t" * 200 + " 0 " + "d" * 500 + " 1\n").encode())
    assert response.status_code == 200, response.text
    text = "topic\tdoc\tannotator\tlabel\n" + "\t".join(["t" * 200, "d" * 500, "a" * 200, "1"])
    assert upload(client, text + "\n").status_code == 201


@pytest.mark.parametrize(("path", "limit"), [("topics", 200), ("documents", 500)])
def test_texts_with_an_over_long_id_are_422(client, path, limit) -> None:
    create_collection(client)
    long = "x" * (limit + 1)
    refused(client.put(f"{API}/collections/rf10/{path}", headers=TSV,
                       content=f"a\tfine\n{long}\ttoo long\n".encode()),
            "invalid_row", line=2, column="id", detail=f"longer than {limit}")
    body = refused(client.put(f"{API}/collections/rf10/{path}",
                              json=[{"id": "a", "text": "t"}, {"id": long, "text": "t"}]),
                   "invalid_row", column="id")
    assert "item 2" in body["detail"]
    assert counts(client) == EMPTY_COUNTS
    ok = client.put(f"{API}/collections/rf10/{path}", json=[{"id": "x" * limit, "text": "t"}])
    assert ok.status_code == 200, ok.text


def test_features_with_an_over_long_id_are_422(client) -> None:
    create_collection(client)
    refused(client.put(f"{API}/collections/rf10/features", headers=TSV,
                       content=("topic\tdoc\tf1\nt\td\t1\nt\t" + "d" * 501 + "\t2\n").encode()),
            "invalid_row", line=3, column="doc")
    assert counts(client) == EMPTY_COUNTS


def test_judgment_file_name_over_500_characters_in_the_query_is_422(client) -> None:
    create_collection(client)
    body = refused(upload(client, "topic\tdoc\tannotator\tlabel\n1\td1\tw1\t1\n",
                          query="?filename=" + "f" * 3000), "invalid_body")
    assert body["errors"][0]["loc"] == ["query", "filename"]
    assert counts(client) == EMPTY_COUNTS


@pytest.mark.parametrize(("name", "stored"), [
    ("a\x00b.tsv", "ab.tsv"),
    ("judgments\u2028.tsv", "judgments.tsv"),
    ("f" * 3000 + ".tsv", "f" * 500),
])
def test_multipart_file_name_is_stored_cleaned(client, name, stored) -> None:
    create_collection(client)
    # Built by hand: httpx would write a NUL in a file name as "%00".
    body = (b"--XyZ\r\nContent-Disposition: form-data; name=\"file\"; filename=\""
            + name.encode() + b"\"\r\nContent-Type: text/plain\r\n\r\n"
            + b"topic\tdoc\tannotator\tlabel\n1\td1\tw1\t1\n\r\n--XyZ--\r\n")
    response = client.post(f"{API}/collections/rf10/judgments/file", content=body,
                           headers={"content-type": "multipart/form-data; boundary=XyZ"})
    assert response.status_code == 201, response.text
    with get_sessionmaker(client.app.state.settings.database_url)() as session:
        assert session.scalars(select(Batch.filename)).all() == [stored]


# 7. Ranks beyond 64 bits -----------------------------------------------------------------------

@pytest.mark.parametrize("rank", ["99999999999999999999999", "-9223372036854775809", "1_0"])
def test_run_rank_that_does_not_fit_is_422(client, rank) -> None:
    create_collection(client)
    refused(client.put(f"{API}/collections/rf10/runs/r2", headers=PLAIN,
                       content=f"1 Q0 d0 1 2 r1\n1 Q0 d1 {rank} 1 r1\n".encode()),
            "invalid_row", line=2, column="rank")
    refused(client.put(f"{API}/collections/rf10/runs/r2", headers=PLAIN,
                       content=b"1 Q0 d1 1 1e999 r1\n"), "invalid_row", line=1, column="score")
    assert client.get(f"{API}/collections/rf10/runs").json()["count"] == 0
    edge = client.put(f"{API}/collections/rf10/runs/r2", headers=PLAIN,
                      content=b"1 Q0 d1 9223372036854775807 1 r1\n")
    assert edge.status_code == 200, edge.text


# 8. Deeply nested JSON -------------------------------------------------------------------------

@pytest.mark.parametrize(("headers", "code"), [
    ({"content-type": "application/json"}, "invalid_body"),
    (TSV, "invalid_row"),  # detected as JSON by its first character, read as a file
])
def test_deeply_nested_texts_json_is_422(client, headers, code) -> None:
    create_collection(client)
    for path in ("topics", "documents"):
        response = client.put(f"{API}/collections/rf10/{path}", headers=headers,
                              content=b"[" * 100_000 + b"]" * 100_000)
        refused(response, code, detail="nested too deeply")
    nested = b'{"topics": ' * 900 + b"[]" + b"}" * 900
    response = client.put(f"{API}/collections/rf10/topics", headers=headers, content=nested)
    assert response.status_code == 422, response.text
    assert counts(client) == EMPTY_COUNTS


# 9. JSON ids follow the file's rules -----------------------------------------------------------

@pytest.mark.parametrize(("field", "value", "reason"), [
    ("annotator", " ", "is empty"),
    ("topic", "\t", "is empty"),
    ("doc", "d\n1", "control character"),
    ("doc", "d" * 501, "longer than 500"),
    ("annotator", "a" * 201, "longer than 200"),
])
def test_json_ids_break_the_file_rules_with_their_index(client, field, value, reason) -> None:
    create_collection(client)
    judgments = [{"topic": "t", "doc": f"d{i}", "annotator": "w", "label": 1} for i in range(4)]
    judgments[2][field] = value
    response = client.post(f"{API}/collections/rf10/judgments", json={"judgments": judgments})
    body = refused(response, "invalid_body", column=field, detail=reason)
    assert body["index"] == 2
    assert counts(client) == EMPTY_COUNTS


def test_json_and_file_give_the_same_ids(client) -> None:
    create_collection(client)
    response = client.post(f"{API}/collections/rf10/judgments", json={"judgments": [
        {"topic": " 1 ", "doc": "d1 ", "annotator": " w ", "label": 1},
        {"topic": 1, "doc": "d1", "annotator": "w", "label": 2},
    ]})
    assert response.status_code == 201, response.text
    assert (response.json()["new_tasks"], response.json()["new_annotators"]) == (1, 1)
    again = upload(client, "topic,doc,annotator,label\n 1 ,d1 , w ,0\n", CSV)
    assert again.status_code == 201, again.text
    assert (again.json()["new_tasks"], again.json()["new_annotators"]) == (0, 0)
    c = counts(client)
    assert (c["topics"], c["documents"], c["tasks"], c["annotators"]) == (1, 1, 1, 1)
    data = client.get(f"{API}/collections/rf10/judgments", params={"annotator": "w"}).json()
    assert data["count"] == 3


def test_gold_of_the_json_path_lands_on_the_stripped_task(client) -> None:
    create_collection(client)
    response = client.post(f"{API}/collections/rf10/judgments", json={"judgments": [
        {"topic": "t ", "doc": " d", "annotator": "w", "label": 1, "gold": 2}]})
    assert response.status_code == 201, response.text
    with get_sessionmaker(client.app.state.settings.database_url)() as session:
        assert session.scalars(select(Task.gold)).all() == [2]
        assert session.scalars(select(Document.external_id)).all() == ["d"]


# QA pass 2 -------------------------------------------------------------------------------------
# 10. Topic and document ids hold no whitespace, on every path: TREC qrels and runs are
# whitespace-separated, so "d 1" was written as "1 0 d 1 0" and no reader could parse it.

WHITESPACE_IN_IDS = ["d 1", "d\u00a01", "d\u30001", "d\u20091"]


@pytest.mark.parametrize("doc", WHITESPACE_IN_IDS)
@pytest.mark.parametrize("delimiter", ["\t", ","])
def test_a_doc_id_with_whitespace_is_refused_with_its_line(client, doc, delimiter) -> None:
    create_collection(client)
    rows = [["topic", "doc", "annotator", "label"], ["1", "d0", "w1", "1"], ["1", doc, "w1", "0"]]
    text = "".join(delimiter.join(row) + "\n" for row in rows)
    refused(upload(client, text, TSV if delimiter == "\t" else CSV), "invalid_row", line=3,
            column="doc", detail=f"whitespace (U+{ord(doc[1]):04X} at character 2)")
    assert counts(client) == EMPTY_COUNTS


def test_a_topic_id_with_whitespace_is_refused_and_surrounding_spaces_are_stripped(client) -> None:
    create_collection(client)
    refused(upload(client, "qid,docID,workerID,rel\n 1 ,d1,w1,1\n1 2,d1,w1,1\n", CSV),
            "invalid_row", line=3, column="qid", detail="whitespace (U+0020 at character 2)")
    assert counts(client) == EMPTY_COUNTS
    ok = upload(client, "qid,docID,workerID,rel\n 1 ,\u00a0d1\u00a0,w1,1\n", CSV)
    assert ok.status_code == 201, ok.text
    assert client.get(f"{API}/collections/rf10/judgments").json()["data"][0]["doc"] == "d1"


@pytest.mark.parametrize(("field", "value"), [("topic", "1 2"), ("doc", "d\u00a01")])
def test_json_ids_with_whitespace_are_refused_with_their_index(client, field, value) -> None:
    create_collection(client)
    judgments = [{"topic": "t", "doc": f"d{i}", "annotator": "w", "label": 1} for i in range(3)]
    judgments[1][field] = value
    response = client.post(f"{API}/collections/rf10/judgments", json={"judgments": judgments})
    body = refused(response, "invalid_body", column=field, detail="whitespace")
    assert body["index"] == 1
    assert counts(client) == EMPTY_COUNTS


def test_annotator_ids_keep_their_spaces(client) -> None:
    """Annotators never appear in a TREC file: "Jane Doe" is an id like any other."""
    create_collection(client)
    assert upload(client, "topic\tdoc\tannotator\tlabel\n1\td1\tJane Doe\t1\n").status_code == 201
    response = client.post(f"{API}/collections/rf10/judgments", json={"judgments": [
        {"topic": "1", "doc": "d2", "annotator": "Jane\u00a0Doe", "label": 0}]})
    assert response.status_code == 201, response.text
    data = client.get(f"{API}/collections/rf10/judgments").json()["data"]
    assert [j["annotator"] for j in data] == ["Jane Doe", "Jane\u00a0Doe"]


@pytest.mark.parametrize(("path", "content", "line", "column"), [
    ("gold", "1 0 d1 1\n1\u30002 0 d1 1\n", 2, "topic"),
    ("runs/r", "1 Q0 d1 1 2.0 r\n1 Q0 d\u00a02 2 1.0 r\n", 2, "doc"),
    ("documents", "d1\tone\nd 2\ttwo\n", 2, "id"),
    ("topics", "1\tone\n1\u00a02\ttwo\n", 2, "id"),
    ("features", "topic\tdoc\tf1\n1\td1\t0.5\n1\td\u00a02\t0.5\n", 3, "doc"),
])
def test_ids_with_whitespace_are_refused_in_gold_runs_texts_and_features(client, path, content,
                                                                         line, column) -> None:
    create_collection(client)
    refused(send(client, path, content), "invalid_row", line=line, column=column,
            detail="whitespace")
    assert counts(client) == EMPTY_COUNTS


def test_json_texts_with_whitespace_in_an_id_are_refused(client) -> None:
    create_collection(client)
    body = refused(client.put(f"{API}/collections/rf10/documents",
                              json=[{"id": "d1", "text": "a"}, {"id": "d 2", "text": "b"}]),
                   "invalid_row", column="id", detail="whitespace")
    assert "item 2" in body["detail"]


def test_a_stored_id_with_whitespace_is_not_written_as_trec_qrels(client) -> None:
    """Data stored before the rule: the TREC download is 409 unwritable_id, not a broken file
    ("1 0 d 1 2" has five fields); TSV and JSON still carry the id."""
    create_collection(client)
    gold = client.put(f"{API}/collections/rf10/gold", content=b"1 0 d1 2\n1 0 d2 0\n",
                      headers=PLAIN)
    assert gold.status_code == 200, gold.text
    judged = client.post(f"{API}/collections/rf10/judgments/file", headers=TSV,
                         content=b"topic\tdoc\tannotator\tlabel\n1\td1\tw1\t1\n1\td2\tw1\t0\n")
    assert judged.status_code == 201, judged.text
    fit = wait_for(client, client.post(f"{API}/collections/rf10/aggregations",
                                       json={"method": "mv"}).json()["id"])
    assert fit["status"] == "succeeded", fit
    with get_sessionmaker(client.app.state.settings.database_url)() as session:
        session.execute(update(Document).where(Document.external_id == "d1")
                        .values(external_id="d 1"))
        session.commit()
    url = f"{API}/collections/rf10/qrels/union"
    sources = f"gold,{fit['id']}"
    response = client.get(url, params={"sources": sources})
    assert response.status_code == 409, response.text
    body = response.json()
    assert body["code"] == "unwritable_id" and body["column"] == "doc", body
    assert "doc 'd 1' holds whitespace (U+0020 at character 2)" in body["detail"], body
    as_json = client.get(url, params={"sources": sources, "format": "json"})
    assert as_json.status_code == 200, as_json.text
    assert {row["doc"] for row in as_json.json()["data"]} == {"d 1", "d2"}


# 11. Two gold values for one task in one file: refused, naming both lines --------------------

def test_conflicting_gold_in_a_file_is_refused_with_both_lines(client) -> None:
    create_collection(client)
    text = ("topic\tdoc\tannotator\tlabel\tgold\n1\td1\tw1\t1\t0\n1\td2\tw1\t1\t\n"
            "1\td1\tw2\t1\t0\n1\td1\tw3\t2\t2\n")
    body = refused(upload(client, text), "conflicting_gold", line=5, column="gold")
    assert "gold 2 for topic '1', doc 'd1' differs from its gold 0 on line 2" in body["detail"]
    assert counts(client) == EMPTY_COUNTS
    # The same gold repeated, and rows without gold, are one task's one gold label.
    ok = upload(client, text.replace("\t2\t2\n", "\t2\t\n"))
    assert ok.status_code == 201, ok.text
    assert ok.json()["gold_labels"] == 1


def test_conflicting_gold_counts_the_stripped_ids_and_the_values_read(client) -> None:
    create_collection(client)
    text = "topic,doc,annotator,label,gold\n1,d1,w1,1,2.0\n1, d1 ,w2,1,2\n1,d1,w3,1,1\n"
    refused(upload(client, text, CSV), "conflicting_gold", line=4, column="gold",
            detail="gold 1 for topic '1', doc 'd1' differs from its gold 2 on line 2")


def test_conflicting_gold_in_a_json_bulk_and_against_could_not_judge_is_refused(client) -> None:
    """A JSON bulk names the judgment's index; in a file, the collection's ignore value (RF10's
    -2, stored as gold) conflicts with a scale value too (the reader alone cannot know it)."""
    create_collection(client)
    bulk = [{"topic": "1", "doc": "d1", "annotator": "w1", "label": 1, "gold": 2},
            {"topic": "1", "doc": "d2", "annotator": "w1", "label": 0},
            {"topic": "1", "doc": "d1", "annotator": "w2", "label": 1, "gold": 0}]
    response = client.post(f"{API}/collections/rf10/judgments", json={"judgments": bulk})
    assert response.status_code == 422, response.text
    body = response.json()
    assert body["code"] == "conflicting_gold" and body["index"] == 2, body
    assert "gold 0 for topic '1', doc 'd1' differs from its gold 2 on judgment 0" in body["detail"]
    refused(upload(client, "topic\tdoc\tannotator\tlabel\tgold\n1\td1\tw1\t1\t-2\n"
                           "1\td1\tw2\t1\t1\n"), "conflicting_gold", line=3, column="gold")
    assert counts(client) == EMPTY_COUNTS
    bulk[2]["gold"] = 2  # the same gold twice is one gold label
    ok = client.post(f"{API}/collections/rf10/judgments", json={"judgments": bulk})
    assert ok.status_code == 201 and ok.json()["gold_labels"] == 1, ok.text


def test_no_gold_values_conflict_with_nothing(client) -> None:
    """-1 (outside the scale and its ignore values) says "no gold" (README), like an empty cell."""
    create_collection(client)
    text = "topic,doc,annotator,label,gold\n1,d1,w1,1,-1\n1,d1,w2,1,2\n1,d1,w3,1,\n"
    response = upload(client, text, CSV)
    assert response.status_code == 201, response.text
    assert response.json()["gold_labels"] == 1


# 12. A file that is not UTF-8 names the line, and the byte within it ------------------------

def test_non_utf8_file_names_its_line_and_byte(client) -> None:
    create_collection(client)
    text = "topic\tdoc\tannotator\tlabel\n1\td1\tw1\t1\r\n1\td\xe92\tw1\t1\n"
    body = refused(client.post(f"{API}/collections/rf10/judgments/file",
                               content=text.encode("latin-1"), headers=TSV),
                   "invalid_encoding", line=3)
    assert body["detail"] == ("line 3: not UTF-8 text: byte 0xE9 is byte 4 of the line "
                              "(41 of the file)")


@pytest.mark.parametrize("path", ["judgments/file", "gold", "runs/r", "features", "topics"])
def test_a_gzip_compressed_file_is_named_so(client, path) -> None:
    """A judgments.tsv.gz sent as it is was "line 1: not UTF-8 text: byte 0x8B is byte 2 of
    the line", which does not say that the file is compressed."""
    create_collection(client)
    raw = gzip.compress(b"topic\tdoc\tannotator\tlabel\n1\td1\tw1\t1\n")
    method = client.post if path == "judgments/file" else client.put
    body = refused(method(f"{API}/collections/rf10/{path}", content=raw, headers=TSV),
                   "invalid_encoding", line=1)
    assert "gzip-compressed" in body["detail"], body
    assert counts(client) == EMPTY_COUNTS


# 13. Labels and gold beyond 32 bits: refused with the line like any bad label ---------------

@pytest.mark.parametrize("column", ["label", "gold"])
@pytest.mark.parametrize("value", ["99999999999999999999999", "2147483648", "-2147483649"])
def test_labels_and_gold_beyond_32_bits_are_refused_with_their_line(client, column, value) -> None:
    create_collection(client)
    label, gold = (value, "-1") if column == "label" else ("1", value)
    text = f"topic\tdoc\tannotator\tlabel\tgold\n1\td1\tw1\t1\t-1\n1\td2\tw1\t{label}\t{gold}\n"
    refused(upload(client, text), "invalid_row", line=3, column=column,
            detail=f"must be an integer from -2147483648 to 2147483647, got '{value}'")
    assert counts(client) == EMPTY_COUNTS


# 14. The line is in the detail once --------------------------------------------------------

def test_a_header_error_names_its_line_once(client) -> None:
    create_collection(client)
    body = refused(upload(client, "doc\tdocid\tannotator\tlabel\nd1\td1\tw1\t1\n"),
                   "invalid_header", line=1)
    assert body["detail"] == "line 1: header names the 'doc' column twice"
    body = refused(upload(client, "topic\tdoc\tannotator\tlabel\n" + "1\td1\tw1\t1\n" * 49
                          + "1\td1\tw1\tabc\n"), "invalid_row", line=51, column="label")
    assert body["detail"].count("51") == 1, body


# 15. A row with more values than the header: refused with its line ---------------------------

def test_a_row_with_more_values_than_the_header_is_refused_with_its_line(client) -> None:
    """An unquoted comma in an id ("Smith, J") made a row of 5 values under a 4-column header;
    the extra value was dropped and the row stored as "Smith" (two annotators merged)."""
    create_collection(client)
    text = "topic,doc,label,annotator\n1,d1,1,w1\n1,d2,0,Smith, J\n1,d3,1,Smith, K\n"
    body = refused(upload(client, text, CSV), "invalid_row", line=3,
                   detail="5 columns, but the header names 4")
    assert body["detail"].count("line 3") == 1, body
    refused(upload(client, text.replace(",", "\t")), "invalid_row", line=3)
    assert counts(client) == EMPTY_COUNTS
    # Quoted, the comma is part of the id; empty trailing cells (a spreadsheet's export) are fine.
    ok = upload(client, 'topic,doc,label,annotator\n1,d1,1,w1,,\n1,d2,0,"Smith, J"\n', CSV)
    assert ok.status_code == 201, ok.text
    judged = client.get(f"{API}/collections/rf10/judgments").json()["data"]
    assert [j["annotator"] for j in judged] == ["w1", "Smith, J"]


# 16. Topic "all" is the mean over topics: refused as a topic id -----------------------------

@pytest.mark.parametrize(("path", "content", "line", "column"), [
    ("judgments/file", "topic\tdoc\tannotator\tlabel\n1\td1\tw1\t1\nall\td1\tw1\t1\n", 3, "topic"),
    ("gold", "1 0 d1 1\nall 0 d1 1\n", 2, "topic"),
    ("runs/r", "1 Q0 d1 1 2.0 r\nall Q0 d1 1 2.0 r\n", 2, "topic"),
    ("topics", "1\tone\nall\ttwo\n", 2, "id"),
    ("features", "topic\tdoc\tf1\n1\td1\t0.5\nall\td1\t0.5\n", 3, "topic"),
])
def test_topic_all_is_refused_since_it_names_the_mean(client, path, content, line,
                                                      column) -> None:
    """An evaluation's results (and a sampling's estimates, and trec_eval -q output) give the
    mean over topics as topic "all": a collection with a topic "all" had two "all" rows per run
    and measure in GET /evaluations/{e}, and the dashboard showed its score as the mean."""
    create_collection(client)
    refused(send(client, path, content), "invalid_row", line=line, column=column,
            detail="'all'")
    assert counts(client) == EMPTY_COUNTS


def test_topic_all_is_refused_in_a_json_bulk(client) -> None:
    create_collection(client)
    judgments = [{"topic": t, "doc": "d1", "annotator": "w", "label": 1} for t in ("1", "all")]
    response = client.post(f"{API}/collections/rf10/judgments", json={"judgments": judgments})
    body = refused(response, "invalid_body", column="topic", detail="mean over topics")
    assert body["index"] == 1
    # Only the exact name: "All", "all1" and a document "all" are ids like any other.
    judgments = [{"topic": t, "doc": "all", "annotator": "all", "label": 1}
                 for t in ("All", "all1")]
    response = client.post(f"{API}/collections/rf10/judgments", json={"judgments": judgments})
    assert response.status_code == 201, response.text


# 17. Header columns that name nothing crowdqrels reads: said in the reply --------------------

def test_columns_not_read_are_named_in_the_reply(client) -> None:
    """A misspelt topic column ("topics") was ignored without a word, and with no topic column
    every row went to topic "0": the reply names the columns it did not read."""
    create_collection(client)
    text = "topics\tdoc\tannotator\tlabel\thitID\t\n7\td1\tw1\t1\th1\t\n7\td2\tw2\t0\th2\t\n"
    response = upload(client, text)
    assert response.status_code == 201, response.text
    assert response.json()["ignored_columns"] == ["topics", "hitID"]  # not the empty header cell
    judged = client.get(f"{API}/collections/rf10/judgments").json()["data"]
    assert {j["topic"] for j in judged} == {"0"}  # stored as the file says: no topic column
    # Every column read, and a JSON bulk: nothing to say.
    response = upload(client, "topic\tdoc\tannotator\tlabel\tgold\n7\td1\tw1\t1\t1\n")
    assert response.json()["ignored_columns"] == []
    response = client.post(f"{API}/collections/rf10/judgments", json={"judgments": [
        {"topic": "7", "doc": "d3", "annotator": "w1", "label": 1}]})
    assert response.json()["ignored_columns"] == []
