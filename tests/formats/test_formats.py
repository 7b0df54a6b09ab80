"""Parsers of topic/document texts, TREC runs and qrels, judgment files; the id rules."""

from __future__ import annotations

import json

import pytest

from app.formats.errors import FileFormatError
from app.formats.judgments_file import parse_judgments
from app.formats.qrels import UnwritableId, format_qrels, parse_qrels
from app.formats.runs import merge_runs, parse_run, parse_runs
from app.formats.texts import parse_texts, texts_from_json

# -- texts ------------------------------------------------------------------------------------


def test_tsv_with_and_without_header() -> None:
    assert parse_texts(b"id\ttext\n301\tinternational crime\n302\tpoliomyelitis\n") == {
        "301": "international crime", "302": "poliomyelitis"}
    assert parse_texts("301\tinternational crime\n\n302\ttab\tinside\n") == {
        "301": "international crime", "302": "tab\tinside"}


def test_tsv_bom_and_crlf() -> None:
    assert parse_texts("\ufeffd1\thello\r\nd2\tworld\r\n".encode()) == {"d1": "hello",
                                                                         "d2": "world"}


def test_tsv_duplicate_id_has_the_line() -> None:
    with pytest.raises(FileFormatError) as err:
        parse_texts("id\ttext\nd1\ta\nd2\tb\nd1\tc\n")
    assert err.value.code == "duplicate_row" and err.value.line == 4


def test_tsv_line_without_tab() -> None:
    with pytest.raises(FileFormatError) as err:
        parse_texts("d1\ta\nd2 b\n")
    assert err.value.code == "invalid_row" and err.value.line == 2


def test_empty_text_file() -> None:
    with pytest.raises(FileFormatError) as err:
        parse_texts(" \n\n")
    assert err.value.code == "empty_file"
    with pytest.raises(FileFormatError) as err:
        parse_texts("id\ttext\n")
    assert err.value.code == "empty_file"


def test_json_forms() -> None:
    expected = {"301": "crime", "302": "polio"}
    items = [{"id": 301, "text": "crime"}, {"id": "302", "text": "polio"}]
    assert parse_texts(json.dumps({"topics": items})) == expected
    assert parse_texts(json.dumps(items)) == expected
    assert parse_texts("\n".join(json.dumps(i) for i in items)) == expected  # JSON Lines
    assert parse_texts(json.dumps(expected)) == expected
    assert texts_from_json({"documents": [{"docno": "d1", "contents": "x"}]}) == {"d1": "x"}
    assert texts_from_json({"topics": {"301": "crime"}}) == {"301": "crime"}


def test_json_duplicate_id_has_the_line() -> None:
    raw = '{"topics": [\n  {"id": "1", "text": "a"},\n  {"id": "2", "text": "b"},\n' \
          '  {"id": "1", "text": "c"}\n]}'
    with pytest.raises(FileFormatError) as err:
        parse_texts(raw)
    assert err.value.code == "duplicate_row" and err.value.line == 4
    with pytest.raises(FileFormatError) as err:
        texts_from_json([{"id": "1", "text": "a"}, {"id": 1, "text": "b"}])
    assert err.value.code == "duplicate_row" and "item 2" in err.value.detail


def test_json_object_with_a_repeated_id() -> None:
    with pytest.raises(FileFormatError) as err:
        parse_texts('{\n"301": "a",\n"302": "b",\n"301": "c"\n}')
    assert err.value.code == "duplicate_row" and err.value.line == 4


def test_json_bad_item_and_syntax() -> None:
    with pytest.raises(FileFormatError) as err:
        texts_from_json([{"id": "1"}])
    assert err.value.code == "invalid_row" and err.value.column == "text"
    with pytest.raises(FileFormatError) as err:
        parse_texts('[\n{"id": "1", "text": "a"},\n{"id": "2" "text": "b"}\n]')
    assert err.value.code == "invalid_row" and err.value.line == 3


# -- runs -------------------------------------------------------------------------------------

RUN = """\
301 Q0 dA 1 9.5 runA
301 Q0 dB 2 7.0 runA
301 Q0 dC 3 7.0 runA
301 Q0 dD 4 8.0 runA
302 Q0 dA 1 1 runA
"""


def test_run_ordered_by_score_then_doc_id_descending() -> None:
    run = parse_run(RUN)
    assert run.name == "runA"
    # dD scores 8.0 > 7.0 despite its rank 4; dB and dC tie at 7.0: doc id descending -> dC first.
    assert run["301"] == ["dA", "dD", "dC", "dB"]
    assert run.file_ranks["301"].tolist() == [1, 4, 3, 2]
    assert run.scores["301"].tolist() == [9.5, 8.0, 7.0, 7.0]
    assert run.depth("301") == 4 and run.depth("303") == 0 and run.max_depth == 4
    assert dict(run) == {"301": ["dA", "dD", "dC", "dB"], "302": ["dA"]}


def test_several_tags_are_several_runs() -> None:
    runs = parse_runs(RUN + "301 Q0 dA 1 3 runB\n")
    assert sorted(runs) == ["runA", "runB"] and runs["runB"]["301"] == ["dA"]
    with pytest.raises(FileFormatError):
        parse_run(RUN + "301 Q0 dA 1 3 runB\n")
    assert parse_run(RUN, name="mine").name == "mine"


@pytest.mark.parametrize(
    ("line", "code", "column"),
    [
        ("301 Q0 dZ 5 abc runA", "invalid_row", "score"),
        ("301 Q0 dZ 5 nan runA", "invalid_row", "score"),
        ("301 Q0 dZ five 1.0 runA", "invalid_row", "rank"),
        ("301 Q0 dZ 5 1.0", "invalid_row", None),
        ("301 Q0 dB 5 1.0 runA", "duplicate_row", None),
        ("399 Q0 dZ 5 1.0 runA", "unknown_topic", "topic"),
    ],
)
def test_bad_run_lines_have_their_line_number(line: str, code: str, column: str | None) -> None:
    raw = RUN + "\n" + line + "\n"  # a blank line 6, the bad line 7
    with pytest.raises(FileFormatError) as err:
        parse_runs(raw, topics={"301", "302"})
    assert err.value.code == code and err.value.line == 7 and err.value.column == column
    assert "line 7" in err.value.detail
    if code == "duplicate_row":
        assert "first on line 2" in err.value.detail


def test_same_doc_in_two_runs_is_fine_and_topics_optional() -> None:
    runs = parse_runs(RUN + "301 Q0 dB 1 3 runB\n399 Q0 dB 1 3 runB\n")
    assert runs["runB"]["399"] == ["dB"]


def test_empty_run_and_merge() -> None:
    with pytest.raises(FileFormatError) as err:
        parse_runs("\n")
    assert err.value.code == "empty_file"
    a = parse_runs(RUN)
    with pytest.raises(FileFormatError) as err:
        merge_runs([a, a])
    assert err.value.code == "duplicate_run"
    assert list(merge_runs([a, parse_runs("301 Q0 dA 1 3 runB\n")])) == ["runA", "runB"]


# -- ids, numbers and messages shared by every file (QA pass 2) --------------------------------


@pytest.mark.parametrize("doc", ["d\u00a01", "d\u30001", "\u00a0d1"])
def test_run_ids_with_whitespace_are_refused_with_their_line(doc: str) -> None:
    with pytest.raises(FileFormatError) as err:
        parse_runs(RUN + f"301 Q0 {doc} 5 1.0 runA\n")
    assert (err.value.code, err.value.line, err.value.column) == ("invalid_row", 6, "doc")
    assert "whitespace (U+" in err.value.detail


@pytest.mark.parametrize(("field", "limit", "line"), [
    ("doc", 500, "301 Q0 {} 5 1.0 runA"), ("topic", 200, "{} Q0 dZ 5 1.0 runA")])
def test_run_ids_follow_the_length_limits_of_every_id(field: str, limit: int, line: str) -> None:
    assert parse_runs(RUN + line.format("x" * limit) + "\n")
    with pytest.raises(FileFormatError) as err:
        parse_runs(RUN + line.format("x" * 3_000_000) + "\n")
    assert (err.value.code, err.value.line, err.value.column) == ("invalid_row", 6, field)
    assert err.value.detail == f"line 6: {field} id is longer than {limit} characters"


def test_qrels_writer_refuses_an_id_a_trec_line_cannot_hold() -> None:
    assert format_qrels([("2", "d1", 1), ("1", "d2", 0)]) == "1 0 d2 0\n2 0 d1 1\n"
    for topic, doc, column in [("1", "d 1", "doc"), ("1 2", "d1", "topic"),
                               ("1", "d\u00a01", "doc"), ("1", "", "doc")]:
        with pytest.raises(UnwritableId) as err:
            format_qrels([("1", "d0", 1), (topic, doc, 0)])
        assert err.value.column == column and (err.value.topic, err.value.doc) == (topic, doc)
    with pytest.raises(UnwritableId, match=r"doc 'd 1' holds whitespace \(U\+0020 at character 2"):
        format_qrels([("1", "d 1", 0)])


def test_judgment_ids_hold_no_whitespace_but_annotators_may() -> None:
    rows = parse_judgments("topic,doc,annotator,label\n 1 ,\u00a0d1 ,Jane Doe,1\n")
    assert (rows.topics, rows.docs, rows.annotators) == (["1"], ["d1"], ["Jane Doe"])
    with pytest.raises(FileFormatError) as err:
        parse_judgments("topic,doc,annotator,label\n1,d1,w,1\n1,d 1,w,1\n")
    assert (err.value.line, err.value.column) == (3, "doc")
    assert err.value.detail == ("line 3: column 'doc' holds whitespace (U+0020 at character 2), "
                                "which TREC qrels and runs cannot hold")


def test_conflicting_gold_names_both_lines() -> None:
    text = "topic\tdoc\tannotator\tlabel\tgold\n1\td1\tw1\t1\t0\n1\td1\tw2\t1\t2\n"
    with pytest.raises(FileFormatError) as err:
        parse_judgments(text)
    assert (err.value.code, err.value.line, err.value.column) == ("conflicting_gold", 3, "gold")
    assert err.value.detail == ("line 3: gold 2 for topic '1', doc 'd1' differs from its gold 0 "
                                "on line 2 (a task has one gold label)")
    # Another topic's d1, the same value again and a row without gold do not conflict.
    rows = parse_judgments(text.replace("1\td1\tw2\t1\t2", "2\td1\tw2\t1\t2")
                           + "1\td1\tw3\t0\t0\n1\td1\tw4\t0\t\n")
    assert rows.golds == [0, 2, 0, None] and rows.gold_conflict() is None
    # A negative value says "no gold" unless the collection stores it (an ignore value: -2).
    rows = parse_judgments(text.replace("\t0\n", "\t-2\n", 1))
    assert rows.golds == [-2, 2] and rows.gold_conflict() is None
    assert rows.gold_conflict(also={-2}) == (0, 1)


@pytest.mark.parametrize("column", ["label", "gold"])
def test_labels_beyond_32_bits_are_a_line_error_not_an_overflow(column: str) -> None:
    big = "99999999999999999999999"
    label, gold = (big, "1") if column == "label" else ("1", big)
    with pytest.raises(FileFormatError) as err:
        parse_judgments(f"doc\tannotator\tlabel\tgold\nd1\tw1\t1\t1\nd1\tw2\t{label}\t{gold}\n")
    assert (err.value.code, err.value.line, err.value.column) == ("invalid_row", 3, column)
    assert err.value.detail == (f"line 3: column {column!r} must be an integer from -2147483648 "
                                f"to 2147483647, got '{big}'")
    assert parse_judgments("doc\tannotator\tlabel\nd1\tw1\t2147483647\n").labels == [2**31 - 1]


@pytest.mark.parametrize(("raw", "line", "detail"), [
    (b"doc\tannotator\tlabel\nd\xff1\tw1\t1\n", 2,
     "line 2: not UTF-8 text: byte 0xFF is byte 2 of the line (22 of the file)"),
    (b"\xef\xbb\xbfdoc\tannotator\tlabel\r\nd1\tw1\t1\rd2\tw\xe91\t1\n", 3,
     "line 3: not UTF-8 text: byte 0xE9 is byte 5 of the line (37 of the file)"),
    (b"\x80doc", 1, "line 1: not UTF-8 text: byte 0x80 is byte 1 of the line (1 of the file)"),
])
def test_non_utf8_names_the_line_and_byte(raw: bytes, line: int, detail: str) -> None:
    for parse in (parse_judgments, parse_qrels, parse_runs, parse_texts):
        with pytest.raises(FileFormatError) as err:
            parse(raw)
        assert (err.value.code, err.value.line, err.value.detail) == ("invalid_encoding", line,
                                                                      detail)


@pytest.mark.parametrize(("raw", "line"), [
    ("doc\tdoc_id\tannotator\tlabel\nd1\td1\tw1\t1\n", 1),  # raised without "line 1:"
    ("doc\tannotator\n", 1),
    ("doc\tannotator\tlabel\n" + "d1\tw1\t1\n" * 49 + "d1\tw1\tabc\n", 51),  # with it
])
def test_a_file_error_names_its_line_exactly_once(raw: str, line: int) -> None:
    with pytest.raises(FileFormatError) as err:
        parse_judgments(raw)
    assert err.value.line == line
    assert str(err.value) == err.value.detail
    assert err.value.detail.startswith(f"line {line}: ")
    assert err.value.detail.count(f"line {line}") == 1


def test_qrels_from_columns_are_the_rows_text() -> None:
    """``format_qrels_columns`` writes ``format_qrels``' text: sorted columns as they are,
    unsorted ones sorted (by code point, as Python sorts), a bad id refused the same way."""
    import numpy as np

    from app.formats.qrels import format_qrels_columns

    rng = np.random.default_rng(0)
    topics = np.array([str(t) for t in rng.integers(1, 40, 500)] + ["Z", "a", "é1"])
    docs = np.array([f"d{rng.integers(0, 10_000)}x{i}" for i in range(503)])
    values = rng.integers(-1, 4, 503)
    rows = list(zip(topics.tolist(), docs.tolist(), values.tolist(), strict=True))
    assert format_qrels_columns(topics, docs, values) == format_qrels(rows)
    order = np.lexsort((docs, topics))
    assert format_qrels_columns(topics[order], docs[order], values[order]) == format_qrels(rows)
    for topic, doc, column in [("1", "d 1", "doc"), ("1 2", "d1", "topic"), ("1", "", "doc")]:
        with pytest.raises(UnwritableId) as err:
            format_qrels_columns(np.array(["1", topic]), np.array(["d0", doc]), np.array([1, 0]))
        assert err.value.column == column and (err.value.topic, err.value.doc) == (topic, doc)
