"""Admin endpoints: API keys and the audit log."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Annotated

from fastapi import APIRouter, Depends, Query, Response
from pydantic import AwareDatetime, BeforeValidator
from sqlalchemy.orm import Session

from app.api.deps import SessionDep
from app.auth import audit, service
from app.auth.deps import Forbidden, KeyVerifierDep, PrincipalDep, require_scope
from app.auth.principal import Principal
from app.auth.schemas import (
    AuditEventPublic,
    AuditEventsPublic,
    KeyCreate,
    KeyCreated,
    KeyPublic,
    KeysPublic,
)
from app.collections import service as collections_service
from app.core.integers import MAX_INT

router = APIRouter(tags=["access"])


def _unrestricted(principal: PrincipalDep) -> None:
    # A key limited to some collections must not mint a key for all of them.
    if not principal.manages_keys():
        raise Forbidden("managing keys needs an admin key that is not limited to collections",
                        code="insufficient_scope", required="admin")


KEY_ADMIN = [require_scope("admin"), Depends(_unrestricted)]


@router.post("/keys", status_code=201, response_model=KeyCreated, dependencies=KEY_ADMIN)
def create_key(session: SessionDep, principal: PrincipalDep, body: KeyCreate,
               response: Response) -> KeyCreated:
    """A new key, shown in this response only (kept by no cache: ``no-store``)."""
    response.headers["Cache-Control"] = "no-store"
    return service.create_key(session, principal=principal, spec=body)


@router.get("/keys", response_model=KeysPublic, dependencies=KEY_ADMIN)
def list_keys(session: SessionDep) -> KeysPublic:
    return service.list_keys(session)


@router.delete("/keys/{name}", response_model=KeyPublic, dependencies=KEY_ADMIN)
def revoke_key(session: SessionDep, principal: PrincipalDep, verifier: KeyVerifierDep,
               name: str) -> KeyPublic:
    """Revoke at once in this process (every API process within CROWDQRELS_KEY_CACHE_S)."""
    key, _ = service.revoke_key(session, principal=principal, name=name, verifier=verifier)
    return key


def _rfc3339(value: object) -> object:
    # A date-time in the schema: not a bare number (which pydantic would read as Unix time).
    if isinstance(value, str) and not _DATE_TIME.match(value):
        raise ValueError("expected an RFC 3339 date-time, e.g. 2026-11-23T10:00:00Z")
    return value


_DATE_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}")


# ``since`` and ``until`` as the API reads them (for the dashboard's audit page).
Instant = Annotated[AwareDatetime, BeforeValidator(_rfc3339)]


@router.get("/audit", response_model=AuditEventsPublic, dependencies=[require_scope("admin")])
def list_audit(
    session: SessionDep,
    principal: PrincipalDep,
    collection: Annotated[str | None, Query(description="id or name")] = None,
    since: Annotated[AwareDatetime | None, BeforeValidator(_rfc3339),
                     Query(description="from this time (inclusive), RFC 3339")] = None,
    until: Annotated[AwareDatetime | None, BeforeValidator(_rfc3339),
                     Query(description="before this time, RFC 3339")] = None,
    action: Annotated[audit.Action | None, Query(description="one action")] = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    offset: Annotated[int, Query(ge=0, le=MAX_INT)] = 0,
) -> AuditEventsPublic:
    """Changes, newest first."""
    return audit_events(session, principal=principal, collection=collection, since=since,
                        until=until, action=action, limit=limit, offset=offset)


def audit_events(session: Session, *, principal: Principal, collection: str | None,
                 since: datetime | None, until: datetime | None, action: str | None,
                 limit: int, offset: int) -> AuditEventsPublic:
    """The audit log as GET /audit answers it (also the dashboard's audit page): ``collection``
    (id or name) must be one the caller may see, else 404 as if it did not exist."""
    collection_id = None
    if collection is not None:
        row = collections_service.get_collection(session, key=collection)
        if not principal.can_see(row.id):
            raise collections_service.collection_not_found(collection)
        collection_id = row.id
    rows, total = audit.list_events(session, principal=principal, collection_id=collection_id,
                                    since=since, until=until, action=action, limit=limit,
                                    offset=offset)
    return AuditEventsPublic(data=[AuditEventPublic.model_validate(r) for r in rows],
                             count=total)
