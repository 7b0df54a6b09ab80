"""Topic and document texts: ``id<TAB>text`` lines, or JSON.

TSV: one ``id<TAB>text`` per line; the text is everything after the first tab (further tabs are
kept as part of it). An optional header names the two columns, e.g. ``id<TAB>text`` (accepted
names: :data:`ID_NAMES` then :data:`TEXT_NAMES`, case-insensitive). Blank lines are skipped.

JSON, any of:

- ``{"topics": [{"id": "301", "text": "..."}, ...]}`` (also ``"documents"``, ``"docs"``,
  ``"texts"``);
- a list of such objects ``[{"id": ..., "text": ...}, ...]``;
- JSON Lines: one such object per line;
- a plain object ``{"301": "text", ...}``.
Objects may name the id ``id``, ``topic``, ``doc``, ``docid``, ``docno`` or ``qid`` and the text
``text``, ``contents``, ``body``, ``query`` or ``title``. Numeric ids are read as strings.

Ids follow ``app.formats.ids`` (stripped; empty, over-long or holding a control character:
refused). Errors are :class:`FileFormatError`: ``duplicate_row`` for an id given twice or a JSON
object with a key twice (``column``: the key; json.loads would keep the last one silently),
``invalid_row`` for a line without a tab, an object without id or text, a bad id or JSON nested
too deeply, ``empty_file``; ``line`` is the 1-based line of
the offending row (for JSON: of the duplicate's id where it can be found, else None).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from app.formats.errors import FileFormatError, decode_text, line_of, split_lines
from app.formats.ids import id_problem

ID_NAMES = ("id", "topic", "topic_id", "topicid", "qid", "doc", "doc_id", "docid", "docno",
            "document")
TEXT_NAMES = ("text", "contents", "body", "query", "title", "description")
JSON_LISTS = ("topics", "documents", "docs", "texts")


def parse_texts(raw: bytes | str, *, kind: str | None = None) -> dict[str, str]:
    """{id: text} from TSV or JSON (detected from the first non-blank character). Ids follow
    ``app.formats.ids`` (``kind``, ``topic`` or ``doc``, sets their length limit; None: none)."""
    text = decode_text(raw)
    stripped = text.lstrip()
    if not stripped:
        raise FileFormatError("the file is empty", code="empty_file")
    if stripped[0] in "[{":
        return parse_texts_json(text, kind=kind)
    return parse_texts_tsv(text, kind=kind)


def _check_id(key: str, *, kind: str | None, where: str, line: int | None) -> str:
    """The id stripped, or FileFormatError by the rules every id follows (``id_problem``)."""
    reason = id_problem(key, kind)
    if reason is not None:
        raise FileFormatError(f"{where}: the id {reason}", code="invalid_row", line=line,
                              column="id")
    return key.strip()


def parse_texts_tsv(raw: bytes | str, *, kind: str | None = None) -> dict[str, str]:
    """Lines end at \\n, \\r\\n or \\r only: a text may hold a form feed or U+2028."""
    text = decode_text(raw)
    out: dict[str, str] = {}
    seen_first = False
    for line_no, line in enumerate(split_lines(text), start=1):
        if not line.strip():
            continue
        if "\t" not in line:
            raise FileFormatError(
                f"line {line_no}: expected 'id<TAB>text', found no tab",
                code="invalid_row", line=line_no,
            )
        key, value = line.split("\t", 1)
        key = key.strip()
        if not seen_first:
            seen_first = True
            if key.lower() in ID_NAMES and value.strip().lower() in TEXT_NAMES:
                continue  # the header
        key = _check_id(key, kind=kind, where=f"line {line_no}", line=line_no)
        if key in out:
            raise FileFormatError(f"line {line_no}: duplicate id {key!r}", code="duplicate_row",
                                  line=line_no, column="id")
        out[key] = value.strip()
    if not out:
        raise FileFormatError("the file has no text rows", code="empty_file")
    return out


def parse_texts_json(raw: bytes | str, *, kind: str | None = None) -> dict[str, str]:
    """{id: text} from JSON or JSON Lines text (see the module doc)."""
    text = decode_text(raw)
    try:
        data = json.loads(text, object_pairs_hook=unique_keys(text))
    except RecursionError:
        raise FileFormatError("invalid JSON: nested too deeply", code="invalid_row",
                              line=1) from None
    except json.JSONDecodeError as exc:
        lines = [(n, line) for n, line in enumerate(split_lines(text), start=1) if line.strip()]
        first = lines[0][1].strip() if lines else ""
        if len(lines) < 2 or not (first.startswith("{") and first.endswith("}")):
            line = line_of(text, exc.pos)  # exc.lineno counts \n only
            raise FileFormatError(f"line {line}: invalid JSON: {exc.msg}",
                                  code="invalid_row", line=line) from None
        return _from_json_lines(lines, kind=kind)
    return texts_from_json(data, source=text, kind=kind)


def texts_from_json(data: Any, *, source: str | None = None, kind: str | None = None,
                    _inner: bool = False) -> dict[str, str]:
    """{id: text} from already-decoded JSON (a request body). ``source``, the JSON text, only
    serves to find the line of a duplicate id. A ``topics`` (etc.) list is looked for at the top
    only (``_inner``): a body of such objects nested a thousand deep is not a recursion."""
    if isinstance(data, dict):
        lists = [k for k in JSON_LISTS if k in data]
        if lists and isinstance(data[lists[0]], dict | list) and not _inner:
            return texts_from_json(data[lists[0]], source=source, kind=kind, _inner=True)
        if not all(isinstance(v, str) for v in data.values()):
            raise FileFormatError(
                "expected a list of {id, text} objects, an object with a "
                f"{' / '.join(repr(k) for k in JSON_LISTS)} list, or {{id: text}}",
                code="invalid_row", line=1,
            )
        if not data:
            raise FileFormatError("the file has no texts", code="empty_file")
        # {id: text}: parse_texts_json refuses repeated keys, which json.loads would drop.
        out = {}
        for k, v in data.items():
            key = _check_id(str(k), kind=kind, where=f"key {str(k)[:50]!r}", line=None)
            if key in out:
                raise FileFormatError(f"duplicate id {key!r}", code="duplicate_row",
                                      column="id")
            out[key] = v.strip()
        return out
    if not isinstance(data, list):
        raise FileFormatError("expected a list of {id, text} objects", code="invalid_row",
                              line=1)
    out: dict[str, str] = {}
    for position, item in enumerate(data):
        key, value = _item(item, f"item {position + 1}", None, kind=kind)
        if key in out:
            line = _line_of_duplicate(source, key)
            where = f"line {line}" if line else f"item {position + 1}"
            raise FileFormatError(f"{where}: duplicate id {key!r}", code="duplicate_row",
                                  line=line, column="id")
        out[key] = value
    if not out:
        raise FileFormatError("the file has no texts", code="empty_file")
    return out


def unique_keys(source: str | bytes) -> Callable[[list[tuple[str, Any]]], dict[str, Any]]:
    """A json ``object_pairs_hook`` refusing an object with a key twice (json.loads would keep
    the last one silently, losing a text): ``duplicate_row`` naming the key and, found in
    ``source`` (the JSON text or body), the line of its second occurrence."""

    def hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in pairs:
            if key in out:
                text = source if isinstance(source, str) else source.decode("utf-8", "replace")
                matches = list(re.finditer(re.escape(json.dumps(key)) + r"\s*:", text))
                line = line_of(text, matches[1].start()) if len(matches) > 1 else None
                where = f"line {line}: " if line else ""
                raise FileFormatError(f"{where}duplicate key {key!r}", code="duplicate_row",
                                      line=line, column=key)
            out[key] = value
        return out

    return hook


def _from_json_lines(lines: list[tuple[int, str]], *, kind: str | None) -> dict[str, str]:
    out: dict[str, str] = {}
    for line_no, line in lines:
        try:
            item = json.loads(line, object_pairs_hook=unique_keys(line))
        except FileFormatError as exc:  # a key twice: the line in the file, not in this one
            raise FileFormatError(f"line {line_no}: duplicate key {exc.column!r}",
                                  code=exc.code, line=line_no, column=exc.column) from None
        except RecursionError:
            raise FileFormatError(f"line {line_no}: invalid JSON: nested too deeply",
                                  code="invalid_row", line=line_no) from None
        except json.JSONDecodeError as exc:
            raise FileFormatError(f"line {line_no}: invalid JSON: {exc.msg}",
                                  code="invalid_row", line=line_no) from None
        key, value = _item(item, f"line {line_no}", line_no, kind=kind)
        if key in out:
            raise FileFormatError(f"line {line_no}: duplicate id {key!r}", code="duplicate_row",
                                  line=line_no, column="id")
        out[key] = value
    return out


def _item(item: Any, where: str, line: int | None, *, kind: str | None) -> tuple[str, str]:
    if not isinstance(item, dict):
        raise FileFormatError(f"{where}: expected an object with an id and a text",
                              code="invalid_row", line=line)
    key = next((item[k] for k in ID_NAMES if k in item), None)
    value = next((item[k] for k in TEXT_NAMES if k in item), None)
    if key is None or isinstance(key, bool) or not isinstance(key, str | int) or \
            not str(key).strip():
        raise FileFormatError(f"{where}: missing or invalid id (one of {', '.join(ID_NAMES)})",
                              code="invalid_row", line=line, column="id")
    if not isinstance(value, str):
        raise FileFormatError(
            f"{where}: missing or invalid text (a string under one of {', '.join(TEXT_NAMES)})",
            code="invalid_row", line=line, column="text",
        )
    return _check_id(str(key), kind=kind, where=where, line=line), value.strip()


def _line_of_duplicate(source: str | None, key: str) -> int | None:
    """Line of the second occurrence of ``"<id name>": <key>`` in the JSON text, if found."""
    if source is None:
        return None
    names = "|".join(ID_NAMES)
    values = [re.escape(json.dumps(key))]
    if key.isdigit():
        values.append(re.escape(key) + r"(?![0-9.eE])")
    pattern = re.compile(rf'"(?:{names})"\s*:\s*(?:{"|".join(values)})')
    matches = list(pattern.finditer(source))
    if len(matches) < 2:
        return None
    return line_of(source, matches[1].start())
