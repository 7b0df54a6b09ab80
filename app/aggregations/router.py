from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query, Request, Response
from fastapi.responses import JSONResponse, PlainTextResponse
from sqlalchemy.orm import Session
from starlette.concurrency import run_in_threadpool

from app.aggregations import annotator_results, comparison, downloads, service, task_results
from app.aggregations.agreement import agreement_matrix
from app.aggregations.deps import AggregationDep, get_listing_cache
from app.aggregations.gold import check_fits
from app.aggregations.listing import CACHE_CONTROL, VARY
from app.aggregations.schemas import (
    AggregationCreate,
    AggregationPublic,
    AggregationsPublic,
    AnnotatorHistory,
    AnnotatorResults,
    Comparison,
    PredictRequest,
    PredictResponse,
    TaskResults,
    public,
)
from app.aggregations.tables import Aggregation
from app.api.deps import Limit, Offset, OptionalId, RunnerDep, SessionDep, SettingsDep, id_path
from app.api.openapi import text_responses
from app.auth.deps import PrincipalDep, get_principal, require_scope
from app.auth.idempotency import IdempotencyDep
from app.collections.deps import CollectionDep
from app.collections.tables import Collection
from app.core.config import Settings
from app.core.db import get_sessionmaker
from app.core.integers import MAX_INT
from app.jobs.maintenance import fail_stale_jobs

collection_router = APIRouter(prefix="/collections/{c}", tags=["aggregations"])
router = APIRouter(prefix="/aggregations", tags=["aggregations"])


def checked(session: Session, request: Request, fits: list[Aggregation],
            collection: Collection | None = None) -> list[AggregationPublic]:
    """``public`` of each fit with its gold checked against the collection's current gold."""
    if not fits:
        return []
    if collection is None:
        collection = session.get(Collection, fits[0].collection_id)
    assert collection is not None
    statuses = check_fits(session, collection=collection, fits=fits,
                          cache=get_listing_cache(request))
    return [public(a, statuses.get(a.id)) for a in fits]


@collection_router.post("/aggregations", status_code=202, response_model=AggregationPublic,
                        dependencies=[require_scope("admin")])
def create_aggregation(session: SessionDep, runner: RunnerDep, settings: SettingsDep,
                       principal: PrincipalDep, idempotency: IdempotencyDep,
                       collection: CollectionDep, body: AggregationCreate) -> Any:
    """Start a fit; with an ``Idempotency-Key`` a retry returns the same fit."""
    fail_stale_jobs(session, stale_after_s=settings.job_stale_after_s)

    def work() -> AggregationPublic:
        aggregation = service.create_aggregation(session, runner=runner, collection=collection,
                                                 spec=body)
        service.fit_started(session, principal, collection, aggregation)
        return public(aggregation)

    return idempotency.run(session, body=body.model_dump_json(), status_code=202, work=work)


@collection_router.get("/aggregations", response_model=AggregationsPublic,
                       dependencies=[require_scope("read")])
def list_aggregations(request: Request, session: SessionDep, settings: SettingsDep,
                      collection: CollectionDep, limit: Limit = 100,
                      offset: Offset = 0) -> AggregationsPublic:
    fail_stale_jobs(session, stale_after_s=settings.job_stale_after_s)
    rows, total = service.list_aggregations(session, collection=collection, limit=limit,
                                            offset=offset)
    return AggregationsPublic(data=checked(session, request, rows, collection), count=total)


@collection_router.get("/aggregations/comparison", response_model=Comparison,
                       dependencies=[require_scope("read")])
def compare_aggregations(request: Request, session: SessionDep,
                         collection: CollectionDep) -> Comparison:
    """Succeeded fits against the current gold (``rescored``, ``stale``: see the fields)."""
    rows = comparison.comparison(session, collection=collection,
                                 cache=get_listing_cache(request))
    return Comparison.model_validate({"data": rows, "count": len(rows)})


@router.get("/{a}", response_model=AggregationPublic, dependencies=[require_scope("read")])
def get_aggregation(request: Request, session: SessionDep,
                    aggregation: AggregationDep) -> AggregationPublic:
    return checked(session, request, [aggregation])[0]


@router.delete("/{a}", response_model=AggregationPublic, dependencies=[require_scope("admin")])
def cancel_aggregation(session: SessionDep, runner: RunnerDep, principal: PrincipalDep,
                       aggregation: AggregationDep) -> AggregationPublic:
    cancelled = service.cancel_aggregation(session, runner=runner, aggregation=aggregation)
    service.fit_cancelled(session, principal, cancelled)
    return public(cancelled)


@router.get("/{a}/qrels", response_model=None, dependencies=[require_scope("read")],
            responses=text_responses("text/plain", "text/tab-separated-values", "application/json",
                                description="qrels as TREC text, TSV or JSON"))
def qrels(session: SessionDep, aggregation: AggregationDep,
          format: Literal["trec", "tsv", "json"] = "trec",
          threshold: Annotated[float | None, Query(ge=0.0, le=1.0)] = None,
          grade: Literal["most_probable", "expected"] = "most_probable",
          ) -> PlainTextResponse | JSONResponse:
    """TREC qrels sorted by topic then doc. Without ``threshold`` the label is the most probable
    grade, or with ``grade=expected`` the expected grade rounded to the scale (graded qrels for
    nDCG); with ``threshold``, relevance is binary: P(relevant) >= threshold."""
    rows = task_results.all_task_results(session, aggregation=aggregation)
    classes = aggregation.classes or []
    if format == "json":
        return JSONResponse(downloads.as_json(rows, classes, threshold, grade))
    if format == "tsv":
        return PlainTextResponse(downloads.tsv(rows, classes, threshold, grade),
                                 media_type="text/tab-separated-values", headers={
            "content-disposition": f'attachment; filename="aggregation-{aggregation.id}.tsv"'})
    return PlainTextResponse(downloads.trec(rows, threshold, classes, grade), headers={
        "content-disposition": f'attachment; filename="aggregation-{aggregation.id}.qrels"'})


@router.get("/{a}/annotators", response_model=AnnotatorResults,
            dependencies=[require_scope("read")])
async def annotators(request: Request,
                     a: Annotated[int, id_path("aggregation")],
                     sort: str = "-competence",
                     min_judgments: Annotated[int, Query(ge=0, le=MAX_INT)] = 0,
                     q: Annotated[str | None, Query(max_length=200,
                                                    description="annotator id contains")] = None,
                     kind: Annotated[Literal["crowd", "llm", "expert"] | None, Query(
                         description="only annotators of this kind")] = None,
                     limit: Limit = 100, offset: Offset = 0) -> Response:
    """Sort by competence, noise_variance, bias, n_judgments, gold_accuracy or annotator
    ('-' for descending). A succeeded fit's results never change: pages come from an ordering
    computed once, with an ETag (``If-None-Match`` -> 304), ``Cache-Control`` and ``Vary`` (kept
    for the key or session that asked only)."""
    # Async, and no session unless the ordering must be read: a cached page costs no thread
    # hop and no query. The caller and the access check are those of every route.
    cache = get_listing_cache(request)
    principal = get_principal(request)
    args = {"cache": cache, "aggregation_id": a, "visible": principal.can_see, "sort": sort,
            "min_judgments": min_judgments, "q": q, "limit": limit, "offset": offset,
            "kind": kind}
    result = annotator_results.cached_annotator_page(**args)
    if result is None:
        result = await run_in_threadpool(_annotator_page, request.app.state.settings, args)
    headers = {"ETag": result.etag, "Cache-Control": CACHE_CONTROL, "Vary": VARY}
    if result.etag in {t.strip() for t in request.headers.get("if-none-match", "").split(",")}:
        return Response(status_code=304, headers=headers)
    return Response(result.body, media_type="application/json", headers=headers)


def _annotator_page(settings: Settings, args: dict[str, Any]) -> Any:
    with get_sessionmaker(settings.database_url)() as session:
        return annotator_results.annotator_page(session, **args)


@router.get("/{a}/tasks", response_model=TaskResults, dependencies=[require_scope("read")])
def tasks(session: SessionDep, aggregation: AggregationDep, topic: str | None = None,
          sort: str = "-difficulty", limit: Limit = 100, offset: Offset = 0) -> TaskResults:
    """Sort by difficulty, uncertainty, p_relevant, posterior_variance or topic."""
    data, total = task_results.task_results(session, aggregation=aggregation, topic=topic,
                                            sort=sort, limit=limit, offset=offset)
    return TaskResults.model_validate({"data": data, "count": total})


@router.post("/{a}/predict", response_model=PredictResponse, dependencies=[require_scope("read")])
async def predict(session: SessionDep, aggregation: AggregationDep,
                  body: PredictRequest) -> PredictResponse:
    from app.aggregations.prediction import predict_for

    result: dict[str, Any] = await run_in_threadpool(
        predict_for, session, aggregation=aggregation, features=body.features,
        topics=body.topics)
    return PredictResponse(**result)


@router.get("/{a}/summary", dependencies=[require_scope("read")])
def task_summary(session: SessionDep, aggregation: AggregationDep) -> dict[str, Any]:
    """Per task uncertainty, difficulty and P(relevant); per topic share relevant and mean
    uncertainty (what the dashboard plots)."""
    return task_results.task_summary(session, aggregation=aggregation)


@router.get("/{a}/tasks/{task_id}", dependencies=[require_scope("read")])
def task_detail(session: SessionDep, aggregation: AggregationDep,
                task_id: Annotated[int, id_path("task")]) -> dict[str, Any]:
    """One task: its posterior in this fit and its judgments with each annotator's competence."""
    return task_results.task_detail(session, aggregation=aggregation, task_id=task_id)


@collection_router.get("/aggregations/agreement", dependencies=[require_scope("read")])
def agreement(request: Request, session: SessionDep, collection: CollectionDep) -> dict[str, Any]:
    """Share of common tasks with the same label, for every two succeeded fits (a graded and a
    binary fit: the same relevance, grade >= relevant_from against the binary label)."""
    return agreement_matrix(session, collection=collection, cache=get_listing_cache(request))


@collection_router.get("/annotators/{annotator:path}/confusion",
                       dependencies=[require_scope("read")])
def annotator_confusion(session: SessionDep, collection: CollectionDep,
                        annotator: str, aggregation: OptionalId = None) -> dict[str, Any]:
    """The annotator's labels against gold and against a fit's labels (default: the latest
    succeeded fit)."""
    return annotator_results.annotator_confusion(
        session, collection=collection, annotator=annotator,
        aggregation=service.reference_aggregation(session, collection=collection,
                                                  aggregation_id=aggregation))


@collection_router.get("/annotators/{annotator:path}", response_model=AnnotatorHistory,
                       dependencies=[require_scope("read")])
def annotator_history(session: SessionDep, collection: CollectionDep,
                      annotator: str) -> AnnotatorHistory:
    """One annotator's competence across the collection's succeeded aggregations. (A path
    parameter: an annotator id may hold "/"; registered after ``…/confusion``, which it would
    otherwise take.)"""
    return AnnotatorHistory.model_validate(
        annotator_results.annotator_history(session, collection=collection, annotator=annotator))
