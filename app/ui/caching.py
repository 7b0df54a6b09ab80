"""How browsers may keep the dashboard's responses (ASGI middleware, app.main).

- Pages (``/`` and ``/ui/...`` but the static files), with access control on: ``Cache-Control:
  no-store``. Else a browser keeps a signed-in page and shows it again, data and all, from Back
  after signing out (or to the next person at that browser). Without access control the pages
  are left as they were: they hold nothing a caller could not fetch again, and a page the
  browser may keep comes back from Back with the form keys it had (app.ui.forms), so a form
  sent again from there is still recognised as sent (a page not kept is fetched again, with
  new keys).
- Static files (``/ui/static/...``): a year, ``immutable``, for a link with the file's current
  version (app.ui.assets); gzip for scripts, styles and SVG when the browser accepts it
  (plotly.min.js: 4.8 MB, 1.5 MB compressed), each file compressed once per process and
  version, on its first request. Nothing else is compressed here: not the pages, not the JSON
  API.
"""

from __future__ import annotations

import gzip
import hashlib
import posixpath
import threading
from urllib.parse import parse_qsl

import anyio
from starlette.datastructures import Headers, MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.ui.assets import PREFIX, asset_tag
from app.ui.errors import is_page_path

NO_STORE = "no-store"
FOREVER = "public, max-age=31536000, immutable"
COMPRESSIBLE = ("text/", "application/javascript", "application/json", "image/svg+xml")
MIN_COMPRESSED_BYTES = 1024  # below this, the gzip header costs about what it saves
MAX_COMPRESSED_FILES = 32  # the files kept compressed (ours and the packages' are fewer)


class NoStorePages:
    """``Cache-Control: no-store`` on every page response (a page that set its own keeps it)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not is_page_path(scope["path"]):
            await self.app(scope, receive, send)
            return

        async def send_no_store(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                if "cache-control" not in headers:
                    headers["cache-control"] = NO_STORE
            await send(message)

        await self.app(scope, receive, send_no_store)


class Compressed:
    """Each compressed body once per process: keyed by path and what identifies its content
    (the file's ETag, else its SHA-256); a new version of a file replaces the old one's."""

    def __init__(self) -> None:
        self._bodies: dict[str, tuple[str, bytes]] = {}
        self._lock = threading.Lock()

    def cached(self, path: str, identity: str) -> bytes | None:
        kept = self._bodies.get(path)
        return kept[1] if kept is not None and kept[0] == identity else None

    def compress(self, path: str, identity: str, body: bytes) -> bytes:
        with self._lock:  # one compression at a time (the first request of each file)
            compressed = self.cached(path, identity)
            if compressed is None:
                compressed = gzip.compress(body, compresslevel=9, mtime=0)
                self._bodies.pop(path, None)
                while len(self._bodies) >= MAX_COMPRESSED_FILES:  # the oldest goes
                    del self._bodies[next(iter(self._bodies))]
                self._bodies[path] = (identity, compressed)
        return compressed


def _accepts_gzip(headers: Headers) -> bool:
    """Whether Accept-Encoding names gzip (or *) with a weight above 0."""
    for part in headers.get("accept-encoding", "").split(","):
        coding, _, params = part.strip().partition(";")
        if coding.strip().lower() in ("gzip", "*"):
            weight = params.strip().removeprefix("q=")
            try:
                return not params.strip() or float(weight) > 0
            except ValueError:
                return False
    return False


class StaticCaching:
    """ASGI middleware for ``/ui/static/``: a year of caching for a link with the file's current
    version, and gzip for the compressible types when the browser accepts it. Other paths
    pass through untouched (the JSON API is never compressed here)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.compressed = Compressed()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not scope["path"].startswith(PREFIX):
            await self.app(scope, receive, send)
            return
        # one spelling of each file ("a/../app.js" is app.js): the keys of what is kept
        name = posixpath.normpath(scope["path"][len(PREFIX):])
        query = dict(parse_qsl(scope.get("query_string", b"").decode("latin-1")))
        tag = query.get("v")
        request_headers = Headers(scope=scope)
        compress = (scope["method"] == "GET" and _accepts_gzip(request_headers)
                    and "range" not in request_headers)
        start: Message | None = None
        chunks: list[bytes] = []

        async def send_cached(message: Message) -> None:
            nonlocal start
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                if tag is not None and message["status"] in (200, 304) \
                        and tag == asset_tag(name):  # a file that exists, linked by version
                    headers["cache-control"] = FOREVER
                if message["status"] == 200 and _compressible(headers):
                    headers.append("vary", "Accept-Encoding")  # either answer, for caches
                    if compress:
                        start = message  # held until the body is in
                        return
                await send(message)
                return
            if start is None:
                await send(message)
                return
            chunks.append(message.get("body", b""))
            if message.get("more_body", False):
                return
            await self._send_compressed(send, start, name, b"".join(chunks))

        await self.app(scope, receive, send_cached)

    async def _send_compressed(self, send: Send, start: Message, path: str,
                               body: bytes) -> None:
        headers = MutableHeaders(scope=start)
        if len(body) < MIN_COMPRESSED_BYTES:
            await send(start)
            await send({"type": "http.response.body", "body": body})
            return
        etag = headers.get("etag")
        identity = etag or hashlib.sha256(body).hexdigest()
        compressed = self.compressed.cached(path, identity)
        if compressed is None:  # the file's first request (about 0.15 s for plotly.min.js)
            compressed = await anyio.to_thread.run_sync(self.compressed.compress, path,
                                                        identity, body)
        headers["content-encoding"] = "gzip"
        headers["content-length"] = str(len(compressed))
        if "accept-ranges" in headers:  # a range is served of the file as it is, not of this
            del headers["accept-ranges"]
        if etag and not etag.startswith("W/"):
            headers["etag"] = f"W/{etag}"  # another representation of the same file
        await send(start)
        await send({"type": "http.response.body", "body": compressed})


def _compressible(headers: MutableHeaders) -> bool:
    content_type = headers.get("content-type", "")
    return ("content-encoding" not in headers
            and any(content_type.startswith(t) for t in COMPRESSIBLE))
