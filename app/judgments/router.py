from __future__ import annotations

from dataclasses import asdict
from typing import Annotated, Literal

from fastapi import APIRouter, Query, Request
from starlette.concurrency import run_in_threadpool

from app.api.deps import CollectionDep, SessionDep
from app.api.uploads import read_upload
from app.formats.judgments_file import JudgmentRows, parse_judgments
from app.formats.qrels import parse_qrels_with_lines
from app.judgments import service
from app.judgments.schemas import GoldReport, IngestPublic, JudgmentsCreate, JudgmentsPublic

router = APIRouter(prefix="/collections/{c}", tags=["judgments"])


@router.post("/judgments", status_code=201, response_model=IngestPublic)
def add_judgments(session: SessionDep, collection: CollectionDep,
                  body: JudgmentsCreate) -> IngestPublic:
    items = body.judgments
    rows = JudgmentRows(
        topics=[j.topic for j in items], docs=[j.doc for j in items],
        annotators=[j.annotator for j in items], labels=[j.label for j in items],
        golds=[j.gold for j in items] if any(j.gold is not None for j in items) else None,
        lines=list(range(len(items))),
    )
    report = service.ingest(session, collection=collection, rows=rows, source="json")
    return IngestPublic(**asdict(report))


@router.post(
    "/judgments/file", status_code=201, response_model=IngestPublic,
    openapi_extra={"requestBody": {"content": {
        "text/tab-separated-values": {"schema": {"type": "string"}},
        "text/csv": {"schema": {"type": "string"}},
        "multipart/form-data": {"schema": {"type": "object", "properties": {
            "file": {"type": "string", "format": "binary"}}}},
    }}},
)
async def add_judgments_file(request: Request, session: SessionDep, collection: CollectionDep,
                             filename: str | None = None) -> IngestPublic:
    """The file as the raw body (TSV or CSV with a header) or as multipart field ``file``."""
    upload = await read_upload(request, filename=filename)
    rows = await run_in_threadpool(parse_judgments, upload.content)
    report = await run_in_threadpool(
        service.ingest, session, collection=collection, rows=rows, source="file",
        filename=upload.filename,
    )
    return IngestPublic(**asdict(report))


@router.get("/judgments", response_model=JudgmentsPublic)
def list_judgments(
    session: SessionDep,
    collection: CollectionDep,
    topic: str | None = None,
    doc: str | None = None,
    annotator: str | None = None,
    limit: Annotated[int, Query(ge=1, le=10_000)] = 100,
    offset: Annotated[int, Query(ge=0)] = 0,
) -> JudgmentsPublic:
    data, total = service.list_judgments(
        session, collection=collection, topic=topic, doc=doc, annotator=annotator,
        limit=limit, offset=offset,
    )
    return JudgmentsPublic.model_validate({"data": data, "count": total})


@router.put("/gold", response_model=GoldReport)
async def put_gold(request: Request, session: SessionDep, collection: CollectionDep,
                   mode: Literal["replace", "merge"] = "replace") -> GoldReport:
    """Expert qrels (``topic 0 doc rel``). ``replace`` clears every other task's gold first."""
    upload = await read_upload(request, filename=None)
    qrels, lines = await run_in_threadpool(parse_qrels_with_lines, upload.content)
    report = await run_in_threadpool(
        service.set_gold, session, collection=collection, qrels=qrels, lines=lines,
        replace=mode == "replace",
    )
    return GoldReport(**report)
