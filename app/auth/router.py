"""Admin endpoints: API keys and the audit log."""

from __future__ import annotations

import re
from typing import Annotated

from fastapi import APIRouter, Depends, Query, Request
from pydantic import AwareDatetime, BeforeValidator
from sqlalchemy.orm import Session

from app.api.deps import SessionDep
from app.auth import audit, keys
from app.auth.deps import Forbidden, PrincipalDep, require_scope
from app.auth.schemas import (
    AuditEventPublic,
    AuditEventsPublic,
    KeyCreate,
    KeyCreated,
    KeyPublic,
    KeysPublic,
)
from app.auth.tables import ApiKey
from app.collections import service as collections_service
from app.core.integers import MAX_INT

router = APIRouter(tags=["access"])


def _unrestricted(principal: PrincipalDep) -> None:
    # A key limited to some collections must not mint a key for all of them.
    if principal.collections is not None:
        raise Forbidden("managing keys needs an admin key that is not limited to collections",
                        code="insufficient_scope", required="admin")


KEY_ADMIN = [require_scope("admin"), Depends(_unrestricted)]


@router.post("/keys", status_code=201, response_model=KeyCreated, dependencies=KEY_ADMIN)
def create_key(session: SessionDep, principal: PrincipalDep, body: KeyCreate) -> KeyCreated:
    """A new key, shown in this response only."""
    row, key = keys.create_key(session, name=body.name, scope=body.scope,
                               collections=body.collections)
    audit.record(session, principal=principal, action="key_created", target_id=row.id,
                 counts={"name": row.name, "scope": row.scope})
    return KeyCreated(**key_public(session, [row])[0].model_dump(), key=key)


def key_public(session: Session, rows: list[ApiKey]) -> list[KeyPublic]:
    """Keys as the API shows them: with the names of the collections they are limited to."""
    names = keys.collection_names(session, rows)
    return [KeyPublic.model_validate(r).model_copy(update={"collection_names": None
             if r.collections is None else [names.get(i, str(i)) for i in r.collections]})
            for r in rows]


@router.get("/keys", response_model=KeysPublic, dependencies=KEY_ADMIN)
def list_keys(session: SessionDep) -> KeysPublic:
    rows = keys.list_keys(session)
    return KeysPublic(data=key_public(session, rows), count=len(rows))


@router.delete("/keys/{name}", response_model=KeyPublic, dependencies=KEY_ADMIN)
def revoke_key(request: Request, session: SessionDep, principal: PrincipalDep,
               name: str) -> KeyPublic:
    """Revoke at once in this process (every API process within CROWDQRELS_KEY_CACHE_S)."""
    row, changed = keys.revoke_key(session, name=name)
    verifier = getattr(request.app.state, "key_verifier", None)
    if verifier is not None:
        verifier.forget_key(row.id)
    if changed:  # revoking a revoked key again answers the same and records nothing
        audit.record(session, principal=principal, action="key_revoked", target_id=row.id,
                     counts={"name": row.name})
    return key_public(session, [row])[0]


def _rfc3339(value: object) -> object:
    # A date-time in the schema: not a bare number (which pydantic would read as Unix time).
    if isinstance(value, str) and not _DATE_TIME.match(value):
        raise ValueError("expected an RFC 3339 date-time, e.g. 2026-11-23T10:00:00Z")
    return value


_DATE_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}")


@router.get("/audit", response_model=AuditEventsPublic, dependencies=[require_scope("admin")])
def list_audit(
    session: SessionDep,
    principal: PrincipalDep,
    collection: Annotated[str | None, Query(description="id or name")] = None,
    since: Annotated[AwareDatetime | None, BeforeValidator(_rfc3339),
                     Query(description="from this time (inclusive), RFC 3339")] = None,
    until: Annotated[AwareDatetime | None, BeforeValidator(_rfc3339),
                     Query(description="before this time, RFC 3339")] = None,
    action: str | None = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    offset: Annotated[int, Query(ge=0, le=MAX_INT)] = 0,
) -> AuditEventsPublic:
    """Changes, newest first."""
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
