"""Qrels downloads: TREC (as the offline CLI writes it), TSV with probabilities, JSON."""

from __future__ import annotations

from typing import Any

from app.formats.qrels import format_qrels


def relevance(row: dict[str, Any], threshold: float | None) -> int:
    """The hard label, or with a threshold a binary relevance: P(relevant) >= threshold."""
    if threshold is None:
        return int(row["label"])
    return int(row["p_relevant"] >= threshold)


def selected(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Tasks the model kept (MACE's ``threshold`` keeps only its most confident share)."""
    return [r for r in rows if (r["extra"] or {}).get("selected", 1.0) != 0.0]


def trec(rows: list[dict[str, Any]], threshold: float | None) -> str:
    return format_qrels((r["topic"], r["doc"], relevance(r, threshold)) for r in selected(rows))


def tsv(rows: list[dict[str, Any]], classes: list[int], threshold: float | None) -> str:
    header = ["topic", "doc", "label", "p_relevant", *(f"p_{c}" for c in classes), "uncertainty"]
    lines = ["\t".join(header)]
    for r in rows:
        lines.append("\t".join([
            r["topic"], r["doc"], str(relevance(r, threshold)), f"{r['p_relevant']:.6f}",
            *(f"{p:.6f}" for p in r["proba"]), f"{r['uncertainty']:.6f}",
        ]))
    return "\n".join(lines) + "\n"


def as_json(rows: list[dict[str, Any]], classes: list[int],
            threshold: float | None) -> dict[str, Any]:
    return {
        "classes": classes,
        "threshold": threshold,
        "count": len(rows),
        "data": [
            {"topic": r["topic"], "doc": r["doc"], "label": relevance(r, threshold),
             "p_relevant": r["p_relevant"], "proba": r["proba"]}
            for r in rows
        ],
    }
