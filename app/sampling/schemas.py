from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from models.sampling.sampler import STRATEGIES

Strategy = Literal["active", "stratified", "uniform", "depth", "mtf"]
assert set(STRATEGIES) == {"active", "stratified", "uniform", "depth", "mtf"}


MAX_INT32 = 2**31 - 1  # the columns that store these are INTEGER


class SamplingCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    runs: list[str] | None = Field(None, description="run names; null: every run of the "
                                   "collection")
    budget_per_round: int = Field(gt=0, le=MAX_INT32, description="(topic, doc) pairs per round")
    seed: int = Field(0, ge=0, le=MAX_INT32)
    strategy: Strategy = "active"
    method: Literal["mv", "ds", "mace"] = Field("mv", description="aggregation of the crowd "
                                                "labels the estimates use")
    depth: int | None = Field(None, gt=0, le=MAX_INT32,
                              description="pool depth per run (null: all)")


class SamplingPublic(BaseModel):
    id: int
    collection_id: int
    strategy: str
    method: str
    runs: list[str]
    depth: int | None
    budget_per_round: int
    seed: int
    pool_size: int
    n_rounds: int
    n_sampled: int
    prejudged: int  # pooled pairs judged before the sampling (its round 0, π = 1)
    created_at: datetime | None


class SamplingsPublic(BaseModel):
    data: list[SamplingPublic]
    count: int


class SampledPairPublic(BaseModel):
    topic: str
    doc: str
    selection: float
    inclusion: float
    source_run: str | None


class RoundPublic(BaseModel):
    id: int
    number: int
    requested: int
    drawn: int
    short: bool
    forced: bool
    note: str | None
    created_at: datetime | None
    pairs: list[SampledPairPublic]


class RoundsPublic(BaseModel):
    data: list[RoundPublic]
    count: int


class EstimateRow(BaseModel):
    run: str | None
    topic: str
    measure: str
    value: float | None
    variance: float | None
    low: float | None  # value − 1.96 √variance
    high: float | None


class Estimates(BaseModel):
    sampling_id: int
    strategy: str
    rounds: int
    sampled: int
    judged: int
    results: list[EstimateRow]
    count: int


class NextAnnotator(BaseModel):
    annotator: str
    competence: float


class NextTask(BaseModel):
    task_id: int
    topic: str
    doc: str
    label: int  # the fit's label (grade) now
    p_relevant: float
    proba: list[float]
    uncertainty: float
    expected_gain: float
    p_label_change: float
    expected_change: float
    n_judgments: int
    annotators: list[NextAnnotator]


class NextTasks(BaseModel):
    aggregation_id: int
    strategy: str
    data: list[NextTask]
    count: int

    model_config = {"extra": "ignore"}


