"""Task feature vectors, one set per collection (replaced as a whole by PUT features)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, DateTime, ForeignKey, Index, String, func
from sqlalchemy.orm import Mapped, mapped_column

from app.core.db import Base, BigId, utc_now
from app.jobs.tables import JobColumns


class FeatureSet(Base):
    __tablename__ = "feature_sets"

    collection_id: Mapped[int] = mapped_column(
        ForeignKey("collections.id", ondelete="CASCADE"), primary_key=True)
    names: Mapped[list[str]] = mapped_column(JSON)
    # Column indices per group ("lexical", "ranking", "semantic", "user"): a kernel per group.
    groups: Mapped[dict[str, list[int]]] = mapped_column(JSON)
    source: Mapped[str] = mapped_column(String(20))  # "upload" | "built"
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utc_now,
                                                 server_default=func.now())


class TaskFeatures(Base):
    __tablename__ = "task_features"
    __table_args__ = (Index("ix_task_features_collection_id", "collection_id"),)

    task_id: Mapped[int] = mapped_column(
        BigId, ForeignKey("tasks.id", ondelete="CASCADE"), primary_key=True)
    collection_id: Mapped[int] = mapped_column(ForeignKey("collections.id", ondelete="CASCADE"))
    vector: Mapped[list[float]] = mapped_column(JSON)


class FeatureBuild(JobColumns, Base):
    """A job that builds the collection's features from its texts and runs (CPU-heavy)."""

    __tablename__ = "feature_builds"
    __table_args__ = (Index("ix_feature_builds_collection_id", "collection_id"),)

    collection_id: Mapped[int] = mapped_column(ForeignKey("collections.id", ondelete="CASCADE"))
    params: Mapped[dict[str, Any]] = mapped_column(JSON)
    report: Mapped[dict[str, Any] | None] = mapped_column(JSON)  # names, groups, notes
