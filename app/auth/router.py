"""Admin endpoints: API keys and the audit log."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Response
from pydantic import AwareDatetime, BeforeValidator

from app.api.deps import SessionDep
from app.auth import audit, service
from app.auth.deps import KEY_ADMIN, KeyVerifierDep, PrincipalDep, require_scope
from app.auth.schemas import (
    AuditEventsPublic,
    KeyCreate,
    KeyCreated,
    KeyPublic,
    KeysPublic,
    rfc3339,
)
from app.core.integers import MAX_INT

router = APIRouter(tags=["access"])


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


@router.get("/audit", response_model=AuditEventsPublic, dependencies=[require_scope("admin")])
def list_audit(
    session: SessionDep,
    principal: PrincipalDep,
    collection: Annotated[str | None, Query(description="id or name")] = None,
    since: Annotated[AwareDatetime | None, BeforeValidator(rfc3339),
                     Query(description="from this time (inclusive), RFC 3339")] = None,
    until: Annotated[AwareDatetime | None, BeforeValidator(rfc3339),
                     Query(description="before this time, RFC 3339")] = None,
    action: Annotated[audit.Action | None, Query(description="one action")] = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    offset: Annotated[int, Query(ge=0, le=MAX_INT)] = 0,
) -> AuditEventsPublic:
    """Changes, newest first."""
    return service.audit_events(session, principal=principal, collection=collection, since=since,
                        until=until, action=action, limit=limit, offset=offset)
