"""Every ORM table, imported once so Alembic and tests see the whole metadata."""

from app.collections.tables import Collection
from app.judgments.tables import Annotator, Batch, Document, Judgment, Task, Topic

__all__ = ["Annotator", "Batch", "Collection", "Document", "Judgment", "Task", "Topic"]


def all_table_names() -> list[str]:
    """Every table, children before parents (the order to empty them in)."""
    from app.core.db import Base

    return [t.name for t in reversed(Base.metadata.sorted_tables)]
