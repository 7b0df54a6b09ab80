"""create_app(): the FastAPI application, its routers, error handlers and limits."""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager

import anyio
from fastapi import FastAPI

from app.aggregations.listing import ListingCache
from app.aggregations.router import collection_router as collection_aggregations_router
from app.aggregations.router import router as aggregations_router
from app.api.health import router as health_router
from app.api.limits import BodySizeLimit
from app.api.metrics import metrics_router
from app.api.nul import RefuseNul
from app.api.observe import ObserveRequests
from app.api.openapi import install as install_openapi
from app.auth.deps import require_scope
from app.auth.idempotency import purge_expired
from app.auth.keys import KeyVerifier
from app.auth.middleware import AuthMiddleware
from app.auth.router import router as auth_router
from app.auth.ui import router as auth_ui_router
from app.collections.router import router as collections_router
from app.core.collector import release, settle
from app.core.config import Settings, get_settings
from app.core.errors import register_error_handlers
from app.corpus.router import router as corpus_router
from app.evaluations.router import collection_router as collection_evaluations_router
from app.evaluations.router import router as evaluations_router
from app.features.router import builds_router as feature_builds_router
from app.features.router import router as features_router
from app.jobs.maintenance import Maintenance
from app.jobs.runner import make_runner
from app.judges.router import router as judges_router
from app.judgments.router import router as judgments_router
from app.sampling.inputs import NextInputs
from app.sampling.router import aggregation_router as sampling_aggregation_router
from app.sampling.router import collection_router as collection_samplings_router
from app.sampling.router import router as samplings_router
from app.ui import install_dashboard
from app.ui.caching import NoStorePages, StaticCaching
from app.ui.pages.aggregations import fit_page
from app.ui.pages.samplings import sampling_page_context
from app.ui.prefill import DashboardPrefill

API_PREFIX = "/api/v1"


def build_routes(app: FastAPI) -> None:
    """Build every route now rather than on the first request that reaches it. FastAPI 0.16x
    builds an included router's routes (each endpoint's dependency graph and Pydantic models)
    the first time a request is matched against them: 150-500 ms added to the first request of
    a fresh process that walks past the API's routers (a dashboard page, measured). Matching a
    path no route has walks them all once."""
    scope = {"type": "http", "path": "/\x00", "method": "GET", "root_path": "",
             "headers": [], "query_string": b""}
    for route in app.router.routes:
        route.matches(scope)


def create_app(settings: Settings | None = None) -> FastAPI:
    settings = settings or get_settings()
    app = FastAPI(
        lifespan=_lifespan(settings),
        title="crowdqrels",
        version="0.1.0",
        description="Aggregate noisy crowd relevance judgments into qrels.",
        docs_url=None,  # /docs and /redoc: app.ui.docs, with assets served locally
        redoc_url=None,
    )
    app.state.settings = settings
    app.state.listing_cache = ListingCache()
    app.state.next_inputs = NextInputs()
    app.state.prefill = None  # set while the lifespan runs
    _add_middleware(app, settings)
    register_error_handlers(app)
    _include_routers(app, settings)
    install_openapi(app, settings)
    install_dashboard(app)  # after the API's error handlers: pages get theirs as HTML
    return app


def _lifespan(settings: Settings) -> Callable[[FastAPI], AbstractAsyncContextManager[None]]:
    """What runs beside the application: the job runner, the maintenance sweeps and the
    dashboard prefill, started before the first request and stopped after the last."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        if settings.warm_startup_s > 0:  # else FastAPI builds them as requests reach them
            build_routes(app)
        runner = make_runner(settings)
        app.state.runner = runner
        runner.start()
        maintenance = Maintenance(settings, sweeps=[functools.partial(
            purge_expired, retention_h=settings.idempotency_retention_h)])
        maintenance.start()
        prefill = app.state.prefill = DashboardPrefill(
            settings.database_url, app.state.listing_cache, fit_page,
            inputs=app.state.next_inputs, sampling_page=sampling_page_context)
        prefill.start()
        if settings.warm_startup_s > 0:  # ready once the recent pages are (bounded)
            await anyio.to_thread.run_sync(prefill.wait_idle, settings.warm_startup_s)
        settle()  # what start-up built lives as long as the process: out of the GC's full passes
        try:
            yield
        finally:
            prefill.stop()
            app.state.prefill = None
            maintenance.stop()
            runner.stop()
            release()  # frozen objects (settle) go back to the collector with the application

    return lifespan


def _add_middleware(app: FastAPI, settings: Settings) -> None:
    """The middleware, innermost first (each one added wraps those before it)."""
    app.add_middleware(RefuseNul)  # inside BodySizeLimit, which counts the body it reads
    app.add_middleware(BodySizeLimit, max_bytes=settings.max_body_bytes)
    # How browsers may keep the dashboard's pages and static files (app.ui.caching): every
    # answer of the routes and their error handlers passes through these.
    app.add_middleware(StaticCaching)
    if settings.auth_required:
        app.add_middleware(NoStorePages)
    app.state.key_verifier = KeyVerifier(settings.database_url, cache_s=settings.key_cache_s)
    app.add_middleware(AuthMiddleware, settings=settings, verifier=app.state.key_verifier)
    if settings.cors_origins:  # CORS stays off unless origins are configured
        from fastapi.middleware.cors import CORSMiddleware

        app.add_middleware(CORSMiddleware, allow_origins=settings.cors_origins,
                           allow_methods=["*"], allow_headers=["*"])
    # Outermost: every answer is timed, counted and logged with its request id, 401s included.
    app.add_middleware(ObserveRequests)


def _include_routers(app: FastAPI, settings: Settings) -> None:
    app.include_router(health_router)
    app.include_router(health_router, prefix=API_PREFIX)
    # admin (anyone with auth off), or anyone with CROWDQRELS_METRICS_PUBLIC=true
    app.include_router(metrics_router([] if settings.metrics_public else [
        require_scope("admin")]))
    # Routes are matched in this order, one by one: the fits' result listings (the dashboard's
    # most frequent requests) come first. No two routers share a path prefix.
    app.include_router(aggregations_router, prefix=API_PREFIX)
    app.include_router(collections_router, prefix=API_PREFIX)
    app.include_router(judgments_router, prefix=API_PREFIX)
    app.include_router(judges_router, prefix=API_PREFIX)
    app.include_router(features_router, prefix=API_PREFIX)
    app.include_router(feature_builds_router, prefix=API_PREFIX)
    app.include_router(corpus_router, prefix=API_PREFIX)
    app.include_router(collection_aggregations_router, prefix=API_PREFIX)
    app.include_router(sampling_aggregation_router, prefix=API_PREFIX)
    app.include_router(collection_samplings_router, prefix=API_PREFIX)
    app.include_router(samplings_router, prefix=API_PREFIX)
    app.include_router(collection_evaluations_router, prefix=API_PREFIX)
    app.include_router(evaluations_router, prefix=API_PREFIX)
    app.include_router(auth_router, prefix=API_PREFIX)
    app.include_router(auth_ui_router)
