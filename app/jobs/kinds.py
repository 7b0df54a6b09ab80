"""Every kind of job, registered once: the table that tracks it and the function that runs it.

The runners (inline, Celery) know job kinds, never domains: they look a kind up here and import
its table or its body lazily by dotted path, so ``app.jobs`` imports no domain package and the
API process never imports a job body (nor, through it, the models or TensorFlow). A domain adds
a kind by adding one line below; its body is ``run(database_url, job_id) -> final status`` and
normally wraps ``app.jobs.lifecycle.run_tracked``.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class JobKind:
    name: str
    table: str  # "package.module:Class", a table with app.jobs.tables.JobColumns
    body: str  # "package.module:function", run(database_url, job_id) -> status

    def table_class(self) -> Any:
        return _load(self.table)

    def run(self, database_url: str, job_id: int) -> str:
        return str(_load(self.body)(database_url, job_id))


KINDS: dict[str, JobKind] = {kind.name: kind for kind in (
    JobKind("fit", "app.aggregations.tables:Aggregation", "app.aggregations.job:run_fit"),
    JobKind("features", "app.features.tables:FeatureBuild", "app.features.job:run_feature_build"),
    JobKind("evaluation", "app.evaluations.tables:Evaluation",
            "app.evaluations.job:run_evaluation"),
)}


def get_kind(name: str) -> JobKind:
    try:
        return KINDS[name]
    except KeyError:
        raise ValueError(f"unknown job kind {name!r}; known: {', '.join(KINDS)}") from None


def kind_of_table(table: Any) -> str:
    """The kind whose jobs ``table`` tracks (its table name for a table no kind names)."""
    path = f"{table.__module__}:{table.__qualname__}"
    return next((kind.name for kind in KINDS.values() if kind.table == path),
                str(getattr(table, "__tablename__", "unknown")))


def _load(path: str) -> Any:
    module, _, attribute = path.partition(":")
    return getattr(importlib.import_module(module), attribute)
