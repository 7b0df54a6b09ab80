"""Authentication as pure ASGI middleware: who is calling, before any route runs.

- ``/api/...``: the key in ``Authorization: Bearer <key>`` or ``X-API-Key``. With auth required
  a missing or bad key is answered 401 (``WWW-Authenticate: Bearer``) here; a good one becomes
  ``request.state.principal``, which ``require_scope`` and the load-or-404 dependencies read.
  ``/api/v1/healthz`` stays open. Without a key, a GET or HEAD carrying the dashboard's session
  cookie runs as the signed-in key: the pages read the API from the browser (tables, live
  status, downloads). The cookie is HttpOnly and SameSite=Strict (another site's page cannot make
  the browser send it), and it never authorises anything that changes state: every other method
  needs the key itself (the pages' own forms post to ``/ui`` with a CSRF token).
- ``/ui/...`` (except ``/ui/login`` and ``/ui/static/``): the session cookie set by the sign-in
  form; without a valid one the answer is 303 to ``/ui/login``.
- ``/metrics``: as the API (a key; the route asks for the admin scope), unless
  ``CROWDQRELS_METRICS_PUBLIC=true``.
- Anything else (``/healthz``, ``/docs``, ``/openapi.json``) is public.

With auth off nothing is checked: every caller is ``OPEN`` (admin, every collection). An
optional per-key rate limit answers 429 with ``Retry-After``.
"""

from __future__ import annotations

import json
import math
import threading
import time
from http.cookies import SimpleCookie
from urllib.parse import quote

import anyio
from starlette.types import ASGIApp, Receive, Scope, Send

from app.auth.keys import KeyVerifier, key_prefix
from app.auth.principal import Principal
from app.core.config import Settings

SESSION_COOKIE = "crowdqrels_session"
PUBLIC_API_PATHS = frozenset({"/api/v1/healthz"})
UI_PUBLIC_PREFIXES = ("/ui/login", "/ui/static/")
SAFE_METHODS = frozenset({"GET", "HEAD"})


def presented_key(headers: dict[bytes, bytes]) -> str | None:
    authorization = headers.get(b"authorization", b"").decode("latin-1").strip()
    if authorization:
        scheme, _, value = authorization.partition(" ")
        if scheme.lower() == "bearer" and value.strip():
            return value.strip()
        return ""  # present but not a bearer token: a bad key
    key = headers.get(b"x-api-key")
    return key.decode("latin-1").strip() if key is not None else None


def _cookie(headers: dict[bytes, bytes], name: str) -> str | None:
    raw = headers.get(b"cookie")
    if not raw:
        return None
    cookie: SimpleCookie = SimpleCookie()
    try:
        cookie.load(raw.decode("latin-1"))
    except Exception:
        return None
    morsel = cookie.get(name)
    return morsel.value if morsel is not None else None


async def _json(send: Send, status: int, body: dict[str, object],
                headers: list[tuple[bytes, bytes]] | None = None) -> None:
    data = json.dumps(body).encode()
    await send({"type": "http.response.start", "status": status, "headers": [
        (b"content-type", b"application/json"), (b"content-length", str(len(data)).encode()),
        *(headers or [])]})
    await send({"type": "http.response.body", "body": data})


class RateLimiter:
    """A token bucket per key: ``per_minute`` requests a minute, bursts up to that many."""

    def __init__(self, per_minute: int) -> None:
        self.rate = per_minute / 60.0
        self.capacity = float(per_minute)
        self._buckets: dict[str, tuple[float, float]] = {}
        self._lock = threading.Lock()

    def retry_after(self, who: str) -> float:
        """0 when the request may go; else the seconds until it may."""
        now = time.monotonic()
        with self._lock:
            tokens, last = self._buckets.get(who, (self.capacity, now))
            tokens = min(self.capacity, tokens + (now - last) * self.rate)
            if tokens >= 1.0:
                self._buckets[who] = (tokens - 1.0, now)
                return 0.0
            self._buckets[who] = (tokens, now)
            return (1.0 - tokens) / self.rate


class AuthMiddleware:
    def __init__(self, app: ASGIApp, *, settings: Settings, verifier: KeyVerifier) -> None:
        self.app = app
        self.required = settings.auth_required
        # /metrics: an admin key's (the route checks the scope) unless published on purpose
        self.keyed_paths = frozenset() if settings.metrics_public else frozenset({"/metrics"})
        self.verifier = verifier
        self.limiter = (RateLimiter(settings.rate_limit_per_minute)
                        if settings.rate_limit_per_minute else None)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not self.required:
            await self.app(scope, receive, send)
            return
        path: str = scope["path"]
        headers = dict(scope.get("headers") or [])
        principal: Principal | None = None
        if (path.startswith("/api/") and path not in PUBLIC_API_PATHS) or (
                path in self.keyed_paths):
            key = presented_key(headers)
            if key is None and scope["method"] in SAFE_METHODS:
                principal = await self._session(headers)  # a page reading the API
            if principal is None:
                principal = await self._key(key, send)
                if principal is None:
                    return  # answered 401
                # the request's log line names the key by its public prefix (app.api.observe)
                scope.setdefault("state", {})["key_prefix"] = key_prefix(key or "")
        elif (path == "/ui" or path.startswith("/ui/")) and not path.startswith(
                UI_PUBLIC_PREFIXES):
            principal = await self._session(headers)
            if principal is None:
                query = scope.get("query_string", b"").decode("latin-1")
                target = path + (f"?{query}" if query else "")
                location = f"/ui/login?next={quote(target, safe='')}"
                await send({"type": "http.response.start", "status": 303, "headers": [
                    (b"location", location.encode("latin-1")), (b"content-length", b"0")]})
                await send({"type": "http.response.body", "body": b""})
                return
        if principal is not None:
            if self.limiter is not None:
                wait = self.limiter.retry_after(principal.name)
                if wait > 0:
                    await _json(send, 429, {
                        "code": "rate_limited",
                        "detail": f"over {self.limiter.capacity:.0f} requests a minute for key "
                                  f"{principal.name!r} (CROWDQRELS_RATE_LIMIT_PER_MINUTE)"},
                        [(b"retry-after", str(max(1, math.ceil(wait))).encode())])
                    return
            scope.setdefault("state", {})["principal"] = principal
        await self.app(scope, receive, send)

    async def _key(self, key: str | None, send: Send) -> Principal | None:
        """The key's principal, or None once a 401 has been sent (no key, or a bad one)."""
        if not key:
            await _json(send, 401, {
                "code": "missing_api_key" if key is None else "invalid_api_key",
                "detail": "this needs an API key: send 'Authorization: Bearer <key>' or "
                          "'X-API-Key: <key>' (create one with `crowdqrels keys create`)"},
                [(b"www-authenticate", b'Bearer realm="crowdqrels"')])
            return None
        principal = self.verifier.cached(key)
        if principal is None:
            principal = await anyio.to_thread.run_sync(self.verifier.verify_key, key)
        if principal is None:
            await _json(send, 401, {"code": "invalid_api_key",
                                    "detail": "the API key is unknown or revoked"},
                        [(b"www-authenticate",
                          b'Bearer realm="crowdqrels", error="invalid_token"')])
        return principal

    async def _session(self, headers: dict[bytes, bytes]) -> Principal | None:
        """The signed-in key behind the dashboard's session cookie, if any and still valid."""
        token = _cookie(headers, SESSION_COOKIE)
        if not token:
            return None
        principal = self.verifier.cached_session(token)
        if principal is None:
            principal = await anyio.to_thread.run_sync(self.verifier.verify_session, token)
        return principal
