"""Judge files and the agreement of judges: what the API answers."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field

JudgeKind = Literal["llm", "expert", "crowd"]


class JudgeStored(BaseModel):
    judge: str
    kind: JudgeKind
    batch_id: int
    judgments: int = Field(description="lines of the file stored as judgments")
    withdrawn: int = Field(description=(
        "pairs the judge labelled before that this file does not label (or gives only a "
        "'could not judge' value): withdrawn, so fits see exactly this file"))
    new_tasks: int
    replaced: bool = Field(description="the judge had judgments before this file")


class JudgePublic(BaseModel):
    name: str
    kind: JudgeKind
    judgments: int = Field(description="pairs the judge labels now")
    could_not_judge: int = Field(description="of them, those given an ignore value")
    grades: dict[int, int] = Field(description="grade -> pairs given it")
    updated_at: datetime | None


class JudgesPublic(BaseModel):
    data: list[JudgePublic]
    count: int


class AgreementPublic(BaseModel):
    """Judging the judges (``app.judges.agreement.judge_agreement``)."""

    aggregation_id: int | None
    scale: list[int]
    min_tasks: int
    n_gold: int
    krippendorff_alpha: float | None = Field(description=(
        "ordinal Krippendorff's α over every rater listed and every pair they label"))
    raters: list[dict[str, Any]]
    pairwise: dict[str, Any]
    rankings: dict[str, Any] | None
