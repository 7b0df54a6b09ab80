"""One fit per aggregation row, and its persisted results per task and per annotator."""

from __future__ import annotations

from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    String,
)
from sqlalchemy.orm import Mapped, mapped_column

from app.core.db import Base, BigId
from app.jobs.tables import FINISHED, STATUSES, JobColumns

__all__ = ["FINISHED", "STATUSES", "Aggregation", "AggregationAnnotator", "AggregationArtifact",
           "AggregationTask"]

class Aggregation(JobColumns, Base):
    __tablename__ = "aggregations"
    __table_args__ = (Index("ix_aggregations_collection_id", "collection_id"),)

    collection_id: Mapped[int] = mapped_column(ForeignKey("collections.id", ondelete="CASCADE"))
    method: Mapped[str] = mapped_column(String(20))
    params: Mapped[dict[str, Any]] = mapped_column(JSON)
    graded: Mapped[bool] = mapped_column(default=False)  # fit on graded labels, not binarised
    # The seed asked for: the method's random_state when it has one, and the held-out folds'.
    seed: Mapped[int | None] = mapped_column(BigInteger)
    # The consistent snapshot: the fit reads judgments with id <= watermark.
    watermark: Mapped[int] = mapped_column(BigId)
    n_judgments: Mapped[int | None] = mapped_column(Integer)  # judgments the model used
    objective_history: Mapped[list[float] | None] = mapped_column(JSON)
    evaluation: Mapped[dict[str, Any] | None] = mapped_column(JSON)  # against gold
    info: Mapped[dict[str, Any] | None] = mapped_column(JSON)  # e.g. {"fallback": "lk"}
    classes: Mapped[list[int] | None] = mapped_column(JSON)  # label values of the fit
    # The fit this one started from (its stored parameters: a warm start); null: a cold fit.
    warm_start_id: Mapped[int | None] = mapped_column(
        BigId, ForeignKey("aggregations.id", ondelete="SET NULL"))

    @property
    def uses_tensorflow(self) -> bool:
        """A GP fit: its job imports TensorFlow (the in-process runner forks it from the job
        starter that has, app.jobs.starter)."""
        from models.registry import GP_METHODS

        return self.method in GP_METHODS


class AggregationTask(Base):
    # Indexes (aggregation_id, difficulty | uncertainty DESC NULLS LAST, task_id) are created by
    # migration 0002: their NULLS order is dialect-specific.
    __tablename__ = "aggregation_tasks"

    aggregation_id: Mapped[int] = mapped_column(
        ForeignKey("aggregations.id", ondelete="CASCADE"), primary_key=True)
    task_id: Mapped[int] = mapped_column(
        ForeignKey("tasks.id", ondelete="CASCADE"), primary_key=True)
    label: Mapped[int] = mapped_column(Integer)  # the most probable label value
    p_relevant: Mapped[float] = mapped_column(Float)
    proba: Mapped[list[float]] = mapped_column(JSON)  # over the aggregation's classes
    uncertainty: Mapped[float] = mapped_column(Float)  # entropy of proba, in nats
    posterior_mean: Mapped[float | None] = mapped_column(Float)
    posterior_variance: Mapped[float | None] = mapped_column(Float)
    difficulty: Mapped[float | None] = mapped_column(Float)
    bias: Mapped[float | None] = mapped_column(Float)
    extra: Mapped[dict[str, float] | None] = mapped_column(JSON)


class AggregationAnnotator(Base):
    __tablename__ = "aggregation_annotators"
    # Index (aggregation_id, competence DESC NULLS LAST, annotator_id): migration 0002.
    __table_args__ = (Index("ix_aggregation_annotators_annotator_id", "annotator_id"),)

    aggregation_id: Mapped[int] = mapped_column(
        ForeignKey("aggregations.id", ondelete="CASCADE"), primary_key=True)
    annotator_id: Mapped[int] = mapped_column(
        ForeignKey("annotators.id", ondelete="CASCADE"), primary_key=True)
    competence: Mapped[float | None] = mapped_column(Float)
    noise_variance: Mapped[float | None] = mapped_column(Float)
    bias: Mapped[float | None] = mapped_column(Float)
    n_judgments: Mapped[int] = mapped_column(Integer)
    n_gold: Mapped[int] = mapped_column(Integer)  # judgments on tasks with gold
    gold_accuracy: Mapped[float | None] = mapped_column(Float)  # agreement with gold on those
    extra: Mapped[dict[str, float] | None] = mapped_column(JSON)


class AggregationArtifact(Base):
    """Numpy arrays (npz bytes) a fitted model leaves for later use, one per kind: a GP fit's
    predictor (``models.gp.predictor.KIND``, for predict) and the joint posterior of its tasks
    (``models.evaluation.joint.KIND``, for evaluation draws)."""

    __tablename__ = "aggregation_artifacts"

    aggregation_id: Mapped[int] = mapped_column(
        ForeignKey("aggregations.id", ondelete="CASCADE"), primary_key=True)
    kind: Mapped[str] = mapped_column(String(50), primary_key=True)
    payload: Mapped[bytes] = mapped_column(LargeBinary)
