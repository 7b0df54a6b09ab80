"""create_app(): the FastAPI application, its routers, error handlers and limits."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI

from app.aggregations.router import collection_router as collection_aggregations_router
from app.aggregations.router import router as aggregations_router
from app.api.health import router as health_router
from app.api.limits import BodySizeLimit
from app.collections.router import router as collections_router
from app.core.config import Settings, get_settings
from app.core.errors import register_error_handlers
from app.corpus.router import router as corpus_router
from app.features.router import builds_router as feature_builds_router
from app.features.router import router as features_router
from app.jobs.runner import make_runner
from app.judgments.router import router as judgments_router

API_PREFIX = "/api/v1"


def create_app(settings: Settings | None = None) -> FastAPI:
    settings = settings or get_settings()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        runner = make_runner(settings)
        app.state.runner = runner
        runner.start()
        try:
            yield
        finally:
            runner.stop()

    app = FastAPI(
        lifespan=lifespan,
        title="crowdqrels",
        version="0.1.0",
        description="Aggregate noisy crowd relevance judgments into qrels.",
    )
    app.state.settings = settings
    app.add_middleware(BodySizeLimit, max_bytes=settings.max_body_bytes)
    register_error_handlers(app)
    app.include_router(health_router)
    app.include_router(health_router, prefix=API_PREFIX)
    app.include_router(collections_router, prefix=API_PREFIX)
    app.include_router(judgments_router, prefix=API_PREFIX)
    app.include_router(features_router, prefix=API_PREFIX)
    app.include_router(feature_builds_router, prefix=API_PREFIX)
    app.include_router(corpus_router, prefix=API_PREFIX)
    app.include_router(collection_aggregations_router, prefix=API_PREFIX)
    app.include_router(aggregations_router, prefix=API_PREFIX)
    return app
