"""Reading an uploaded file: the raw request body or the multipart field ``file``."""

from __future__ import annotations

import tempfile
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import IO, Any

from fastapi import Request
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import UploadFile

from app.core.errors import InvalidInput
from app.formats.ids import CONTROL, MAX_FILENAME_LENGTH


@dataclass(frozen=True)
class Upload:
    content: bytes
    filename: str | None


async def read_upload(request: Request, *, filename: str | None) -> Upload:
    content_type = request.headers.get("content-type", "")
    if content_type.startswith("multipart/form-data"):
        async with request.form() as form:  # closes the spooled temporary files
            field = form.get("file")
            if not isinstance(field, UploadFile):
                raise InvalidInput("multipart upload without a 'file' field", code="missing_file")
            content = await field.read()
            return Upload(content, filename or _stored_name(field.filename))
    return Upload(await request.body(), filename)


# Bytes of an upload kept in memory before it goes to a temporary file, and read at a time.
SPOOL_BYTES = 8 * 1024 * 1024
READ_BYTES = 4 * 1024 * 1024


@dataclass(frozen=True)
class SpooledUpload:
    """An uploaded file on disk (past ``SPOOL_BYTES``), read back in blocks: a large file is
    never held whole in memory. ``digest``: the hash the caller asked for, of the content."""

    file: IO[bytes]
    filename: str | None
    digest: str | None

    def chunks(self) -> Iterator[bytes]:
        """The content from the start, ``READ_BYTES`` at a time."""
        self.file.seek(0)
        while chunk := self.file.read(READ_BYTES):
            yield chunk

    def read(self) -> bytes:
        self.file.seek(0)
        return self.file.read()


Hasher = Callable[[str | None], Any]  # the file's name -> a hashlib object, or None: no hash


@asynccontextmanager
async def spooled_upload(request: Request, *, filename: str | None,
                         hasher: Hasher) -> AsyncIterator[SpooledUpload]:
    """The uploaded file (raw body or multipart field ``file``, as :func:`read_upload`) spooled
    to a temporary file as it arrives; ``hasher(name)`` (the name the batch keeps) is fed the
    content on the way (the ``Idempotency-Key`` fingerprint). Closed at the end of the block."""
    content_type = request.headers.get("content-type", "")
    if content_type.startswith("multipart/form-data"):
        async with request.form() as form:  # starlette spools the part to a temporary file
            field = form.get("file")
            if not isinstance(field, UploadFile):
                raise InvalidInput("multipart upload without a 'file' field", code="missing_file")
            name = filename or _stored_name(field.filename)
            digest = hasher(name)
            if digest is not None:
                await run_in_threadpool(_hash_file, field.file, digest)
            yield SpooledUpload(field.file, name, None if digest is None else digest.hexdigest())
        return
    digest = hasher(filename)
    with tempfile.SpooledTemporaryFile(max_size=SPOOL_BYTES) as spool:
        async for chunk in request.stream():
            if digest is not None:
                digest.update(chunk)
            spool.write(chunk)
        yield SpooledUpload(spool, filename,  # type: ignore[arg-type]
                            None if digest is None else digest.hexdigest())


def _hash_file(file: IO[bytes], digest: Any) -> None:
    file.seek(0)
    while chunk := file.read(READ_BYTES):
        digest.update(chunk)


def _stored_name(name: str | None) -> str | None:
    """The multipart part's file name as a batch keeps it: without control characters (a NUL
    cannot be stored on PostgreSQL) and cut to the column's 500 characters. The name is chosen
    by the client's software from the file on disk and only labels the batch, so a good upload
    is not refused for it (an explicit ``?filename=`` is the caller's own, and checked)."""
    if name is None:
        return None
    cleaned = CONTROL.sub("", name).strip()[:MAX_FILENAME_LENGTH]
    return cleaned or None
