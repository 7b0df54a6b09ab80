"""The ``crowdqrels`` command: the service (serve, worker, migrate), API keys (keys) and the
offline tools (aggregate, next, simulate, evaluate, synth), one module per command in this
package, beside the helpers they share (options, loading, outputs, tables, console). Heavy imports
happen inside each command so ``--help`` stays instant."""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Sequence
from typing import Any


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
                    "synth, agreement; a small collection to try them on: example; once after an "
                    "install: precompile. `crowdqrels COMMAND --help` for each.")
    sub = parser.add_subparsers(dest="command", required=True)
    # main() reports an option a command does not have under that command's usage
    parser.set_defaults(commands=sub.choices)

    from app.cli import (
        aggregate,
        agreement,
        evaluate,
        example,
        next_tasks,
        precompile,
        service,
        simulate,
        synth,
    )

    service.add_commands(sub)
    aggregate.add_command(sub)
    synth.add_command(sub)
    from app.auth.cli import add_commands as add_key_commands

    add_key_commands(sub)
    evaluate.add_command(sub)
    simulate.add_command(sub)
    next_tasks.add_command(sub)
    agreement.add_command(sub)
    example.add_command(sub)
    precompile.add_command(sub)
    _add_verbose(sub.choices)
    return parser


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("crowdqrels")
    except PackageNotFoundError:
        return "unknown (not installed)"


def _add_verbose(commands: dict[str, argparse.ArgumentParser]) -> None:
    for name, command in commands.items():
        command.add_argument(
            "--verbose", action="store_true",
            help="show TensorFlow's native log lines (start-up notices such as 'failed call to "
                 "cuInit', which are not errors; silenced by default)"
                 + (", in this command's job processes too" if name in ("serve", "worker")
                    else ""))


def _quiet_unless_verbose(args: argparse.Namespace) -> None:
    """TensorFlow's start-up lines read as failures: silenced unless --verbose (app.core.quiet).
    The service's job processes learn it from CROWDQRELS_VERBOSE."""
    if getattr(args, "verbose", False):
        os.environ["CROWDQRELS_VERBOSE"] = "true"
        return
    from app.core.quiet import quiet_tensorflow
    from models.registry import GP_METHODS

    quiet_tensorflow(import_now=getattr(args, "method", None) in GP_METHODS)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    parser.add_argument("--version", action="version", version=f"crowdqrels {_version()}")
    command = "crowdqrels"
    try:
        args, unknown = parser.parse_known_args(argv)
        if unknown:  # argparse would blame "crowdqrels" under the usage of every command
            args.commands[args.command].error(f"unrecognized arguments: {' '.join(unknown)}")
        command = f"crowdqrels {args.command}"
        _quiet_unless_verbose(args)
        from pydantic import ValidationError

        from app.cli.errors import UsageError

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

