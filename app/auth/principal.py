"""Who is calling, and what they may touch.

Scopes are ordered: ``read`` < ``ingest`` < ``admin``; a key with a scope has every scope below
it. A key may be limited to some collections: outside them, everything answers 404 as if the
collection did not exist.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Scope = Literal["read", "ingest", "admin"]
SCOPES: tuple[Scope, ...] = ("read", "ingest", "admin")
_RANK = {scope: rank for rank, scope in enumerate(SCOPES)}


@dataclass(frozen=True)
class Principal:
    name: str
    scope: Scope
    collections: frozenset[int] | None = None  # None: every collection

    def allows(self, scope: Scope) -> bool:
        return _RANK[self.scope] >= _RANK[scope]

    def can_see(self, collection_id: int) -> bool:
        return self.collections is None or collection_id in self.collections

    def manages_keys(self) -> bool:
        """Admin scope on every collection: a key limited to some must not mint a key for all
        of them (the keys' routes and pages, and whether the dashboard links to them)."""
        return self.allows("admin") and self.collections is None

    def creates_collections(self) -> bool:
        """Admin scope on every collection, as for keys: a key limited to some could not use a
        collection it created, and a name already taken (409 ``collection_exists``) would tell
        it the name of a collection it may not see (the API's route and the dashboard's form,
        and whether the home page offers it)."""
        return self.manages_keys()


# The caller when access control is off (CROWDQRELS_AUTH=off): everything, everywhere.
OPEN = Principal(name="anonymous", scope="admin", collections=None)
