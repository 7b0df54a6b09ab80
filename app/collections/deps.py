"""The collection a request names, loaded once for the routers: 404 when it does not exist or the
caller's key may not see it (the same answer, so a key cannot probe for other collections)."""

from __future__ import annotations

from operator import attrgetter
from typing import Annotated

from fastapi import Depends, Path

from app.auth.deps import Forbidden, PrincipalDep, load_or_404, require_scope
from app.collections import service as collections_service
from app.collections.tables import Collection

load_collection = load_or_404(
    name="c", path=Annotated[str, Path(description="the collection's id or name")],
    get=lambda session, c: collections_service.get_collection(session, key=c),
    not_found=collections_service.collection_not_found, collection_id=attrgetter("id"))


CollectionDep = Annotated[Collection, Depends(load_collection)]


def _every_collection(principal: PrincipalDep) -> None:
    if not principal.creates_collections():
        raise Forbidden("creating a collection needs an admin key that is not limited to "
                        "collections", code="insufficient_scope", required="admin")


# Creating a collection (this router and the dashboard's form): admin scope, on every collection.
CREATE = [require_scope("admin"), Depends(_every_collection)]
