"""The ``crowdqrels`` command: the service (serve, worker, migrate), API keys (keys) and the
offline tools (aggregate, next, simulate, evaluate, synth). Heavy imports happen inside each
command so ``--help`` stays instant."""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Sequence
from typing import Any


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


class _Parser(argparse.ArgumentParser):
    """No abbreviated options, in every command (subparsers are of their parent's class):
    ``simulate --seed 7``, the option of the other commands, read as ``--seeds 7`` (seven
    seeds), and ``--seed 3000000000`` started three billion replays."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="crowdqrels",
        description="Crowd relevance judgments into qrels. The service: serve, worker, migrate; "
                    "API keys: keys; offline, on files: aggregate, next, simulate, evaluate, "
                    "synth. `crowdqrels COMMAND --help` for each.")
    sub = parser.add_subparsers(dest="command", required=True)
    # main() reports an option a command does not have under that command's usage
    parser.set_defaults(commands=sub.choices)

    serve = sub.add_parser("serve", help="apply migrations and serve the HTTP API")
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

    migrate = sub.add_parser("migrate", help="apply database migrations (alembic upgrade head)")
    migrate.set_defaults(func=_migrate)

    worker = sub.add_parser("worker", help="start a Celery worker (CROWDQRELS_JOBS=celery)")
    worker.add_argument("--concurrency", type=int, default=1)
    worker.set_defaults(func=_worker)

    from app.offline import add_offline_commands

    add_offline_commands(sub)
    from app.auth.cli import add_commands as add_key_commands

    add_key_commands(sub)
    from app.evaluations.cli import add_commands as add_evaluation_commands

    add_evaluation_commands(sub)
    from app.sampling.cli import add_commands as add_sampling_commands

    add_sampling_commands(sub)
    return parser


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("crowdqrels")
    except PackageNotFoundError:
        return "unknown (not installed)"


def main(argv: Sequence[str] | None = None) -> int:
    # TensorFlow's C++ start-up notices (CPU features, no CUDA) would interleave with the GP
    # commands' progress: warnings and errors only, unless the caller chose a level.
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    parser = build_parser()
    parser.add_argument("--version", action="version", version=f"crowdqrels {_version()}")
    command = "crowdqrels"
    try:
        args, unknown = parser.parse_known_args(argv)
        if unknown:  # argparse would blame "crowdqrels" under the usage of every command
            args.commands[args.command].error(f"unrecognized arguments: {' '.join(unknown)}")
        command = f"crowdqrels {args.command}"
        from pydantic import ValidationError

        from app.offline import UsageError

        try:
            return int(args.func(args) or 0)
        except UsageError as exc:  # a bad option or input: nothing was written
            print(f"{command}: error: {exc}", file=sys.stderr)
            return 2
        except ValidationError as exc:
            if exc.title != "Settings":  # not the environment's fault: a bug, with its traceback
                raise
            from app.core.config import describe_invalid

            print(f"{command}: invalid settings\n{describe_invalid(exc)}", file=sys.stderr)
            return 2
    except KeyboardInterrupt:
        print(f"\n{command}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader went away (`| head`): stop quietly. Standard output now points to
        # /dev/null, so the interpreter's last flush does not fail again.
        devnull = os.open(os.devnull, os.O_WRONLY)
        with contextlib.suppress(OSError, ValueError):  # no real stdout (tests capture it)
            os.dup2(devnull, sys.stdout.fileno())
        return 141  # 128 + SIGPIPE, as a shell reports a process killed by it


if __name__ == "__main__":
    sys.exit(main())
