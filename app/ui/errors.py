"""Errors on dashboard pages: an HTML page with the API's code and message, never a trace.

The JSON API keeps its JSON errors; a request for a page (``/`` or ``/ui/...``, not the static
assets) gets the same status with a readable page instead: unknown ids are a 404 page, a method
an address does not take (a PUT, a POST to a page) a 405 page with its ``Allow``.
"""

from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse, Response
from sqlalchemy.exc import OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeout
from starlette.exceptions import HTTPException as StarletteHTTPException

from app.core.errors import DomainError, database_unavailable, invalid_file
from app.formats.errors import FileFormatError
from app.ui.templating import header_context, templates

log = logging.getLogger(__name__)
HEADINGS = {400: "Bad request", 403: "Not allowed", 404: "Not found", 405: "Not allowed",
            409: "Conflict", 413: "Too large", 422: "Invalid input", 500: "Server error"}


def is_page_path(path: str) -> bool:
    return path == "/" or (path.startswith("/ui/") and not path.startswith("/ui/static/"))


def is_page(request: Request) -> bool:
    return is_page_path(request.url.path)


def error_page(request: Request, status_code: int, detail: str, code: str | None,
               headers: dict[str, str] | None = None) -> HTMLResponse:
    return templates.TemplateResponse(request, "error.html", {
        "status_code": status_code, "heading": HEADINGS.get(status_code, "Error"),
        "detail": detail, "code": code, "title": HEADINGS.get(status_code, "Error"),
        **header_context(request),
    }, status_code=status_code, headers=headers)


Described = tuple[int, str, str | None]  # a page's status, detail and code


def _domain(exc: DomainError) -> Described:
    return exc.status_code, exc.detail, exc.code


def _file_error(exc: FileFormatError) -> Described:
    err = invalid_file(exc)  # its detail starts "line N: " already (FileFormatError)
    return err.status_code, err.detail, err.code


def _validation(exc: RequestValidationError) -> Described:
    parts = []
    for e in exc.errors():
        where = ".".join(str(p) for p in e.get("loc", ()) if p not in ("query", "path"))
        parts.append(f"{where}: {e.get('msg', '')}")
    return 422, "; ".join(parts) or "invalid request", "invalid_body"


def _http(exc: StarletteHTTPException) -> Described:
    detail = "no such page" if exc.status_code == 404 else str(exc.detail)
    return exc.status_code, detail, None


def _unavailable(exc: Exception) -> Described:
    err = database_unavailable(exc)
    return err.status_code, err.detail, err.code


def register_ui_error_handlers(app: FastAPI) -> None:
    """Wrap the API's handlers: pages get HTML, everything else what it got before."""
    api_handlers: dict[Any, Any] = dict(app.exception_handlers)

    def page_or_api(exc_class: type[Exception], describe: Any) -> None:
        fallback = api_handlers.get(exc_class)

        async def handler(request: Request, exc: Exception) -> Response:
            if is_page(request) or fallback is None:
                status_code, detail, code = describe(exc)
                return error_page(request, status_code, detail, code)
            return await fallback(request, exc)  # type: ignore[no-any-return]

        app.add_exception_handler(exc_class, handler)

    page_or_api(DomainError, _domain)
    page_or_api(FileFormatError, _file_error)
    page_or_api(RequestValidationError, _validation)
    page_or_api(StarletteHTTPException, _http)
    page_or_api(PoolTimeout, _unavailable)
    page_or_api(OperationalError, _unavailable)
    # A handler registered for a status code (the API's 405, app.api.openapi) comes before any
    # class handler: a page gets its HTML from a wrapper of that code too.
    app.add_exception_handler(405, _method_not_allowed(api_handlers.get(405)))
    app.add_exception_handler(Exception, _unexpected)


def _method_not_allowed(api_handler: Any) -> Any:
    """The 405 handler: a page's HTML, naming the methods the address takes; the API's own
    answer for anything else."""

    async def method_not_allowed(request: Request, exc: Exception) -> Response:
        if not is_page(request) and api_handler is not None:
            return await api_handler(request, exc)  # type: ignore[no-any-return]
        allow = (exc.headers or {}).get("Allow", "") if isinstance(
            exc, StarletteHTTPException) else ""
        detail = (f"{request.method} is not allowed at this address"
                  + (f"; it takes {allow}" if allow else "")
                  + ". Open the page from the dashboard's links instead")
        return error_page(request, 405, detail, "method_not_allowed",
                          headers={"Allow": allow} if allow else None)

    return method_not_allowed


async def _unexpected(request: Request, exc: Exception) -> Response:
    # ServerErrorMiddleware calls this for anything unhandled: log the trace, show none.
    log.exception("unhandled error on %s", request.url.path, exc_info=exc)
    if is_page(request):
        return error_page(request, 500, "something went wrong on our side; the error has "
                          "been logged", "internal_error")
    return JSONResponse({"code": "internal_error", "detail": "something went wrong on our "
                         "side; the error has been logged"}, status_code=500)
