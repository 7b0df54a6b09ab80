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

from collections.abc import Collection
from dataclasses import dataclass

from app.formats.errors import FileFormatError, delimited_rows
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


def _int(cache: dict[str, int], value: str, *, line: int, column: str) -> int:
    number = cache.get(value)
    if number is not None:
        return number
    number = parse_integer(value, INT32)
    if number is None:
        shown = value.strip()
        shown = shown if len(shown) <= 40 else shown[:40] + "..."
        raise FileFormatError(
            f"line {line}: column {column!r} must be an integer from {INT32[0]} to {INT32[1]}, "
            f"got {shown!r}",
            code="invalid_row", line=line, column=column,
        )
    cache[value] = number
    return number


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


def parse_judgments(raw: bytes | str, *, default_topic: str = DEFAULT_TOPIC) -> JudgmentRows:
    """Parse a whole judgment file; raise FileFormatError naming the line and column. Ids follow
    :func:`app.formats.ids.clean_ids` (stripped, non-empty, no control character, length)."""
    _, rows = delimited_rows(raw)
    _, header = next(rows)
    index = _map_header(header)
    width = max(index.values()) + 1
    i_topic = index.get("topic")
    i_doc, i_ann, i_label = index["doc"], index["annotator"], index["label"]
    i_gold = index.get("gold")
    names = {i: header[i].strip() for i in range(len(header))}

    topics: list[str] = []
    docs: list[str] = []
    annotators: list[str] = []
    labels: list[int] = []
    golds: list[int | None] | None = [] if i_gold is not None else None
    line_numbers: list[int] = []
    label_cache: dict[str, int] = {}
    gold_cache: dict[str, int] = {}
    label_name = names[i_label]
    for line, row in rows:
        if not row or (not row[0].strip() and not "".join(row).strip()):
            continue
        if len(row) < width or len(row) > len(header):
            _check_width(row, line=line, width=width, header=header)
        if i_topic is not None:
            topics.append(row[i_topic])
        docs.append(row[i_doc])
        annotators.append(row[i_ann])
        labels.append(_int(label_cache, row[i_label], line=line, column=label_name))
        if golds is not None:
            cell = row[i_gold]  # type: ignore[index]
            golds.append(_int(gold_cache, cell, line=line, column=names[i_gold])  # type: ignore[index]
                         if cell and not cell.isspace() else None)
        line_numbers.append(line)
    if not labels:
        raise FileFormatError("the file has a header but no judgments", code="empty_file")
    columns = [("doc", i_doc, docs), ("annotator", i_ann, annotators)]
    if i_topic is not None:
        columns.insert(0, ("topic", i_topic, topics))
    cleaned = _clean_ids(columns, line_numbers, names)
    topic_ids = [default_topic] * len(labels) if i_topic is None else cleaned["topic"]
    read = set(index.values())
    ignored = tuple(name.strip() for position, name in enumerate(header)
                    if position not in read and name.strip())
    parsed = JudgmentRows(topic_ids, cleaned["doc"], cleaned["annotator"], labels, golds,
                          line_numbers, ignored)
    conflict = parsed.gold_conflict()
    if conflict is not None:
        raise _conflicting_gold(parsed, *conflict, column=header[i_gold].strip()
                                if i_gold is not None else "gold")
    return parsed
