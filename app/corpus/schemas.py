"""What the corpus endpoints read and answer: a run's name, runs, and texts stored."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict

RUN_NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._+-]*$"  # a run's name (PUT .../runs/{name})
RUN_NAME_MAX_LENGTH = 200


class TextsReport(BaseModel):
    texts: int
    new: int


class RunPublic(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    name: str
    n_lines: int
    n_topics: int
    max_depth: int
    uploaded_at: datetime


class RunStored(RunPublic):
    """The answer to an upload: the run, and how many of its topics the collection does not
    have at that moment (kept; an evaluation counts them per run)."""

    unknown_topics: int


class RunsPublic(BaseModel):
    data: list[RunPublic]
    count: int
