"""/docs (Swagger UI) and /redoc with their assets served by the app, not from a CDN.

The scripts and styles ship in the ``fastapi-offline`` package (its ``static`` folder); they are
served under /ui/static/ with the dashboard's own assets (``app.ui.static_files``).
"""

from __future__ import annotations

import importlib.util
from functools import cache
from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html
from fastapi.responses import HTMLResponse, Response

from app.ui.assets import DAY, asset_url

STATIC = "/ui/static"
# ReDoc's side menu shows a logo from Redocly's CDN: the app's own icon instead.
REDOC_CDN_LOGO = b"https://cdn.redoc.ly/redoc/logo-mini.svg"


@cache
def redoc_script() -> bytes:
    spec = importlib.util.find_spec("fastapi_offline")
    assert spec is not None and spec.origin is not None, "fastapi-offline is not installed"
    script = (Path(spec.origin).parent / "static" / "redoc.standalone.js").read_bytes()
    return script.replace(REDOC_CDN_LOGO, f"{STATIC}/favicon.svg".encode())


def install_docs(app: FastAPI) -> None:
    """Add /docs and /redoc (before /ui/static is mounted); create the app with
    ``docs_url=None, redoc_url=None``."""

    @app.get("/docs", include_in_schema=False)
    async def swagger_ui(request: Request) -> HTMLResponse:
        return get_swagger_ui_html(
            openapi_url=app.openapi_url or "/openapi.json", title=f"{app.title} · API docs",
            swagger_js_url=asset_url("swagger-ui-bundle.js"),
            swagger_css_url=asset_url("swagger-ui.css"),
            swagger_favicon_url=asset_url("favicon.svg"),
            swagger_ui_parameters={"validatorUrl": None})  # no badge from swagger.io

    @app.get(f"{STATIC}/redoc.standalone.js", include_in_schema=False)
    async def redoc_js() -> Response:
        return Response(redoc_script(), media_type="text/javascript",
                        headers={"cache-control": DAY})  # a year when versioned: app.ui.caching

    @app.get("/redoc", include_in_schema=False)
    async def redoc(request: Request) -> HTMLResponse:
        return get_redoc_html(
            openapi_url=app.openapi_url or "/openapi.json", title=f"{app.title} · ReDoc",
            redoc_js_url=asset_url("redoc.standalone.js"),
            redoc_favicon_url=asset_url("favicon.svg"),
            with_google_fonts=False)
