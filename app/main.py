"""create_app(): the FastAPI application, its routers, error handlers and limits."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI

from app.aggregations.router import collection_router as collection_aggregations_router
from app.aggregations.router import router as aggregations_router
from app.api.health import router as health_router
from app.api.limits import BodySizeLimit
from app.api.openapi import install as install_openapi
from app.auth.keys import KeyVerifier
from app.auth.middleware import AuthMiddleware
from app.auth.router import router as auth_router
from app.auth.ui import router as auth_ui_router
from app.collections.router import router as collections_router
from app.core.config import Settings, get_settings
from app.core.errors import register_error_handlers
from app.corpus.router import router as corpus_router
from app.evaluations.router import collection_router as collection_evaluations_router
from app.evaluations.router import router as evaluations_router
from app.features.router import builds_router as feature_builds_router
from app.features.router import router as features_router
from app.jobs.maintenance import Maintenance
from app.jobs.runner import make_runner
from app.judgments.router import router as judgments_router
from app.sampling.router import aggregation_router as sampling_aggregation_router
from app.sampling.router import collection_router as collection_samplings_router
from app.sampling.router import router as samplings_router
from app.ui import install_dashboard

API_PREFIX = "/api/v1"


def create_app(settings: Settings | None = None) -> FastAPI:
    settings = settings or get_settings()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        runner = make_runner(settings)
        app.state.runner = runner
        runner.start()
        maintenance = Maintenance(settings)
        maintenance.start()
        try:
            yield
        finally:
            maintenance.stop()
            runner.stop()

    app = FastAPI(
        lifespan=lifespan,
        title="crowdqrels",
        version="0.1.0",
        description="Aggregate noisy crowd relevance judgments into qrels.",
        docs_url=None,  # /docs and /redoc: app.ui.docs, with assets served locally
        redoc_url=None,
    )
    app.state.settings = settings
    app.add_middleware(BodySizeLimit, max_bytes=settings.max_body_bytes)
    app.state.key_verifier = KeyVerifier(settings.database_url, cache_s=settings.key_cache_s)
    app.add_middleware(AuthMiddleware, settings=settings, verifier=app.state.key_verifier)
    if settings.cors_origins:  # CORS stays off unless origins are configured
        from fastapi.middleware.cors import CORSMiddleware

        app.add_middleware(CORSMiddleware, allow_origins=settings.cors_origins,
                           allow_methods=["*"], allow_headers=["*"])
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
    app.include_router(sampling_aggregation_router, prefix=API_PREFIX)
    app.include_router(collection_samplings_router, prefix=API_PREFIX)
    app.include_router(samplings_router, prefix=API_PREFIX)
    app.include_router(collection_evaluations_router, prefix=API_PREFIX)
    app.include_router(evaluations_router, prefix=API_PREFIX)
    app.include_router(auth_router, prefix=API_PREFIX)
    app.include_router(auth_ui_router)
    install_dashboard(app)
    install_openapi(app, settings)
    return app
