"""The forms that store judgments and gold labels on a collection's page (the API's POST
/collections/{c}/judgments/file and PUT /collections/{c}/gold).
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from starlette.concurrency import run_in_threadpool

from app.api.deps import SessionDep, judgments_arrived
from app.api.uploads import read_upload
from app.auth.deps import PrincipalDep, require_scope
from app.collections.deps import CollectionDep
from app.core.errors import InvalidInput
from app.formats.judgments_file import parse_judgments
from app.formats.qrels import parse_qrels_with_lines
from app.judgments import service as judgments_service
from app.ui.forms import (
    FormIdempotencyDep,
    Submission,
    answer_form,
    form_body,
)
from app.ui.messages import plural
from app.ui.pages.collections import collection_with, form_error
from app.ui.pages.fields import CheckedForm

router = APIRouter(tags=["dashboard"], include_in_schema=False)


def could_not_judge(report: dict[str, Any]) -> str:
    """", N of them could not judge" for an upload that set gold to an ignore value, else ""."""
    n = report.get("gold_could_not_judge") or 0
    return f", {n:,} of them could not judge" if n else ""


def columns_not_read(report: dict[str, Any]) -> str:
    """"; columns not read: …" for a file whose header had columns no name matches, else ""."""
    names = report.get("ignored_columns") or []
    return f"; columns not read: {', '.join(names)}" if names else ""



@router.post("/ui/collections/{c}/judgments", response_class=HTMLResponse,
             dependencies=[require_scope("ingest"), CheckedForm])
async def upload_judgments(request: Request, session: SessionDep, principal: PrincipalDep,
                           idempotency: FormIdempotencyDep,
                           collection: CollectionDep) -> Response:
    """The API's POST /collections/{c}/judgments/file, from a form (stored once per form key)."""
    form = await request.form()

    async def prepare() -> Submission:
        upload = await read_upload(request, filename=None)
        if not upload.content:
            raise InvalidInput("choose a judgment file (TSV or CSV with a header)",
                               code="missing_file")
        rows = await run_in_threadpool(parse_judgments, upload.content)

        def work() -> str:
            stored = judgments_service.ingest(session, collection=collection, rows=rows,
                                              source="file", filename=upload.filename)
            report = judgments_service.judgments_audited(session, principal, collection,
                                                         stored).model_dump()
            return collection_with(
                collection, f"stored {plural(report['judgments'], 'judgment')} "
                            f"({plural(report['new_tasks'], 'new task')}, "
                            f"{plural(report['new_annotators'], 'new annotator')}, "
                            f"{plural(report['gold_labels'], 'gold label')}"
                            f"{could_not_judge(report)}) from {upload.filename or 'the file'}"
                            f"{columns_not_read(report)}")

        return form_body(form, upload), work

    answer = await answer_form(request, session, idempotency, prepare, lambda exc: form_error(
        request, session, collection, exc, "judgments"))
    if isinstance(answer, RedirectResponse):  # stored, now or by the form's first submit
        judgments_arrived(request, collection.id)
    return answer


@router.post("/ui/collections/{c}/gold", response_class=HTMLResponse,
             dependencies=[require_scope("admin"), CheckedForm])
async def upload_gold(request: Request, session: SessionDep, principal: PrincipalDep,
                      idempotency: FormIdempotencyDep, collection: CollectionDep) -> Response:
    """The API's PUT /collections/{c}/gold, from a form (mode replace or merge; once per form
    key)."""
    form = await request.form()
    mode = form.get("mode", "replace")

    async def prepare() -> Submission:
        if mode not in ("replace", "merge"):
            raise InvalidInput(f"mode must be replace or merge, not {mode!r}", code="invalid_body")
        upload = await read_upload(request, filename=None)
        if not upload.content:
            raise InvalidInput("choose a qrels file (topic 0 doc relevance)", code="missing_file")
        qrels, lines = await run_in_threadpool(parse_qrels_with_lines, upload.content)

        def work() -> str:
            report = judgments_service.set_gold(session, collection=collection, qrels=qrels,
                                                lines=lines, replace=mode == "replace")
            judgments_service.gold_audited(session, principal, collection, report, str(mode))
            cleared = (f"; {plural(report['cleared'], 'task')} no longer in the gold lost "
                       f"theirs" if report["cleared"] else "")
            return collection_with(collection,
                                   f"gold set for {plural(report['gold_labels'], 'task')}"
                                   f"{could_not_judge(report)} ({mode}; "
                                   f"{plural(report['new_tasks'], 'new task')}{cleared})")

        return form_body(form, upload), work

    return await answer_form(request, session, idempotency, prepare, lambda exc: form_error(
        request, session, collection, exc, "gold", form))
