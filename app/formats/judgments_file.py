"""Judgment files: delimited text (TSV or CSV) with a header naming the columns.

Accepted column names (case-insensitive), DESIGN §5:
- topic: ``topic``, ``topicID``, ``topic_id``, ``query``, ``qid`` (optional: without it every row
  belongs to the one topic ``default_topic``; crowd-kit files have ``task`` only);
- doc: ``doc``, ``docID``, ``doc_id``, ``document``, ``task``;
- annotator: ``annotator``, ``workerID``, ``worker_id``, ``worker``, ``judge``;
- label: ``label``, ``relevance``, ``rel``;
- gold (optional): ``gold`` — the expert label of the row's task; negative values mean unknown.
Blank lines are skipped. The delimiter is a tab if the header has one, else a comma; a row
with more values than the header names is refused (empty trailing cells excepted). CSV fields
may be quoted; TSV does not interpret quotes. Lines end at \\n, \\r\\n or \\r; an id may not
hold a line break or another control character (nor, for topics and documents, whitespace), and
labels and gold are ASCII whole numbers of 32 bits (``app.formats.ids``). Two lines giving one
task different gold labels (values >= 0; ``JudgmentRows.gold_conflict``) are refused
(``conflicting_gold``, both lines named).
"""

from __future__ import annotations

import csv
from collections.abc import Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import chain, islice, repeat

from app.formats.errors import FileFormatError, decode_text, lines_with_ends, numbered_rows
from app.formats.ids import INT32, BadId, clean_ids, parse_integer

ALIASES: dict[str, tuple[str, ...]] = {
    "topic": ("topic", "topicid", "topic_id", "query", "qid"),
    "doc": ("doc", "docid", "doc_id", "document", "task"),
    "annotator": ("annotator", "workerid", "worker_id", "worker", "judge"),
    "label": ("label", "relevance", "rel"),
    "gold": ("gold",),
}
REQUIRED = ("doc", "annotator", "label")
DEFAULT_TOPIC = "0"
# Rows per chunk of a file read in chunks (judgment_chunks): the memory a reader holds.
CHUNK_ROWS = 100_000


@dataclass(frozen=True)
class JudgmentRows:
    """Columns of the parsed rows, aligned; ``lines`` gives each row's line in the file (for a
    JSON body: its index). Ids are clean (``app.formats.ids.clean_ids``)."""

    topics: list[str]
    docs: list[str]
    annotators: list[str]
    labels: list[int]
    golds: list[int | None] | None
    lines: list[int]
    # header columns that none of the names above match, left unread (a file's own extras, or a
    # misspelt ``topics``: without a topic column every row is in topic DEFAULT_TOPIC)
    ignored_columns: tuple[str, ...] = ()

    def __len__(self) -> int:
        return len(self.labels)

    def gold_conflict(self, also: Collection[int] = ()) -> tuple[int, int] | None:
        """(first, second): the indexes of the first two rows that give one task (topic, doc)
        different gold labels, or None. A gold label is a value >= 0 or one in ``also`` (a
        collection's ignore values, such as -2, which it stores as gold); an empty cell and other
        negative values (RF10's -1) say "no gold" and conflict with nothing."""
        if self.golds is None:
            return None
        counted = set(also)
        seen: dict[tuple[str, str], int] = {}
        for i, (gold, key) in enumerate(zip(self.golds, zip(self.topics, self.docs,
                                                            strict=True), strict=True)):
            if gold is None or (gold < 0 and gold not in counted):
                continue
            first = seen.setdefault(key, i)
            if self.golds[first] != gold:
                return first, i
        return None


def _map_header(header: list[str]) -> dict[str, int]:
    index: dict[str, int] = {}
    for position, name in enumerate(header):
        key = name.strip().lower()
        for canonical, names in ALIASES.items():
            if key in names:
                if canonical in index:
                    raise FileFormatError(
                        f"header names the {canonical!r} column twice", code="invalid_header",
                        line=1, column=name.strip(),
                    )
                index[canonical] = position
    missing = [c for c in REQUIRED if c not in index]
    if missing:
        accepted = "; ".join(f"{c}: {', '.join(ALIASES[c])}" for c in missing)
        raise FileFormatError(
            f"no recognisable header: missing column(s) {', '.join(missing)} "
            f"(accepted: {accepted}){_header_hint(header)}",
            code="invalid_header", line=1,
        )
    return index


def _header_hint(header: list[str]) -> str:
    """What a header that names no column most likely means: JSON sent as a file, or a file
    separated by spaces (neither a tab nor a comma in its first line: one field)."""
    first = ",".join(header).lstrip().lstrip("\ufeff")
    if first.startswith(("{", "[")):
        return ("; this looks like JSON: a judgment file is TSV or CSV; JSON judgments go to "
                "POST /api/v1/collections/{c}/judgments as {\"judgments\": [...]}")
    if len(header) == 1 and len(header[0].split()) > 1:
        return ("; the header has neither a tab nor a comma but spaces: the delimiter is "
                "likely the problem (separate the columns with tabs, TSV, or commas, CSV)")
    return ""


def _conflicting_gold(rows: JudgmentRows, first: int, second: int, *,
                      column: str) -> FileFormatError:
    golds = rows.golds or []
    line = rows.lines[second]
    return FileFormatError(
        f"line {line}: gold {golds[second]} for topic {rows.topics[second]!r}, doc "
        f"{rows.docs[second]!r} differs from its gold {golds[first]} on line "
        f"{rows.lines[first]} (a task has one gold label)",
        code="conflicting_gold", line=line, column=column,
    )


def _check_width(row: list[str], *, line: int, width: int, header: list[str]) -> None:
    """FileFormatError for a row with fewer columns than the header's last one read, or with
    values beyond the header's columns."""
    if len(row) < width:
        column = header[len(row)].strip() if len(row) < len(header) else None
        raise FileFormatError(
            f"line {line}: expected at least {width} columns, found {len(row)}",
            code="invalid_row", line=line, column=column,
        )
    if any(cell.strip() for cell in row[len(header):]):
        # more values than the header names: a delimiter inside a field (an unquoted comma
        # in an id) shifts the columns after it, so the row cannot be read as written
        raise FileFormatError(
            f"line {line}: {len(row)} columns, but the header names {len(header)} (a "
            f"delimiter inside a field? quote the field)",
            code="invalid_row", line=line,
        )


def _clean_ids(columns: list[tuple[str, int, list[str]]], line_numbers: list[int],
               names: dict[int, str]) -> dict[str, list[str]]:
    """Each id column cleaned (``clean_ids``); FileFormatError at the first bad id in the
    file."""
    cleaned: dict[str, list[str]] = {}
    problems = []
    for kind, position, values in columns:
        try:
            cleaned[kind] = clean_ids(values, kind=kind)
        except BadId as bad:
            problems.append((bad.index, position, bad.reason))
    if problems:
        row_index, position, reason = min(problems)
        line = line_numbers[row_index]
        raise FileFormatError(f"line {line}: column {names[position]!r} {reason}",
                              code="invalid_row", line=line, column=names[position])
    return cleaned


@dataclass(frozen=True)
class _Header:
    header: list[str]
    index: dict[str, int]
    names: dict[int, str]
    width: int  # one past the last column read
    delimiter: str
    ignored: tuple[str, ...]


def _read_header(header: list[str], delimiter: str) -> _Header:
    index = _map_header(header)
    read = set(index.values())
    return _Header(header, index, {i: header[i].strip() for i in range(len(header))},
                   max(index.values()) + 1, delimiter,
                   tuple(name.strip() for position, name in enumerate(header)
                         if position not in read and name.strip()))


def _integers(values: Sequence[str], *, blank_is_none: bool) -> tuple[list[int | None], int | None]:
    """The column's values as 32-bit integers (``blank_is_none``: an empty or blank cell is
    None), each distinct text parsed once; also the index of the first value that is not one
    (the caller raises for it), or None."""
    parsed: dict[str, int | None] = {}
    bad: set[str] = set()
    for value in set(values):
        if blank_is_none and (not value or value.isspace()):
            parsed[value] = None
            continue
        number = parse_integer(value, INT32)
        if number is None:
            bad.add(value)
        else:
            parsed[value] = number
    if bad:
        first = next(i for i, v in enumerate(values) if v in bad)
        return [], first
    return list(map(parsed.__getitem__, values)), None


def _bad_integer(value: str, *, line: int, column: str) -> FileFormatError:
    shown = value.strip()
    shown = shown if len(shown) <= 40 else shown[:40] + "..."
    return FileFormatError(
        f"line {line}: column {column!r} must be an integer from {INT32[0]} to {INT32[1]}, "
        f"got {shown!r}",
        code="invalid_row", line=line, column=column,
    )


def _chunk(rows: list[list[str]], lines: list[int], h: _Header, *,
           default_topic: str) -> JudgmentRows | None:
    """The rows of one chunk as columns (None: no judgment in it), checked in a whole file's
    order: the first row with a bad width, an over-long field, a bad label or gold (in that
    order within a row), then the first bad id, then gold labels that conflict
    (``JudgmentRows.gold_conflict``)."""
    firsts = [row[0] if row else "" for row in rows]
    if not all(map(str.strip, firsts)):  # blank lines (and rows starting with a blank cell)
        kept = [i for i, row in enumerate(rows)
                if row and (row[0].strip() or "".join(row).strip())]
        rows, lines = [rows[i] for i in kept], [lines[i] for i in kept]
    if not rows:
        return None
    widths = set(map(len, rows))
    limit = csv.field_size_limit()
    long_fields = h.delimiter == "\t" and max(len(f) for row in rows for f in row) > limit
    row_error: FileFormatError | None = None
    if min(widths) < h.width or max(widths) > len(h.header) or long_fields:
        for i, row in enumerate(rows):
            try:
                if long_fields and any(len(f) > limit for f in row):
                    # as the csv module refuses it (a comma-separated file goes through it)
                    raise FileFormatError(
                        f"line {lines[i]}: a field is longer than {limit:,} characters",
                        code="invalid_row", line=lines[i])
                if len(row) < h.width or len(row) > len(h.header):
                    _check_width(row, line=lines[i], width=h.width, header=h.header)
            except FileFormatError as error:
                # rows before it may hold a bad label or gold: those are named first
                row_error, rows, lines = error, rows[:i], lines[:i]
                break
    columns: list[Sequence[str]] = (
        list(zip(*rows, strict=True)) if len(widths) == 1 and row_error is None
        else [[row[i] for row in rows] for i in range(h.width)])
    return _columns_chunk(columns, lines, h, default_topic=default_topic, row_error=row_error)


def _columns_chunk(columns: Sequence[Sequence[str]], lines: list[int], h: _Header, *,
                   default_topic: str,
                   row_error: FileFormatError | None = None) -> JudgmentRows:
    """:func:`_chunk` on rows already split into columns (of ``lines``, none blank, none of a
    bad width); ``row_error``: the error of the row after them, raised unless one of theirs
    comes first."""
    i_topic, i_gold = h.index.get("topic"), h.index.get("gold")
    i_doc, i_ann, i_label = h.index["doc"], h.index["annotator"], h.index["label"]
    labels, bad_label = _integers(columns[i_label], blank_is_none=False) if lines else ([], None)
    golds: list[int | None] | None = None
    bad_gold = None
    if i_gold is not None and lines:
        golds, bad_gold = _integers(columns[i_gold], blank_is_none=True)
    if bad_label is not None and (bad_gold is None or bad_label <= bad_gold):
        raise _bad_integer(columns[i_label][bad_label], line=lines[bad_label],
                           column=h.names[i_label])
    if bad_gold is not None:
        raise _bad_integer(columns[i_gold][bad_gold],  # type: ignore[index]
                           line=lines[bad_gold], column=h.names[i_gold])  # type: ignore[index]
    if row_error is not None:
        raise row_error
    id_columns = [("doc", i_doc, columns[i_doc]), ("annotator", i_ann, columns[i_ann])]
    if i_topic is not None:
        id_columns.insert(0, ("topic", i_topic, columns[i_topic]))
    cleaned = _clean_ids(id_columns, lines, h.names)
    topic_ids = [default_topic] * len(labels) if i_topic is None else cleaned["topic"]
    parsed = JudgmentRows(topic_ids, cleaned["doc"], cleaned["annotator"],
                          labels, golds, lines, h.ignored)  # type: ignore[arg-type]
    conflict = parsed.gold_conflict()
    if conflict is not None:
        raise _conflicting_gold(parsed, *conflict, column=h.names[i_gold])  # type: ignore[index]
    return parsed


def _tsv_chunk(parts: list[str], lines: list[int], h: _Header, *,
               default_topic: str) -> JudgmentRows | None:
    """TSV lines (without their ends) as ``csv.reader`` with ``QUOTE_NONE`` reads them: the
    fields between tabs. When every line has the header's number of fields and none is blank
    (the usual file), the fields are cut all at once into columns (strings only: lists of
    lists per row would cost more in garbage collection than in splitting); else row by row."""
    width = len(h.header)
    if max(map(len, parts), default=0) <= csv.field_size_limit() and set(
            map(str.count, parts, repeat("\t"))) == {width - 1}:
        flat = "\t".join(parts).split("\t")
        columns = [flat[i::width] for i in range(h.width)]
        if all(map(str.strip, columns[0])):
            return _columns_chunk(columns, lines, h, default_topic=default_topic)
    return _chunk([p.split("\t") for p in parts], lines, h, default_topic=default_topic)


def judgment_chunks(blocks: Iterable[str], *, default_topic: str = DEFAULT_TOPIC,
                    chunk_rows: int | None = CHUNK_ROWS) -> Iterator[JudgmentRows]:
    """A judgment file's rows in chunks of about ``chunk_rows`` (None: the whole file in one),
    from its text in blocks that end at line ends, with \\n line ends
    (``app.formats.errors.decoded_blocks``). Each chunk is checked as :func:`parse_judgments`
    checks a file (FileFormatError naming the line; within a chunk, the same order), except
    for gold labels that conflict across chunks, which the caller checks
    (``JudgmentRows.gold_conflict`` within one). Lines are the file's."""
    text_blocks = iter(blocks)
    skipped = 0
    block = ""
    header_line = ""
    for block in text_blocks:
        start = 0
        while start < len(block):  # the first line that is not blank, a line at a time
            end = block.find("\n", start)
            end = len(block) if end < 0 else end
            if block[start:end].strip():
                header_line = block[start:end]
                block = block[end + 1:]
                break
            skipped += 1
            start = end + 1
        if header_line:
            break
    if not header_line:
        raise FileFormatError("the file is empty", code="empty_file")
    delimiter = "\t" if "\t" in header_line else ","
    header = next(csv.reader([header_line], delimiter=delimiter, quoting=csv.QUOTE_NONE)
                  if delimiter == "\t" else csv.reader([header_line], delimiter=","), [""])
    h = _read_header(header, delimiter)
    first_row_line = skipped + 2
    found = False
    rest = chain([block], text_blocks)
    if delimiter == "\t":
        parts: list[str] = []
        lines: list[int] = []
        line = first_row_line
        for text in rest:
            if not text:
                continue
            block = text.split("\n")
            if block[-1] == "":
                block.pop()
            parts += block
            lines += range(line, line + len(block))
            line += len(block)
            while chunk_rows is not None and len(parts) >= chunk_rows:
                chunk = _tsv_chunk(parts[:chunk_rows], lines[:chunk_rows], h,
                                   default_topic=default_topic)
                del parts[:chunk_rows], lines[:chunk_rows]
                if chunk is not None:
                    found = True
                    yield chunk
        chunk = _tsv_chunk(parts, lines, h, default_topic=default_topic) if parts else None
        if chunk is not None:
            found = True
            yield chunk
    else:
        numbered = numbered_rows(csv.reader(
            (piece for text in rest for piece in lines_with_ends(text)), delimiter=","),
            first_row_line - 1)
        while True:
            taken = list(islice(numbered, chunk_rows))
            if not taken:
                break
            chunk = _chunk([r for _, r in taken], [n for n, _ in taken], h,
                           default_topic=default_topic)
            if chunk is not None:
                found = True
                yield chunk
            if chunk_rows is None:
                break
    if not found:
        raise FileFormatError("the file has a header but no judgments", code="empty_file")


def parse_judgments(raw: bytes | str, *, default_topic: str = DEFAULT_TOPIC) -> JudgmentRows:
    """Parse a whole judgment file; raise FileFormatError naming the line and column. Ids follow
    :func:`app.formats.ids.clean_ids` (stripped, non-empty, no control character, length)."""
    text = decode_text(raw)
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    (parsed,) = judgment_chunks([text], default_topic=default_topic, chunk_rows=None)
    return parsed
