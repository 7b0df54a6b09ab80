"""Entry point of a job's own interpreter: ``python -m app.jobs.child KIND ID`` runs that one job.

The in-process runner starts jobs this way when it cannot fork them from the job starter
(``app.jobs.starter``: no ``os.fork`` here, or ``job_starter`` off); ``preload`` is what the
starter imports before its first fork.
"""

from __future__ import annotations

import sys

from app.core.config import Settings
from app.jobs.kinds import KINDS, get_kind


def preload(*, tensorflow: bool = False) -> list[str]:
    """What a job imports before its first step, loaded once by the job starter: every job body
    and every model that needs no TensorFlow (the GP methods import it when they fit); with
    ``tensorflow`` (the GP jobs' starter), the GP methods too."""
    from models.registry import GP_METHODS, METHOD_PATHS

    return [*(k.body.partition(":")[0] for k in KINDS.values()),
            *(p.partition(":")[0] for m, p in METHOD_PATHS.items()
              if tensorflow or m not in GP_METHODS)]


def run_job(kind: str, job_id: int) -> None:
    """Run one job in this process, with the database URL of the environment."""
    from app.core.logs import use_json_logs

    use_json_logs()  # JSON lines, each with the job's id while it runs (app.jobs.lifecycle)
    get_kind(kind).run(Settings().database_url, job_id)


def main() -> int:
    if len(sys.argv) != 3:
        print("usage: python -m app.jobs.child KIND ID", file=sys.stderr)
        return 2
    run_job(sys.argv[1], int(sys.argv[2]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
