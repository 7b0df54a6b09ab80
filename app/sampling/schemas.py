from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from app.core.integers import MAX_INT32, MAX_SEED
from models.sampling.rejudge import RejudgeStrategy
from models.sampling.sampler import SamplingStrategy
from models.sampling.stopping import TARGET_RECALL, StopRule


class StoppingTarget(BaseModel):
    """The query of GET /samplings/{s}/estimates and of the sampling page."""

    target_recall: float = Field(TARGET_RECALL, gt=0, le=1, description=(
        "the recall a topic's judged sample must reach by the stopping rule (thesis chapter 3)"))


class RoundRequest(StoppingTarget):
    """How to draw the next round: the query of POST /samplings/{s}/rounds and the fields of
    the sampling page's form, validated here for both."""

    force: bool = Field(False, description="draw even if the previous round has no judgments "
                        "yet")
    stop: StopRule | None = Field(None, description="skip the topics that have reached "
                                  "target_recall by this rule; their budget goes to the others")


class SamplingCreate(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)  # true is no budget, "5" neither

    runs: list[str] | None = Field(None, min_length=1, description="run names; null: every "
                                   "run of the collection")
    budget_per_round: int = Field(gt=0, le=MAX_INT32, description="(topic, doc) pairs per round")
    seed: int = Field(0, ge=0, le=MAX_INT32)
    strategy: SamplingStrategy = "active"
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
    judged: bool = Field(description="the collection has a judgment for this pair now")


class RoundPublic(BaseModel):
    id: int
    number: int
    requested: int
    drawn: int
    judged: int = Field(description="how many of its pairs have a judgment now")
    labelled: int = Field(description="how many of its pairs have a label now: a judgment "
                          "other than the collection's 'could not judge' values (ignore), "
                          "the pairs the estimates use")
    stop_rule: str | None = Field(None, description="drawn skipping the topics at the target "
                                  "recall by this rule (null: no rule)")
    target_recall: float | None = None
    stopped: list[str] | None = Field(None, description="the topics skipped as at the target")
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


class StoppingCheck(BaseModel):
    found: float = Field(description="r: relevant documents among the judged sample")
    estimate: float = Field(description="R̂: estimated relevant documents in the pool (≥ r)")
    sd: float | None = Field(description="√var(R̂); null when it cannot be estimated")
    target_recall: float
    estimated_recall: float | None = Field(description="r / R̂ (null when R̂ = 0)")
    residual: float = Field(description="R̂ − r: relevant documents estimated still missing")
    optimistic: bool = Field(description="stop: r / target ≥ R̂")
    conservative: bool = Field(description="stop: r / target ≥ R̂ + sd")


class TopicStopping(StoppingCheck):
    topic: str


class StoppingCounts(BaseModel):
    optimistic: int
    conservative: int


class Stopping(BaseModel):
    """Thesis chapter 3's stopping rules at ``target_recall``, per topic and over all topics."""

    target_recall: float
    overall: StoppingCheck | None
    topics_stopping: StoppingCounts = Field(description="topics whose rule says stop")
    topics: list[TopicStopping]


class Estimates(BaseModel):
    sampling_id: int
    strategy: str
    rounds: int
    sampled: int
    judged: int = Field(description="sampled pairs with a label (a judgment other than the "
                        "collection's 'could not judge' values): the estimates' sample; the "
                        "rounds' labelled counts add up to it")
    results: list[EstimateRow]
    count: int
    stopping: Stopping


class NextAnnotator(BaseModel):
    annotator: str
    competence: float
    n_judgments: int = Field(description="labels they have given in the collection: the "
                             "evidence behind their competence")


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
    n_judgments: int = Field(description="labels the task has (answers 'could not judge' not "
                             "included)")
    could_not_judge: int = Field(description="answers 'could not judge' (the collection's "
                                 "ignore values): they count towards max_judgments")
    annotators: list[NextAnnotator]
    assigned: str | None = Field(description="who this task goes to: its best annotator not "
                                 "yet asked with fewer than per_annotator tasks of this list "
                                 "(null: nobody)")


class NextQuery(BaseModel):
    """What GET /aggregations/{a}/next reads (its query) and the dashboard's page sends."""

    n: int = Field(10, ge=1, le=10_000)
    strategy: RejudgeStrategy = "uncertainty"
    max_judgments: int | None = Field(None, ge=1)
    annotators: int = Field(10, ge=0, le=1000)
    min_annotator_judgments: int = Field(0, ge=0)
    per_annotator: int | None = Field(None, ge=1, le=10_000, description=(
        "at most this many of the listed tasks go to one annotator (assigned); none: each task "
        "to its best annotator"))
    seed: int | None = Field(None, ge=0, le=MAX_SEED,
                             description="random_state of the random strategy")
    keep_could_not_judge: bool = Field(False, description=(
        "also propose tasks mostly answered 'could not judge' (left out by default)"))


class NextTasksQuery(NextQuery):
    """The API's query: NextQuery and the answer's format."""

    format: Literal["json", "tsv"] = "json"


class NextTasks(BaseModel):
    aggregation_id: int
    strategy: str
    data: list[NextTask]
    count: int

    model_config = {"extra": "ignore"}


