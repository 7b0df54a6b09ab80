"""What the commands show on the terminal: a progress bar, TensorFlow kept quiet."""

from __future__ import annotations

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
    """--quiet: silence TensorFlow's start-up and log lines (``app.core.quiet``), importing it
    now, with its start-up lines muted, for a ``method`` that uses it."""
    from app.core.quiet import quiet_tensorflow as quiet
    from models.registry import GP_METHODS

    quiet(import_now=method in GP_METHODS)
