from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, WithJsonSchema, field_validator


def _as_id(value: object) -> object:
    # Ids are strings; accept JSON numbers too (TREC topic ids are often numeric).
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return value


# What the schema says of an id: a string or a JSON integer (read as its decimal string).
Id = Annotated[str, WithJsonSchema({"anyOf": [{"type": "string", "minLength": 1},
                                               {"type": "integer"}]})]


class JudgmentIn(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    topic: Id = Field(min_length=1)
    doc: Id = Field(min_length=1)
    annotator: Id = Field(min_length=1)
    label: int
    gold: int | None = Field(default=None, description="the task's expert label, if known")

    _ids = field_validator("topic", "doc", "annotator", mode="before")(_as_id)


class JudgmentsCreate(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    judgments: list[JudgmentIn] = Field(min_length=1)


class IngestPublic(BaseModel):
    batch_id: int
    judgments: int
    new_topics: int
    new_documents: int
    new_tasks: int
    new_annotators: int
    gold_labels: int = Field(description="tasks whose gold label this request set, 'could not "
                                         "judge' values included")
    gold_could_not_judge: int = Field(description="of gold_labels, those set to a 'could not "
                                                  "judge' value (e.g. -2): stored, never scored")
    ignored_columns: list[str] = Field(default_factory=list, description=(
        "a file's header columns that name none of topic, doc, annotator, label and gold, and "
        "were not read (a misspelt 'topics' lands here: without a topic column every row is in "
        "topic \"0\")"))


class JudgmentPublic(BaseModel):
    id: int
    topic: str
    doc: str
    annotator: str
    label: int | None = Field(description=(
        "null: a withdrawal (the judge's file was replaced or removed): this and the earlier "
        "judgments of the task by this annotator no longer count"))
    batch_id: int
    received_at: datetime


class JudgmentsPublic(BaseModel):
    data: list[JudgmentPublic]
    count: int


class GoldReport(BaseModel):
    gold_labels: int = Field(description="tasks whose gold this upload set, 'could not "
                                         "judge' values included")
    gold_could_not_judge: int = Field(description="of gold_labels, those set to a 'could not "
                                                  "judge' value (e.g. -2): stored, never scored")
    new_tasks: int = Field(description="tasks the upload created (no judgment yet)")
    cleared: int = Field(description="mode=replace: tasks that had a gold label and have none "
                                     "now (not in the upload); 0 with merge")
    mode: Literal["replace", "merge"]
