"""Entry point of a job's child process: ``python -m app.jobs.child KIND ID``, or, as the
in-process runner's spare, ``python -m app.jobs.child`` with no arguments: it imports every job
kind's body and the models' registry first, then reads its one job, ``KIND ID``, from standard
input (end of input: no job; it exits). One job per process either way.
"""

from __future__ import annotations

import importlib
import signal
import sys

from app.core.config import Settings
from app.jobs.kinds import KINDS, get_kind


def preload() -> list[str]:
    """What a job imports before its first step, loaded while a spare waits: every job body and
    every model that needs no TensorFlow (the GP methods import it when they fit)."""
    from models.registry import GP_METHODS, METHOD_PATHS

    return [*(k.body.partition(":")[0] for k in KINDS.values()),
            *(p.partition(":")[0] for m, p in METHOD_PATHS.items() if m not in GP_METHODS)]


def main() -> int:
    from app.core.logs import use_json_logs

    use_json_logs()  # JSON lines, each with the job's id while it runs (app.jobs.lifecycle)
    if len(sys.argv) == 3:
        kind, job_id = sys.argv[1], sys.argv[2]
    else:
        for name in preload():
            importlib.import_module(name)
        # Waiting, it leaves Ctrl-C in a terminal to the server, which stops it (terminate).
        default = signal.signal(signal.SIGINT, signal.SIG_IGN)
        words = sys.stdin.readline().split()
        if len(words) != 2:
            return 0  # the runner stopped (or closed its pipe) before giving a job
        signal.signal(signal.SIGINT, default)
        kind, job_id = words
    get_kind(kind).run(Settings().database_url, int(job_id))
    return 0


if __name__ == "__main__":
    sys.exit(main())
