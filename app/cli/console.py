"""What the commands show on the terminal: a progress bar, TensorFlow kept quiet."""

from __future__ import annotations

import os
import sys


class ProgressBar:
    """Feeds a fit's progress(fraction, message) callback into a tqdm bar on stderr."""

    def __init__(self, desc: str, enabled: bool) -> None:
        from tqdm import tqdm

        self.bar = tqdm(total=1000, desc=desc, file=sys.stderr, disable=not enabled,
                        bar_format="{l_bar}{bar}| {elapsed}<{remaining} {postfix}")
        self.done = 0

    def __call__(self, fraction: float, message: str) -> None:
        target = int(round(min(max(fraction, 0.0), 1.0) * 1000))
        if target > self.done:
            self.bar.update(target - self.done)
            self.done = target
        self.bar.set_postfix_str(message, refresh=False)

    def close(self) -> None:
        self.bar.close()


def quiet_tensorflow(method: str | None = None) -> None:
    """--quiet: silence TensorFlow's start-up and log lines (before it is imported). Its
    start-up lines (oneDNN, CUDA drivers) come from C++ logging that ignores
    TF_CPP_MIN_LOG_LEVEL and writes to file descriptor 2 itself: for a ``method`` that uses
    TensorFlow it is imported here, with that descriptor sent to /dev/null for the import."""
    os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
    import logging

    logging.getLogger("tensorflow").setLevel(logging.ERROR)
    from models.registry import GP_METHODS

    if method in GP_METHODS and "tensorflow" not in sys.modules:
        sys.stderr.flush()
        saved, devnull = os.dup(2), os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(devnull, 2)
            import tensorflow  # noqa: F401  (its start-up lines go to /dev/null)
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            os.close(devnull)
