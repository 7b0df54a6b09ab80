"""Keys as the API shows them: the one place each action and query on keys lives, for the JSON
API (app.auth.router) and the dashboard (app.ui.pages.admin). (The audit log's listing is
app.auth.router.audit_events: it resolves a collection's name, and the router and app.auth.keys
are the modules of this package allowed to import the collections' service.)

Creating and revoking a key record their audit events here; a revoke also drops the key from
this process's verifier cache, so it stops working at once. Nothing here knows HTTP.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from sqlalchemy.orm import Session

from app.auth import audit, keys
from app.auth.principal import Principal
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

if TYPE_CHECKING:
    from app.auth.keys import KeyVerifier


def key_public(session: Session, rows: list[ApiKey]) -> list[KeyPublic]:
    """Keys as the API shows them: with the names of the collections they are limited to."""
    names = keys.collection_names(session, rows)
    return [KeyPublic.model_validate(r).model_copy(update={"collection_names": None
             if r.collections is None else [names.get(i, str(i)) for i in r.collections]})
            for r in rows]


def list_keys(session: Session) -> KeysPublic:
    rows = keys.list_keys(session)
    return KeysPublic(data=key_public(session, rows), count=len(rows))


def create_key(session: Session, *, principal: Principal, spec: KeyCreate) -> KeyCreated:
    """A new key (its secret in this answer only), audited as ``key_created``."""
    row, key = keys.create_key(session, name=spec.name, scope=spec.scope,
                               collections=spec.collections)
    key_created(session, principal=principal, row=row)
    return KeyCreated(**key_public(session, [row])[0].model_dump(), key=key)


def key_created(session: Session, *, principal: Principal, row: ApiKey) -> None:
    """The audit event of a new key (the API, the dashboard and the CLI): its name and scope,
    and, for a key limited to some collections, their names."""
    counts: dict[str, object] = {"name": row.name, "scope": row.scope}
    if row.collections is not None:
        names = keys.collection_names(session, [row])
        counts["collections"] = [names.get(i, str(i)) for i in row.collections]
    audit.record(session, principal=principal, action="key_created", target_id=row.id,
                 counts=counts)


def revoke_key(session: Session, *, principal: Principal, name: str,
               verifier: KeyVerifier | None) -> tuple[KeyPublic, bool]:
    """Revoke the key ``name`` at once in this process (every API process within
    CROWDQRELS_KEY_CACHE_S); audited as ``key_revoked`` when this call revoked it. Returns the
    key and whether it did: revoking a revoked key again changes and records nothing."""
    row, changed = keys.revoke_key(session, name=name)
    if verifier is not None:
        verifier.forget_key(row.id)
    if changed:
        audit.record(session, principal=principal, action="key_revoked", target_id=row.id,
                     counts={"name": row.name})
    return key_public(session, [row])[0], changed


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
