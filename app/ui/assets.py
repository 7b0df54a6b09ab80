"""The dashboard's static assets (app/ui/static, plotly.min.js from the plotly package, Swagger UI
and ReDoc from fastapi-offline) and the versioned links the pages use for them.

Pages link every asset with ``asset_url``: ``/ui/static/NAME?v=TAG``, the tag changing with the
file, so a browser may keep such a response for good (app.ui.caching): a new version of a file
has a new address. Without the current tag (a link of an old page, typed by hand) a file is
kept a day.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
from importlib.metadata import version
from pathlib import Path

from fastapi.staticfiles import StaticFiles

STATIC = Path(__file__).resolve().parent / "static"
PREFIX = "/ui/static/"
# The packages whose files are served beside ours: (module, its folder of files, the
# distribution whose version tags their links).
PACKAGES = (("plotly", "package_data", "plotly"),
            ("fastapi_offline", "static", "fastapi-offline"))
DAY = "public, max-age=86400"


class Assets(StaticFiles):
    """Static files with a day of browser caching (a year for a link with the file's version:
    app.ui.caching.StaticCaching)."""

    async def get_response(self, path: str, scope):  # type: ignore[no-untyped-def]
        response = await super().get_response(path, scope)
        if response.status_code in (200, 304):
            response.headers.setdefault("cache-control", DAY)
        return response


@functools.lru_cache(maxsize=256)
def asset_tag(name: str) -> str:
    """The version in NAME's links: the first 12 hex digits of the file's SHA-256 (ours), or
    the version of the package that ships it."""
    path = STATIC / name
    if path.is_file():
        return hashlib.sha256(path.read_bytes()).hexdigest()[:12]
    for module, folder, distribution in PACKAGES:
        spec_root = _package_folder(module, folder)
        if spec_root is not None and (spec_root / name).is_file():
            return version(distribution)
    return "0"


def _package_folder(module: str, folder: str) -> Path | None:
    spec = importlib.util.find_spec(module)
    if spec is None or spec.origin is None:
        return None
    return Path(spec.origin).parent / folder


def asset_url(name: str) -> str:
    """/ui/static/NAME?v=TAG: the link pages use (templates: ``asset(name)``)."""
    return f"{PREFIX}{name}?v={asset_tag(name)}"


def static_files() -> StaticFiles:
    """app/ui/static, then plotly.min.js from the plotly package and Swagger UI / ReDoc from
    fastapi-offline: nothing is loaded from the network."""
    return Assets(directory=STATIC,
                  packages=[(module, folder) for module, folder, _ in PACKAGES])
