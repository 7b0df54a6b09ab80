"""Output paths checked before any work, and written all or nothing (atomically) after it."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

from app.cli.errors import UsageError


def check_outputs(outputs: dict[str, str | None], *, stdout: bool = False) -> None:
    """Refuse, before any work, an output path that cannot be written: a directory, a missing
    or read-only directory, the same file for two options, ``-`` (standard output) where
    ``stdout`` is false or twice."""
    seen: dict[str, str] = {}
    for option, value in outputs.items():
        if value is None:
            continue
        if value == "-":
            if not stdout:
                raise UsageError(f"{option}: '-' (standard output) is not allowed here")
            key = "-"
        else:
            path = Path(value)
            if path.is_dir():
                raise UsageError(f"{option} {value}: is a directory")
            parent = path.parent
            if not parent.is_dir():
                raise UsageError(f"{option} {value}: directory {str(parent)!r} does not exist")
            if path.exists() and not path.is_file():  # /dev/stdout, a FIFO: written in place
                if not os.access(path, os.W_OK):
                    raise UsageError(f"{option} {value}: not writable")
            elif not os.access(parent, os.W_OK | os.X_OK):
                raise UsageError(f"{option} {value}: directory {str(parent)!r} is not writable")
            key = str(path.resolve())
        if key in seen:
            raise UsageError(f"{seen[key]} and {option} name the same file {value!r}")
        seen[key] = option


def write_outputs(files: list[tuple[str, str | bytes]]) -> None:
    """Write (path, text or bytes) pairs all or nothing: each into a temporary file in its
    directory, then all renamed over their targets (``-``: standard output, last; a path that
    is not a regular file, such as /dev/stdout, written in place)."""
    staged: list[tuple[str, Path]] = []
    direct: list[tuple[str, str | bytes]] = []
    try:
        for target, text in files:
            path = Path(target)
            if target == "-" or (path.exists() and not path.is_file()):
                direct.append((target, text))
                continue
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
            staged.append((tmp, path))
            with os.fdopen(fd, "wb" if isinstance(text, bytes) else "w") as f:
                f.write(text)
            os.chmod(tmp, path.stat().st_mode & 0o7777 if path.exists() else _default_mode())
        for tmp, path in staged:
            os.replace(tmp, path)
    except BaseException:
        for tmp, _ in staged:
            Path(tmp).unlink(missing_ok=True)
        raise
    for target, text in direct:
        if target == "-":
            if isinstance(text, bytes):
                sys.stdout.buffer.write(text)
            else:
                sys.stdout.write(text)
            sys.stdout.flush()
        else:
            with open(target, "wb" if isinstance(text, bytes) else "w") as f:
                f.write(text)


def _default_mode() -> int:
    """The mode a plain open(path, "w") would give a new file (0o666 less the umask)."""
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def check_output_dir(value: str, option: str) -> None:
    """An output directory: an existing directory we may write in, or a new one whose nearest
    existing ancestor is a writable directory (created only once the work has succeeded)."""
    path = Path(value)
    if path.exists() and not path.is_dir():
        raise UsageError(f"{option} {value}: exists and is not a directory")
    probe = path
    while not probe.exists():
        probe = probe.parent
    if not probe.is_dir():
        raise UsageError(f"{option} {value}: {str(probe)!r} is not a directory")
    if not os.access(probe, os.W_OK | os.X_OK):
        raise UsageError(f"{option} {value}: {str(probe)!r} is not writable")
