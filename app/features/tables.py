"""Task feature vectors, one set per collection (replaced as a whole by PUT features)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import JSON, DateTime, ForeignKey, Index, func
from sqlalchemy.orm import Mapped, mapped_column

from app.core.db import Base, BigId


class FeatureSet(Base):
    __tablename__ = "feature_sets"

    collection_id: Mapped[int] = mapped_column(
        ForeignKey("collections.id", ondelete="CASCADE"), primary_key=True)
    names: Mapped[list[str]] = mapped_column(JSON)
    # Column indices per feature group ("lexical", "ranking", "semantic", "user"): kernels per group.
    groups: Mapped[dict[str, list[int]]] = mapped_column(JSON)
    source: Mapped[str] = mapped_column()  # "upload" | "built"
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())


class TaskFeatures(Base):
    __tablename__ = "task_features"
    __table_args__ = (Index("ix_task_features_collection_id", "collection_id"),)

    task_id: Mapped[int] = mapped_column(
        BigId, ForeignKey("tasks.id", ondelete="CASCADE"), primary_key=True)
    collection_id: Mapped[int] = mapped_column(ForeignKey("collections.id", ondelete="CASCADE"))
    vector: Mapped[list[float]] = mapped_column(JSON)
