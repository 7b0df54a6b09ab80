from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from app.core.integers import MAX_INT32, RowId
from app.jobs.progress import Progress
from models.evaluation.measures import DEFAULT_MEASURES

if TYPE_CHECKING:
    from app.evaluations.tables import Evaluation

# An aggregation id or "gold"; union / intersection of two or more of them.
SourceRef = RowId | Literal["gold"]
IntervalKind = Literal["posterior", "ppi"]
# How the draws of the qrels are made (``models.evaluation.parameters``).
DrawsKind = Literal["parameters", "labels"]
Source = SourceRef | dict[Literal["union", "intersection"], list[SourceRef]]


class EvaluationCreate(BaseModel):
    # strict: true is no aggregation id, "5" no number of draws (as for keys)
    model_config = ConfigDict(extra="forbid", strict=True)

    aggregation: Source = Field(description='an aggregation id, "gold", or {"union": [...]} / '
                                            '{"intersection": [...]} of two or more of them')
    runs: list[str] | None = Field(default=None, min_length=1,
                                   description="run names; null: every run")
    measures: list[str] = Field(default_factory=lambda: list(DEFAULT_MEASURES), min_length=1,
                                max_length=50, description="ir_measures names, e.g. P@10, AP")
    samples: int = Field(default=1000, ge=0, le=10_000, description="draws of the qrels")
    seed: int = Field(default=0, ge=0, le=MAX_INT32)
    interval: IntervalKind = Field(
        default="posterior",
        description='"posterior": the 95 % interval of the draws; "ppi": prediction-powered '
                    "intervals of the means over topics from the collection's gold sample "
                    "(needs gold on judged pairs of both classes, and samples > 0)")
    draws: DrawsKind | None = Field(
        default=None,
        description='"parameters": each draw first draws the annotators\' parameters from their '
                    "posterior, then every task's label given them and its judgments, so one "
                    'annotator\'s errors move together (fits of ds, ibcc, ebcc, mace, '
                    'ordinal-ds); "labels": every task\'s label independently from its stored '
                    'posterior; null: "parameters" where the qrels are one such fit and samples '
                    '> 0, else "labels"')

    @model_validator(mode="after")
    def _ppi_draws(self) -> EvaluationCreate:
        if self.interval == "ppi" and self.samples == 0:
            raise ValueError("a prediction-powered interval needs draws: samples > 0")
        if self.draws == "parameters" and self.samples == 0:
            raise ValueError("parameter draws need draws: samples > 0")
        return self


class EvaluationPublic(BaseModel):
    id: int
    collection_id: int
    aggregation: Any
    runs: list[str]
    measures: list[str]
    samples: int
    seed: int
    interval: str
    # "parameters" or "labels" (how the draws are made; "labels" for evaluations made before)
    draws: str
    status: str
    progress: Progress
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    timings: dict[str, float] | None
    error: str | None
    report: dict[str, Any] | None
    # When succeeded: the means over topics ("all"), P(a beats b) per pair, the rankings.
    results: list[dict[str, Any]] | None = None
    pairs: list[dict[str, Any]] | None = None
    rankings: list[dict[str, Any]] | None = None


class EvaluationsPublic(BaseModel):
    data: list[EvaluationPublic]
    count: int


QrelsFormat = Literal["trec", "tsv", "json"]
MeasuresFormat = Literal["json", "tsv", "trec"]


def public(evaluation: Evaluation, *,
           results: dict[str, Any] | None = None) -> EvaluationPublic:
    """An evaluation as the API shows it; ``results``: its summary (``service.summary``), shown
    by GET /evaluations/{e} only."""
    return EvaluationPublic(
        id=evaluation.id, collection_id=evaluation.collection_id, aggregation=evaluation.source,
        runs=evaluation.runs, measures=evaluation.measures, samples=evaluation.samples,
        seed=evaluation.seed, interval=evaluation.interval or "posterior",
        draws=evaluation.draws or "labels",
        status=evaluation.status,
        progress=Progress.of(evaluation),
        created_at=evaluation.created_at, started_at=evaluation.started_at,
        finished_at=evaluation.finished_at, timings=evaluation.timings, error=evaluation.error,
        report=evaluation.report, **(results or {}))
