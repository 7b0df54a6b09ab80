"""API keys: the CLI on a fresh database, hashes only, 401s, revocation, last use, the cache."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from sqlalchemy import select

from app.auth.keys import KeyVerifier, key_prefix
from app.auth.tables import ApiKey
from app.cli import main as cli
from app.collections.schemas import CollectionCreate
from app.collections.service import create_collection
from app.core.config import get_settings
from app.core.db import get_sessionmaker
from tests.api.helpers import API
from tests.auth.conftest import bearer, make_key


def crowdqrels(url: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "CROWDQRELS_DATABASE_URL": url}
    return subprocess.run([sys.executable, "-m", "app.cli", *args], env=env, capture_output=True,
                          text=True, timeout=120)


def test_cli_on_a_fresh_database(tmp_path, monkeypatch, capsys) -> None:
    url = f"sqlite:///{tmp_path / 'fresh.db'}"  # no migrations applied yet
    created = crowdqrels(url, "keys", "create", "--name", "first-admin", "--scope", "admin")
    assert created.returncode == 0, created.stderr
    key = created.stdout.strip().splitlines()[-1].split()[-1]
    assert key_prefix(key) is not None and len(key) >= 40

    # The other commands in this process (a subprocess costs seconds of imports).
    monkeypatch.setenv("CROWDQRELS_DATABASE_URL", url)
    get_settings.cache_clear()
    try:
        _in_process(key, url, capsys)
    finally:
        get_settings.cache_clear()


def _in_process(key: str, url: str, capsys) -> None:
    assert cli(["keys", "list"]) == 0
    listed = capsys.readouterr().out
    assert "first-admin" in listed and "active" in listed and key not in listed

    with get_sessionmaker(url)() as session:
        row = session.scalar(select(ApiKey).where(ApiKey.name == "first-admin"))
        assert row is not None and row.scope == "admin"
        # Never in clear: no column holds the key or its secret part.
        secret = key.split("_", 2)[2]
        for column in ApiKey.__table__.columns:
            value = str(getattr(row, column.key))
            assert key not in value and secret not in value
        assert row.key_hash.startswith("$argon2id$")
        assert row.prefix == key_prefix(key)

    assert cli(["keys", "create", "--name", "first-admin", "--scope", "read"]) == 1
    err = capsys.readouterr().err  # as every command's: "crowdqrels COMMAND: error: ..."
    assert err.startswith("crowdqrels keys create: error: ") and "exists already" in err
    assert cli(["keys", "create", "--name", "r", "--scope", "read", "--collection", "nope"]) == 1
    assert "no collection 'nope'" in capsys.readouterr().err
    with get_sessionmaker(url)() as session:
        create_collection(session, spec=CollectionCreate(name="rf10"))
    assert cli(["keys", "create", "--name", "r", "--scope", "read", "--collection", "rf10"]) == 0
    assert "(scope read, collections rf10, prefix" in capsys.readouterr().out
    assert cli(["keys", "list"]) == 0
    assert [line.split()[3] for line in capsys.readouterr().out.splitlines()
            if line.startswith("r ")] == ["rf10"]
    assert cli(["keys", "revoke", "first-admin"]) == 0
    assert cli(["keys", "list"]) == 0
    assert "revoked" in capsys.readouterr().out
    capsys.readouterr()
    assert cli(["keys", "revoke", "nobody"]) == 1
    assert capsys.readouterr().err.startswith("crowdqrels keys revoke: error: ")
    assert KeyVerifier(url, cache_s=30).verify_key(key) is None


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_401s_key_headers_revocation_and_last_use(auth_client, auth_settings, admin_key) -> None:
    url = auth_settings.database_url
    missing = auth_client.get(f"{API}/collections")
    assert missing.status_code == 401 and missing.json()["code"] == "missing_api_key"
    assert missing.headers["www-authenticate"] == 'Bearer realm="crowdqrels"'
    for headers in (bearer("cq_00000000_" + "x" * 43), bearer("nonsense"),
                    {"Authorization": "Basic dXNlcjpwYXNz"}, {"X-API-Key": "cq_nope"}):
        bad = auth_client.get(f"{API}/collections", headers=headers)
        assert bad.status_code == 401 and bad.json()["code"] == "invalid_api_key", headers
        assert "www-authenticate" in bad.headers
    # A right prefix with a wrong secret is refused too.
    forged = admin_key[:12] + "y" * (len(admin_key) - 12)
    assert auth_client.get(f"{API}/collections", headers=bearer(forged)).status_code == 401

    assert auth_client.get(f"{API}/collections", headers=bearer(admin_key)).status_code == 200
    assert auth_client.get(f"{API}/collections",
                           headers={"X-API-Key": admin_key}).status_code == 200
    assert auth_client.get("/healthz").status_code == 200
    assert auth_client.get(f"{API}/healthz").status_code == 200

    with get_sessionmaker(url)() as session:
        assert session.scalar(select(ApiKey.last_used_at).where(ApiKey.name == "admin"))

    # Keys through the admin API: created (shown once), listed (never shown), revoked.
    created = auth_client.post(f"{API}/keys", headers=bearer(admin_key),
                               json={"name": "reader", "scope": "read"})
    assert created.status_code == 201, created.text
    # the secret is in this answer only: no cache keeps it (as the dashboard's answer)
    assert created.headers["cache-control"] == "no-store"
    reader = created.json()["key"]
    listing = auth_client.get(f"{API}/keys", headers=bearer(admin_key)).json()
    assert listing["count"] == 2 and all("key" not in k for k in listing["data"])
    assert auth_client.get(f"{API}/collections", headers=bearer(reader)).status_code == 200
    assert auth_client.post(f"{API}/keys", headers=bearer(reader),
                            json={"name": "x", "scope": "admin"}).status_code == 403
    assert auth_client.delete(f"{API}/keys/reader", headers=bearer(admin_key)).status_code == 200
    # Revoked through the API: refused at once, although the key was in the cache.
    after = auth_client.get(f"{API}/collections", headers=bearer(reader))
    assert after.status_code == 401 and after.json()["code"] == "invalid_api_key"
    assert auth_client.delete(f"{API}/keys/nobody",
                              headers=bearer(admin_key)).status_code == 404


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_verified_keys_are_cached(database_url) -> None:
    key = make_key(database_url, "cached", "ingest")
    verifier = KeyVerifier(database_url, cache_s=30)
    assert verifier.cached(key) is None
    principal = verifier.verify_key(key)
    assert principal is not None and principal.scope == "ingest"
    assert verifier.cached(key) == principal  # the next check hashes nothing
    assert verifier.cached(key[:-1] + ("a" if key[-1] != "a" else "b")) is None
    verifier.forget(key)
    assert verifier.cached(key) is None
    assert KeyVerifier(database_url, cache_s=0).verify_key(key) == principal
