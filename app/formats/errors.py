"""The one error a parser raises: where in the file, and what is wrong."""

from __future__ import annotations

import csv
from collections.abc import Iterable, Iterator
from itertools import chain
from typing import Any

from app.formats.ids import CONTROL_IN_TEXT


class FileFormatError(ValueError):
    """A bad file: ``line`` is the 1-based line number in the file (the header is line 1).

    With a line, ``detail`` (and ``str()``) starts with ``line N:`` exactly once, whether or not
    the raiser wrote it: the API's detail and a CLI's message print it as is, never adding the
    line a second time."""

    def __init__(self, detail: str, *, code: str, line: int | None = None,
                 column: str | None = None) -> None:
        if line is not None and not detail.startswith(f"line {line}:"):
            detail = f"line {line}: {detail}"
        super().__init__(detail)
        self.detail = detail
        self.code = code
        self.line = line
        self.column = column


# The leading bytes of compressed files people send in place of the text (a judgments.tsv.gz)
# (each holds a byte that is not UTF-8 early on: that is when they are looked for)
COMPRESSED = ((b"\x1f\x8b", "gzip-compressed"), (b"PK\x03\x04", "a zip archive"),
              (b"\xfd7zXZ\x00", "xz-compressed"))


def decode_text(raw: bytes | str) -> str:
    """UTF-8 text without a byte-order mark; refuse other encodings, and a NUL character (no
    text here may hold one: PostgreSQL cannot store it), with a clear error naming the line."""
    if isinstance(raw, str):
        text = raw.removeprefix("\ufeff")
    else:
        try:
            text = raw.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise _not_utf8(raw, exc) from None
    nul = text.find("\x00")
    if nul >= 0:
        line = line_of(text, nul)
        raise FileFormatError(f"line {line}: a NUL character (U+0000) is not text",
                              code="invalid_encoding", line=line)
    return text


def _not_utf8(raw: bytes, exc: UnicodeDecodeError, *, lines_before: int = 0,
              bytes_before: int = 0) -> FileFormatError:
    """The error naming the line of the first byte that is not UTF-8 and its position in the
    line and in the file (1-based, in bytes, the byte-order mark counted in the file). Lines
    are counted on the bytes as :func:`line_of` counts them on text (no UTF-8 sequence holds a
    \\n or \\r byte). ``raw`` may be a block of a longer file (:func:`decoded_blocks`), after
    ``lines_before`` line ends and ``bytes_before`` bytes."""
    for magic, kind in COMPRESSED:
        if bytes_before == 0 and raw.startswith(magic):  # byte 0x8B of "line 1" would not say
            return FileFormatError(                    # what is wrong
                f"line 1: the file is {kind}, not text: decompress it first",
                code="invalid_encoding", line=1)
    data = bytes(exc.object)  # without the byte-order mark that utf-8-sig dropped
    start = exc.start
    line = (data.count(b"\n", 0, start) + data.count(b"\r", 0, start)
            - data.count(b"\r\n", 0, start) + 1 + lines_before)
    line_start = max(data.rfind(b"\n", 0, start), data.rfind(b"\r", 0, start)) + 1
    in_file = start + len(raw) - len(data) + 1 + bytes_before
    return FileFormatError(
        f"line {line}: not UTF-8 text: byte 0x{data[start]:02X} is byte {start - line_start + 1} "
        f"of the line ({in_file:,} of the file)",
        code="invalid_encoding", line=line,
    )


def decoded_blocks(chunks: Iterable[bytes]) -> Iterator[str]:
    """The text of a file that arrives in byte chunks (an upload spooled to disk), as
    :func:`decode_text` reads it, in blocks that end at a line end (the last one may not),
    with every line end written \\n: one block at a time, never the whole file. Errors name
    the line and the byte in the whole file, as :func:`decode_text`'s do. A file without a
    \\n (lines ended by \\r alone) is one block."""
    pending = b""
    lines_before = 0
    bytes_before = 0
    first = True
    for chunk in chain(chunks, [None]):
        if chunk is not None:
            pending += chunk
            cut = pending.rfind(b"\n") + 1
            if cut == 0:
                continue
            raw, pending = pending[:cut], pending[cut:]
        else:
            raw, pending = pending, b""
            if not raw:
                return
        try:
            text = raw.decode("utf-8-sig" if first else "utf-8")
        except UnicodeDecodeError as exc:
            raise _not_utf8(raw, exc, lines_before=lines_before,
                            bytes_before=bytes_before) from None
        nul = text.find("\x00")
        if nul >= 0:
            line = line_of(text, nul) + lines_before
            raise FileFormatError(f"line {line}: a NUL character (U+0000) is not text",
                                  code="invalid_encoding", line=line)
        if "\r" in text:
            text = text.replace("\r\n", "\n").replace("\r", "\n")
        first = False
        bytes_before += len(raw)
        lines_before += text.count("\n")
        yield text


def line_of(text: str, position: int) -> int:
    """The 1-based line of ``text[position]``, lines ending at \\n, \\r\\n or \\r (as
    :func:`split_lines` cuts them)."""
    return (text.count("\n", 0, position) + text.count("\r", 0, position)
            - text.count("\r\n", 0, position) + 1)


def split_lines(text: str) -> list[str]:
    """The lines of ``text``, ended by \\n, \\r\\n or \\r only: ``str.splitlines`` also
    ends a line at \\f, \\v, \\x1c-\\x1e, U+0085, U+2028 and U+2029, which splits a row
    whose field holds one. The last line may be empty."""
    return list(iter_lines(text))


def iter_lines(text: str) -> Iterator[str]:
    """The lines of ``text`` one at a time (no list of all the lines; :func:`split_lines`
    makes the list)."""
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    start = 0
    while True:
        end = text.find("\n", start)
        if end < 0:
            yield text[start:]
            return
        yield text[start:end]
        start = end + 1


def refuse_control_characters(text: str) -> None:
    """Refuse a control character (other than tab and line ends) anywhere in a
    whitespace-separated file (qrels, runs), naming its line: no field there may hold one."""
    found = CONTROL_IN_TEXT.search(text)
    if found:
        line = line_of(text, found.start())
        raise FileFormatError(
            f"line {line}: a control character (U+{ord(found.group()):04X}) is not allowed",
            code="invalid_row", line=line,
        )


def delimited_rows(raw: bytes | str) -> tuple[int, Iterator[tuple[int, list[str]]]]:
    """(line of the header, (line, fields) of each row from the header on) of a delimited file:
    tab if the header line has one, else comma. Leading blank lines are skipped; an empty file
    is refused.

    Lines end at \\n, \\r\\n or \\r. CSV fields may be quoted (a quoted field may span
    lines: ``line`` is the row's first); TSV does not interpret quotes (a field may start with
    ``"``). A row the csv module cannot read (a field over its size limit) is ``invalid_row``
    with its line."""
    stream = lines_with_ends(decode_text(raw))
    skipped = 0
    for first in stream:
        if first.strip():
            break
        skipped += 1
    else:
        raise FileFormatError("the file is empty", code="empty_file")
    if "\t" in first:
        reader = csv.reader(chain([first], stream), delimiter="\t", quoting=csv.QUOTE_NONE)
    else:
        reader = csv.reader(chain([first], stream), delimiter=",")
    return skipped + 1, numbered_rows(reader, skipped)


def lines_with_ends(text: str) -> Iterator[str]:
    """The lines of ``text`` with their ends (as the csv module wants them), cut at \\n,
    \\r\\n or \\r only, one at a time (io.StringIO would hold a 4-byte-per-character copy)."""
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    start = 0
    while True:
        end = text.find("\n", start)
        if end < 0:
            if start < len(text):
                yield text[start:]
            return
        yield text[start:end + 1]
        start = end + 1


def numbered_rows(reader: Any, skipped: int) -> Iterator[tuple[int, list[str]]]:
    end = 0  # the last line read so far
    try:
        for row in reader:
            yield skipped + end + 1, row
            end = reader.line_num
    except csv.Error as exc:
        line = skipped + reader.line_num
        limit = csv.field_size_limit()
        detail = (f"a field is longer than {limit:,} characters" if "field limit" in str(exc)
                  else str(exc))
        raise FileFormatError(f"line {line}: {detail}", code="invalid_row", line=line) from None
