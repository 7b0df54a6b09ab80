from __future__ import annotations

import json
from datetime import datetime
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from app.aggregations.gold import fit_gold
from app.core.integers import MAX_INT, MAX_SEED
from app.jobs.progress import Progress

if TYPE_CHECKING:
    from app.aggregations.gold import GoldStatus
    from app.aggregations.tables import Aggregation


class ParamsNotJson(ValueError):
    """A fit's params text that is not a JSON object; ``line``: where the JSON broke."""

    def __init__(self, message: str, line: int | None = None) -> None:
        super().__init__(message)
        self.line = line


def parse_params(text: str | None) -> dict[str, Any]:
    """A fit's params written as JSON text (the dashboard's fit form; a command's ``--params``):
    a JSON object, empty text ``{}``; else ParamsNotJson saying what is wrong. Their values are
    checked by AggregationCreate and the method, as for the API's body."""
    text = (text or "").strip() or "{}"
    try:
        params = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ParamsNotJson(f"not JSON ({exc.msg} at line {exc.lineno}, column {exc.colno})",
                            exc.lineno) from None
    except RecursionError:
        raise ParamsNotJson("not JSON (nested too deeply)") from None
    if not isinstance(params, dict):
        raise ParamsNotJson("a JSON object, e.g. {\"n_restarts\": 10}")
    return params


class AggregationCreate(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    method: str = Field(description="mv | mace | ds | magp | gpmv | lk | ibcc | ebcc | ordinal-ds "
                                    "| ordinal-gp")
    params: dict[str, Any] = Field(default_factory=dict)
    graded: bool = Field(default=False, description="fit the graded labels instead of binary")
    seed: int | None = Field(default=None, ge=0, le=MAX_SEED,
                             description="random_state of methods that have one, and the seed of "
                                         "the held-out folds of a fit with use_gold (without "
                                         "one: the method's random_state, else 0)")
    warm_start: int | None = Field(
        default=None, ge=1, le=MAX_INT,
        description="the id of an earlier succeeded fit of this collection, method and scale "
                    "(ds, mace: the methods whose model refits from an init) to start from: "
                    "its stored parameters (per-annotator rows, class prior) are the first "
                    "step, a new annotator gets the mean row; params may differ. Checked "
                    "against a cold fit once the judgments have grown by 10 % since the last "
                    "check (info.cold_checked_at)")


class GoldLeftOut(BaseModel):
    """Gold tasks (labelled on the scale) that the fit did not score, by reason."""

    not_judged: int = Field(description="no judgment at all up to the fit's watermark (e.g. "
                                        "gold uploaded for pairs nobody judged)")
    only_could_not_judge: int = Field(description="judged, but every judgment up to the "
                                                  "watermark was a 'could not judge' value "
                                                  "(e.g. -2): no usable judgment, no label")


class FitGold(BaseModel):
    """Which gold a succeeded fit was scored against, and whether that is still the gold."""

    labelled: int | None = Field(description="tasks with a gold label on the scale when the "
                                             "fit ran (null: a fit stored before this was "
                                             "recorded)")
    scored: int | None = Field(description="of those, the ones the evaluation scored "
                                           "(evaluation.n_gold): labelled = scored + left_out")
    left_out: GoldLeftOut | None
    could_not_judge: int | None = Field(description="tasks whose gold was a 'could not judge' "
                                                    "value (e.g. -2, broken link): never scored")
    digest: str | None = Field(description="SHA-256 of the gold labels of the fit's tasks that "
                                           "it was scored against")
    current: bool | None = Field(description="true: the gold of the fit's tasks is unchanged "
                                             "since it was scored; false: it changed; null: "
                                             "unknown (a fit with gold clamped, stored before "
                                             "this was recorded)")
    rescorable: bool = Field(description="whether re-scoring against another gold is honest: "
                                         "false for a fit that clamped gold (use_gold), whose "
                                         "labels on gold tasks are the gold it was given")
    current_evaluation: dict[str, Any] | None = Field(
        description="when current is false and the fit is rescorable: its stored posteriors "
                    "scored against the current gold (the fields of evaluation); else null")
    note: str


class AggregationPublic(BaseModel):
    id: int
    collection_id: int
    method: str
    params: dict[str, Any]
    graded: bool
    seed: int | None = Field(description="the seed asked for (null: none): the method's "
                             "random_state when it has one, and the held-out folds'")
    status: str
    progress: Progress
    watermark: int
    n_judgments: int | None
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    timings: dict[str, float] | None
    objective_history: list[float] | None
    evaluation: dict[str, Any] | None
    info: dict[str, Any] | None
    classes: list[int] | None
    error: str | None
    fallback: str | None = None
    warm_start: int | None = Field(
        default=None, description="the fit this one started from (warm start); null: a cold "
        "fit")
    cold_checked: bool | None = Field(
        default=None, description="a succeeded warm-started fit: whether it also ran the cold "
        "fit (the judgments had grown by 10 % since the last check) and kept the better one "
        "(info.start says which); null otherwise")
    gold_current: bool | None = Field(
        default=None, description="succeeded fits: whether `evaluation` (and the annotators' "
        "gold_accuracy) is against the collection's current gold (gold.current); null otherwise")
    gold: FitGold | None = Field(default=None, description="succeeded fits: the gold the "
                                 "evaluation was scored against and its state now")


class AggregationsPublic(BaseModel):
    data: list[AggregationPublic]
    count: int


class AnnotatorResult(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    annotator: str
    kind: str = Field(description="crowd, llm or expert (a judge file's kind)")
    competence: float | None
    noise_variance: float | None
    bias: float | None
    n_judgments: int
    n_gold: int
    gold_accuracy: float | None
    extra: dict[str, float | None] | None


class AnnotatorResults(BaseModel):
    data: list[AnnotatorResult]
    count: int


class TaskResult(BaseModel):
    topic: str
    doc: str
    label: int
    p_relevant: float
    proba: list[float]
    uncertainty: float
    posterior_mean: float | None
    posterior_variance: float | None
    difficulty: float | None
    bias: float | None
    gold: int | None
    extra: dict[str, float | None] | None
    task_id: int | None = None  # links to /aggregations/{a}/tasks/{task_id}


class TaskResults(BaseModel):
    data: list[TaskResult]
    count: int


class AnnotatorAcrossAggregations(BaseModel):
    aggregation_id: int
    method: str
    created_at: datetime
    competence: float | None
    noise_variance: float | None
    bias: float | None
    spread: float | None = None  # ordinal fits: the annotator's noise in grade units
    graded: bool = False
    n_judgments: int
    n_gold: int
    gold_accuracy: float | None = Field(description=(
        "agreement with gold on the fit's labels: the exact grade for a graded fit, relevant or "
        "not for a binary one"))
    gold_relevance_accuracy: float | None = Field(default=None, description=(
        "agreement with gold on relevant or not (grade >= relevant_from on both sides), for "
        "every fit: comparable across binary and graded fits (none for a graded fit stored "
        "before it was kept)"))


class AnnotatorHistory(BaseModel):
    annotator: str
    kind: str = Field(description="crowd, llm or expert (a judge file's kind)")
    judgments: int
    data: list[AnnotatorAcrossAggregations]


class ComparisonRow(BaseModel):
    aggregation_id: int
    method: str
    params: dict[str, Any]
    graded: bool
    n_gold: int | None
    accuracy: float | None
    precision: float | None
    recall: float | None
    f1: float | None
    log_loss: float | None
    ece: float | None = Field(default=None, description="expected calibration error: 10 "
                              "equal-width bins of P(relevant) (graded: of the top grade's "
                              "probability), |mean P − share right| weighted by bin size")
    brier: float | None = Field(default=None, description="Brier score (graded: multi-class)")
    mae: float | None = None
    kappa: float | None = None  # quadratic-weighted Cohen's κ, graded fits
    binary_accuracy: float | None = None  # graded fits: P(grade >= relevant_from) >= 0.5
    ranked_by: str = "accuracy"  # "kappa" for graded fits
    fit_seconds: float | None
    gold_current: bool | None = Field(default=None, description="the fit's gold.current")
    rescored: bool = Field(default=False, description="the gold of the fit's tasks changed "
                           "since it was scored: these figures re-score its stored posteriors "
                           "against the current gold (the fit-time ones: GET /aggregations/{a})")
    stale: bool = Field(default=False, description="these figures may not be the current "
                        "gold's: a fit that clamped an earlier gold (or one stored before gold "
                        "was recorded); ranked after every row scored against the current gold")


class Comparison(BaseModel):
    data: list[ComparisonRow]
    count: int


class PredictRequest(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    features: list[list[float]] = Field(min_length=1, description="one vector per new task")
    topics: list[str] | None = Field(
        default=None,
        description="each new task's topic, in the order of `features`. Used by a fit with "
                    "`class_prior_by: \"topic\"` (one offset per topic beside the features); a "
                    "topic the fit never saw, or none given, gets the prior's offset 0 and its "
                    "variance. Ignored by a fit without topic offsets.")


class PredictResponse(BaseModel):
    p_relevant: list[float]
    posterior_mean: list[float]
    posterior_variance: list[float]
    topic_known: list[bool] | None = Field(
        default=None,
        description="per task, whether the fit had an offset for its topic; null for a fit "
                    "without topic offsets")


def public(aggregation: Aggregation, gold: GoldStatus | None = None) -> AggregationPublic:
    """A fit as the API shows it; ``gold``: its status against the current gold
    (``gold.check_fits``), without which ``gold`` and ``gold_current`` are null."""
    info = aggregation.info or {}
    return AggregationPublic(
        id=aggregation.id, collection_id=aggregation.collection_id, method=aggregation.method,
        params=aggregation.params, graded=aggregation.graded, seed=aggregation.seed,
        status=aggregation.status,
        progress=Progress.of(aggregation),
        watermark=aggregation.watermark, n_judgments=aggregation.n_judgments,
        created_at=aggregation.created_at, started_at=aggregation.started_at,
        finished_at=aggregation.finished_at, timings=aggregation.timings,
        objective_history=aggregation.objective_history, evaluation=aggregation.evaluation,
        # the gold record is shown as ``gold``, with its state now
        info=None if aggregation.info is None else {k: v for k, v in info.items() if k != "gold"},
        classes=aggregation.classes, error=aggregation.error, fallback=info.get("fallback"),
        warm_start=aggregation.warm_start_id,
        cold_checked=(info.get("cold_checked") if aggregation.warm_start_id is not None
                      and aggregation.status == "succeeded" else None),
        gold_current=None if gold is None or aggregation.status != "succeeded" else gold.current,
        gold=fit_gold(aggregation, gold),
    )
