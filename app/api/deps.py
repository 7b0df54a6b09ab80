"""Typed dependencies shared by the routers."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated, Any

from fastapi import Depends, Path, Query, Request
from sqlalchemy.orm import Session

from app.core.config import Settings
from app.core.db import get_sessionmaker
from app.core.integers import MAX_INT
from app.jobs.runner import JobRunner


def id_path(what: str) -> Any:
    """A path parameter holding a row id, from 1 to MAX_INT (more would overflow the query)."""
    return Path(description=f"the {what}'s id", ge=1, le=MAX_INT)


# An optional id in the query string (e.g. ``?aggregation=3``).
OptionalId = Annotated[int | None, Query(ge=1, le=MAX_INT)]
# A listing's page (aggregations, their results, evaluations, samplings, judgments).
Limit = Annotated[int, Query(ge=1, le=10_000)]
Offset = Annotated[int, Query(ge=0, le=MAX_INT)]


def get_settings_dep(request: Request) -> Settings:
    return request.app.state.settings  # type: ignore[no-any-return]


SettingsDep = Annotated[Settings, Depends(get_settings_dep)]


def get_session(settings: SettingsDep) -> Iterator[Session]:
    with get_sessionmaker(settings.database_url)() as session:
        yield session


SessionDep = Annotated[Session, Depends(get_session)]


def get_runner(request: Request) -> JobRunner:
    return request.app.state.runner  # type: ignore[no-any-return]


RunnerDep = Annotated[JobRunner, Depends(get_runner)]


def judgments_arrived(request: Request, collection_id: int) -> None:
    """After judgments were stored: this process's dashboard prefill (``app.ui.prefill``, when
    the application runs with its lifespan) moves the collection's tally forward off the request
    path."""
    prefill = getattr(request.app.state, "prefill", None)
    if prefill is not None:
        prefill.collection(collection_id)
