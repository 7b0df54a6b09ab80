from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Path, Request
from pydantic import BaseModel, ConfigDict, Field
from starlette.concurrency import run_in_threadpool

from app.api.deps import RunnerDep, SessionDep
from app.api.uploads import read_upload
from app.auth import audit
from app.auth.deps import PrincipalDep, require_scope
from app.collections.deps import CollectionDep
from app.collections.tables import Collection
from app.core.errors import NotFound
from app.core.integers import MAX_INT
from app.features import service
from app.formats.features_file import parse_features
from app.jobs.progress import Progress

router = APIRouter(prefix="/collections/{c}", tags=["features"])
builds_router = APIRouter(prefix="/feature-builds", tags=["features"])


class FeatureBuildCreate(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    lexical: bool | None = Field(default=None, description="default: if texts were uploaded")
    ranking: bool | None = Field(default=None, description="default: if runs were uploaded")
    semantic: bool = Field(default=False, description="sentence embeddings (optional extra)")
    k1: float = Field(default=0.9, gt=0)
    b: float = Field(default=0.4, ge=0, le=1)
    mu: float = Field(default=1000.0, gt=0)
    rank_transform: Literal["normal", "log_rr", "both"] = Field(
        default="normal", description="the ranking features' form: each run's normal scores "
        "within a topic (normal), its log rank and reciprocal rank (log_rr), or both "
        "(docs/features.md)")


class FeatureBuildPublic(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    id: int
    collection_id: int
    params: dict[str, Any]
    status: str
    progress: Progress
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    timings: dict[str, float] | None
    report: dict[str, Any] | None
    error: str | None


def build_public(build: Any) -> FeatureBuildPublic:
    """A feature build as the API shows it: progress as every job shows it."""
    return FeatureBuildPublic(
        id=build.id, collection_id=build.collection_id, params=build.params,
        status=build.status, progress=Progress.of(build), created_at=build.created_at,
        started_at=build.started_at, finished_at=build.finished_at, timings=build.timings,
        report=build.report, error=build.error)


class FeatureReport(BaseModel):
    tasks: int
    dimensions: int
    new_tasks: int


class FeatureSetPublic(BaseModel):
    names: list[str]
    groups: dict[str, list[int]]
    source: str
    tasks: int
    updated_at: datetime


@router.put("/features", response_model=FeatureReport, dependencies=[require_scope("ingest")])
async def put_features(request: Request, session: SessionDep,
                       collection: CollectionDep) -> FeatureReport:
    """Task feature vectors, TSV/CSV with header ``topic doc f1 .. fd``; replaces the
    collection's features. Names prefixed ``lexical:``, ``run:``/``ranking:`` or ``semantic:``
    form kernel groups for the GP methods; other columns form the group ``user``."""
    upload = await read_upload(request, filename=None)
    rows = await run_in_threadpool(parse_features, upload.content)
    report = await run_in_threadpool(
        service.replace_features, session, collection=collection, names=rows.names,
        vectors=rows.vectors, source="upload")
    return FeatureReport(**report)


@router.get("/features", response_model=FeatureSetPublic, dependencies=[require_scope("read")])
def get_features(session: SessionDep, collection: CollectionDep) -> FeatureSetPublic:
    described = service.describe_features(session, collection=collection)
    if described is None:
        raise NotFound(f"collection {collection.name!r} has no features", code="no_features")
    return FeatureSetPublic.model_validate(described)


@router.post("/features/build", status_code=202, response_model=FeatureBuildPublic,
             dependencies=[require_scope("admin")])
def build_features(session: SessionDep, runner: RunnerDep, collection: CollectionDep,
                   body: FeatureBuildCreate | None = None) -> FeatureBuildPublic:
    """Build task features from the uploaded topic/document texts (lexical: tf, idf, tf-idf,
    cosine, BM25, query likelihood; semantic: embeddings) and runs (rank, reciprocal rank), as
    a job; the result replaces the collection's features. No body: every default."""
    body = body if body is not None else FeatureBuildCreate()
    build = service.request_build(session, runner=runner, collection=collection,
                                  **body.model_dump())
    return build_public(build)


@builds_router.get("/{build_id}", response_model=FeatureBuildPublic,
                   dependencies=[require_scope("read")])
def get_feature_build(session: SessionDep, principal: PrincipalDep,
                      build_id: Annotated[int, Path(ge=1, le=MAX_INT)]) -> FeatureBuildPublic:
    build = service.get_build(session, build_id=build_id)
    if not principal.can_see(build.collection_id):
        raise service.build_not_found(build_id)
    return build_public(build)


@builds_router.delete("/{build_id}", response_model=FeatureBuildPublic,
                      dependencies=[require_scope("admin")])
def cancel_feature_build(session: SessionDep, runner: RunnerDep, principal: PrincipalDep,
                         build_id: Annotated[int, Path(ge=1, le=MAX_INT)]) -> FeatureBuildPublic:
    """Cancel a queued or running feature build (as ``DELETE /aggregations/{a}`` cancels a
    fit): it ends ``cancelled`` and stores no features; a finished build is 409
    ``feature_build_finished``."""
    build = service.get_build(session, build_id=build_id)
    if not principal.can_see(build.collection_id):
        raise service.build_not_found(build_id)
    cancelled = service.cancel_build(session, runner=runner, build=build)
    audit.record(session, principal=principal, action="feature_build_cancelled",
                 collection=session.get(Collection, cancelled.collection_id),
                 target_id=cancelled.id)
    return build_public(cancelled)
