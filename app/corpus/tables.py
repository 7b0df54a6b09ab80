"""Submitted runs (topic and document texts live on topics.text and documents.text)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import DateTime, ForeignKey, Integer, LargeBinary, String, UniqueConstraint, func
from sqlalchemy.orm import Mapped, mapped_column

from app.core.db import Base, BigId, utc_now


class Run(Base):
    """A system's TREC run, kept as the uploaded text (gzip): parsed again when features are
    built, so the stored run is exactly what was submitted."""

    __tablename__ = "runs"
    __table_args__ = (UniqueConstraint("collection_id", "name"),)

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    collection_id: Mapped[int] = mapped_column(ForeignKey("collections.id", ondelete="CASCADE"))
    name: Mapped[str] = mapped_column(String(200))
    n_lines: Mapped[int] = mapped_column(Integer)
    n_topics: Mapped[int] = mapped_column(Integer)
    max_depth: Mapped[int] = mapped_column(Integer)
    payload: Mapped[bytes] = mapped_column(LargeBinary)
    uploaded_at: Mapped[datetime] = mapped_column(DateTime(timezone=True),
                                                  default=utc_now, server_default=func.now())
