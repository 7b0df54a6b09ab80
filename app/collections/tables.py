from __future__ import annotations

from datetime import datetime

from sqlalchemy import JSON, DateTime, Integer, String, Text, func
from sqlalchemy.orm import Mapped, mapped_column

from app.core.db import Base, utc_now


class Collection(Base):
    """A test-collection campaign: owns its topics, documents, tasks, annotators and judgments."""

    __tablename__ = "collections"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(200), unique=True)
    description: Mapped[str | None] = mapped_column(Text)
    labels: Mapped[list[int]] = mapped_column(JSON)  # the label scale, e.g. [0, 1, 2]
    relevant_from: Mapped[int] = mapped_column(Integer)  # grade from which a label is relevant
    ignore: Mapped[list[int]] = mapped_column(JSON)  # "could not judge" values: stored, not used
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utc_now,
                                                 server_default=func.now())
