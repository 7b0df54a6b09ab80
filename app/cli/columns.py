"""A judgment file read column-wise at C speed, for the files that need none of the full parser's
care: ASCII ids without spaces or quotes, ``\\n`` line ends, every row as wide as the header, whole
numbers for labels. Such a file (a generated or exported one, 10 million lines) is read by one
compiled scan (``app.cli.columns_kernels``) into integer codes, and ``AnnotationData.from_codes``
builds the same data ``load_annotation_data`` would. Any other file, or a file the full parser
would refuse, is left to ``app.formats.judgments_file`` (``read_columns`` returns None): its
messages, and its reading of quoted CSV, blank lines, ``\\r`` ends and Unicode ids, stay the one
statement of the format.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

from app.formats.errors import FileFormatError
from app.formats.ids import MAX_ID_LENGTH, RESERVED_TOPIC
from app.formats.judgments_file import DEFAULT_TOPIC, _map_header

NO_GOLD = -(2**31)  # the scan's value for an empty gold cell


@dataclass(frozen=True)
class JudgmentColumns:
    """The rows as integer codes: ``task`` indexes ``task_topics`` / ``task_docs``, ``annotator``
    indexes ``annotator_names`` (both in the order first seen); ``gold`` per row (``NO_GOLD``:
    an empty cell) or None without a gold column. Row r is line r + 2 of the file."""

    task: np.ndarray
    annotator: np.ndarray
    labels: np.ndarray
    gold: np.ndarray | None
    task_topics: np.ndarray
    task_docs: np.ndarray
    annotator_names: np.ndarray
    ignored_columns: tuple[str, ...]

    def line(self, row: int) -> int:
        return row + 2


PARALLEL_BYTES = 8 << 20  # files from this size are scanned in two halves at once, given two cores


def read_columns(raw: bytes, parts: int | None = None) -> JudgmentColumns | None:
    """The file's columns, or None when the full parser must read it (see the module).
    ``parts``: 2 scans the two halves of the file on two threads (the same codes as one scan,
    ``columns_kernels.scan``); None: 2 for a file of ``PARALLEL_BYTES`` or more when this process
    may run on two cores, else 1."""
    if not isinstance(raw, bytes):
        return None
    end = raw.find(b"\n")
    if end <= 0:
        return None
    try:
        header_text = raw[:end].decode("ascii")
    except UnicodeDecodeError:
        return None
    if "\r" in header_text or not header_text.strip():
        return None
    delimiter = "\t" if "\t" in header_text else ","
    if delimiter == "," and '"' in header_text:
        return None
    header = header_text.split(delimiter)
    try:
        index = _map_header(header)
    except FileFormatError:
        return None
    from app.cli import columns_kernels as kernels

    buf = np.frombuffer(raw, dtype=np.uint8)
    max_rows = raw.count(b"\n") + 1
    (status, n_rows, task, annotator, labels, gold, task_topic, doc_off, doc_store, n_tasks,
     topic_off, topic_store, n_topics, ann_off, ann_store, n_ann) = kernels.scan(
        buf, end + 1, ord(delimiter), len(header), index.get("topic", -1), index["doc"],
        index["annotator"], index["label"], index.get("gold", -1), max_rows,
        parts=_parts(len(raw)) if parts is None else parts)
    if status != kernels.OK or n_rows == 0:
        return None
    topics = (_strings(topic_off, topic_store, n_topics) if "topic" in index
              else np.array([DEFAULT_TOPIC]))
    docs = _strings(doc_off, doc_store, n_tasks)
    names = _strings(ann_off, ann_store, n_ann)
    if (_too_long(topic_off[:n_topics + 1], "topic") or _too_long(doc_off[:n_tasks + 1], "doc")
            or _too_long(ann_off[:n_ann + 1], "annotator")
            or ("topic" in index and bool(np.any(topics == RESERVED_TOPIC)))):
        return None
    task, annotator, labels = task[:n_rows], annotator[:n_rows], labels[:n_rows]
    gold_rows = None
    if "gold" in index:
        gold_rows = gold[:n_rows]
        if _gold_conflict(task, gold_rows, n_tasks):
            return None
    read = set(index.values())
    ignored = tuple(name.strip() for position, name in enumerate(header)
                    if position not in read and name.strip())
    return JudgmentColumns(task, annotator, labels, gold_rows, topics[task_topic[:n_tasks]],
                           docs, names, ignored)


def _parts(size: int) -> int:
    if size < PARALLEL_BYTES:
        return 1
    cores = (len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
             else os.cpu_count() or 1)
    return 2 if cores >= 2 else 1


def _strings(offsets: np.ndarray, store: np.ndarray, count: int) -> np.ndarray:
    """The interned ids as a str array (ASCII: the bytes are the characters)."""
    from app.cli import columns_kernels as kernels

    lengths = np.diff(offsets[:count + 1])
    width = max(int(lengths.max()) if count else 1, 1)
    return kernels.gather(offsets, store, count, width).view(f"S{width}").ravel().astype(str)


def _too_long(offsets: np.ndarray, kind: str) -> bool:
    return offsets.shape[0] > 1 and int(np.diff(offsets).max()) > MAX_ID_LENGTH[kind]


def _gold_conflict(task: np.ndarray, gold: np.ndarray, n_tasks: int) -> bool:
    """Two rows giving one task different gold labels (values >= 0): the full parser names them."""
    known = gold >= 0
    if not known.any():
        return False
    low = np.full(n_tasks, np.iinfo(np.int64).max)
    high = np.full(n_tasks, np.iinfo(np.int64).min)
    np.minimum.at(low, task[known], gold[known])
    np.maximum.at(high, task[known], gold[known])
    return bool(np.any(low[task[known]] != high[task[known]]))
