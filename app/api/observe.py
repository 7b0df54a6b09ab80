"""Each request measured and logged (pure ASGI middleware, outermost in app.main).

- ``X-Request-ID``: the caller's (if it is a short token of letters, digits and ``-_.:``) or a
  new one; echoed on the answer and set in ``app.core.logs.REQUEST_ID`` for every line logged
  while the request runs.
- Metrics: the duration histogram by route *template* (the path of the route that matched, with
  its ``{parameters}``; ``unmatched`` when none did), method and status; requests in flight.
- One JSON log line per request (logger ``crowdqrels.request``): request id, method, route,
  status, duration and the prefix of the API key that authenticated it (public; never the key).
"""

from __future__ import annotations

import logging
import re
import time
import uuid

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.core.logs import REQUEST_ID, REQUEST_LOGGER
from app.core.metrics import IN_FLIGHT, REQUEST_SECONDS, UNMATCHED

HEADER = b"x-request-id"
_GOOD_ID = re.compile(rb"[A-Za-z0-9._:-]{1,128}")
log = logging.getLogger(REQUEST_LOGGER)


def request_id(scope: Scope) -> str:
    for name, value in scope.get("headers") or ():
        if name == HEADER and _GOOD_ID.fullmatch(value):
            return value.decode("ascii")
    return uuid.uuid4().hex


def route_template(scope: Scope) -> str:
    """The matched route's path template, its router's prefix included (``/api/v1/collections
    /{c}``; FastAPI's routes of an included router know only their own part), a mount's prefix
    for what a mount answers (``/ui/static``), ``unmatched`` when nothing matched."""
    route = scope.get("route")
    template = getattr(route, "path_format", None)
    if isinstance(template, str):
        path: str = scope.get("path") or ""
        params = scope.get("path_params") or {}
        try:
            concrete = template.format(**{k: str(v) for k, v in params.items()})
        except (KeyError, IndexError, ValueError):
            return template
        return path.removesuffix(concrete) + template if path.endswith(concrete) else template
    if "app_root_path" in scope:  # a mounted application (the static files)
        root: str = scope.get("root_path") or ""
        return root.removeprefix(scope["app_root_path"] or "") or UNMATCHED
    return UNMATCHED


class ObserveRequests:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        rid = request_id(scope)
        token = REQUEST_ID.set(rid)
        status = 500  # unless the application answers
        seconds: float | None = None

        def observe() -> float:
            # Once per request, before its last byte leaves: a client that has read the whole
            # answer finds it counted (a /metrics read right after sees it, in any process).
            nonlocal seconds
            if seconds is None:
                seconds = time.perf_counter() - started
                REQUEST_SECONDS.labels(route_template(scope), scope["method"],
                                       str(status)).observe(seconds)
            return seconds

        async def send_with_id(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                message = {**message, "headers": [
                    *(message.get("headers") or []), (HEADER, rid.encode("ascii"))]}
            elif message["type"] == "http.response.body" and not message.get("more_body"):
                observe()
            await send(message)

        started = time.perf_counter()
        IN_FLIGHT.inc()
        try:
            await self.app(scope, receive, send_with_id)
        finally:
            IN_FLIGHT.dec()
            seconds = observe()
            route = route_template(scope)
            state = scope.get("state") or {}
            log.info("%s %s %d", scope["method"], route, status, extra={
                "request_id": rid, "method": scope["method"], "route": route, "status": status,
                "duration_ms": round(seconds * 1000, 2), "key_prefix": state.get("key_prefix")})
            REQUEST_ID.reset(token)
