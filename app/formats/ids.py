"""The one set of rules for external ids (topics, documents, annotators) and whole numbers read
from text, shared by every file format and the JSON bodies.

An id is stripped of surrounding whitespace and must then be non-empty, at most
:data:`MAX_ID_LENGTH` characters (the database's columns) and free of control characters
(:data:`CONTROL`: C0 and C1 controls, DEL, U+2028 and U+2029; none has a place in a TREC id, and
several of them end a line for ``str.splitlines``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

MAX_ID_LENGTH = {"topic": 200, "doc": 500, "annotator": 200}
MAX_FILENAME_LENGTH = 500  # batches.filename
# In an id, tab, line feed and carriage return are control characters too (a quoted CSV field
# may hold them); in a whole text they structure the file (CONTROL_IN_TEXT leaves them out).
CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")
CONTROL_IN_TEXT = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u2028\u2029]")
# What a whitespace-separated format (qrels, runs) splits on: ASCII space, tab and line ends,
# where str.split() also splits on U+00A0, U+2028, \x1c-\x1f and others.
ASCII_SPACE = " \t\n\r"
_ASCII_FIELDS = re.compile(r"[ \t\n\r]+")
# A whole number as the files write it: ASCII digits with an optional minus sign (int() also
# takes "1_0" and non-ASCII digits such as "١"); a trailing ".0" is accepted, as spreadsheets
# and pandas write integer columns that hold a missing value.
_INTEGER = re.compile(r"-?[0-9]+(?:\.0*)?")

INT64 = (-(2**63), 2**63 - 1)


class BadId(ValueError):
    """Item ``index`` of a column breaks the id rules; ``reason`` completes "column ... "."""

    def __init__(self, index: int, reason: str) -> None:
        super().__init__(reason)
        self.index = index
        self.reason = reason


def id_problem(value: str, limit: int | None) -> str | None:
    """Why an id as sent is not acceptable (None: it is); the id kept is ``value.strip()``. A
    control character is looked for before stripping: ``str.strip`` would drop a trailing
    U+001C or U+2028 silently, merging the id with another."""
    stripped = value.strip()
    if not stripped:
        return "is empty"
    if limit is not None and len(stripped) > limit:
        return f"is longer than {limit} characters"
    control = CONTROL.search(value)
    if control:
        return f"holds a control character (U+{ord(control.group()):04X})"
    return None


def clean_ids(values: Sequence[str], *, kind: str | None) -> list[str]:
    """The ids stripped; raise :class:`BadId` for the first that breaks the rules. ``kind``
    (``topic``, ``doc``, ``annotator``) sets the length limit; None: no limit.

    The checks run on the whole column at C speed; only a bad column is scanned item by item
    (with :func:`id_problem`, the rules' one statement) to name the first bad id."""
    cleaned = [v.strip() for v in values]
    limit = MAX_ID_LENGTH[kind] if kind is not None else None
    if (all(cleaned) and (limit is None or max(map(len, cleaned), default=0) <= limit)
            and not CONTROL.search("".join(values))):
        return cleaned
    for index, value in enumerate(values):
        reason = id_problem(value, limit)
        if reason is not None:
            raise BadId(index, reason)
    return cleaned  # not reached: the fast check found a bad id


def split_fields(line: str) -> list[str]:
    """The fields of a whitespace-separated line, split on ASCII whitespace only."""
    if line.isascii():
        # Within ASCII, str.split() also splits on \x1c-\x1f: the callers refuse those first.
        return line.split()
    stripped = line.strip(ASCII_SPACE)
    return _ASCII_FIELDS.split(stripped) if stripped else []


def parse_integer(text: str, bounds: tuple[int, int] | None = None) -> int | None:
    """The whole number written in ``text`` (surrounding spaces allowed), or None when it is not
    one (or lies outside ``bounds``, inclusive)."""
    if text.isdigit() and text.isascii():  # the common case, without a regex
        value = int(text)
    else:
        text = text.strip()
        if not _INTEGER.fullmatch(text):
            return None
        value = int(text.split(".", 1)[0])
    if bounds is not None and not bounds[0] <= value <= bounds[1]:
        return None
    return value
