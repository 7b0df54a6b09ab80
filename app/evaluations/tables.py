"""One evaluation job per row: which qrels, runs and measures, and its results (gzip JSON)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import JSON, ForeignKey, Index, Integer, LargeBinary, String
from sqlalchemy.orm import Mapped, mapped_column

from app.core.db import Base
from app.jobs.tables import JobColumns


class Evaluation(JobColumns, Base):
    __tablename__ = "evaluations"
    __table_args__ = (Index("ix_evaluations_collection_id", "collection_id"),)

    collection_id: Mapped[int] = mapped_column(ForeignKey("collections.id", ondelete="CASCADE"))
    # The qrels: an aggregation id, "gold", or {"union" | "intersection": [sources]}.
    source: Mapped[Any] = mapped_column(JSON)
    runs: Mapped[list[str]] = mapped_column(JSON)  # resolved at creation
    measures: Mapped[list[str]] = mapped_column(JSON)
    samples: Mapped[int] = mapped_column(Integer)
    seed: Mapped[int] = mapped_column(Integer)
    # "posterior" (the draws' interval) or "ppi" (prediction-powered, from the gold sample).
    interval: Mapped[str] = mapped_column("interval_kind", String(16), default="posterior",
                                          server_default="posterior")
    # How the draws are made: "labels" (each task independently from its stored posterior) or
    # "parameters" (the annotators' parameters from their posterior first; resolved at creation).
    draws: Mapped[str] = mapped_column(String(16), default="labels", server_default="labels")
    # Small facts of the finished job: topics scored, unknown / unjudged topics per run.
    report: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    # The full result (results, pairs, rankings) as gzip JSON: tens of thousands of rows (MBs
    # for 100 runs), so it is loaded when read, not with every listed row.
    payload: Mapped[bytes | None] = mapped_column(LargeBinary, deferred=True)
