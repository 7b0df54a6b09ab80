"""Fixtures for access-control tests: an app with auth required, and keys of every kind."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from app.auth.principal import Principal
from app.core.config import Settings
from app.core.db import get_sessionmaker
from app.main import create_app


def make_key(url: str, name: str, scope: str, collections: list[str] | None = None) -> str:
    from app.auth import keys

    with get_sessionmaker(url)() as session:
        _, key = keys.create_key(session, name=name, scope=scope,  # type: ignore[arg-type]
                                 collections=collections)
    return key


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


ADMIN = Principal(name="admin", scope="admin")


@pytest.fixture
def auth_settings(database_url: str) -> Settings:
    # No start-up warm-up, as tests/conftest.py's `settings`.
    return Settings(database_url=database_url, environment="test", auth="required",
                    max_body_bytes=8 * 1024 * 1024, warm_startup_s=0)


@pytest.fixture
def auth_client(auth_settings: Settings) -> Iterator[TestClient]:
    with TestClient(create_app(auth_settings)) as client:
        yield client


@pytest.fixture
def admin_key(auth_settings: Settings) -> str:
    return make_key(auth_settings.database_url, "admin", "admin")


@pytest.fixture
def admin(auth_client: TestClient, admin_key: str) -> Any:
    """Requests with the admin key: admin.get(path), admin.post(path, json=...)..."""

    class As:
        def __getattr__(self, method: str) -> Any:
            def call(path: str, **kwargs: Any) -> Any:
                headers = {**kwargs.pop("headers", {}), **bearer(admin_key)}
                return getattr(auth_client, method)(path, headers=headers, **kwargs)
            return call

    return As()
