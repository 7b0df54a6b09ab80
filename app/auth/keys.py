"""API keys: creation (shown once), Argon2 hashes, revocation, and a verifier with a short cache.

A key reads ``cq_<prefix>_<secret>``: ``prefix`` is 8 random hex characters, public and unique,
used to find the row; ``secret`` is 32 random bytes (256 bits). Only the Argon2id hash of the
whole key is stored (argon2-cffi). Hashing is slow on purpose (~10–20 ms), so the
verifier keeps keys it verified for ``key_cache_s`` seconds, indexed by their SHA-256 in memory:
a request with a known key costs a dictionary look-up. The key's last-use time is written when
it is verified against the database, i.e. at most once per cache period per process.
"""

from __future__ import annotations

import hashlib
import secrets
import threading
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError, VerifyMismatchError
from sqlalchemy import delete, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from app.auth.principal import SCOPES, Principal, Scope
from app.auth.tables import ApiKey, UiSession
from app.collections import service as collections_service
from app.core.db import get_sessionmaker
from app.core.errors import Conflict, InvalidInput, NotFound

KEY_TAG = "cq"
# Argon2id with OWASP's recommended minimum (19 MiB, 2 passes): a key has 256 random bits, so
# the hash guards against a stolen table, not against guessing; the verifier's cache keeps the
# cost off the request path.
_hasher = PasswordHasher(time_cost=2, memory_cost=19 * 1024, parallelism=1)


def new_key() -> tuple[str, str]:
    """A fresh key and its public prefix."""
    prefix = secrets.token_hex(4)
    return f"{KEY_TAG}_{prefix}_{secrets.token_urlsafe(32)}", prefix


def key_prefix(key: str) -> str | None:
    parts = key.split("_", 2)
    if len(parts) != 3 or parts[0] != KEY_TAG or len(parts[1]) != 8 or len(parts[2]) < 20:
        return None
    return parts[1]


def principal_of(row: ApiKey) -> Principal:
    return Principal(name=row.name, scope=row.scope,  # type: ignore[arg-type]
                     collections=None if row.collections is None else frozenset(row.collections))


def create_key(session: Session, *, name: str, scope: Scope,
               collections: list[str] | None = None) -> tuple[ApiKey, str]:
    """Store a new key; return its row and the key itself (the only time it is available)."""
    if scope not in SCOPES:
        raise InvalidInput(f"unknown scope {scope!r}; one of {list(SCOPES)}",
                           code="invalid_scope")
    ids = None
    if collections is not None:
        if not collections:  # never read an empty limit as no limit
            raise InvalidInput("collections: name at least one, or leave it out for every "
                               "collection", code="invalid_body")
        ids = sorted({collections_service.get_collection(session, key=c).id
                      for c in collections})
    key, prefix = new_key()
    row = ApiKey(name=name, prefix=prefix, key_hash=_hasher.hash(key), scope=scope,
                 collections=ids)
    session.add(row)
    try:
        session.commit()
    except IntegrityError:
        session.rollback()
        if session.scalar(select(ApiKey.id).where(ApiKey.name == name)) is not None:
            raise Conflict(f"a key named {name!r} exists already (names are never reused, "
                           "even after a revoke)", code="key_name_taken") from None
        raise  # a prefix collision (1 in 4 billion): the caller may simply retry
    return row, key


def list_keys(session: Session) -> list[ApiKey]:
    return list(session.scalars(select(ApiKey).order_by(ApiKey.id)))


def collection_names(session: Session, rows: list[ApiKey]) -> dict[int, str]:
    """The names of the collections the keys are limited to, by id (one query). A collection
    deleted since is absent: its id is shown instead."""
    return collections_service.names_by_id(
        session, {i for row in rows for i in (row.collections or ())})


def get_key(session: Session, *, name: str) -> ApiKey:
    row = session.scalar(select(ApiKey).where(ApiKey.name == name))
    if row is None:
        raise NotFound(f"no key named {name!r}", code="key_not_found")
    return row


def revoke_key(session: Session, *, name: str) -> tuple[ApiKey, bool]:
    """Revoke (keep the row, for the audit log and so the name is never reused). Returns the row
    and whether this call revoked it: a key revoked already (or by a concurrent call: the
    change is conditional) is left as it was, so only one revocation is ever recorded."""
    row = get_key(session, name=name)
    changed = session.execute(
        update(ApiKey).where(ApiKey.id == row.id, ApiKey.revoked_at.is_(None))
        .values(revoked_at=datetime.now(UTC))).rowcount == 1  # type: ignore[attr-defined]
    if changed:
        session.execute(delete(UiSession).where(UiSession.key_id == row.id))
    session.commit()
    session.refresh(row)
    return row, changed


def _digest(secret: str) -> bytes:
    return hashlib.sha256(secret.encode()).digest()


@dataclass(frozen=True)
class _Cached:
    principal: Principal
    key_id: int
    expires: float


_SESSION = "session\x00"  # the cache's prefix for session tokens

class KeyVerifier:
    """Turns a key (or a dashboard session token) into a Principal, with a short cache."""

    def __init__(self, database_url: str, *, cache_s: float) -> None:
        self.database_url = database_url
        self.cache_s = cache_s
        self._cache: dict[bytes, _Cached] = {}
        self._lock = threading.Lock()
        # One Argon2 check per key at a time (striped: bounded memory whatever callers send).
        self._verifying = [threading.Lock() for _ in range(64)]

    # -- cache ---------------------------------------------------------------------------------
    def cached(self, secret: str) -> Principal | None:
        """The principal if ``secret`` (key or session token) was verified recently; else None."""
        hit = self._cache.get(_digest(secret))
        if hit is not None and hit.expires > time.monotonic():
            return hit.principal
        return None

    def cached_session(self, token: str) -> Principal | None:
        """As ``cached`` for a dashboard session token (kept apart from keys: a session token
        presented as an API key is not a key)."""
        return self.cached(_SESSION + token)

    def forget_session(self, token: str) -> None:
        self.forget(_SESSION + token)

    def _remember(self, secret: str, principal: Principal, key_id: int) -> None:
        if self.cache_s <= 0:
            return
        now = time.monotonic()
        with self._lock:
            if len(self._cache) > 10_000:  # drop what expired; a bound on memory
                self._cache = {k: v for k, v in self._cache.items() if v.expires > now}
            self._cache[_digest(secret)] = _Cached(principal, key_id, now + self.cache_s)

    def forget(self, secret: str) -> None:
        with self._lock:
            self._cache.pop(_digest(secret), None)

    def forget_key(self, key_id: int) -> None:
        """After a revoke: the key (and its sessions) stop working at once in this process."""
        with self._lock:
            self._cache = {k: v for k, v in self._cache.items() if v.key_id != key_id}

    # -- verification (database; call from a worker thread) -----------------------------------
    def verify_key(self, key: str) -> Principal | None:
        principal = self.cached(key)
        if principal is not None:
            return principal
        prefix = key_prefix(key)
        if prefix is None:
            return None
        # A burst of requests with a new key: the first verifies, the others reuse its result.
        with self._verifying[hash(prefix) % len(self._verifying)]:
            principal = self.cached(key)
            return principal if principal is not None else self._verify(key, prefix)

    def _verify(self, key: str, prefix: str) -> Principal | None:
        with get_sessionmaker(self.database_url)() as session:
            row = matching_key(session, key, prefix)
            if row is None:
                return None
            session.execute(update(ApiKey).where(ApiKey.id == row.id)
                            .values(last_used_at=datetime.now(UTC)))
            session.commit()
            principal = principal_of(row)
            self._remember(key, principal, row.id)
            return principal

    def verify_session(self, token: str) -> Principal | None:
        principal = self.cached_session(token)
        if principal is not None:
            return principal
        with get_sessionmaker(self.database_url)() as session:
            found = session.execute(
                select(UiSession.expires_at, ApiKey)
                .join(ApiKey, ApiKey.id == UiSession.key_id)
                .where(UiSession.token_hash == hashlib.sha256(token.encode()).hexdigest())
            ).first()
            if found is None:
                return None
            expires_at, row = found
            if expires_at.tzinfo is None:  # SQLite returns naive UTC
                expires_at = expires_at.replace(tzinfo=UTC)
            if row.revoked_at is not None or expires_at <= datetime.now(UTC):
                return None
            principal = principal_of(row)
            self._remember(_SESSION + token, principal, row.id)
            return principal


def matching_key(session: Session, key: str, prefix: str) -> ApiKey | None:
    """The unrevoked key row whose public prefix is ``prefix`` and whose Argon2id hash ``key``
    matches (the one check of a presented key, for requests and for sign-in)."""
    row = session.scalar(select(ApiKey).where(ApiKey.prefix == prefix))
    if row is None or row.revoked_at is not None:
        return None
    try:
        _hasher.verify(row.key_hash, key)
    except (VerifyMismatchError, VerificationError, InvalidHashError):
        return None
    return row


def create_session(session: Session, *, key: str, hours: float) -> str | None:
    """Sign in with ``key``: a new session token, or None when the key is not valid."""
    prefix = key_prefix(key)
    row = None if prefix is None else matching_key(session, key, prefix)
    if row is None:
        return None
    token = secrets.token_urlsafe(32)
    now = datetime.now(UTC)
    session.execute(delete(UiSession).where(UiSession.expires_at <= now))
    session.add(UiSession(token_hash=hashlib.sha256(token.encode()).hexdigest(), key_id=row.id,
                          expires_at=now + timedelta(hours=hours)))
    row.last_used_at = now
    session.commit()
    return token


def end_session(session: Session, *, token: str) -> None:
    session.execute(delete(UiSession).where(
        UiSession.token_hash == hashlib.sha256(token.encode()).hexdigest()))
    session.commit()
