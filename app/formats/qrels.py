"""TREC qrels: ``topic iteration doc relevance``, whitespace-separated, one line per task."""

from __future__ import annotations

from collections.abc import Iterable

from app.formats.errors import FileFormatError, decode_text


def parse_qrels(raw: bytes | str) -> dict[tuple[str, str], int]:
    """{(topic, doc): relevance}; a later line for the same pair is refused as a duplicate."""
    return parse_qrels_with_lines(raw)[0]


def parse_qrels_with_lines(
    raw: bytes | str,
) -> tuple[dict[tuple[str, str], int], dict[tuple[str, str], int]]:
    """The qrels and, for error messages, the line each pair came from."""
    text = decode_text(raw)
    out: dict[tuple[str, str], int] = {}
    lines: dict[tuple[str, str], int] = {}
    for line_no, line in enumerate(text.splitlines(), start=1):
        parts = line.split()
        if not parts:
            continue
        if len(parts) != 4:
            raise FileFormatError(
                f"line {line_no}: a qrels line has 4 fields (topic iteration doc relevance), "
                f"found {len(parts)}", code="invalid_row", line=line_no,
            )
        topic, _, doc, rel = parts
        try:
            value = int(rel)
        except ValueError:
            raise FileFormatError(
                f"line {line_no}: relevance must be an integer, got {rel!r}",
                code="invalid_row", line=line_no, column="relevance",
            ) from None
        if (topic, doc) in out:
            raise FileFormatError(
                f"line {line_no}: duplicate qrels line for topic {topic!r}, doc {doc!r}",
                code="duplicate_row", line=line_no,
            )
        out[(topic, doc)] = value
        lines[(topic, doc)] = line_no
    if not out:
        raise FileFormatError("the qrels file is empty", code="empty_file")
    return out, lines


def format_qrels(rows: Iterable[tuple[str, str, int]]) -> str:
    """TREC qrels text, sorted by topic then doc (DESIGN §5)."""
    return "".join(f"{t} 0 {d} {r}\n" for t, d, r in sorted(rows, key=lambda r: (r[0], r[1])))
