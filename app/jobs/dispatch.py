"""Which table tracks a kind of job, and which function runs it (imported lazily: the API
process only needs the tables)."""

from __future__ import annotations

from typing import Any


def job_table(kind: str) -> Any:
    if kind == "fit":
        from app.aggregations.tables import Aggregation

        return Aggregation
    if kind == "features":
        from app.features.tables import FeatureBuild

        return FeatureBuild
    raise ValueError(f"unknown job kind {kind!r}")


def run_job(kind: str, database_url: str, job_id: int) -> str:
    if kind == "fit":
        from app.jobs.fit import run_fit

        return run_fit(database_url, job_id)
    if kind == "features":
        from app.jobs.build_features import run_feature_build

        return run_feature_build(database_url, job_id)
    raise ValueError(f"unknown job kind {kind!r}")
