"""The audit log: every change, with the key that made it, its collection and its counts."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal, get_args

from sqlalchemy import func, or_, select
from sqlalchemy.orm import Session

from app.auth.principal import Principal
from app.auth.tables import AuditEvent
from app.core.errors import InvalidInput

Action = Literal["collection_created", "judgments_added", "gold_set", "gold_replaced",
                 "fit_started", "fit_cancelled", "feature_build_cancelled", "key_created",
                 "key_revoked", "judge_stored", "judge_removed"]
ACTIONS: tuple[str, ...] = get_args(Action)


def record(session: Session, *, principal: Principal, action: str,
           collection: Any | None = None, target_id: int | None = None,
           counts: dict[str, Any] | None = None, commit: bool = True) -> None:
    """Add one event (``collection``: a Collection row or None)."""
    session.add(AuditEvent(
        key_name=principal.name, action=action,
        collection_id=None if collection is None else collection.id,
        collection=None if collection is None else collection.name,
        target_id=target_id, counts=counts))
    if commit:
        session.commit()


def list_events(session: Session, *, principal: Principal, collection_id: int | None,
                since: datetime | None, until: datetime | None, action: str | None,
                limit: int, offset: int) -> tuple[list[AuditEvent], int]:
    where: list[Any] = []
    if collection_id is not None:
        where.append(AuditEvent.collection_id == collection_id)
    if principal.collections is not None:  # a limited admin sees its collections' events only
        where.append(AuditEvent.collection_id.in_(sorted(principal.collections)))
    if since is not None:
        where.append(AuditEvent.at >= since)
    if until is not None:
        where.append(AuditEvent.at < until)
    if action is not None:
        if action not in ACTIONS:  # a misspelt filter would answer "no such event"
            raise InvalidInput(f"action: unknown action {action!r}; valid: {', '.join(ACTIONS)}",
                               code="invalid_body", valid=list(ACTIONS))
        where.append(or_(AuditEvent.action == action))
    total = session.scalar(select(func.count()).select_from(AuditEvent).where(*where)) or 0
    rows = session.scalars(select(AuditEvent).where(*where)
                           .order_by(AuditEvent.at.desc(), AuditEvent.id.desc())
                           .limit(limit).offset(offset))
    return list(rows), total
