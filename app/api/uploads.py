"""Reading an uploaded file: the raw request body or the multipart field ``file``."""

from __future__ import annotations

from dataclasses import dataclass

from fastapi import Request
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


def _stored_name(name: str | None) -> str | None:
    """The multipart part's file name as a batch keeps it: without control characters (a NUL
    cannot be stored on PostgreSQL) and cut to the column's 500 characters. The name is chosen
    by the client's software from the file on disk and only labels the batch, so a good upload
    is not refused for it (an explicit ``?filename=`` is the caller's own, and checked)."""
    if name is None:
        return None
    cleaned = CONTROL.sub("", name).strip()[:MAX_FILENAME_LENGTH]
    return cleaned or None
