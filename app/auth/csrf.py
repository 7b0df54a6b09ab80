"""CSRF protection for the dashboard's forms: the double-submit cookie.

A page that renders a form calls ``csrf_token(request, response)``: it reuses the token in the
``crowdqrels_csrf`` cookie or makes a new random one and sets the cookie (SameSite=Strict,
HttpOnly). The form carries the token in a hidden field ``csrf_token``; ``verify_csrf`` (a route
dependency of every form POST) accepts the request only when the field equals the cookie. Another
site can make a browser send the cookie but can neither read it nor guess the field.
"""

from __future__ import annotations

import hmac
import secrets

from fastapi import Request, Response

from app.auth.deps import Forbidden

COOKIE = "crowdqrels_csrf"
FIELD = "csrf_token"


def csrf_token(request: Request, response: Response | None = None) -> str:
    """The caller's CSRF token; sets the cookie on ``response`` when it is new."""
    token = request.cookies.get(COOKIE)
    if not token or len(token) < 32:
        token = getattr(request.state, "csrf_token", None) or secrets.token_urlsafe(32)
        request.state.csrf_token = token
        if response is not None:
            set_csrf_cookie(response, token, secure=request.url.scheme == "https")
    return token


def set_csrf_cookie(response: Response, token: str, *, secure: bool) -> None:
    response.set_cookie(COOKIE, token, httponly=True, samesite="strict", secure=secure,
                        path="/")


async def verify_csrf(request: Request) -> None:
    """Route dependency for form POSTs: 403 ``csrf_failed`` unless field == cookie."""
    cookie = request.cookies.get(COOKIE) or ""
    form = await request.form()
    field = form.get(FIELD)
    if not cookie or not isinstance(field, str) or not hmac.compare_digest(cookie, field):
        raise Forbidden("the form's CSRF token is missing or does not match: reload the page "
                        "and submit again", code="csrf_failed")
