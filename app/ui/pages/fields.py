"""A dashboard form's fields read as the API reads its request: the CSRF check of a form POST,
whole numbers and scale values from text fields, and a request model's refusal as the API's
422.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from typing import Any

from fastapi import Depends, Request
from pydantic import ValidationError

from app.auth.csrf import verify_csrf
from app.core.errors import InvalidInput


async def checked_form(request: Request) -> AsyncIterator[None]:
    """verify_csrf for a form POST; the form's spooled files are closed when the request ends."""
    try:
        await verify_csrf(request)
        yield
    finally:
        await (await request.form()).close()


CheckedForm = Depends(checked_form)



def invalid_fields(exc: ValidationError) -> InvalidInput:
    """A form's fields failed the API's request model: the same message the API gives."""
    parts = [f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" if e["loc"] else e["msg"]
             for e in exc.errors()]  # a whole-model check (the scale) names no field
    return InvalidInput("; ".join(parts), code="invalid_body")


def whole_number(form: Any, name: str, default: int | None) -> int | None:
    """A form's number field: ``default`` when empty, 422 ``invalid_body`` when not a whole
    number (the request model then checks its range)."""
    text = str(form.get(name) or "").strip()
    if not text:
        return default
    if not re.fullmatch(r"-?[0-9]+", text):
        raise InvalidInput(f"{name} must be a whole number, not {text!r}", code="invalid_body")
    return int(text)


def scale_values(form: Any, name: str, default: list[int]) -> list[int]:
    """A form's list of scale values ("0 1 2", commas allowed): ``default`` when empty, 422
    ``invalid_body`` naming the field when a value is not a whole number."""
    text = str(form.get(name) or "").strip()
    if not text:
        return list(default)
    values = [v for v in re.split(r"[\s,]+", text) if v]
    for value in values:
        if not re.fullmatch(r"-?[0-9]+", value):
            raise InvalidInput(f"{name}: whole numbers separated by spaces, not {value!r}",
                               code="invalid_body")
    return [int(v) for v in values]


def words(text: Any) -> list[str]:
    """A text field's words (spaces or commas between): run names, measures."""
    return [w for w in str(text or "").replace(",", " ").split() if w]
