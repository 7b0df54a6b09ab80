"""The offline commands' one error: a bad option or input."""

from __future__ import annotations


class UsageError(Exception):
    """A bad option or input: ``crowdqrels`` prints ``crowdqrels COMMAND: error: …`` and exits
    2. Commands raise it before writing anything."""
