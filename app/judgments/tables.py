"""Topics, documents, tasks (topic-document pairs), annotators and the append-only judgments."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import (
    DateTime,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    UniqueConstraint,
    func,
)
from sqlalchemy.orm import Mapped, mapped_column

from app.core.db import Base, BigId, utc_now


class Topic(Base):
    __tablename__ = "topics"
    __table_args__ = (UniqueConstraint("collection_id", "external_id"),)

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    collection_id: Mapped[int] = mapped_column(ForeignKey("collections.id", ondelete="CASCADE"))
    external_id: Mapped[str] = mapped_column(String(200))
    text: Mapped[str | None] = mapped_column(Text)


class Document(Base):
    __tablename__ = "documents"
    __table_args__ = (UniqueConstraint("collection_id", "external_id"),)

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    collection_id: Mapped[int] = mapped_column(Integer)  # no foreign key: see Task
    external_id: Mapped[str] = mapped_column(String(500))
    text: Mapped[str | None] = mapped_column(Text)


ANNOTATOR_KINDS = ("crowd", "llm", "expert")


class Annotator(Base):
    """A crowd worker, an LLM judge or an expert; ``kind`` is set when the annotator is first
    stored (judgments: crowd; a judge file: its ``kind``) and never changes."""

    __tablename__ = "annotators"
    __table_args__ = (UniqueConstraint("collection_id", "external_id"),)

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    collection_id: Mapped[int] = mapped_column(ForeignKey("collections.id", ondelete="CASCADE"))
    external_id: Mapped[str] = mapped_column(String(200))
    kind: Mapped[str] = mapped_column(String(10), default="crowd", server_default="crowd")


class Task(Base):
    """A (topic, document) pair; ``gold`` is the expert label (a scale value or an ignore value).

    Like ``Judgment`` and ``Document``, no foreign-key constraints: a file creates a row here and
    one in ``documents`` per new task (200,000 in a 1,000,000-line file), and PostgreSQL's four
    per-row checks (a FOR KEY SHARE lock each) took 2.2 s of the 10.5-12.6 s upload (migration
    0014; docs/benchmarks.md). Every id these columns hold comes from the same ingest statement's
    join, under the collection's lock, and nothing deletes collections, topics or documents.
    """

    __tablename__ = "tasks"
    __table_args__ = (UniqueConstraint("collection_id", "topic_id", "document_id"),)

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    collection_id: Mapped[int] = mapped_column(Integer)
    topic_id: Mapped[int] = mapped_column(BigId)
    document_id: Mapped[int] = mapped_column(BigId)
    gold: Mapped[int | None] = mapped_column(Integer)


class Batch(Base):
    """One accepted request: which judgments arrived together, when and from what."""

    __tablename__ = "batches"

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    collection_id: Mapped[int] = mapped_column(ForeignKey("collections.id", ondelete="CASCADE"))
    source: Mapped[str] = mapped_column(String(20))  # "json" | "file"
    filename: Mapped[str | None] = mapped_column(String(500))
    n_judgments: Mapped[int] = mapped_column(Integer)
    received_at: Mapped[datetime] = mapped_column(DateTime(timezone=True),
                                                  default=utc_now, server_default=func.now())


class Judgment(Base):
    """Append-only: a repeated (task, annotator) judgment is a new row, never an update.

    A row whose ``label`` is NULL is a withdrawal (a judge file replaced or removed): it and every
    earlier judgment of its (task, annotator) no longer count; later ones do
    (``app.judgments.columns.apply_withdrawals``).

    No foreign-key constraints: this is the hot append path, and PostgreSQL checks each foreign
    key per row with a FOR KEY SHARE row lock (4 s per 100,000 rows here, more than the COPY
    itself). The ingest transaction resolves every reference under the collection's lock, and
    nothing deletes tasks, annotators or batches.
    """

    __tablename__ = "judgments"
    __table_args__ = (
        Index("ix_judgments_collection_id_id", "collection_id", "id"),
        Index("ix_judgments_task_id", "task_id"),
        Index("ix_judgments_annotator_id", "annotator_id"),
    )

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    collection_id: Mapped[int] = mapped_column(Integer)
    task_id: Mapped[int] = mapped_column(BigId)
    annotator_id: Mapped[int] = mapped_column(BigId)
    label: Mapped[int | None] = mapped_column(Integer)  # NULL: a withdrawal
    batch_id: Mapped[int] = mapped_column(BigId)
    received_at: Mapped[datetime] = mapped_column(DateTime(timezone=True),
                                                  default=utc_now, server_default=func.now())
