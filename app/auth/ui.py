"""Dashboard sign-in with an API key: a form, then an HttpOnly SameSite=Strict session cookie.

The cookie (path ``/ui``) authenticates dashboard pages only, never the API. Every form here is
CSRF-protected (app.auth.csrf). Pages under /ui/ other than these redirect to /ui/login when
there is no valid session (app.auth.middleware).
"""

from __future__ import annotations

import html
from pathlib import Path
from string import Template
from typing import Annotated

from fastapi import APIRouter, Depends, Form, Request
from fastapi.responses import HTMLResponse, RedirectResponse
from starlette.concurrency import run_in_threadpool

from app.api.deps import SessionDep, SettingsDep
from app.auth import keys
from app.auth.csrf import csrf_token, verify_csrf
from app.auth.middleware import SESSION_COOKIE

router = APIRouter(prefix="/ui", tags=["dashboard"], include_in_schema=False)
PAGE = Template((Path(__file__).parent / "login.html").read_text())
HOME = "/ui/"


def _safe_next(target: str | None) -> str:
    # Only a local dashboard path: never an open redirect to another site.
    if target and target.startswith("/ui") and not target.startswith("//"):
        return target
    return HOME


def _page(request: Request, *, next_: str, error: str | None, status: int) -> HTMLResponse:
    token = csrf_token(request)
    message = f'<p class="error">{html.escape(error)}</p>' if error else ""
    response = HTMLResponse(PAGE.substitute(
        message=message, csrf_token=html.escape(token), next=html.escape(next_)),
        status_code=status, headers={"Cache-Control": "no-store"})
    csrf_token(request, response)  # sets the CSRF cookie when the browser had none
    return response


@router.get("/login", response_class=HTMLResponse)
def login_form(request: Request, next: str | None = None) -> HTMLResponse:
    return _page(request, next_=_safe_next(next), error=None, status=200)


@router.post("/login", response_model=None, dependencies=[Depends(verify_csrf)])
async def login(request: Request, session: SessionDep, settings: SettingsDep,
                key: Annotated[str, Form()], next: Annotated[str | None, Form()] = None,
                ) -> HTMLResponse | RedirectResponse:
    token = await run_in_threadpool(keys.create_session, session, key=key.strip(),
                                    hours=settings.session_hours)
    if token is None:
        return _page(request, next_=_safe_next(next), error="That key is unknown or revoked.",
                     status=401)
    response = RedirectResponse(_safe_next(next), status_code=303)
    response.set_cookie(SESSION_COOKIE, token, max_age=int(settings.session_hours * 3600),
                        path="/", httponly=True, samesite="strict",
                        secure=request.url.scheme == "https")
    return response


@router.api_route("/logout", methods=["GET", "POST"], response_model=None)
def logout(request: Request, session: SessionDep) -> RedirectResponse:
    """Ends the session (a cross-site request carries no SameSite=Strict cookie)."""
    token = request.cookies.get(SESSION_COOKIE)
    if token:
        keys.end_session(session, token=token)
        verifier = getattr(request.app.state, "key_verifier", None)
        if verifier is not None:
            verifier.forget_session(token)
    # The browser forgets what it kept of this origin: the annotator listings' JSON is cached
    # (private, a day) for the dashboard's tables, and must not outlive the session.
    response = RedirectResponse("/ui/login", status_code=303,
                                headers={"Clear-Site-Data": '"cache"'})
    for path in ("/", "/ui"):  # "/ui": where sessions signed in before 2026-11-24 keep it
        response.delete_cookie(SESSION_COOKIE, path=path, httponly=True, samesite="strict")
    return response
