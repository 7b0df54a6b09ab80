from __future__ import annotations

import json
from functools import partial

from fastapi import APIRouter, Path, Request
from starlette.concurrency import run_in_threadpool

from app.api.deps import SessionDep
from app.api.uploads import read_upload
from app.auth.deps import require_scope
from app.collections.deps import CollectionDep
from app.core.errors import InvalidInput
from app.corpus import service
from app.corpus.schemas import (
    RUN_NAME_MAX_LENGTH,
    RUN_NAME_PATTERN,
    RunPublic,
    RunsPublic,
    RunStored,
    TextsReport,
)
from app.formats.errors import FileFormatError
from app.formats.texts import parse_texts, texts_from_json, unique_keys

router = APIRouter(prefix="/collections/{c}", tags=["corpus"])
async def _texts(request: Request, *, kind: str) -> dict[str, str]:
    """{id: text} of the body; ``kind`` (``topic``, ``doc``) sets the ids' length limit."""
    upload = await read_upload(request, filename=None)
    if request.headers.get("content-type", "").startswith("application/json"):
        try:
            data = json.loads(upload.content, object_pairs_hook=unique_keys(upload.content))
        except FileFormatError:
            raise  # a key given twice: duplicate_row, as in a JSON file
        except ValueError as exc:
            raise InvalidInput(f"invalid JSON: {exc}", code="invalid_body") from None
        except RecursionError:
            raise InvalidInput("invalid JSON: nested too deeply", code="invalid_body") from None
        return texts_from_json(data, kind=kind)
    return await run_in_threadpool(partial(parse_texts, kind=kind), upload.content)


@router.put("/topics", response_model=TextsReport, dependencies=[require_scope("ingest")])
async def put_topic_texts(request: Request, session: SessionDep,
                          collection: CollectionDep) -> TextsReport:
    """Topic texts: TSV ``id<TAB>text`` (header optional) or JSON ``[{"id", "text"}]``."""
    texts = await _texts(request, kind="topic")
    report = await run_in_threadpool(service.set_texts, session, collection=collection,
                                     kind="topics", texts=texts)
    return TextsReport(**report)


@router.put("/documents", response_model=TextsReport, dependencies=[require_scope("ingest")])
async def put_document_texts(request: Request, session: SessionDep,
                             collection: CollectionDep) -> TextsReport:
    """Document texts: TSV ``id<TAB>text`` (header optional) or JSON ``[{"id", "text"}]``."""
    texts = await _texts(request, kind="doc")
    report = await run_in_threadpool(service.set_texts, session, collection=collection,
                                     kind="documents", texts=texts)
    return TextsReport(**report)


@router.put("/runs/{name}", response_model=RunStored, dependencies=[require_scope("ingest")])
async def put_run(request: Request, session: SessionDep, collection: CollectionDep,
                  name: str = Path(min_length=1, max_length=RUN_NAME_MAX_LENGTH,
                                   pattern=RUN_NAME_PATTERN)) -> RunStored:
    """A TREC run (``topic Q0 doc rank score tag``); replaces the run of the same name. Topics
    the collection does not have are kept and counted (``unknown_topics``)."""
    upload = await read_upload(request, filename=None)
    run, unknown = await run_in_threadpool(service.store_run, session, collection=collection,
                                           name=name, raw=upload.content)
    return RunStored(**RunPublic.model_validate(run).model_dump(), unknown_topics=unknown)


@router.get("/runs", response_model=RunsPublic, dependencies=[require_scope("read")])
def list_runs(session: SessionDep, collection: CollectionDep) -> RunsPublic:
    runs = service.list_runs(session, collection=collection)
    return RunsPublic(data=[RunPublic.model_validate(r) for r in runs], count=len(runs))


@router.delete("/runs/{name}", status_code=204, dependencies=[require_scope("admin")])
def delete_run(session: SessionDep, collection: CollectionDep, name: str) -> None:
    service.delete_run(session, collection=collection, name=name)
