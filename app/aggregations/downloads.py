"""Qrels downloads: TREC (as the offline CLI writes it), TSV with probabilities, JSON."""

from __future__ import annotations

from typing import Any

import numpy as np

from app.core.errors import Conflict
from app.formats.qrels import UnwritableId, format_qrels

GRADES = ("most_probable", "expected")


def relevance(row: dict[str, Any], threshold: float | None, classes: list[int] | None = None,
              grade: str = "most_probable") -> int:
    """The hard label, or with a threshold a binary relevance: P(relevant) >= threshold.

    ``grade="expected"`` gives instead the expected grade Σ_k P(k) · value_k rounded to the
    nearest value of the scale (halves up), for graded qrels (nDCG); the default is the most
    probable grade (the model's own label).
    """
    if threshold is not None:
        return int(row["p_relevant"] >= threshold)
    if grade == "expected" and classes:
        return expected_grade(row["proba"], classes)
    return int(row["label"])


def expected_grade(proba: list[float], classes: list[int]) -> int:
    """Σ_k P(k) · value_k, rounded to the nearest value on the scale (ties: the higher)."""
    from models.ordinal_scale import expected_grade_index

    return int(classes[int(expected_grade_index(np.asarray(proba), np.asarray(classes))[0])])


def selected(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Tasks the model kept (MACE's ``threshold`` keeps only its most confident share)."""
    return [r for r in rows if (r["extra"] or {}).get("selected", 1.0) != 0.0]


def trec(rows: list[dict[str, Any]], threshold: float | None, classes: list[int] | None = None,
         grade: str = "most_probable") -> str:
    """TREC qrels; 409 ``unwritable_id`` for a stored id that a TREC line cannot hold (one
    with whitespace, stored before such ids were refused): the TSV and JSON forms still work."""
    try:
        return format_qrels((r["topic"], r["doc"], relevance(r, threshold, classes, grade))
                            for r in selected(rows))
    except UnwritableId as exc:
        raise Conflict(f"{exc}; download format=tsv or format=json instead",
                       code="unwritable_id", column=exc.column) from None


def tsv(rows: list[dict[str, Any]], classes: list[int], threshold: float | None,
        grade: str = "most_probable") -> str:
    header = ["topic", "doc", "label", "p_relevant", *(f"p_{c}" for c in classes), "uncertainty"]
    lines = ["\t".join(header)]
    for r in rows:
        lines.append("\t".join([
            r["topic"], r["doc"], str(relevance(r, threshold, classes, grade)),
            f"{r['p_relevant']:.6f}",
            *(f"{p:.6f}" for p in r["proba"]), f"{r['uncertainty']:.6f}",
        ]))
    return "\n".join(lines) + "\n"


def as_json(rows: list[dict[str, Any]], classes: list[int],
            threshold: float | None, grade: str = "most_probable") -> dict[str, Any]:
    return {
        "classes": classes,
        "threshold": threshold,
        "grade": grade,
        "count": len(rows),
        "data": [
            {"topic": r["topic"], "doc": r["doc"],
             "label": relevance(r, threshold, classes, grade),
             "p_relevant": r["p_relevant"], "proba": r["proba"]}
            for r in rows
        ],
    }
