from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from app.api.deps import SessionDep
from app.auth.deps import PrincipalDep, require_scope
from app.collections import service
from app.collections.deps import CREATE, CollectionDep
from app.collections.schemas import (
    CollectionCreate,
    CollectionPublic,
    CollectionsPublic,
    CollectionStats,
)
from app.core.integers import MAX_INT

router = APIRouter(prefix="/collections", tags=["collections"])


@router.post("", status_code=201, response_model=CollectionPublic, dependencies=CREATE)
def create_collection(session: SessionDep, principal: PrincipalDep,
                      body: CollectionCreate) -> CollectionPublic:
    collection = service.create_collection(session, spec=body)
    service.collection_created(session, principal, collection)
    public = CollectionPublic.model_validate(collection)
    public.counts = service.collection_counts(session, collection=collection)
    return public


@router.get("", response_model=CollectionsPublic, dependencies=[require_scope("read")])
def list_collections(
    session: SessionDep,
    principal: PrincipalDep,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    offset: Annotated[int, Query(ge=0, le=MAX_INT)] = 0,
) -> CollectionsPublic:
    rows, total = service.list_collections(session, limit=limit, offset=offset,
                                           only=principal.collections)
    return CollectionsPublic(data=[CollectionPublic.model_validate(r) for r in rows], count=total)


@router.get("/{c}", response_model=CollectionPublic, dependencies=[require_scope("read")])
def get_collection(session: SessionDep, collection: CollectionDep) -> CollectionPublic:
    public = CollectionPublic.model_validate(collection)
    public.counts = service.collection_counts(session, collection=collection)
    return public


@router.get("/{c}/stats", response_model=CollectionStats, dependencies=[require_scope("read")])
def collection_stats(session: SessionDep, collection: CollectionDep) -> CollectionStats:
    return service.collection_stats(session, collection=collection)
