"""The one error a parser raises: where in the file, and what is wrong."""

from __future__ import annotations

import csv
from collections.abc import Iterator


class FileFormatError(ValueError):
    """A bad file: ``line`` is the 1-based line number in the file (the header is line 1)."""

    def __init__(self, detail: str, *, code: str, line: int | None = None,
                 column: str | None = None) -> None:
        super().__init__(detail)
        self.detail = detail
        self.code = code
        self.line = line
        self.column = column


def decode_text(raw: bytes | str) -> str:
    """UTF-8 text without a byte-order mark; refuse other encodings, and a NUL character (no
    text here may hold one: PostgreSQL cannot store it), with a clear error naming the line."""
    if isinstance(raw, str):
        text = raw.removeprefix("\ufeff")
    else:
        try:
            text = raw.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise FileFormatError(
                f"file is not UTF-8 text (byte {exc.start})", code="invalid_encoding"
            ) from exc
    nul = text.find("\x00")
    if nul >= 0:
        line = len((text[:nul] + "x").splitlines())  # as the parsers count lines
        raise FileFormatError(f"line {line}: a NUL character (U+0000) is not text",
                              code="invalid_encoding", line=line)
    return text


def delimited_rows(raw: bytes | str) -> tuple[int, Iterator[list[str]]]:
    """(line number of the header, csv reader from the header on) of a delimited file: tab if the
    header line has one, else comma. Leading blank lines are skipped; an empty file is refused."""
    lines = decode_text(raw).splitlines()
    first = next((i for i, line in enumerate(lines) if line.strip()), None)
    if first is None:
        raise FileFormatError("the file is empty", code="empty_file")
    delimiter = "\t" if "\t" in lines[first] else ","
    return first + 1, csv.reader(lines[first:], delimiter=delimiter)
