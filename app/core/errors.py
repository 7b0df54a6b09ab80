"""Domain errors raised by services, and the one place that maps them to HTTP.

Every error body is ``{"code": <stable machine-readable>, "detail": <human>, ...}``; file errors
add ``line`` (1-based, the header is line 1) and ``column``.
"""

from __future__ import annotations

import math
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from sqlalchemy.exc import OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeout
from starlette.exceptions import HTTPException as StarletteHTTPException

from app.formats.errors import FileFormatError


class DomainError(Exception):
    status_code = 400
    code = "bad_request"

    def __init__(self, detail: str, *, code: str | None = None, **extra: Any) -> None:
        super().__init__(detail)
        self.detail = detail
        if code is not None:
            self.code = code
        self.extra = {k: v for k, v in extra.items() if v is not None}

    def body(self) -> dict[str, Any]:
        return {"code": self.code, "detail": self.detail, **self.extra}


class NotFound(DomainError):
    status_code = 404
    code = "not_found"


class Conflict(DomainError):
    status_code = 409
    code = "conflict"


class InvalidInput(DomainError):
    status_code = 422
    code = "invalid_input"


class PayloadTooLarge(DomainError):
    status_code = 413
    code = "payload_too_large"


class Unavailable(DomainError):
    """The database cannot serve the request now (busy, locked, unreachable): retry."""

    status_code = 503
    code = "database_busy"
    headers = {"Retry-After": "1"}


def database_unavailable(exc: Exception) -> Unavailable:
    """A connection pool that timed out (every connection busy), SQLite's 'database is
    locked' after its busy timeout, a lost or refused PostgreSQL connection, a deadlock: the
    request changed nothing (its transaction is rolled back) and may be sent again."""
    if isinstance(exc, PoolTimeout):
        return Unavailable("every database connection is busy; retry shortly")
    reason = str(getattr(exc, "orig", exc)).strip().splitlines()[0][:200]
    return Unavailable(f"the database could not serve the request ({reason}); retry shortly")


def invalid_file(error: FileFormatError) -> InvalidInput:
    return InvalidInput(error.detail, code=error.code, line=error.line, column=error.column)


JSON_MEDIA_TYPE = "application/json"


def _body_not_read_as_json(exc: RequestValidationError) -> bool:
    """A JSON body sent without a JSON media type: FastAPI then passes the raw bytes to the body
    model (it parses JSON only for ``application/json`` or ``*+json``, a guard against
    cross-site requests), and its error would only say the body is not an object."""
    return (isinstance(exc.body, bytes | bytearray) and bool(exc.body)
            and any(tuple(e.get("loc", ()))[:1] == ("body",) for e in exc.errors()))


def _not_a_number(given: object) -> dict[str, str]:
    """For a NaN or an infinity sent where a number is expected (``threshold=nan``), what is
    wrong with it (pydantic's bounds check would say "should be less than or equal to 1")."""
    if isinstance(given, str):
        try:
            number = float(given)
        except ValueError:
            return {}
    elif isinstance(given, float):
        number = given
    else:
        return {}
    if math.isnan(number):
        return {"msg": "not a number (NaN): give a number", "type": "finite_number"}
    if math.isinf(number):
        return {"msg": "not a finite number (infinity): give a number", "type": "finite_number"}
    return {}


def register_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(DomainError)
    async def _domain(_: Request, exc: DomainError) -> JSONResponse:
        return JSONResponse(exc.body(), status_code=exc.status_code,
                            headers=getattr(exc, "headers", None))

    @app.exception_handler(PoolTimeout)
    @app.exception_handler(OperationalError)
    async def _unavailable(_: Request, exc: Exception) -> JSONResponse:
        err = database_unavailable(exc)
        return JSONResponse(err.body(), status_code=err.status_code, headers=err.headers)

    @app.exception_handler(FileFormatError)
    async def _file(_: Request, exc: FileFormatError) -> JSONResponse:
        err = invalid_file(exc)
        return JSONResponse(err.body(), status_code=err.status_code)

    @app.exception_handler(RequestValidationError)
    async def _validation(request: Request, exc: RequestValidationError) -> JSONResponse:
        if _body_not_read_as_json(exc):
            content_type = request.headers.get("content-type")
            sent = f"Content-Type {content_type!r}" if content_type else "no Content-Type"
            return JSONResponse({
                "code": "unsupported_media_type", "expected": JSON_MEDIA_TYPE,
                "detail": f"the body is read as JSON only when sent with Content-Type: "
                          f"{JSON_MEDIA_TYPE} (this request has {sent})",
            }, status_code=415)
        errors = [
            {"loc": list(e.get("loc", ())), "msg": e.get("msg", ""), "type": e.get("type", "")}
            | _not_a_number(e.get("input"))
            for e in exc.errors()
        ]
        first = errors[0] if errors else {"loc": [], "msg": "invalid request"}
        where = ".".join(str(p) for p in first["loc"])
        body: dict[str, object] = {"code": "invalid_body", "detail": f"{where}: {first['msg']}",
                                   "errors": errors}
        loc = first["loc"]
        if len(loc) >= 3 and loc[:2] == ["body", "judgments"] and type(loc[2]) is int:
            body["index"] = loc[2]  # the judgment of a JSON bulk, 0-based (as README says)
        return JSONResponse(body, status_code=422)

    @app.exception_handler(StarletteHTTPException)
    async def _http(_: Request, exc: StarletteHTTPException) -> JSONResponse:
        codes = {404: "not_found", 405: "method_not_allowed", 413: "payload_too_large"}
        return JSONResponse(
            {"code": codes.get(exc.status_code, "http_error"), "detail": str(exc.detail)},
            status_code=exc.status_code, headers=exc.headers,  # 405 keeps its Allow header
        )
