from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Path, Query
from fastapi.responses import JSONResponse, PlainTextResponse
from starlette.concurrency import run_in_threadpool

from app.aggregations import downloads, service
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
)
from app.aggregations.tables import Aggregation
from app.api.deps import CollectionDep, RunnerDep, SessionDep
from app.auth.deps import PrincipalDep

collection_router = APIRouter(prefix="/collections/{c}", tags=["aggregations"])
router = APIRouter(prefix="/aggregations", tags=["aggregations"])


def load_aggregation(session: SessionDep, principal: PrincipalDep,
                     a: Annotated[int, Path(description="the aggregation's id")]) -> Aggregation:
    aggregation = service.get_aggregation(session, aggregation_id=a)
    if not principal.can_see(aggregation.collection_id):
        raise service.aggregation_not_found(a)
    return aggregation


AggregationDep = Annotated[Aggregation, Depends(load_aggregation)]
Limit = Annotated[int, Query(ge=1, le=10_000)]
Offset = Annotated[int, Query(ge=0)]


def public(aggregation: Aggregation) -> AggregationPublic:
    info = aggregation.info or {}
    return AggregationPublic(
        id=aggregation.id, collection_id=aggregation.collection_id, method=aggregation.method,
        params=aggregation.params, graded=aggregation.graded, status=aggregation.status,
        progress={"fraction": aggregation.progress, "message": aggregation.progress_message},
        watermark=aggregation.watermark, n_judgments=aggregation.n_judgments,
        created_at=aggregation.created_at, started_at=aggregation.started_at,
        finished_at=aggregation.finished_at, timings=aggregation.timings,
        objective_history=aggregation.objective_history, evaluation=aggregation.evaluation,
        info=aggregation.info, classes=aggregation.classes, error=aggregation.error,
        fallback=info.get("fallback"),
    )


@collection_router.post("/aggregations", status_code=202, response_model=AggregationPublic)
def create_aggregation(session: SessionDep, runner: RunnerDep, collection: CollectionDep,
                       body: AggregationCreate) -> AggregationPublic:
    aggregation = service.create_aggregation(session, runner=runner, collection=collection,
                                             spec=body)
    return public(aggregation)


@collection_router.get("/aggregations", response_model=AggregationsPublic)
def list_aggregations(session: SessionDep, collection: CollectionDep, limit: Limit = 100,
                      offset: Offset = 0) -> AggregationsPublic:
    rows, total = service.list_aggregations(session, collection=collection, limit=limit,
                                            offset=offset)
    return AggregationsPublic(data=[public(a) for a in rows], count=total)


@collection_router.get("/aggregations/comparison", response_model=Comparison)
def compare_aggregations(session: SessionDep, collection: CollectionDep) -> Comparison:
    rows = service.comparison(session, collection=collection)
    return Comparison.model_validate({"data": rows, "count": len(rows)})


@collection_router.get("/annotators/{annotator}", response_model=AnnotatorHistory)
def annotator_history(session: SessionDep, collection: CollectionDep,
                      annotator: str) -> AnnotatorHistory:
    """One annotator's competence across the collection's succeeded aggregations."""
    return AnnotatorHistory.model_validate(
        service.annotator_history(session, collection=collection, annotator=annotator))


@router.get("/{a}", response_model=AggregationPublic)
def get_aggregation(aggregation: AggregationDep) -> AggregationPublic:
    return public(aggregation)


@router.delete("/{a}", response_model=AggregationPublic)
def cancel_aggregation(session: SessionDep, runner: RunnerDep,
                       aggregation: AggregationDep) -> AggregationPublic:
    return public(service.cancel_aggregation(session, runner=runner, aggregation=aggregation))


@router.get("/{a}/qrels", response_model=None)
def qrels(session: SessionDep, aggregation: AggregationDep,
          format: Literal["trec", "tsv", "json"] = "trec",
          threshold: Annotated[float | None, Query(ge=0.0, le=1.0)] = None,
          ) -> PlainTextResponse | JSONResponse:
    """TREC qrels sorted by topic then doc. Without ``threshold`` the label is the most probable
    one; with it, relevance is binary: P(relevant) >= threshold."""
    rows = service.all_task_results(session, aggregation=aggregation)
    classes = aggregation.classes or []
    if format == "json":
        return JSONResponse(downloads.as_json(rows, classes, threshold))
    if format == "tsv":
        return PlainTextResponse(downloads.tsv(rows, classes, threshold),
                                 media_type="text/tab-separated-values")
    return PlainTextResponse(downloads.trec(rows, threshold), headers={
        "content-disposition": f'attachment; filename="aggregation-{aggregation.id}.qrels"'})


@router.get("/{a}/annotators", response_model=AnnotatorResults)
def annotators(session: SessionDep, aggregation: AggregationDep, sort: str = "-competence",
               min_judgments: Annotated[int, Query(ge=0)] = 0, limit: Limit = 100,
               offset: Offset = 0) -> AnnotatorResults:
    """Sort by competence, noise_variance, bias, n_judgments, gold_accuracy or annotator
    ('-' for descending)."""
    data, total = service.annotator_results(session, aggregation=aggregation, sort=sort,
                                            min_judgments=min_judgments, limit=limit,
                                            offset=offset)
    return AnnotatorResults.model_validate({"data": data, "count": total})


@router.get("/{a}/tasks", response_model=TaskResults)
def tasks(session: SessionDep, aggregation: AggregationDep, topic: str | None = None,
          sort: str = "-difficulty", limit: Limit = 100, offset: Offset = 0) -> TaskResults:
    """Sort by difficulty, uncertainty, p_relevant, posterior_variance or topic."""
    data, total = service.task_results(session, aggregation=aggregation, topic=topic, sort=sort,
                                       limit=limit, offset=offset)
    return TaskResults.model_validate({"data": data, "count": total})


@router.post("/{a}/predict", response_model=PredictResponse)
async def predict(session: SessionDep, aggregation: AggregationDep,
                  body: PredictRequest) -> PredictResponse:
    from app.aggregations.prediction import predict_for

    result: dict[str, Any] = await run_in_threadpool(
        predict_for, session, aggregation=aggregation, features=body.features)
    return PredictResponse(**result)
