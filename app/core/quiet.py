"""TensorFlow's native log lines, silenced unless asked for (``--verbose``, or
CROWDQRELS_VERBOSE=true for the job processes of `serve` and `worker`).

Its start-up lines (``WARNING: All log messages before absl::InitializeLog()``, oneDNN, "Could
not find cuda drivers", ``E0000 … failed call to cuInit``) read as failures and are not: they
come from C++ logging that ignores TF_CPP_MIN_LOG_LEVEL before absl is initialised and writes
to file descriptor 2 itself. So TensorFlow is imported here, where it is about to be used, with
that descriptor sent to /dev/null for the import; TF_CPP_MIN_LOG_LEVEL=3 quiets what it logs
afterwards, and Python's ``tensorflow`` logger keeps errors only.
"""

from __future__ import annotations

import logging
import os
import sys


def quiet_tensorflow(*, import_now: bool) -> None:
    """Silence TensorFlow's logs in this process and the processes it starts; with
    ``import_now`` (the caller is about to use TensorFlow), import it with descriptor 2 muted."""
    os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
    logging.getLogger("tensorflow").setLevel(logging.ERROR)
    if not import_now or "tensorflow" in sys.modules:
        return
    sys.stderr.flush()
    saved, devnull = os.dup(2), os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 2)
        import tensorflow  # noqa: F401  (its start-up lines go to /dev/null)
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(devnull)
