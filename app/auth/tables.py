"""Access-control tables: API keys, dashboard sessions, idempotency records and the audit log."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, DateTime, ForeignKey, Index, Integer, String, UniqueConstraint, func
from sqlalchemy.orm import Mapped, mapped_column

from app.core.db import Base, BigId, utc_now


class ApiKey(Base):
    """A key: only its Argon2 hash is stored; ``prefix`` (public, unique) finds the row."""

    __tablename__ = "api_keys"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(100), unique=True)
    prefix: Mapped[str] = mapped_column(String(16), unique=True)
    key_hash: Mapped[str] = mapped_column(String(255))
    scope: Mapped[str] = mapped_column(String(10))
    collections: Mapped[list[int] | None] = mapped_column(JSON)  # None: every collection
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utc_now,
                                                 server_default=func.now())
    last_used_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    revoked_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))


class UiSession(Base):
    """A dashboard sign-in: the cookie holds a random token, the table its SHA-256."""

    __tablename__ = "ui_sessions"

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    key_id: Mapped[int] = mapped_column(ForeignKey("api_keys.id", ondelete="CASCADE"))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utc_now,
                                                 server_default=func.now())
    expires_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class IdempotencyRecord(Base):
    """One ``Idempotency-Key`` of one caller: the request's fingerprint and its response.

    The row is inserted in the same transaction as the data the request stores, before the
    work; the UNIQUE (owner, key) constraint makes a concurrent duplicate wait for that
    transaction and then find the row.
    """

    __tablename__ = "idempotency_keys"
    __table_args__ = (UniqueConstraint("owner", "key"),)

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    owner: Mapped[str] = mapped_column(String(120))
    key: Mapped[str] = mapped_column(String(200))
    request_hash: Mapped[str] = mapped_column(String(64))
    status_code: Mapped[int | None] = mapped_column(Integer)  # None until the response is stored
    response: Mapped[Any | None] = mapped_column(JSON)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utc_now,
                                                 server_default=func.now(), index=True)


class AuditEvent(Base):
    """A change: who (key name), what (action), where (collection), how much (counts)."""

    __tablename__ = "audit_events"
    __table_args__ = (Index("ix_audit_events_collection_at", "collection_id", "at"),)

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utc_now,
                                         server_default=func.now(), index=True)
    key_name: Mapped[str] = mapped_column(String(100))
    action: Mapped[str] = mapped_column(String(40))
    # No foreign key: the record outlives the collection.
    collection_id: Mapped[int | None] = mapped_column(Integer)
    collection: Mapped[str | None] = mapped_column(String(200))
    target_id: Mapped[int | None] = mapped_column(BigId)  # the batch, fit or key concerned
    counts: Mapped[dict[str, Any] | None] = mapped_column(JSON)
