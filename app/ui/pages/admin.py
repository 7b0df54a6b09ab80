"""Dashboard pages for access control: the API keys (list, create, revoke) and the audit log.

They stand for GET/POST /keys, DELETE /keys/{name} and GET /audit, with the same dependencies
(``KEY_ADMIN``: admin scope on every collection; the audit log: admin scope, a key limited to
collections seeing their events only) and the same service functions and audit events
(app.auth.service, audit_events among them). The forms carry the CSRF token and a one-use
key (app.ui.forms): a form sent twice creates or revokes once.

A new key's secret is shown once, on the page that answers the form; what is kept for a form
sent again (the one-use key's stored answer) is the keys page with a message that never holds
it, so a second submit, a reload or Back shows it nowhere.
"""

from __future__ import annotations

from typing import Annotated, Any
from urllib.parse import urlencode

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from pydantic import TypeAdapter, ValidationError

from app.api.deps import SessionDep
from app.auth import audit, service
from app.auth.deps import KEY_ADMIN, KeyVerifierDep, PrincipalDep, require_scope
from app.auth.schemas import Instant, KeyCreate, KeyCreated
from app.core.errors import DomainError, InvalidInput
from app.ui.forms import (
    FormDep,
    FormIdempotencyDep,
    Refusal,
    Submission,
    answer_form,
    form_body,
    refusal,
)
from app.ui.messages import message_location, plural, signed_location
from app.ui.pages.fields import CheckedForm, invalid_fields
from app.ui.pages.render import PAGE_SIZE, Page, render

router = APIRouter(tags=["dashboard"], include_in_schema=False)
KEYS = "/ui/keys"
AUDIT = "/ui/audit"
# The text fields of the audit page's filters (empty: no filter), as GET /audit names them.
AUDIT_FILTERS = ("collection", "action", "since", "until")
_instant = TypeAdapter(Instant)


# --- keys --------------------------------------------------------------------------------------

def _keys_context(session: Any) -> dict[str, Any]:
    keys = service.list_keys(session)
    return {"keys": keys.data, "count": keys.count, "title": "API keys",
            "scopes": ("read", "ingest", "admin")}


@router.get(KEYS, response_class=HTMLResponse, dependencies=KEY_ADMIN)
def keys_page(request: Request, session: SessionDep) -> HTMLResponse:
    """Every key as GET /api/v1/keys lists it, the form for a new one, a revoke per key."""
    return render(request, "keys.html", _keys_context(session))


def _collections(text: str) -> list[str] | None:
    """The form's collections (ids or names, spaces or commas between): None when empty, every
    collection (the API's null: an empty list is never sent, it would be refused)."""
    words = [w for w in text.replace(",", " ").split() if w]
    return words or None


@router.post(KEYS, response_class=HTMLResponse, dependencies=[*KEY_ADMIN, CheckedForm])
async def create_key(request: Request, session: SessionDep, principal: PrincipalDep,
                     form: FormDep, idempotency: FormIdempotencyDep) -> Response:
    """The API's POST /keys, from the keys page's form (one key per form key, audited as the
    API does). The answer is a page with the key, this once; the same form sent again goes to
    the keys page, saying the form was already sent (the key is not shown again)."""
    created: list[KeyCreated] = []  # the key made by this request, if it made one

    async def prepare() -> Submission:
        try:
            spec = KeyCreate(name=str(form.get("name") or "").strip(),
                             scope=str(form.get("scope") or ""),  # type: ignore[arg-type]
                             collections=_collections(str(form.get("collections") or "")))
        except ValidationError as exc:
            raise invalid_fields(exc) from None

        def work() -> str:
            key = service.create_key(session, principal=principal, spec=spec)
            created.append(key)
            # shown only to a form sent again: perhaps the page with the secret never arrived
            return message_location(KEYS, f"key {key.name} created ({key.scope}, "
                                          f"{_limit(key.collection_names)}; prefix "
                                          f"{key.prefix}): its secret was shown once, on the "
                                          "page that answered the form; if it was not copied "
                                          "from there, revoke the key and create another")

        return form_body(form), work

    def refused(exc: Refusal) -> HTMLResponse:
        session.rollback()
        error = refusal(exc)
        kept = {k: v for k, v in form.items() if isinstance(v, str)}
        return render(request, "keys.html", {**_keys_context(session), "error": error.body(),
                                             "error_form": "key", "sent": kept},
                      status_code=error.status_code)

    answer = await answer_form(request, session, idempotency, prepare, refused)
    if not created:  # refused, or a form sent again: its answer as it is
        return answer
    key = created[0]
    page = render(request, "key_created.html", {"key": key, "limit": _limit(key.collection_names),
                                                "title": f"Key {key.name} created"})
    page.headers["Cache-Control"] = "no-store"  # the secret: in this answer only, kept nowhere
    return page


def _limit(names: list[str] | None) -> str:
    return "every collection" if names is None else (
        f"{plural(len(names), 'collection')}: {', '.join(names)}")


@router.post(f"{KEYS}/revoke", response_class=HTMLResponse,
             dependencies=[*KEY_ADMIN, CheckedForm])
async def revoke_key(request: Request, session: SessionDep, principal: PrincipalDep,
                     verifier: KeyVerifierDep, form: FormDep,
                     idempotency: FormIdempotencyDep) -> Response:
    """The API's DELETE /keys/{name}, from the keys page's button (``name``: a hidden field, as
    a key made with the CLI may have any name). A key revoked already is left as it was."""
    name = str(form.get("name") or "")

    async def prepare() -> Submission:
        def work() -> str:
            key, changed = service.revoke_key(session, principal=principal, name=name,
                                              verifier=verifier)
            return message_location(KEYS, f"key {key.name} revoked: it no longer works" if changed
                                    else f"key {key.name} was revoked already")

        return form_body(form), work

    def refused(exc: Refusal) -> RedirectResponse:
        error = refusal(exc)
        return RedirectResponse(signed_location(request, message_location(
            KEYS, f"key {name!r} not revoked ({error.code}): {error.detail}", kind="error")),
            status_code=303)

    return await answer_form(request, session, idempotency, prepare, refused)


@router.get(f"{KEYS}/revoke", response_class=RedirectResponse, dependencies=KEY_ADMIN)
def revoke_address() -> RedirectResponse:
    """The revoke form's address opened again: the keys page, where the buttons are."""
    return RedirectResponse(KEYS, status_code=303)


# --- the audit log -----------------------------------------------------------------------------

@router.get(AUDIT, response_class=HTMLResponse, dependencies=[require_scope("admin")])
def audit_page(request: Request, session: SessionDep, principal: PrincipalDep,
               collection: Annotated[str, Query(max_length=200)] = "",
               action: Annotated[str, Query(max_length=40)] = "",
               since: Annotated[str, Query(max_length=64)] = "",
               until: Annotated[str, Query(max_length=64)] = "",
               page: Page = 1) -> HTMLResponse:
    """GET /api/v1/audit in pages of PAGE_SIZE events, newest first, with its filters (an empty
    field: no filter; a filter the API refuses shows its error above the events)."""
    shown = {k: v.strip() for k, v in zip(AUDIT_FILTERS, (collection, action, since, until),
                                          strict=True) if v.strip()}
    offset = (page - 1) * PAGE_SIZE
    context: dict[str, Any] = {
        "title": "Audit log", "filters": shown, "actions": audit.ACTIONS, "events": [],
        "total": 0, "page": page, "offset": offset, "page_size": PAGE_SIZE,
        "api": "/api/v1/audit?" + urlencode({**shown, "limit": PAGE_SIZE, "offset": offset})}
    status = 200
    try:
        events = service.audit_events(session, principal=principal,
                              collection=shown.get("collection"), action=shown.get("action"),
                              since=_time(shown, "since"), until=_time(shown, "until"),
                              limit=PAGE_SIZE, offset=offset)
    except DomainError as exc:  # the API's answer to the same filters
        context["error"] = exc.body()
        status = exc.status_code
    else:
        context.update(events=events.data, total=events.count,
                       more=offset + len(events.data) < events.count)
    return render(request, "audit.html", context, status_code=status)


def _time(filters: dict[str, str], name: str) -> Any:
    """A filter's date-time as the API reads it (RFC 3339, with its time zone); None when
    empty; the API's 422 ``invalid_body`` when it is not one."""
    if name not in filters:
        return None
    try:
        return _instant.validate_python(filters[name])
    except ValidationError as exc:
        raise InvalidInput(f"{name}: {invalid_fields(exc).detail}", code="invalid_body") from None
