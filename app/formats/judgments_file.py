"""Judgment files: delimited text (TSV or CSV) with a header naming the columns.

Accepted column names (case-insensitive), DESIGN §5:
- topic: ``topic``, ``topicID``, ``topic_id``, ``query``, ``qid`` (optional: without it every row
  belongs to the one topic ``default_topic``; crowd-kit files have ``task`` only);
- doc: ``doc``, ``docID``, ``doc_id``, ``document``, ``task``;
- annotator: ``annotator``, ``workerID``, ``worker_id``, ``worker``, ``judge``;
- label: ``label``, ``relevance``, ``rel``;
- gold (optional): ``gold`` — the expert label of the row's task; negative values mean unknown.
Blank lines are skipped. The delimiter is a tab if the header has one, else a comma.
"""

from __future__ import annotations

from dataclasses import dataclass

from app.formats.errors import FileFormatError, delimited_rows

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
    """Columns of the parsed rows, aligned; ``lines`` gives each row's line in the file."""

    topics: list[str]
    docs: list[str]
    annotators: list[str]
    labels: list[int]
    golds: list[int | None] | None
    lines: list[int]

    def __len__(self) -> int:
        return len(self.labels)


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
            f"(accepted: {accepted})",
            code="invalid_header", line=1,
        )
    return index


def _int(value: str, *, line: int, column: str) -> int:
    try:
        return int(value)
    except ValueError:
        try:
            number = float(value)
        except ValueError:
            number = float("nan")
        if number.is_integer():
            return int(number)
        raise FileFormatError(
            f"line {line}: column {column!r} must be an integer, got {value!r}",
            code="invalid_row", line=line, column=column,
        ) from None


def parse_judgments(raw: bytes | str, *, default_topic: str = DEFAULT_TOPIC) -> JudgmentRows:
    """Parse a whole judgment file; raise FileFormatError naming the line and column."""
    header_line, reader = delimited_rows(raw)
    header = next(reader)
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
    for offset, row in enumerate(reader):
        line = header_line + 1 + offset
        if not row or all(not cell.strip() for cell in row):
            continue
        if len(row) < width:
            raise FileFormatError(
                f"line {line}: expected at least {width} columns, found {len(row)}",
                code="invalid_row", line=line, column=names.get(len(row)),
            )
        for i in (i_doc, i_ann) if i_topic is None else (i_topic, i_doc, i_ann):
            if not row[i].strip():
                raise FileFormatError(
                    f"line {line}: column {names[i]!r} is empty", code="invalid_row",
                    line=line, column=names[i],
                )
        topics.append(default_topic if i_topic is None else row[i_topic].strip())
        docs.append(row[i_doc].strip())
        annotators.append(row[i_ann].strip())
        labels.append(_int(row[i_label].strip(), line=line, column=names[i_label]))
        if golds is not None:
            cell = row[i_gold].strip()  # type: ignore[index]
            gold = _int(cell, line=line, column=names[i_gold]) if cell else None  # type: ignore[index]
            golds.append(gold)
        line_numbers.append(line)
    if not labels:
        raise FileFormatError("the file has a header but no judgments", code="empty_file")
    return JudgmentRows(topics, docs, annotators, labels, golds, line_numbers)
