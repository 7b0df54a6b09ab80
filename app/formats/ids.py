"""The one set of rules for external ids (topics, documents, annotators) and whole numbers read
from text, shared by every file format and the JSON bodies.

An id is stripped of surrounding whitespace and must then be non-empty, at most
:data:`MAX_ID_LENGTH` characters (the database's columns) and free of control characters
(:data:`CONTROL`: C0 and C1 controls, DEL, U+2028 and U+2029; none has a place in a TREC id, and
several of them end a line for ``str.splitlines``). A topic or document id also holds no
whitespace (:data:`WHITESPACE`: anything ``str.isspace`` calls whitespace, among them the space,
U+00A0 and U+3000): TREC qrels and runs are whitespace-separated, so such an id could not be
written to one and read back. Annotator ids may hold spaces: no TREC file carries them. A topic
may not be ``all`` (:data:`RESERVED_TOPIC`): results name the mean over topics so.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

MAX_ID_LENGTH = {"topic": 200, "doc": 500, "annotator": 200}
# The topic of the mean over topics in evaluation results, sampling estimates and trec_eval -q
# output: a topic of that name would be read as the mean (and the mean as it).
RESERVED_TOPIC = "all"
# The kinds whose ids may hold whitespace; every other kind (and None: a topic or document id
# whose kind the caller does not know) may not.
SPACE_ALLOWED = frozenset({"annotator"})
MAX_FILENAME_LENGTH = 500  # batches.filename
# In an id, tab, line feed and carriage return are control characters too (a quoted CSV field
# may hold them); in a whole text they structure the file (CONTROL_IN_TEXT leaves them out).
CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")
CONTROL_IN_TEXT = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u2028\u2029]")
# What a whitespace-separated format (qrels, runs) splits on: ASCII space, tab and line ends,
# where str.split() also splits on U+00A0, U+2028, \x1c-\x1f and others.
ASCII_SPACE = " \t\n\r"
_ASCII_FIELDS = re.compile(r"[ \t\n\r]+")
# Whitespace in an id: exactly the characters str.isspace() accepts (str.split() splits on them).
WHITESPACE = re.compile(r"\s")
# A whole number as the files write it: ASCII digits with an optional minus sign (int() also
# takes "1_0" and non-ASCII digits such as "١"); a trailing ".0" is accepted, as spreadsheets
# and pandas write integer columns that hold a missing value.
_INTEGER = re.compile(r"-?[0-9]+(?:\.0*)?")

INT32 = (-(2**31), 2**31 - 1)  # labels and gold: the scale's values are 32-bit
INT64 = (-(2**63), 2**63 - 1)


class BadId(ValueError):
    """Item ``index`` of a column breaks the id rules; ``reason`` completes "column ... "."""

    def __init__(self, index: int, reason: str) -> None:
        super().__init__(reason)
        self.index = index
        self.reason = reason


def id_problem(value: str, kind: str | None, *, strip: bool = True) -> str | None:
    """Why an id as sent is not acceptable (None: it is); the id kept is ``value.strip()``.
    ``kind`` (``topic``, ``doc``, ``annotator``) sets the length limit (None: none) and whether
    whitespace is allowed inside (:data:`SPACE_ALLOWED`). ``strip=False`` (a field of a
    whitespace-separated file, where the field is the id): the value is the id as it is, and
    whitespace at its ends (a U+00A0, which the ASCII split leaves there) is inside it. A
    control character is looked for before stripping: ``str.strip`` would drop a trailing
    U+001C or U+2028 silently, merging the id with another."""
    stripped = value.strip() if strip else value
    if not stripped:
        return "is empty"
    limit = MAX_ID_LENGTH.get(kind) if kind is not None else None
    if limit is not None and len(stripped) > limit:
        return f"is longer than {limit} characters"
    control = CONTROL.search(value)
    if control:
        return f"holds a control character (U+{ord(control.group()):04X})"
    if kind not in SPACE_ALLOWED:
        space = WHITESPACE.search(stripped)
        if space:
            return (f"holds whitespace (U+{ord(space.group()):04X} at character "
                    f"{space.start() + 1}), which TREC qrels and runs cannot hold")
    if kind == "topic" and stripped == RESERVED_TOPIC:
        return (f"is {RESERVED_TOPIC!r}, the topic that evaluation results and trec_eval give "
                f"the mean over topics")
    return None


def clean_ids(values: Sequence[str], *, kind: str | None, strip: bool = True) -> list[str]:
    """The ids stripped (``strip=False``: as they are); raise :class:`BadId` for the first that
    breaks the rules of :func:`id_problem` (``kind`` and ``strip`` as there).

    The checks run on the whole column at C speed; only a bad column is scanned item by item
    (with :func:`id_problem`, the rules' one statement) to name the first bad id."""
    cleaned = [v.strip() for v in values] if strip else list(values)
    limit = MAX_ID_LENGTH.get(kind) if kind is not None else None
    if (all(cleaned) and (limit is None or max(map(len, cleaned), default=0) <= limit)
            and not CONTROL.search("".join(values))
            and (kind in SPACE_ALLOWED or not WHITESPACE.search("".join(cleaned)))
            and (kind != "topic" or RESERVED_TOPIC not in cleaned)):
        return cleaned
    for index, value in enumerate(values):
        reason = id_problem(value, kind, strip=strip)
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
