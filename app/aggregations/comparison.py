"""The collection's succeeded fits ranked by their evaluation against the current gold."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.aggregations.gold import check_fits
from app.aggregations.tables import Aggregation
from app.collections.tables import Collection


def comparison(session: Session, *, collection: Collection,
               cache: Any = None) -> list[dict[str, Any]]:
    """Every succeeded aggregation with its evaluation against the current gold, best first.

    A fit whose tasks' gold changed since it was scored shows its stored posteriors re-scored
    against the current gold (``rescored``) when the fit never used the gold; one that clamped
    the earlier gold cannot be re-scored honestly and keeps its fit-time figures (``stale``),
    as does a clamped fit stored before fits recorded their gold. Stale rows are ranked after
    every row scored against the current gold."""
    rows = session.scalars(select(Aggregation).where(
        Aggregation.collection_id == collection.id, Aggregation.status == "succeeded"
    ).order_by(Aggregation.id)).all()
    statuses = check_fits(session, collection=collection, fits=rows, cache=cache)
    out = []
    for a in rows:
        status = statuses.get(a.id)
        rescored = status is not None and status.current is False and status.rescorable
        e = (status.current_evaluation if rescored and status is not None
             else a.evaluation) or {}
        ordinal = e.get("kappa") is not None
        out.append({
            "aggregation_id": a.id, "method": a.method, "params": a.params, "graded": a.graded,
            "n_gold": e.get("n_gold"), "accuracy": e.get("accuracy"),
            "precision": e.get("precision"), "recall": e.get("recall"), "f1": e.get("f1"),
            "log_loss": e.get("log_loss"), "ece": e.get("ece"), "brier": e.get("brier"),
            "mae": e.get("mae"), "kappa": e.get("kappa"),
            "binary_accuracy": e.get("binary_accuracy"),
            "ranked_by": "kappa" if ordinal else "accuracy",
            "fit_seconds": (a.timings or {}).get("fit_s"),
            "gold_current": None if status is None else status.current,
            "rescored": rescored,
            "stale": status is None or (status.current is not True and not rescored),
        })
    # Rows scored against the current gold first. Binary fits first, best accuracy first; then
    # graded fits, best quadratic κ first (exact accuracy ignores how far off a wrong grade is).
    out.sort(key=lambda r: (r["stale"], r["ranked_by"] == "kappa", r[r["ranked_by"]] is None,
                            -(r[r["ranked_by"]] or 0.0), r["aggregation_id"]))
    return out
