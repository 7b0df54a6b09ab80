"""``Idempotency-Key``: a retried request returns the first response and stores nothing again.

How (``Idempotency.run``):

1. The request's fingerprint is the SHA-256 of method, path, query string and body.
2. A row (caller, key, fingerprint, no response yet) is inserted in the request's own
   transaction *before* the work. The UNIQUE (owner, key) constraint decides who goes first: on
   PostgreSQL a concurrent identical request blocks on that INSERT until the first transaction
   ends (SQLite has one writer at a time anyway). The service then commits the data and the row
   together; the response is stored on the row right after. If the work fails, the rollback
   removes the row with the data, and a retry runs again.
3. A request whose key exists: another fingerprint → 422 ``idempotency_key_reused``; a stored
   response → that response again (same status and body, header ``Idempotency-Replayed:
   true``; a caller that answers otherwise, the dashboard's forms with a redirect, passes
   ``replay``); no response yet (the first request is between its data commit and storing its
   response, a few milliseconds) → wait up to ``WAIT_S`` for it, then 409
   ``idempotency_in_progress`` (retry later).

Rows are kept ``CROWDQRELS_IDEMPOTENCY_RETENTION_H`` hours (default 24) and purged by the API's
maintenance loop; after that, the same key is a new request.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any

from fastapi import Depends, Header, Request
from fastapi.encoders import jsonable_encoder
from fastapi.responses import JSONResponse
from sqlalchemy import delete, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from app.auth.deps import PrincipalDep
from app.auth.tables import IdempotencyRecord
from app.core.errors import Conflict, InvalidInput

WAIT_S = 10.0
REPLAYED_HEADER = "Idempotency-Replayed"


class Idempotency:
    def __init__(self, *, key: str | None, owner: str, method: str, path: str,
                 query: str) -> None:
        self.key = key
        self.owner = owner
        self._prefix = f"{method}\0{path}\0{query}\0".encode()

    def fingerprint(self, body: bytes | str) -> str:
        data = body.encode() if isinstance(body, str) else body
        return hashlib.sha256(self._prefix + data).hexdigest()

    def hasher(self, head: bytes) -> Any:
        """A SHA-256 object fed the fingerprint's prefix and ``head``: the caller feeds it the
        rest of the body as it arrives (an upload too large to hold) and passes its hex digest
        to :meth:`run` as ``request_hash``. None without a key (nothing to fingerprint)."""
        if self.key is None:
            return None
        return hashlib.sha256(self._prefix + head)

    def run(self, session: Session, *, body: bytes | str | None = None, status_code: int,
            work: Callable[[], Any],
            replay: Callable[[int, Any], Any] | None = None,
            request_hash: str | None = None) -> Any:
        """``work()`` once per key (it commits its data), or the first response again:
        ``replay(status_code, response)`` of what was stored (default: the JSON response).
        The fingerprint is of ``body``, or ``request_hash`` (from :meth:`hasher`).

        Synchronous (it may wait on the database): async routes call it in a thread.
        """
        if self.key is None:
            return work()
        if request_hash is None:
            assert body is not None
            request_hash = self.fingerprint(body)
        record_id, stored = self._claim(session, request_hash)
        if stored is not None:
            return (replay or json_replay)(*stored)
        try:
            result = work()
        except BaseException:
            session.rollback()  # the claim goes with the work: a retry runs again
            raise
        session.execute(update(IdempotencyRecord).where(IdempotencyRecord.id == record_id).values(
            status_code=status_code, response=jsonable_encoder(result)))
        session.commit()
        return result

    def _claim(self, session: Session,
               request_hash: str) -> tuple[int, tuple[int, Any] | None]:
        """The new row's id, or (0, the stored status and response) of the first request.

        The wait for a response counts from the first look at the first request's committed
        row, not from the start: on PostgreSQL the INSERT below blocks for as long as the first
        request's transaction runs (behind other writers of the collection, seconds under load),
        and that time is not the short window this wait is for."""
        deadline: float | None = None
        while True:
            record = IdempotencyRecord(owner=self.owner, key=self.key, request_hash=request_hash)
            session.add(record)
            try:
                session.flush()  # PostgreSQL: waits here while an identical request is in flight
                return record.id, None
            except IntegrityError:
                session.rollback()
            row = session.execute(
                select(IdempotencyRecord.request_hash, IdempotencyRecord.status_code,
                       IdempotencyRecord.response)
                .where(IdempotencyRecord.owner == self.owner, IdempotencyRecord.key == self.key)
            ).first()
            session.rollback()  # end the read: the next look sees newer commits
            if row is None:
                continue  # purged in between: claim again
            if row.request_hash != request_hash:
                raise InvalidInput(
                    "this Idempotency-Key was used for another request (another body, path or "
                    "query): use a new key for a new request", code="idempotency_key_reused")
            if row.status_code is not None:
                return 0, (row.status_code, row.response)
            if deadline is None:
                deadline = time.monotonic() + WAIT_S
            elif time.monotonic() > deadline:
                raise Conflict("a request with this Idempotency-Key is still being processed; "
                               "retry later", code="idempotency_in_progress")
            time.sleep(0.05)


def json_replay(status_code: int, response: Any) -> JSONResponse:
    return JSONResponse(response, status_code=status_code, headers={REPLAYED_HEADER: "true"})


def get_idempotency(
    request: Request,
    principal: PrincipalDep,
    idempotency_key: Annotated[str | None, Header(
        alias="Idempotency-Key", min_length=1, max_length=200,
        description="retry-safe: a repeat with the same key and body returns the first "
                    "response and stores nothing")] = None,
) -> Idempotency:
    return Idempotency(key=idempotency_key, owner=principal.name, method=request.method,
                       path=request.url.path, query=request.url.query)


IdempotencyDep = Annotated[Idempotency, Depends(get_idempotency)]


def purge_expired(session: Session, *, retention_h: float) -> int:
    cutoff = datetime.now(UTC) - timedelta(hours=retention_h)
    removed = session.execute(
        delete(IdempotencyRecord).where(IdempotencyRecord.created_at < cutoff)).rowcount
    session.commit()
    return int(removed or 0)
