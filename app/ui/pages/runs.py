"""The form that stores a run on a collection's page (the API's PUT /collections/{c}/runs/{name}).
"""

from __future__ import annotations

import re

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response

from app.api.deps import SessionDep
from app.api.uploads import read_upload
from app.auth.deps import require_scope
from app.collections.deps import CollectionDep
from app.core.errors import InvalidInput
from app.corpus import service as corpus_service
from app.corpus.schemas import RUN_NAME_MAX_LENGTH, RUN_NAME_PATTERN
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


@router.post("/ui/collections/{c}/runs", response_class=HTMLResponse,
             dependencies=[require_scope("ingest"), CheckedForm])
async def upload_run(request: Request, session: SessionDep, idempotency: FormIdempotencyDep,
                     collection: CollectionDep) -> Response:
    """The API's PUT /collections/{c}/runs/{name}, from a form (stored once per form key; a run
    of the same name is replaced, as by the API)."""
    form = await request.form()
    name = str(form.get("name") or "").strip()

    async def prepare() -> Submission:
        if not name or len(name) > RUN_NAME_MAX_LENGTH or not re.fullmatch(RUN_NAME_PATTERN,
                                                                           name):
            raise InvalidInput(f"name: letters, digits, '.', '_', '+', '-', starting with a "
                               f"letter or digit, at most {RUN_NAME_MAX_LENGTH} characters; "
                               f"not {name!r}", code="invalid_body")
        upload = await read_upload(request, filename=None)
        if not upload.content:
            raise InvalidInput("choose a run file (topic Q0 doc rank score tag)",
                               code="missing_file")

        def work() -> str:
            run, unknown = corpus_service.store_run(session, collection=collection, name=name,
                                                    raw=upload.content)
            missing = (f"; {plural(unknown, 'topic')} not in the collection (kept)"
                       if unknown else "")
            return collection_with(collection,
                                   f"run {run.name} stored: {plural(run.n_topics, 'topic')}, "
                                   f"{plural(run.n_lines, 'line')}{missing}")

        return form_body(form, upload), work

    return await answer_form(request, session, idempotency, prepare, lambda exc: form_error(
        request, session, collection, exc, "run", form))
