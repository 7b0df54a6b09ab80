"""Reading an uploaded file: the raw request body or the multipart field ``file``."""

from __future__ import annotations

from dataclasses import dataclass

from fastapi import Request
from starlette.datastructures import UploadFile

from app.core.errors import InvalidInput


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
            return Upload(content, filename or field.filename)
    return Upload(await request.body(), filename)
