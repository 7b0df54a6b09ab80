"""GET /metrics: the Prometheus exposition (app.core.metrics), with the jobs counted in the
database at scrape time. Who may read it is the application's choice (app.main): an admin key
with access control on, unless CROWDQRELS_METRICS_PUBLIC=true."""

from __future__ import annotations

from typing import Any

import anyio
from fastapi import APIRouter, Request, Response

from app.core.config import Settings
from app.core.metrics import CONTENT_TYPE_LATEST, ScrapeTimeGauges, exposition, shared
from app.jobs.metrics import job_counts


def multiprocess_dir(settings: Settings) -> str | None:
    """Where this process's metrics are shared (None: they live in this process only)."""
    return settings.metrics_dir if shared() else None


def metrics_router(dependencies: list[Any]) -> APIRouter:
    router = APIRouter(tags=["metrics"])

    @router.get("/metrics", dependencies=dependencies, include_in_schema=False)
    async def metrics(request: Request) -> Response:
        settings: Settings = request.app.state.settings
        jobs = ScrapeTimeGauges(lambda: job_counts(settings.database_url))
        body = await anyio.to_thread.run_sync(exposition, multiprocess_dir(settings), jobs)
        return Response(body, media_type=CONTENT_TYPE_LATEST)

    return router
