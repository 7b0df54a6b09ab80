from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

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
