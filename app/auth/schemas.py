from __future__ import annotations

import re
from datetime import datetime
from typing import Annotated, Any

from pydantic import AwareDatetime, BaseModel, BeforeValidator, ConfigDict, Field

from app.auth.principal import Scope


class KeyCreate(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    name: str = Field(min_length=1, max_length=100, pattern=r"^[A-Za-z0-9][A-Za-z0-9._@-]*$")
    scope: Scope
    collections: list[str] | None = Field(
        default=None, min_length=1, max_length=1000,
        description="limit the key to these collections (ids or names); omit it or null for "
        "every collection (an empty list is refused: it would read as no limit)")


class KeyPublic(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    name: str
    prefix: str
    scope: Scope
    collections: list[int] | None = Field(description="ids of the collections the key is "
                                          "limited to; null: every collection")
    collection_names: list[str] | None = Field(
        default=None, description="their names, in the same order (a deleted collection: its "
        "id as text)")
    created_at: datetime
    last_used_at: datetime | None
    revoked_at: datetime | None


class KeyCreated(KeyPublic):
    key: str = Field(description="the key itself: shown this once, stored only as a hash")


class KeysPublic(BaseModel):
    data: list[KeyPublic]
    count: int


class AuditEventPublic(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    id: int
    at: datetime
    key_name: str
    action: str
    collection_id: int | None
    collection: str | None
    target_id: int | None
    counts: dict[str, Any] | None


class AuditEventsPublic(BaseModel):
    data: list[AuditEventPublic]
    count: int


def rfc3339(value: object) -> object:
    # A date-time in the schema: not a bare number (which pydantic would read as Unix time).
    if isinstance(value, str) and not _DATE_TIME.match(value):
        raise ValueError("expected an RFC 3339 date-time, e.g. 2026-11-23T10:00:00Z")
    return value


_DATE_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}")


# ``since`` and ``until`` as the API reads them (for the dashboard's audit page).
Instant = Annotated[AwareDatetime, BeforeValidator(rfc3339)]
