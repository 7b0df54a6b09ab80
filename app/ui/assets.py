"""The dashboard's static assets: app/ui/static with a day of caching, and the versioned links
the pages use for them."""

from __future__ import annotations

import functools
import hashlib
from importlib.metadata import version
from pathlib import Path

from fastapi.staticfiles import StaticFiles

STATIC = Path(__file__).resolve().parent / "static"


class Assets(StaticFiles):
    """Static files with a day of browser caching. Pages link them with ``asset_url``, whose
    ``?v=`` changes with the file, so a new version of the service is never paired with a
    browser's day-old copy of the script or the styles."""

    async def get_response(self, path: str, scope):  # type: ignore[no-untyped-def]
        response = await super().get_response(path, scope)
        if response.status_code in (200, 304):
            response.headers.setdefault("cache-control", "public, max-age=86400")
        return response


@functools.cache
def asset_url(name: str) -> str:
    """/ui/static/NAME?v=…: the first 12 hex digits of the file's SHA-256 (ours), or the
    installed plotly's version (plotly.min.js, from its package)."""
    path = STATIC / name
    tag = (hashlib.sha256(path.read_bytes()).hexdigest()[:12] if path.is_file()
           else version("plotly"))
    return f"/ui/static/{name}?v={tag}"


def static_files() -> StaticFiles:
    """app/ui/static, then plotly.min.js from the plotly package and Swagger UI / ReDoc from
    fastapi-offline: nothing is loaded from the network."""
    return Assets(directory=STATIC,
                  packages=[("plotly", "package_data"), ("fastapi_offline", "static")])
