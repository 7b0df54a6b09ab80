"""TREC qrels: ``topic iteration doc relevance``, whitespace-separated, one line per task."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from app.formats.errors import (
    FileFormatError,
    decode_text,
    refuse_control_characters,
    split_lines,
)
from app.formats.ids import CONTROL, WHITESPACE, BadId, clean_ids, parse_integer, split_fields

if TYPE_CHECKING:
    import numpy as np


def parse_qrels(raw: bytes | str) -> dict[tuple[str, str], int]:
    """{(topic, doc): relevance}; a later line for the same pair is refused as a duplicate."""
    return parse_qrels_with_lines(raw)[0]


def parse_qrels_with_lines(
    raw: bytes | str,
) -> tuple[dict[tuple[str, str], int], dict[tuple[str, str], int]]:
    """The qrels and, for error messages, the line each pair came from.

    Lines end at \\n, \\r\\n or \\r; fields are separated by ASCII whitespace (a
    non-breaking space does not separate fields: it is refused as whitespace in an id); ids
    follow ``app.formats.ids`` (length, no control character, no whitespace; a field is the id
    as it is, ``strip=False``); the relevance is an ASCII whole number."""
    text = decode_text(raw)
    refuse_control_characters(text)
    out: dict[tuple[str, str], int] = {}
    lines: dict[tuple[str, str], int] = {}
    for line_no, line in enumerate(split_lines(text), start=1):
        parts = split_fields(line)
        if not parts:
            continue
        if len(parts) != 4:
            raise FileFormatError(
                f"line {line_no}: a qrels line has 4 fields (topic iteration doc relevance), "
                f"found {len(parts)}", code="invalid_row", line=line_no,
            )
        topic, _, doc, rel = parts
        value = parse_integer(rel)
        if value is None:
            raise FileFormatError(
                f"line {line_no}: relevance must be an integer, got {rel!r}",
                code="invalid_row", line=line_no, column="relevance",
            )
        if (topic, doc) in out:
            raise FileFormatError(
                f"line {line_no}: duplicate qrels line for topic {topic!r}, doc {doc!r}",
                code="duplicate_row", line=line_no,
            )
        out[(topic, doc)] = value
        lines[(topic, doc)] = line_no
    if not out:
        raise FileFormatError("the qrels file is empty", code="empty_file")
    keys = list(out)
    for position, (kind, column) in enumerate((("topic", "topic"), ("doc", "doc"))):
        try:
            clean_ids([key[position] for key in keys], kind=kind, strip=False)
        except BadId as bad:
            line = lines[keys[bad.index]]
            raise FileFormatError(f"line {line}: {column} id {bad.reason}", code="invalid_row",
                                  line=line, column=column) from None
    return out, lines


class UnwritableId(ValueError):
    """A stored id that a TREC qrels line cannot hold (whitespace, a control character, empty:
    ids stored before ``app.formats.ids`` refused whitespace in topic and document ids)."""

    def __init__(self, *, topic: str, doc: str, column: str, reason: str) -> None:
        self.topic, self.doc, self.column, self.reason = topic, doc, column, reason
        super().__init__(f"cannot write TREC qrels: the {column} id of topic {topic!r}, doc "
                         f"{doc!r} {reason}")


def format_qrels(rows: Iterable[tuple[str, str, int]]) -> str:
    """TREC qrels text, sorted by topic then doc (DESIGN §5). An id that would break the
    whitespace-separated line (``app.formats.ids``, checked as a field: ``strip=False``) raises
    :class:`UnwritableId` rather than writing a file no reader can parse."""
    ordered = sorted(rows, key=lambda r: (r[0], r[1]))
    for position, column in ((0, "topic"), (1, "doc")):
        try:
            clean_ids([row[position] for row in ordered], kind=None, strip=False)
        except BadId as bad:
            topic, doc, _ = ordered[bad.index]
            raise UnwritableId(topic=topic, doc=doc, column=column, reason=bad.reason) from None
    return "".join(f"{t} 0 {d} {r}\n" for t, d, r in ordered)


def format_qrels_columns(topics: np.ndarray, docs: np.ndarray, relevance: np.ndarray) -> str:
    """``format_qrels`` of three columns (str arrays of topic and doc ids, whole numbers): the
    same text, without a tuple and a sort key per line (2,000,000 lines: 0.3 s of CPU where the
    rows took 3). Columns already in (topic, doc) order, as ``AnnotationData``'s tasks are, are
    not sorted again; ids the fast check does not pass go through ``format_qrels``, which names
    the first bad one."""
    import numpy as np

    topic_list, doc_list = topics.tolist(), docs.tolist()
    for column in (topic_list, doc_list):
        joined = "".join(column)
        if not all(column) or CONTROL.search(joined) or WHITESPACE.search(joined):
            return format_qrels(zip(topic_list, doc_list, relevance.tolist(), strict=True))
    n = len(topic_list)
    ordered = n < 2 or bool(np.all((topics[:-1] < topics[1:])
                                   | ((topics[:-1] == topics[1:]) & (docs[:-1] < docs[1:]))))
    values = relevance.tolist()
    if not ordered:  # numpy's order of str arrays is Python's (by code point) for these ids
        order = np.lexsort((docs, topics)).tolist()
        topic_list = [topic_list[i] for i in order]
        doc_list = [doc_list[i] for i in order]
        values = [values[i] for i in order]
    return "".join([f"{t} 0 {d} {r}\n" for t, d, r in zip(topic_list, doc_list, values,
                                                            strict=True)])
