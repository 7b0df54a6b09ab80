"""Qrels posteriors from files: TREC qrels (fixed), and the per-task TSV of ``crowdqrels
aggregate --tasks`` or of ``GET /aggregations/{a}/qrels?format=tsv`` (a probability per class)."""

from __future__ import annotations

import numpy as np

from app.formats.errors import FileFormatError, decode_text, split_lines
from app.formats.qrels import parse_qrels
from models.evaluation.uncertainty import Posterior


def posterior_from_qrels(raw: bytes | str, *, relevant_from: int = 1) -> Posterior:
    return Posterior.from_qrels(parse_qrels(raw), relevant_from=relevant_from)


def posterior_from_tasks(raw: bytes | str, *, relevant_from: int = 1
                         ) -> tuple[Posterior, dict[tuple[str, str], int]]:
    """The posterior of a tasks TSV (columns topic, doc, p_<class>...; header required) and its
    gold labels when it has a ``gold`` column (empty cells: no gold)."""
    lines = split_lines(decode_text(raw))  # not str.splitlines: U+2028 or \f in an id
    if lines and not lines[-1]:
        lines.pop()
    if not lines:
        raise FileFormatError("the tasks file is empty", code="empty_file")
    header = lines[0].split("\t")
    topic_col, doc_col, class_cols, classes = _columns(header)
    gold_col = header.index("gold") if "gold" in header else None
    topics, docs, rows = [], [], []
    gold: dict[tuple[str, str], int] = {}
    seen: set[tuple[str, str]] = set()
    for line_no, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        cells = line.split("\t")
        if len(cells) != len(header):
            raise FileFormatError(f"line {line_no}: {len(cells)} fields, the header has "
                                  f"{len(header)}", code="invalid_row", line=line_no)
        key = (cells[topic_col], cells[doc_col])
        if key in seen:
            raise FileFormatError(f"line {line_no}: topic {key[0]!r}, doc {key[1]!r} twice",
                                  code="duplicate_row", line=line_no)
        seen.add(key)
        rows.append(_probabilities([cells[i] for i, _ in class_cols], line_no))
        topics.append(key[0])
        docs.append(key[1])
        if gold_col is not None and cells[gold_col].strip():
            try:
                gold[key] = int(cells[gold_col])
            except ValueError:
                raise FileFormatError(f"line {line_no}: gold must be a whole number, got "
                                      f"{cells[gold_col]!r}", code="invalid_row",
                                      line=line_no, column="gold") from None
    order = np.argsort(classes)
    proba = np.array(rows, dtype=np.float64).reshape(-1, len(classes))[:, order]
    proba = np.clip(proba, 0.0, None)
    total = proba.sum(axis=1, keepdims=True)
    proba = np.divide(proba, total, out=np.full_like(proba, 1.0 / len(classes)),
                      where=total > 0)
    classes = classes[order]
    relevant_index = 1 if classes.tolist() == [0, 1] else int(
        np.searchsorted(classes, relevant_from))
    posterior = Posterior(topics=np.array(topics, dtype=object), docs=np.array(docs, dtype=object),
                          proba=proba, classes=classes, relevant_index=relevant_index)
    return posterior, gold


def mace_parameters(raw: bytes | str, *, annotators: np.ndarray, classes: np.ndarray
                    ) -> tuple[np.ndarray, np.ndarray] | None:
    """MACE's θ_j and ξ_j of ``annotators`` (external ids) from the annotators TSV of
    ``crowdqrels aggregate --method mace --annotators`` (columns annotator, competence,
    spam_p_<label>); None for a TSV without spam_p columns (another method's table)."""
    lines = [line for line in split_lines(decode_text(raw)) if line.strip()]
    if not lines:
        raise FileFormatError("the annotators file is empty", code="empty_file")
    header = lines[0].split("\t")
    spam_cols = [f"spam_p_{int(v)}" for v in classes]
    if not any(h.startswith("spam_p_") for h in header):
        return None
    missing = [c for c in ("annotator", "competence", *spam_cols) if c not in header]
    if missing:
        raise FileFormatError(f"the annotators TSV has no column {', '.join(missing)}",
                              code="invalid_header", line=1)
    at = {name: header.index(name) for name in ("annotator", "competence", *spam_cols)}
    values: dict[str, list[float]] = {}
    for line_no, line in enumerate(lines[1:], start=2):
        cells = line.split("\t")
        if len(cells) != len(header):
            raise FileFormatError(f"line {line_no}: {len(cells)} fields, the header has "
                                  f"{len(header)}", code="invalid_row", line=line_no)
        try:
            row = [float(cells[at[c]]) for c in ("competence", *spam_cols)]
        except ValueError:
            raise FileFormatError(f"line {line_no}: competence and spam_p_<label> must be "
                                  "numbers", code="invalid_row", line=line_no) from None
        if not all(0.0 <= v <= 1.0 for v in row):  # also NaN
            raise FileFormatError(f"line {line_no}: competence and spam_p_<label> must lie "
                                  "between 0 and 1", code="invalid_row", line=line_no)
        values[cells[at["annotator"]]] = row
    absent = [str(a) for a in annotators.tolist() if str(a) not in values]
    if absent:
        raise FileFormatError(f"the annotators TSV has no row for annotator {absent[0]!r} "
                              f"(and {len(absent) - 1} more) of the judgments",
                              code="invalid_row")
    table = np.array([values[str(a)] for a in annotators.tolist()]).reshape(-1,
                                                                          1 + len(classes))
    return table[:, 0], table[:, 1:]


def _columns(header: list[str]) -> tuple[int, int, list[tuple[int, str]], np.ndarray]:
    """The tasks TSV's topic and doc columns, its class columns (index, label) and labels."""
    try:
        topic_col, doc_col = header.index("topic"), header.index("doc")
    except ValueError:
        raise FileFormatError("a tasks TSV needs the columns topic and doc", code="invalid_header",
                              line=1) from None
    class_cols = [(i, h[2:]) for i, h in enumerate(header)
                  if h.startswith("p_") and h != "p_relevant"]
    try:
        classes = np.array([int(v) for _, v in class_cols], dtype=np.int64)
    except ValueError:
        raise FileFormatError("class columns are p_<integer label>", code="invalid_header",
                              line=1) from None
    if len(classes) < 2:
        raise FileFormatError("a tasks TSV needs a probability column p_<label> per class",
                              code="invalid_header", line=1)
    return topic_col, doc_col, class_cols, classes


def _probabilities(cells: list[str], line_no: int) -> list[float]:
    """One row's posterior as `aggregate --tasks` writes it: each p in [0, 1], the row summing
    to 1 up to the 6 significant digits written; anything else is refused, not repaired."""
    try:
        row = [float(cell) for cell in cells]
    except ValueError:
        raise FileFormatError(f"line {line_no}: probabilities must be numbers",
                              code="invalid_row", line=line_no) from None
    bad = next((p for p in row if not 0.0 <= p <= 1.0), None)  # also NaN
    if bad is not None:
        raise FileFormatError(f"line {line_no}: probability {bad:g} is not between 0 and 1",
                              code="invalid_row", line=line_no)
    if abs(sum(row) - 1.0) > 1e-3:
        raise FileFormatError(f"line {line_no}: probabilities sum to {sum(row):.6g}, not 1",
                              code="invalid_row", line=line_no)
    return row
