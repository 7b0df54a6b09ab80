"""The directory of prometheus-client's multiprocess mode, prepared before prometheus_client is
imported (this module does not import it): the library picks its mode when first imported."""

from __future__ import annotations

import tempfile
from pathlib import Path


def prepare_multiprocess_dir(configured: str | None) -> tuple[str, bool]:
    """The directory for multiprocess mode, emptied of a previous run's samples (a dead
    process's files would be summed with the live ones): ``configured`` or a new temporary one.
    Returns it and whether it is temporary (the caller removes it at exit)."""
    if configured:
        path = Path(configured)
        path.mkdir(parents=True, exist_ok=True)
        for stale in path.glob("*.db"):
            stale.unlink()
        return str(path), False
    return tempfile.mkdtemp(prefix="crowdqrels-metrics-"), True
