"""Task feature files: TSV/CSV with a header ``topic doc f1 .. fd`` (feature names are free)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from app.formats.errors import FileFormatError, delimited_rows
from app.formats.ids import id_problem


@dataclass(frozen=True)
class FeatureRows:
    names: list[str]
    vectors: dict[tuple[str, str], list[float]]

    @property
    def dim(self) -> int:
        return len(self.names)


def parse_features(raw: bytes | str) -> FeatureRows:
    _, rows = delimited_rows(raw)
    header = [h.strip() for h in next(rows)[1]]
    if len(header) < 3 or header[0].lower() not in ("topic", "topicid", "topic_id", "qid") or \
            header[1].lower() not in ("doc", "docid", "doc_id", "document", "task"):
        raise FileFormatError(
            "no recognisable header: expected topic, doc, then one column per feature",
            code="invalid_header", line=1,
        )
    names = header[2:]
    vectors: dict[tuple[str, str], list[float]] = {}
    for line, row in rows:
        if not row or all(not c.strip() for c in row):
            continue
        if len(row) != len(header):
            raise FileFormatError(
                f"line {line}: expected {len(header)} columns, found {len(row)}",
                code="invalid_row", line=line,
            )
        key = (_id(row[0], "topic", header[0], line), _id(row[1], "doc", header[1], line))
        if key in vectors:
            raise FileFormatError(
                f"line {line}: duplicate features for topic {key[0]!r}, doc {key[1]!r}",
                code="duplicate_row", line=line,
            )
        vector = []
        for name, cell in zip(names, row[2:], strict=True):
            try:
                value = float(cell)
            except ValueError:
                value = math.nan
            if not math.isfinite(value):
                raise FileFormatError(
                    f"line {line}: feature {name!r} must be a finite number, got {cell!r}",
                    code="invalid_row", line=line, column=name,
                )
            vector.append(value)
        vectors[key] = vector
    if not vectors:
        raise FileFormatError("the file has a header but no feature rows", code="empty_file")
    return FeatureRows(names, vectors)


def _id(value: str, kind: str, column: str, line: int) -> str:
    """The id stripped, by the rules every id follows (``app.formats.ids.id_problem``)."""
    reason = id_problem(value, kind)
    if reason is not None:
        raise FileFormatError(f"line {line}: column {column!r} {reason}", code="invalid_row",
                              line=line, column=column)
    return value.strip()
