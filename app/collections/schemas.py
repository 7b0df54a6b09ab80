from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from app.core.integers import Int32


class CollectionCreate(BaseModel):
    # Python's re for the name's look-ahead (not all digits), which the schema states too.
    model_config = ConfigDict(extra="forbid", strict=True, regex_engine="python-re")

    name: str = Field(min_length=1, max_length=200,
                      pattern=r"^(?![0-9]+$)[A-Za-z0-9][A-Za-z0-9._-]*$",
                      description="unique; letters, digits, '.', '_', '-'; not all digits")
    description: str | None = None
    # scale values are stored as INTEGER (judgments' labels, gold, relevant_from): 32-bit
    labels: list[Int32] = Field(default=[0, 1], min_length=2, description="the label scale")
    relevant_from: Int32 = Field(default=1, description="labels >= this count as relevant")
    ignore: list[Int32] = Field(default=[], description="'could not judge' values, e.g. -2")

    @field_validator("name")
    @classmethod
    def _not_numeric(cls, value: str) -> str:
        # A path segment {c} is an id when it is all digits, so names cannot be.
        if value.isdigit():
            raise ValueError("a collection name cannot be all digits (it would read as an id)")
        return value

    @model_validator(mode="after")
    def _consistent_scale(self) -> CollectionCreate:
        if len(set(self.labels)) != len(self.labels):
            raise ValueError("labels must be distinct")
        self.labels = sorted(self.labels)
        if set(self.ignore) & set(self.labels):
            raise ValueError("a value cannot be both a label and an ignore value")
        if not self.labels[0] < self.relevant_from <= self.labels[-1]:
            raise ValueError(
                "relevant_from must be above the lowest label and at most the highest, "
                "so that both relevant and non-relevant labels exist"
            )
        self.ignore = sorted(set(self.ignore))
        return self


class DistributionSummary(BaseModel):
    """Judgments per task or per annotator: summary and a histogram {count: how many}."""

    min: int
    max: int
    mean: float
    median: float
    histogram: dict[int, int]


class CollectionCounts(BaseModel):
    topics: int
    documents: int
    tasks: int
    annotators: int
    judgments: int
    tasks_with_gold: int  # gold on the label scale
    tasks_with_unjudgeable_gold: int  # gold that is an ignore value (e.g. -2, broken link)


class CollectionPublic(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    id: int
    name: str
    description: str | None
    labels: list[int]
    relevant_from: int
    ignore: list[int]
    created_at: datetime
    counts: CollectionCounts | None = None


class CollectionsPublic(BaseModel):
    data: list[CollectionPublic]
    count: int


class GoldLeftOut(BaseModel):
    not_judged: int = Field(description="labelled gold tasks nobody has judged")
    only_could_not_judge: int = Field(description="labelled gold tasks whose every judgment is "
                                                  "a 'could not judge' value: no fit labels them")


class GoldBreakdown(BaseModel):
    """The collection's gold, reconciled: total = labelled + could_not_judge (what gold uploads
    count), labelled = scorable + left_out (what a fit on every judgment scores)."""

    total: int = Field(description="tasks with a gold value, 'could not judge' ones included")
    labelled: int = Field(description="gold on the label scale (counts.tasks_with_gold)")
    could_not_judge: int = Field(description="gold that is an ignore value, e.g. -2 broken link "
                                             "(counts.tasks_with_unjudgeable_gold): never scored")
    scorable: int = Field(description="labelled gold tasks with a usable judgment: what a fit "
                                      "on every judgment scores (its evaluation.n_gold)")
    left_out: GoldLeftOut
    without_gold: int = Field(description="tasks with no gold value")
    by_value: dict[int, int] = Field(description="tasks per gold value")


class CollectionStats(BaseModel):
    counts: CollectionCounts
    judgments_per_task: DistributionSummary | None
    judgments_per_annotator: DistributionSummary | None
    label_distribution: dict[int, int]
    gold: GoldBreakdown | None = None
