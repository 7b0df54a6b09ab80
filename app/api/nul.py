"""Refuse a NUL character in a request's path, query string or JSON / form body with 422.

PostgreSQL's text columns cannot hold U+0000 (psycopg refuses the value), so a NUL that reached a
query or an insert was a 500 there and a stored value on SQLite. No name, label or filter here
has a use for it: it is refused at the door, the same on both databases, before anything is read
or written. Uploaded files are checked where they are decoded (``app.formats.errors.decode_text``),
which can name the line.
"""

from __future__ import annotations

import json

from starlette.types import ASGIApp, Message, Receive, Scope, Send

CODE = "invalid_text"


def _kind(scope: Scope) -> str | None:
    """Which body to scan: ``json``, ``form`` (URL-encoded) or None (files are checked later)."""
    for name, value in scope.get("headers", []):
        if name == b"content-type":
            media = value.split(b";", 1)[0].strip().lower()
            if media == b"application/json" or media.endswith(b"+json"):
                return "json"
            if media == b"application/x-www-form-urlencoded":
                return "form"
            return None
    return None


_ESCAPE = b"\\u0000"  # JSON's escape for NUL (a NUL unless its backslash is itself escaped)
# The longest text that stands for a NUL, less one: an escape split between chunks lies within
# this many bytes on either side of the split.
_SEAM = len(_ESCAPE) - 1


def _may_hold_nul(part: bytes, kind: str) -> bool:
    """Whether a piece of a ``json`` or ``form`` body may hold a NUL: a NUL byte, or the text of
    its escape (JSON ``\\u0000``, whether itself escaped or not: only the whole body can tell;
    form ``%00``, always a NUL: a literal "%00" is sent as %2500).

    Each escape starts with a byte looked for first with memchr: a body of ids is full of "0"s,
    on which a search for "u0000" itself would test every position (36 µs per 64 KiB)."""
    if b"\x00" in part:
        return True
    if kind == "json":  # rfind: anchored on the rare backslash, where find tests the "0"s
        return b"\\" in part and part.rfind(_ESCAPE) >= 0
    return b"%" in part and b"%00" in part


def has_nul(body: bytes, kind: str) -> bool:
    """Whether a whole ``json`` or ``form`` body holds a NUL."""
    return _may_hold_nul(body, kind) and _confirmed(body, kind)


def _confirmed(candidate: bytes, kind: str) -> bool:
    """Whether a whole body that ``_may_hold_nul`` flagged really holds a NUL."""
    return b"\x00" in candidate or kind == "form" or _json_nul_escape(candidate)


def _json_nul_escape(body: bytes) -> bool:
    """Whether the JSON text holds the escape \\u0000 unescaped: its backslash follows an even
    run of backslashes (\\\\u0000 is a backslash, then the text "u0000"). Only the places
    that read \\u0000 are visited."""
    at = body.rfind(_ESCAPE)  # from the end (see _may_hold_nul)
    while at >= 0:
        start = at
        while start > 0 and body[start - 1] == 0x5C:  # the backslashes before it
            start -= 1
        if (at - start) % 2 == 0:
            return True
        at = body.rfind(_ESCAPE, 0, at + len(_ESCAPE) - 1)  # the next one starting before it
    return False


class RefuseNul:
    """Pure ASGI middleware: the path, the query string and a JSON or form body are checked
    before the route runs."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        query = scope.get("query_string", b"")
        if "\x00" in scope["path"]:
            await _reject(send, "the path")
            return
        if b"%00" in query or b"\x00" in query:
            await _reject(send, "the query string")
            return
        kind = _kind(scope)
        if kind is None:
            await self.app(scope, receive, send)
            return

        # Read the body first (FastAPI reads a JSON or form body whole before the endpoint runs,
        # and turns an error raised while reading into its own 400), then hand the same messages
        # on. BodySizeLimit, outside, has already counted them.
        messages: list[Message] = []
        candidate = False  # a chunk, or a seam between chunks, holds a NUL or its escape's text
        tail = b""  # the body's last _SEAM bytes so far, however small the chunks were
        while True:
            message = await receive()
            messages.append(message)
            if message["type"] != "http.request":
                break
            chunk = message.get("body", b"")
            if not candidate:
                seam = tail + chunk[:_SEAM]  # an escape split between chunks
                candidate = _may_hold_nul(chunk, kind) or _may_hold_nul(seam, kind)
                tail = (tail + chunk)[-_SEAM:] if len(chunk) < _SEAM else chunk[-_SEAM:]
            if not message.get("more_body", False):
                break
        # The chunks were screened as they came: only a flagged body is joined and confirmed.
        if candidate and _confirmed(b"".join(m.get("body", b"") for m in messages), kind):
            await _reject(send, "the request body")
            return

        async def replay() -> Message:
            return messages.pop(0) if messages else await receive()

        await self.app(scope, replay, send)


async def _reject(send: Send, where: str) -> None:
    body = json.dumps({"code": CODE,
                       "detail": f"{where} contains a NUL character (U+0000), which no text "
                                 "here may hold"}).encode()
    await send({"type": "http.response.start", "status": 422,
                "headers": [(b"content-type", b"application/json"),
                            (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})
