"""Every ORM table, imported once so Alembic and tests see the whole metadata."""

from app.aggregations.tables import (
    Aggregation,
    AggregationAnnotator,
    AggregationArtifact,
    AggregationTask,
)
from app.auth.tables import ApiKey, AuditEvent, IdempotencyRecord, UiSession
from app.collections.tables import Collection
from app.corpus.tables import Run
from app.evaluations.tables import Evaluation
from app.features.tables import FeatureBuild, FeatureSet, TaskFeatures
from app.judgments.tables import Annotator, Batch, Document, Judgment, Task, Topic
from app.sampling.tables import SampledPair, Sampling, SamplingRound

__all__ = [
    "Aggregation", "AggregationAnnotator", "AggregationArtifact", "AggregationTask", "Annotator",
    "Batch", "Collection", "Document", "FeatureBuild", "FeatureSet", "Judgment", "Run", "Task",
    "TaskFeatures", "Topic",
    "ApiKey", "AuditEvent", "IdempotencyRecord", "UiSession",
    "Evaluation",
    "SampledPair", "Sampling", "SamplingRound",
]


def all_table_names() -> list[str]:
    """Every table, children before parents (the order to empty them in)."""
    from app.core.db import Base

    return [t.name for t in reversed(Base.metadata.sorted_tables)]
