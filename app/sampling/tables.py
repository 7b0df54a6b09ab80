"""Samplings of documents from runs, their rounds and the sampled (topic, doc) pairs with their
selection and inclusion probabilities (enough to recompute every estimate)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, Boolean, DateTime, Float, ForeignKey, Index, Integer, String, func
from sqlalchemy.orm import Mapped, mapped_column

from app.core.db import Base, BigId, utc_now


class Sampling(Base):
    __tablename__ = "samplings"
    __table_args__ = (Index("ix_samplings_collection_id", "collection_id"),)

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    collection_id: Mapped[int] = mapped_column(ForeignKey("collections.id", ondelete="CASCADE"))
    strategy: Mapped[str] = mapped_column(String(20))
    method: Mapped[str] = mapped_column(String(20))  # aggregation of the crowd labels
    runs: Mapped[list[str]] = mapped_column(JSON)
    depth: Mapped[int | None] = mapped_column(Integer)  # pool depth per run (None: all)
    budget_per_round: Mapped[int] = mapped_column(Integer)
    seed: Mapped[int] = mapped_column(Integer)
    pool_size: Mapped[int] = mapped_column(Integer)  # pooled (topic, doc) pairs at creation
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True),
                                                 default=utc_now, server_default=func.now())


class SamplingRound(Base):
    __tablename__ = "sampling_rounds"
    __table_args__ = (Index("ix_sampling_rounds_sampling_id", "sampling_id"),)

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    sampling_id: Mapped[int] = mapped_column(ForeignKey("samplings.id", ondelete="CASCADE"))
    number: Mapped[int] = mapped_column(Integer)  # 1, 2, ...
    requested: Mapped[int] = mapped_column(Integer)
    drawn: Mapped[int] = mapped_column(Integer)
    short: Mapped[bool] = mapped_column(Boolean, default=False)  # the pool ran out
    forced: Mapped[bool] = mapped_column(Boolean, default=False)
    # Per topic: the selection probabilities over its pool (sorted doc ids) and N_t.
    design: Mapped[dict[str, Any]] = mapped_column(JSON)
    # Drawn with a stopping rule (thesis chapter 3): the rule, its target recall and the
    # topics it skipped as at the target (None: drawn without one).
    stop_rule: Mapped[str | None] = mapped_column(String(20))
    target_recall: Mapped[float | None] = mapped_column(Float)
    stopped: Mapped[list[str] | None] = mapped_column(JSON)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True),
                                                 default=utc_now, server_default=func.now())


class SampledPair(Base):
    __tablename__ = "sampled_pairs"
    __table_args__ = (Index("ix_sampled_pairs_sampling_id", "sampling_id"),)

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    sampling_id: Mapped[int] = mapped_column(ForeignKey("samplings.id", ondelete="CASCADE"))
    round_id: Mapped[int] = mapped_column(ForeignKey("sampling_rounds.id", ondelete="CASCADE"))
    topic: Mapped[str] = mapped_column(String(200))
    doc: Mapped[str] = mapped_column(String(500))
    source_run: Mapped[str | None] = mapped_column(String(200))  # move-to-front only
    selection: Mapped[float] = mapped_column(Float)  # p_t(i) in its round (1 for pooling)
    inclusion: Mapped[float] = mapped_column(Float)  # π_i after its round
