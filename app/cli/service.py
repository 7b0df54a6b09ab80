"""The service's commands: ``serve``, ``migrate`` and ``worker``."""

from __future__ import annotations

import argparse
import sys


def _serve(args: argparse.Namespace) -> int:
    import uvicorn

    from app.auth.modes import InsecureMode, check_serve_mode
    from app.core.config import get_settings
    from app.core.db import upgrade_database

    try:
        settings = get_settings()
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
    uvicorn.run("app.main:create_app", factory=True, host=args.host, port=args.port,
                log_level=args.log_level, workers=args.workers)
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
    from app.jobs.celery_app import run_worker

    run_worker(concurrency=args.concurrency)
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
