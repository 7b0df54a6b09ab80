"""Entry point of a job's child process: ``python -m app.jobs.child KIND ID``."""

from __future__ import annotations

import sys

from app.core.config import Settings
from app.jobs.kinds import get_kind


def main() -> int:
    kind, job_id = sys.argv[1], int(sys.argv[2])
    get_kind(kind).run(Settings().database_url, job_id)
    return 0


if __name__ == "__main__":
    sys.exit(main())
