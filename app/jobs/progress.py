"""How far a job has come, as every job resource shows it (fits, evaluations, feature builds)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel


class Progress(BaseModel):
    fraction: float
    message: str | None

    @classmethod
    def of(cls, row: Any) -> Progress:
        """From a job row's ``progress`` and ``progress_message`` columns."""
        return cls(fraction=row.progress, message=row.progress_message)
