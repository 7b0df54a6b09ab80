"""How a dashboard page is rendered: its template with the CSRF token, the form keys, what the
signed-in key may do and the signed message; its charts as one JSON object; the pages' page
size.
"""

from __future__ import annotations

import json
from typing import Annotated, Any

from fastapi import Query, Request
from fastapi.responses import HTMLResponse

from app.auth.csrf import FIELD, csrf_token
from app.auth.principal import OPEN
from app.ui.forms import (
    FORM_KEY,
    new_form_key,
)
from app.ui.messages import page_message
from app.ui.templating import header_context, templates

PAGE_SIZE = 50
Page = Annotated[int, Query(ge=1, le=1_000_000)]
Measure = Annotated[str | None, Query(max_length=100)]  # a page's selected measure



def render(request: Request, name: str, context: dict[str, Any], *,
           status_code: int = 200) -> HTMLResponse:
    """A page; every page carries the CSRF token for its forms (cookie set on first visit), and
    each form a new one-use key (``form_key()`` in the template, once per form); ``message``:
    the signed message in its address, if any (app.ui.messages)."""
    token = csrf_token(request)
    # Forms the signed-in key may not submit are left out (they would only answer 403).
    principal = getattr(request.state, "principal", None) or OPEN
    response = templates.TemplateResponse(
        request, name, {**context, "csrf_field": FIELD, "csrf": token,
                        "form_key_field": FORM_KEY, "form_key": new_form_key,
                        "can": principal.allows, "principal": principal,
                        "message": page_message(request), **header_context(request)},
        status_code=status_code)
    csrf_token(request, response)  # sets the cookie when the token is new
    return response


def figures(**specs: dict[str, Any] | None) -> str:
    """The page's charts as one JSON object for app.js ({} for the missing ones)."""
    return json.dumps({k: v for k, v in specs.items() if v is not None},
                      separators=(",", ":"), allow_nan=False).replace("</", "<\\/")
