"""A dashboard form is acted on once, however often it is sent.

Every page that renders a form that changes something gives that form a new one-use key (hidden
field ``form_key``, a uuid4, one per form and per rendering). Its handler runs the work through
the API's ``Idempotency-Key`` mechanism (``app.auth.idempotency.Idempotency.run``) with that key,
owned by the signed-in key's name as for the API. A second submit of the same form (a double
click, the browser's "resubmit", back and submit again) gets the first answer again, a 303 to
the same page with the first message prefixed "this form was already sent: " (app.ui.messages),
and stores nothing; the same key with other fields or another file is
refused (``idempotency_key_reused``, shown above a new form); a second submit while the first
is still being stored waits for it. A refused form is rendered again with new keys: its attempt
rolled back, and its key went with it.

A POST without a key (a script) is acted on each time, as an API request without the header.

Every form handler ends the same way (``answer_form``): the form checked as the API checks the
request, its work run once per key, and a refusal (the API's error, or a file's) answered with
the form's page again, its error shown at the form.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Awaitable, Callable
from typing import Annotated, Any

from fastapi import Depends, Request
from fastapi.responses import RedirectResponse, Response
from sqlalchemy.orm import Session
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import FormData, UploadFile

from app.api.uploads import Upload
from app.auth.csrf import FIELD as CSRF_FIELD
from app.auth.deps import PrincipalDep
from app.auth.idempotency import REPLAYED_HEADER, Idempotency, get_idempotency
from app.core.errors import Conflict, DomainError, InvalidInput, invalid_file
from app.formats.errors import FileFormatError
from app.ui.errors import error_page
from app.ui.messages import signed_location

FORM_KEY = "form_key"
MAX_KEY_LENGTH = 200  # the Idempotency-Key header's limit (the column's width)
REUSED = ("this form was sent before with other contents (another file or other fields), "
          "perhaps from a page opened again from the browser's history: nothing was stored "
          "this time. The form here is new: fill it in and send it again")
IN_PROGRESS = ("this form was sent twice and the first one is still being stored, or was "
               "interrupted: open the collection's page to see whether it arrived before "
               "sending it again")


def new_form_key() -> str:
    """A form's one-use key (templates call it once per form)."""
    return uuid.uuid4().hex


async def form_idempotency(request: Request, principal: PrincipalDep) -> Idempotency:
    """The form's key as the API's Idempotency (same owner: the caller's key name)."""
    key = (await request.form()).get(FORM_KEY)
    if key is not None and (not isinstance(key, str) or len(key) > MAX_KEY_LENGTH):
        raise InvalidInput(f"{FORM_KEY}: a text of at most {MAX_KEY_LENGTH} characters; reload "
                           "the page and send the form again", code="invalid_body")
    return get_idempotency(request, principal, key or None)


FormIdempotencyDep = Annotated[Idempotency, Depends(form_idempotency)]


async def read_form(request: Request) -> FormData:
    """The form as sent (parsed once per request), for routes that run in a thread."""
    return await request.form()


FormDep = Annotated[FormData, Depends(read_form)]


def form_body(form: FormData, upload: Upload | None = None) -> bytes:
    """What identifies a form's request: its fields (not the CSRF token nor the key itself) and,
    for an upload, the file's name and bytes: the same key with another file is another
    request."""
    fields = sorted((name, value) for name, value in form.multi_items()
                    if isinstance(value, str) and name not in (CSRF_FIELD, FORM_KEY))
    files = sorted(name for name, value in form.multi_items() if isinstance(value, UploadFile))
    identity: dict[str, Any] = {"fields": fields, "files": files}
    if upload is not None:
        identity["file"] = [upload.filename, hashlib.sha256(upload.content).hexdigest()]
    return json.dumps(identity, separators=(",", ":")).encode()


def submit_once(request: Request, session: Session, idempotency: Idempotency, *, body: bytes,
                work: Callable[[], str]) -> Response:
    """``work()`` (it commits, and returns where the browser goes next, with its message:
    ``app.ui.messages.message_location``) once per form key; a repeat goes to the same place,
    its message saying the form was already sent. The message is signed for the browser that
    sent the form. Synchronous (it may wait on the database): async routes call it in a
    thread. Errors of ``work()`` propagate, its data and the key rolled back."""

    def stored() -> dict[str, str]:
        return {"location": work()}  # unsigned: each answer signs it for its browser

    def again(status_code: int, response: Any) -> RedirectResponse:
        return RedirectResponse(signed_location(request, response["location"], replayed=True),
                                status_code=303, headers={REPLAYED_HEADER: "true"})

    try:
        answer = idempotency.run(session, body=body, status_code=303, work=stored, replay=again)
    except InvalidInput as exc:
        if exc.code != "idempotency_key_reused":
            raise
        raise InvalidInput(REUSED, code="idempotency_key_reused") from None
    except Conflict as exc:
        if exc.code != "idempotency_in_progress":
            raise
        # No form on this page: a new key would let the same contents be stored twice.
        return error_page(request, exc.status_code, IN_PROGRESS, exc.code)
    if isinstance(answer, RedirectResponse):
        return answer
    return RedirectResponse(signed_location(request, answer["location"]), status_code=303)


# What a form handler's ``prepare`` returns: what identifies the request (``form_body``) and the
# work to do once per form key (it returns where the browser goes next, with its message).
Submission = tuple[bytes, Callable[[], str]]
Refusal = DomainError | FileFormatError


def refusal(exc: Refusal) -> DomainError:
    """A refused form's error as the API answers it (a file's error: ``invalid_file``)."""
    return invalid_file(exc) if isinstance(exc, FileFormatError) else exc


async def answer_form(request: Request, session: Session, idempotency: Idempotency,
                      prepare: Callable[[], Awaitable[Submission]],
                      refused: Callable[[Refusal], Response]) -> Response:
    """A form handler's answer: ``prepare()`` checks the form as the API checks its request (a
    refusal raises the API's error) and returns the submission, whose work runs through
    ``submit_once`` (in a thread); an error of either is answered by ``refused(exc)``, in a
    thread too (it rolls back and renders the form's page again from the database)."""
    try:
        body, work = await prepare()
        return await run_in_threadpool(submit_once, request, session, idempotency, body=body,
                                       work=work)
    except (DomainError, FileFormatError) as exc:
        return await run_in_threadpool(refused, exc)
