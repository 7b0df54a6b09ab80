"""Parsers of topic/document texts and TREC runs."""

from __future__ import annotations

import json

import pytest

from app.formats.errors import FileFormatError
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
