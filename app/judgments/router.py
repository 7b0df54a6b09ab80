from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query, Request
from starlette.concurrency import run_in_threadpool

from app.api.deps import Limit, Offset, SessionDep, judgments_arrived
from app.api.uploads import read_upload, spooled_upload
from app.auth.deps import PrincipalDep, require_scope
from app.auth.idempotency import IdempotencyDep
from app.collections.deps import CollectionDep
from app.formats import judgments_file
from app.formats.errors import decoded_blocks
from app.formats.ids import MAX_FILENAME_LENGTH
from app.formats.judgments_file import judgment_chunks, parse_judgments
from app.formats.qrels import parse_qrels_with_lines
from app.judgments import service, staged
from app.judgments.schemas import GoldReport, IngestPublic, JudgmentsCreate, JudgmentsPublic

router = APIRouter(prefix="/collections/{c}", tags=["judgments"])


@router.post("/judgments", status_code=201, response_model=IngestPublic,
             dependencies=[require_scope("ingest")])
def add_judgments(request: Request, session: SessionDep, principal: PrincipalDep,
                  idempotency: IdempotencyDep, collection: CollectionDep,
                  body: JudgmentsCreate) -> Any:
    """Append judgments; with an ``Idempotency-Key`` a retry stores nothing again."""

    def work() -> IngestPublic:
        rows = service.judgment_rows(body.judgments)
        report = service.ingest(session, collection=collection, rows=rows, source="json")
        return service.judgments_audited(session, principal, collection, report)

    response = idempotency.run(session, body=body.model_dump_json(), status_code=201, work=work)
    judgments_arrived(request, collection.id)
    return response


@router.post(
    "/judgments/file", status_code=201, response_model=IngestPublic,
    openapi_extra={"requestBody": {"content": {
        "text/tab-separated-values": {"schema": {"type": "string"}},
        "text/csv": {"schema": {"type": "string"}},
        "multipart/form-data": {"schema": {"type": "object", "properties": {
            "file": {"type": "string", "format": "binary"}}}},
    }}},
    dependencies=[require_scope("ingest")],
)
async def add_judgments_file(request: Request, session: SessionDep, principal: PrincipalDep,
                             idempotency: IdempotencyDep, collection: CollectionDep,
                             filename: Annotated[str | None, Query(
                                 max_length=MAX_FILENAME_LENGTH,
                                 description="the file's name, kept with the batch")] = None,
                             ) -> Any:
    """The file as the raw body (TSV or CSV with a header) or as multipart field ``file``.
    All of it is stored in one transaction, or nothing (a dropped connection stores nothing).
    The body is spooled to disk as it arrives; on PostgreSQL it is read back and stored in
    chunks (``staged.ingest_chunks``: memory bounded by a chunk, not the file)."""
    async with spooled_upload(request, filename=filename,
                              hasher=lambda name: idempotency.hasher(f"{name}\0".encode())
                              ) as upload:

        def work() -> IngestPublic:
            if session.get_bind().dialect.name == "postgresql":
                report = staged.ingest_file(
                    session, collection=collection, filename=upload.filename,
                    chunks=judgment_chunks(decoded_blocks(upload.chunks()),
                                           chunk_rows=judgments_file.CHUNK_ROWS))
            else:
                report = service.ingest(session, collection=collection,
                                        rows=parse_judgments(upload.read()), source="file",
                                        filename=upload.filename)
            return service.judgments_audited(session, principal, collection, report)

        response = await run_in_threadpool(
            idempotency.run, session, request_hash=upload.digest, status_code=201, work=work)
    judgments_arrived(request, collection.id)
    return response


@router.get("/judgments", response_model=JudgmentsPublic, dependencies=[require_scope("read")])
def list_judgments(
    session: SessionDep,
    collection: CollectionDep,
    topic: str | None = None,
    doc: str | None = None,
    annotator: str | None = None,
    limit: Limit = 100,
    offset: Offset = 0,
) -> JudgmentsPublic:
    data, total = service.list_judgments(
        session, collection=collection, topic=topic, doc=doc, annotator=annotator,
        limit=limit, offset=offset,
    )
    return JudgmentsPublic.model_validate({"data": data, "count": total})


@router.put("/gold", response_model=GoldReport, dependencies=[require_scope("admin")])
async def put_gold(request: Request, session: SessionDep, principal: PrincipalDep,
                   idempotency: IdempotencyDep, collection: CollectionDep,
                   mode: Literal["replace", "merge"] = "replace") -> Any:
    """Expert qrels (``topic 0 doc rel``). ``replace`` clears every other task's gold first."""
    upload = await read_upload(request, filename=None)

    def work() -> GoldReport:
        qrels, lines = parse_qrels_with_lines(upload.content)
        report = service.set_gold(session, collection=collection, qrels=qrels, lines=lines,
                                  replace=mode == "replace")
        return service.gold_audited(session, principal, collection, report, mode)

    return await run_in_threadpool(idempotency.run, session, body=upload.content,
                                   status_code=200, work=work)
