"""Every ORM table, imported once so Alembic and tests see the whole metadata."""

from app.aggregations.tables import (
    Aggregation,
    AggregationAnnotator,
    AggregationArtifact,
    AggregationTask,
)
from app.collections.tables import Collection
from app.corpus.tables import Run
from app.features.tables import FeatureBuild, FeatureSet, TaskFeatures
from app.judgments.tables import Annotator, Batch, Document, Judgment, Task, Topic

__all__ = [
    "Aggregation", "AggregationAnnotator", "AggregationArtifact", "AggregationTask", "Annotator",
    "Batch", "Collection", "Document", "FeatureBuild", "FeatureSet", "Judgment", "Run", "Task",
    "TaskFeatures", "Topic",
]


def all_table_names() -> list[str]:
    """Every table, children before parents (the order to empty them in)."""
    from app.core.db import Base

    return [t.name for t in reversed(Base.metadata.sorted_tables)]
