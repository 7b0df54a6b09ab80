"""Judges: ``PUT/GET/DELETE /collections/{c}/judges[/{name}]`` (TREC qrels files, one per judge)
and ``GET /collections/{c}/judge-agreement`` (judging the judges)."""

from __future__ import annotations

from dataclasses import asdict
from typing import Annotated, Any

from fastapi import APIRouter, Path, Query, Request
from sqlalchemy.orm import Session
from starlette.concurrency import run_in_threadpool

from app.aggregations.service import aggregation_not_found, get_aggregation
from app.api.deps import SessionDep, judgments_arrived
from app.api.uploads import read_upload
from app.auth import audit
from app.auth.deps import PrincipalDep, require_scope
from app.auth.idempotency import IdempotencyDep
from app.auth.principal import Principal
from app.collections.deps import CollectionDep
from app.collections.tables import Collection
from app.formats.qrels import parse_qrels_with_lines
from app.judges import agreement, service
from app.judges.schemas import (
    AgreementPublic,
    JudgeKind,
    JudgePublic,
    JudgesPublic,
    JudgeStored,
)

router = APIRouter(prefix="/collections/{c}", tags=["judges"])
JUDGE_NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._+-]*$"
JudgeName = Annotated[str, Path(min_length=1, max_length=200, pattern=JUDGE_NAME_PATTERN,
                                description="the judge: an annotator id")]


def stored(session: Session, principal: Principal, collection: Collection,
           report: service.JudgeReport, action: str) -> JudgeStored:
    """The audit event of a judge file stored or a judge removed (API and dashboard)."""
    audit.record(session, principal=principal, action=action, collection=collection,
                 target_id=report.batch_id, counts={
                     "judge": report.judge, "kind": report.kind, "judgments": report.judgments,
                     "withdrawn": report.withdrawn, "new_tasks": report.new_tasks})
    return JudgeStored(**asdict(report))


@router.put(
    "/judges/{name}", response_model=JudgeStored, dependencies=[require_scope("ingest")],
    openapi_extra={"requestBody": {"content": {
        "text/plain": {"schema": {"type": "string"}},
        "multipart/form-data": {"schema": {"type": "object", "properties": {
            "file": {"type": "string", "format": "binary"}}}},
    }}},
)
async def put_judge(request: Request, session: SessionDep, principal: PrincipalDep,
                    idempotency: IdempotencyDep, collection: CollectionDep, name: JudgeName,
                    kind: JudgeKind = "llm") -> Any:
    """The judge's TREC qrels (``topic 0 doc grade``), each line a judgment by annotator
    ``name`` of ``kind``. Sent again, the file replaces the judge's judgments (one transaction;
    pairs it no longer labels are withdrawn, nothing is overwritten)."""
    upload = await read_upload(request, filename=None)

    def work() -> JudgeStored:
        qrels, lines = parse_qrels_with_lines(upload.content)
        report = service.put_judge(session, collection=collection, name=name, kind=kind,
                                   qrels=qrels, lines=lines)
        return stored(session, principal, collection, report, "judge_stored")

    response = await run_in_threadpool(idempotency.run, session, body=upload.content,
                                       status_code=200, work=work)
    judgments_arrived(request, collection.id)
    return response


@router.get("/judges", response_model=JudgesPublic, dependencies=[require_scope("read")])
def list_judges(session: SessionDep, collection: CollectionDep) -> JudgesPublic:
    """The judges (annotators stored by a judge file that label pairs now), by name."""
    data = service.list_judges(session, collection=collection)
    return JudgesPublic.model_validate({"data": data, "count": len(data)})


@router.get("/judge-agreement", response_model=AgreementPublic,
            dependencies=[require_scope("read")])
def judges_agreement(
    session: SessionDep, collection: CollectionDep,
    aggregation: Annotated[int | None, Query(
        ge=1, le=2**63 - 1, description="a succeeded fit of the collection: the aggregate")] = None,
    min_tasks: Annotated[int, Query(ge=1, le=1_000_000, description=(
        "annotators that are not judges are listed from this many tasks"))] = 20,
    measure: Annotated[str, Query(max_length=50, description=(
        "the measure the runs are ranked by on each judge's qrels"))] = agreement.DEFAULT_MEASURE,
) -> dict[str, Any]:
    """Judging the judges: each judge (and annotator with ``min_tasks`` tasks) against the gold
    and the aggregate (exact, Cohen's κ, quadratic κ, leniency, confusion), Krippendorff's α,
    the judges' pairwise agreement and, with runs, Kendall's τ of the run rankings."""
    fit = None
    if aggregation is not None:
        fit = get_aggregation(session, aggregation_id=aggregation)
        if fit.collection_id != collection.id:
            raise aggregation_not_found(aggregation)
    return agreement.judge_agreement(session, collection=collection, aggregation=fit,
                                     min_tasks=min_tasks, measure=measure)


@router.delete("/judges/{name}", response_model=JudgeStored,
               dependencies=[require_scope("admin")])
def delete_judge(request: Request, session: SessionDep, principal: PrincipalDep,
                 idempotency: IdempotencyDep, collection: CollectionDep,
                 name: JudgeName) -> Any:
    """Withdraw every judgment of the judge (they stay in the log; fits no longer see them)."""

    def work() -> JudgeStored:
        report = service.delete_judge(session, collection=collection, name=name)
        return stored(session, principal, collection, report, "judge_removed")

    response = idempotency.run(session, body=b"", status_code=200, work=work)
    judgments_arrived(request, collection.id)
    return response


__all__ = ["JudgePublic", "router"]
