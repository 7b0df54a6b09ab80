"""The dependencies every route declares: its scope, and the caller for collection checks.

Every route names its scope, ``dependencies=[require_scope("read")]`` (GET),
``require_scope("ingest")`` (adding judgments, texts, runs, features) or
``require_scope("admin")`` (creating collections, replacing gold, starting or cancelling jobs,
keys). Whatever loads a row that belongs to a collection checks
``principal.can_see(collection_id)`` and raises the row's NotFound when it is false.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from operator import attrgetter
from typing import Annotated, Any, TypeVar

from fastapi import Depends, Request
from sqlalchemy.orm import Session

from app.api.deps import SessionDep
from app.auth.keys import KeyVerifier
from app.auth.principal import OPEN, Principal, Scope
from app.core.errors import DomainError


class Forbidden(DomainError):
    status_code = 403
    code = "forbidden"


class Unauthorized(DomainError):
    status_code = 401
    code = "missing_api_key"
    headers = {"WWW-Authenticate": 'Bearer realm="crowdqrels"'}


def get_principal(request: Request) -> Principal:
    """The caller, as authentication (middleware) left it on the request; open when it is off."""
    principal = getattr(request.state, "principal", None)
    if principal is not None:
        return principal  # type: ignore[no-any-return]
    settings = getattr(request.app.state, "settings", None)
    if settings is not None and settings.auth_required:
        # The middleware admits no unauthenticated /api or /ui request; anything else that
        # asks who is calling gets the same answer.
        raise Unauthorized("this needs an API key: send 'Authorization: Bearer <key>'")
    return OPEN


PrincipalDep = Annotated[Principal, Depends(get_principal)]


Row = TypeVar("Row")


def load_or_404(*, name: str, path: Any, get: Callable[[Session, Any], Row],
                not_found: Callable[[Any], Exception],
                collection_id: Callable[[Row], int] = attrgetter("collection_id"),
                ) -> Callable[..., Row]:
    """A "load or 404" dependency: the row the path parameter ``name`` (``path``: its
    ``Annotated`` type) names, loaded once per request with ``get`` (the row's own 404 when
    there is none); a row of a collection the caller's key may not see is ``not_found`` as
    well, the same answer, so a key cannot probe for what other collections hold."""

    def load(session: Session, principal: Principal, **key: Any) -> Row:
        row = get(session, key[name])
        if not principal.can_see(collection_id(row)):
            raise not_found(key[name])
        return row

    # What FastAPI reads: the session, the caller and the path parameter by its own name.
    keyword = inspect.Parameter.KEYWORD_ONLY
    load.__signature__ = inspect.Signature([  # type: ignore[attr-defined]
        inspect.Parameter("session", keyword, annotation=SessionDep),
        inspect.Parameter("principal", keyword, annotation=PrincipalDep),
        inspect.Parameter(name, keyword, annotation=path),
    ], return_annotation=Any)
    return load


def require_scope(scope: Scope) -> Any:
    """A route dependency: 403 unless the caller's key has ``scope`` (or a higher one)."""

    # Async and without sub-dependencies: FastAPI runs it on the event loop, so a route whose
    # body is async (the cached annotator listing) pays no thread hop for its scope check.
    async def check(request: Request) -> None:
        principal = get_principal(request)
        if not principal.allows(scope):
            raise Forbidden(f"this needs a key with scope {scope!r}; "
                            f"{principal.name!r} has {principal.scope!r}",
                            code="insufficient_scope", required=scope)

    check.required_scope = scope  # type: ignore[attr-defined]  # read by the route-table test
    return Depends(check)


def get_key_verifier(request: Request) -> KeyVerifier | None:
    """This process's key verifier (None in an application built without one)."""
    return getattr(request.app.state, "key_verifier", None)  # type: ignore[no-any-return]


KeyVerifierDep = Annotated[KeyVerifier | None, Depends(get_key_verifier)]


def _unrestricted(principal: PrincipalDep) -> None:
    # A key limited to some collections must not mint a key for all of them.
    if not principal.manages_keys():
        raise Forbidden("managing keys needs an admin key that is not limited to collections",
                        code="insufficient_scope", required="admin")


KEY_ADMIN = [require_scope("admin"), Depends(_unrestricted)]
