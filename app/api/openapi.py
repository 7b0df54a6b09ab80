"""An OpenAPI schema that says what the service really answers.

FastAPI documents only each route's success and its own 422 shape. Every error here is
``{"code", "detail", ...}`` (app.core.errors), so every operation declares those statuses with
that model; the 422 is ours, not FastAPI's ``HTTPValidationError``. With auth required the
schema also names the two ways to send a key.
"""

from __future__ import annotations

import re
from typing import Any

from fastapi import FastAPI, Request
from fastapi.openapi.utils import get_openapi
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field
from starlette.exceptions import HTTPException

from app.core.config import Settings


class ErrorBody(BaseModel):
    """Every error: a stable machine-readable code and a human detail; some add fields
    (``line``, ``column``, ``index``, ``valid``, ``required``, ``expected``, ``errors``...)."""

    model_config = ConfigDict(extra="allow")

    code: str = Field(description="stable, machine-readable")
    detail: str = Field(description="for humans")


ERRORS = {
    "400": "bad request",
    "401": "no API key, or an unknown or revoked one (auth required)",
    "403": "the key's scope is too low",
    "404": "not found, or outside the key's collections",
    "409": "conflicts with the current state",
    "413": "request body over CROWDQRELS_MAX_BODY_BYTES",
    "415": "a JSON body sent without Content-Type: application/json",
    "422": "invalid request (body, parameters, file content)",
    "429": "over the key's rate limit (Retry-After)",
}
PUBLIC_PATHS = {"/healthz", "/api/v1/healthz"}


def text_responses(*media_types: str, description: str = "Successful Response",
              ) -> dict[int | str, dict[str, Any]]:
    """``responses=`` for a route whose 200 also comes as text (TSV, TREC lines) by ``format``:
    FastAPI documents only the JSON of a response model, and clients and contract checks
    (Schemathesis' undocumented content type) read the media types from the schema."""
    content = {media: {"schema": {"type": "object" if media == "application/json" else "string"}}
               for media in media_types}
    return {200: {"description": description, "content": content}}


def install(app: FastAPI, settings: Settings) -> None:
    """Replace ``app.openapi`` with the honest schema (built once, cached)."""

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is not None:
            return app.openapi_schema
        schema = get_openapi(title=app.title, version=app.version,
                             description=app.description, routes=app.routes)
        components = schema.setdefault("components", {})
        schemas = components.setdefault("schemas", {})
        schemas["Error"] = ErrorBody.model_json_schema()
        error = {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}
        if settings.auth_required:
            components["securitySchemes"] = {
                "bearer": {"type": "http", "scheme": "bearer"},
                "apiKey": {"type": "apiKey", "in": "header", "name": "X-API-Key"},
            }
        for path, item in schema.get("paths", {}).items():
            for operation in item.values():
                if not isinstance(operation, dict) or "responses" not in operation:
                    continue
                responses = operation["responses"]
                for status, description in ERRORS.items():
                    responses[status] = {"description": description, "content": error}
                if settings.auth_required and path not in PUBLIC_PATHS:
                    operation["security"] = [{"bearer": []}, {"apiKey": []}]
        for name in ("HTTPValidationError", "ValidationError"):
            schemas.pop(name, None)
        app.openapi_schema = schema
        return schema

    app.openapi = openapi  # type: ignore[method-assign]
    templates: list[tuple[re.Pattern[str], list[str]]] = []

    def allowed(path: str) -> list[str]:
        if not templates:
            for template, item in openapi().get("paths", {}).items():
                pattern = re.sub(r"\\\{[^/]+?\\\}", "[^/]+", re.escape(template))
                templates.append((re.compile(f"^{pattern}$"), [m.upper() for m in item]))
        return sorted({m for regex, methods in templates if regex.match(path) for m in methods})

    @app.exception_handler(405)
    async def _method_not_allowed(request: Request, exc: Exception) -> JSONResponse:
        # Starlette's Allow names the methods of one route; a path has one route per method.
        methods = allowed(request.url.path)
        header = ", ".join(methods) if methods else (
            (exc.headers or {}).get("Allow", "") if isinstance(exc, HTTPException) else "")
        return JSONResponse({"code": "method_not_allowed",
                             "detail": f"{request.method} is not allowed here; use {header}"},
                            status_code=405, headers={"Allow": header})
