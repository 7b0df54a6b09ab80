from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query
from fastapi.responses import JSONResponse, PlainTextResponse, Response
from starlette.concurrency import run_in_threadpool

from app.aggregations import downloads
from app.aggregations.service import aggregation_not_found
from app.api.deps import Limit, Offset, RunnerDep, SessionDep
from app.api.openapi import text_responses
from app.auth.deps import require_scope
from app.auth.idempotency import IdempotencyDep
from app.collections.deps import CollectionDep
from app.core.errors import InvalidInput
from app.core.integers import MAX_INT
from app.evaluations import service
from app.evaluations.deps import EvaluationDep
from app.evaluations.schemas import (
    EvaluationCreate,
    EvaluationPublic,
    EvaluationsPublic,
    MeasuresFormat,
    QrelsFormat,
    public,
)
from models.evaluation.scoring import format_trec, format_tsv

collection_router = APIRouter(prefix="/collections/{c}", tags=["evaluations"])
router = APIRouter(prefix="/evaluations", tags=["evaluations"])


@collection_router.post("/evaluations", status_code=202, response_model=EvaluationPublic,
                        dependencies=[require_scope("admin")])
def create_evaluation(session: SessionDep, runner: RunnerDep, idempotency: IdempotencyDep,
                      collection: CollectionDep, body: EvaluationCreate) -> Any:
    """Score the collection's runs on an aggregation's qrels ("gold", or a union /
    intersection of sources), with ``samples`` draws of the qrels from the posterior: a job.
    With an ``Idempotency-Key`` a retry returns the same evaluation instead of a second job."""

    def work() -> EvaluationPublic:
        return public(service.create_evaluation(session, runner=runner, collection=collection,
                                                spec=body))

    return idempotency.run(session, body=body.model_dump_json(), status_code=202, work=work)


@collection_router.get("/evaluations", response_model=EvaluationsPublic,
                       dependencies=[require_scope("read")])
def list_evaluations(session: SessionDep, collection: CollectionDep, limit: Limit = 100,
                     offset: Offset = 0) -> EvaluationsPublic:
    """Oldest first, a page of ``limit`` from ``offset``; ``count``: all of them (as the
    collection's aggregations are listed)."""
    rows = service.list_evaluations(session, collection=collection, limit=limit, offset=offset)
    return EvaluationsPublic(data=[public(e) for e in rows],
                             count=service.count_evaluations(session, collection=collection))


@collection_router.get("/qrels/{mode}", response_model=None,
                       dependencies=[require_scope("read")],
                       responses=text_responses("text/plain", "text/tab-separated-values",
                                           "application/json",
                                           description="qrels as TREC text, TSV or JSON"))
def combined_qrels(session: SessionDep, collection: CollectionDep, mode: str,
                   sources: Annotated[str, Query(description='comma-separated aggregation ids '
                                                             'and/or "gold"')],
                   format: QrelsFormat = "trec",
                   threshold: Annotated[float | None, Query(ge=0, le=1)] = None) -> Response:
    """Union (relevant if any source says so) or intersection (if all do) of two or more
    aggregations and/or gold, as qrels (P(relevant) under independent sources)."""
    refs: list[Any] = []
    for part in sources.split(","):
        part = part.strip()
        if part == "gold":
            refs.append("gold")
        elif part.isascii() and part.isdigit():
            if int(part) > MAX_INT:  # no row has such an id (and the database refuses it)
                raise aggregation_not_found(int(part))
            refs.append(int(part))
        else:
            raise InvalidInput(f'a source is an aggregation id or "gold", got {part!r}',
                               code="invalid_source")
    posterior = service.load_posterior(session, collection=collection, source={mode: refs})
    rows = service.posterior_rows(posterior)
    classes = [int(c) for c in posterior.classes]
    if format == "json":
        return JSONResponse(downloads.as_json(rows, classes, threshold))
    if format == "tsv":
        return PlainTextResponse(downloads.tsv(rows, classes, threshold),
                                 media_type="text/tab-separated-values")
    return PlainTextResponse(downloads.trec(rows, threshold))


@router.get("/{e}", response_model=EvaluationPublic, dependencies=[require_scope("read")])
async def get_evaluation(evaluation: EvaluationDep) -> EvaluationPublic:
    """The evaluation, and when it has succeeded its means over topics with their intervals,
    P(a beats b) for every pair of runs and the rankings with Kendall's tau."""
    return await run_in_threadpool(
        lambda: public(evaluation, results=service.summary(evaluation)))


@router.get("/{e}/measures", response_model=None, dependencies=[require_scope("read")],
            responses=text_responses("application/json", "text/tab-separated-values", "text/plain",
                                description="scores as JSON, TSV or trec_eval -q lines"))
async def measures(evaluation: EvaluationDep, format: MeasuresFormat = "json") -> Response:
    """Every score per run, measure and topic (``all`` = the mean): JSON (results, pairs,
    rankings), TSV, or trec_eval -q style lines ``run measure topic value``."""
    result = await run_in_threadpool(service.evaluation_result, evaluation)
    if format == "tsv":
        return PlainTextResponse(format_tsv(result["results"]),
                                 media_type="text/tab-separated-values")
    if format == "trec":
        return PlainTextResponse(format_trec(result["results"]))
    return JSONResponse(result)
