"""Entry point of a fit child process: ``python -m app.jobs.child AGGREGATION_ID``."""

from __future__ import annotations

import sys

from app.core.config import Settings
from app.jobs.fit import run_fit


def main() -> int:
    run_fit(Settings().database_url, int(sys.argv[1]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
