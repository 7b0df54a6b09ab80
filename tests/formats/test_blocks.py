"""Reading a file in blocks (an upload spooled to disk): the same text, lines and errors as
reading it whole."""

from __future__ import annotations

import pytest

from app.formats.errors import FileFormatError, decode_text, decoded_blocks
from app.formats.judgments_file import judgment_chunks, parse_judgments


def pieces(raw: bytes, size: int) -> list[bytes]:
    return [raw[i:i + size] for i in range(0, len(raw), size)]


@pytest.mark.parametrize("size", [1, 2, 3, 7, 1000])
def test_blocks_join_to_the_whole_text_with_newline_ends(size) -> None:
    raw = "\ufeffa\tb\r\nc\u00e9\rd\n\ne\r\n".encode()
    blocks = list(decoded_blocks(pieces(raw, size)))
    assert "".join(blocks) == "a\tb\nc\u00e9\nd\n\ne\n"
    assert all(b.endswith("\n") for b in blocks)


@pytest.mark.parametrize("size", [1, 5, 1000])
def test_errors_name_the_line_and_byte_of_the_whole_file(size) -> None:
    raw = b"topic\tdoc\tannotator\tlabel\n1\td1\tw1\t1\n1\td\xff2\tw1\t1\n"
    with pytest.raises(FileFormatError) as whole:
        decode_text(raw)
    with pytest.raises(FileFormatError) as blocked:
        list(decoded_blocks(pieces(raw, size)))
    assert blocked.value.detail == whole.value.detail and blocked.value.line == 3
    nul = raw.replace(b"\xff", b"\x00")
    with pytest.raises(FileFormatError) as blocked:
        list(decoded_blocks(pieces(nul, size)))
    assert blocked.value.line == 3 and blocked.value.code == "invalid_encoding"


def test_chunks_carry_the_file_lines_and_the_checks_of_a_whole_file() -> None:
    text = "\n\ntopic\tdoc\tannotator\tlabel\tx\n" + "".join(
        f"1\td{i}\tw{i % 3}\t{i % 2}\t\n" + ("\n" if i == 4 else "") for i in range(10))
    whole = parse_judgments(text)
    chunks = list(judgment_chunks(decoded_blocks(pieces(text.encode(), 9)), chunk_rows=3))
    assert len(chunks) == 4 and all(1 <= len(c) <= 3 for c in chunks)
    assert sum((c.lines for c in chunks), []) == whole.lines == [
        4, 5, 6, 7, 8, 10, 11, 12, 13, 14]
    assert sum((c.docs for c in chunks), []) == whole.docs
    assert chunks[0].ignored_columns == whole.ignored_columns == ("x",)
    bad = text.replace("1\td7\tw1\t1", "1\td7\tw1")
    with pytest.raises(FileFormatError) as error:
        list(judgment_chunks(decoded_blocks([bad.encode()]), chunk_rows=3))
    assert error.value.line == 12 and error.value.code == "invalid_row"


def test_a_tsv_field_over_the_csv_limit_is_refused_at_its_line_as_csv_refuses_it() -> None:
    import csv

    limit = csv.field_size_limit()
    long = "x" * (limit + 1)
    text = f"topic\tdoc\tannotator\tlabel\n1\td1\tw1\t1\n1\t{long}\tw1\t1\n1\td3\t\t1\n"
    with pytest.raises(FileFormatError) as error:
        parse_judgments(text)
    assert error.value.line == 3 and error.value.code == "invalid_row"
    assert error.value.detail == f"line 3: a field is longer than {limit:,} characters"
    earlier = text.replace("d1\tw1\t1", "d1\tw1\tnot-a-label")
    with pytest.raises(FileFormatError) as error:
        parse_judgments(earlier)
    assert error.value.line == 2 and error.value.column == "label"
