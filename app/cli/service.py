"""The service's commands: ``serve``, ``migrate`` and ``worker``."""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from typing import Any


def _share_metrics() -> str | None:
    """Multiprocess metrics for this process and every process it starts (app.core.metrics):
    PROMETHEUS_MULTIPROC_DIR, emptied, set before prometheus_client is first imported. Returns
    the directory to remove at exit (a temporary one), else None."""
    from app.core.config import get_settings
    from app.core.metrics_dir import prepare_multiprocess_dir

    path, temporary = prepare_multiprocess_dir(get_settings().metrics_dir)
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = path
    get_settings.cache_clear()  # settings.metrics_dir now names it
    return path if temporary else None


def _serve(args: argparse.Namespace) -> int:
    from app.core.config import get_settings

    temporary = _share_metrics()
    try:
        return _serve_shared(args, get_settings())
    finally:
        if temporary is not None:
            shutil.rmtree(temporary, ignore_errors=True)


def _serve_shared(args: argparse.Namespace, settings: Any) -> int:
    import uvicorn

    from app.auth.modes import InsecureMode, check_serve_mode
    from app.core.db import upgrade_database
    from app.core.logs import uvicorn_log_config

    try:
        mode = check_serve_mode(settings, args.host)
    except InsecureMode as exc:
        print(f"crowdqrels serve: {exc}", file=sys.stderr)
        return 2
    print(f"crowdqrels serve: {mode}", file=sys.stderr, flush=True)
    if args.workers > 1 and settings.jobs != "celery":
        # The in-process runner's queue and child processes live in one API process: a second
        # process could neither see nor cancel them.
        print("crowdqrels serve: --workers above 1 needs the Celery runner "
              "(CROWDQRELS_JOBS=celery and a `crowdqrels worker`)", file=sys.stderr)
        return 2
    upgrade_database()
    # JSON lines: uvicorn's own and one per request (app.api.observe), not its access log
    uvicorn.run("app.main:create_app", factory=True, host=args.host, port=args.port,
                log_level=args.log_level, workers=args.workers, access_log=False,
                log_config=uvicorn_log_config(args.log_level))
    return 0


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _migrate(args: argparse.Namespace) -> int:
    from app.core.db import upgrade_database

    upgrade_database()
    return 0


def _worker(args: argparse.Namespace) -> int:
    from app.core.config import get_settings

    temporary = _share_metrics()
    try:
        from app.core.logs import use_json_logs
        from app.jobs.celery_app import run_worker, serve_metrics

        use_json_logs()
        serve_metrics(get_settings())
        run_worker(concurrency=args.concurrency)
    finally:
        if temporary is not None:
            shutil.rmtree(temporary, ignore_errors=True)
    return 0


def add_commands(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    serve = subparsers.add_parser("serve", help="apply migrations and serve the HTTP API")
    serve.add_argument("--host", default="127.0.0.1",
                       help="address to listen on (default 127.0.0.1; another address needs "
                            "CROWDQRELS_AUTH=required)")
    serve.add_argument("--port", type=int, default=8000, help="default 8000")
    serve.add_argument("--log-level", default="info",
                       choices=("critical", "error", "warning", "info", "debug", "trace"),
                       help="uvicorn's log level (default info)")
    serve.add_argument("--workers", type=_positive_int, default=1,
                       help="API processes (above 1 only with CROWDQRELS_JOBS=celery)")
    serve.set_defaults(func=_serve)

    migrate = subparsers.add_parser("migrate",
                                    help="apply database migrations (alembic upgrade head)")
    migrate.set_defaults(func=_migrate)

    worker = subparsers.add_parser("worker",
                                   help="start a Celery worker (CROWDQRELS_JOBS=celery)")
    worker.add_argument("--concurrency", type=int, default=1)
    worker.set_defaults(func=_worker)
