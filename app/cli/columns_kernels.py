"""The compiled scan of ``app.cli.columns``: one pass over a judgment file's bytes that splits the
lines, interns the ids and parses the labels (numba; imported only when a file is read that way).

The ids are interned in open-addressing hash tables keyed by their bytes (a topic; a task: the
topic's code and the document's bytes; an annotator), so each gets a code in the order first
seen, compared byte for byte on every hit (no hash collision can merge two ids): an id of at most
7 bytes as one integer kept in its slot (``_pack``), a longer one against its stored bytes. The
packed keys and ``_insert`` inlined took the scan of 10 M lines from 4.2-4.3 to 3.0-3.2 s of
CPU (2026-11-27, branch mvcli: the annotators' look-ups had read five arrays at random).

The scan gives up (a status other than OK) on anything ``app.formats.judgments_file`` would read
differently or refuse, and the caller then parses the file there, where every such case has its
message.
"""

from __future__ import annotations

import numpy as np
from numba import njit

OK = 0
GIVE_UP = 1  # a byte, a field or a row the fast scan does not read: the full parser does

_FNV_OFFSET = np.uint64(14695981039346656037)
_FNV_PRIME = np.uint64(1099511628211)


@njit(cache=True, inline="always")
def _hash(buf: np.ndarray, start: int, end: int, seed: np.uint64) -> np.uint64:
    h = _FNV_OFFSET ^ seed
    for p in range(start, end):
        h = (h ^ np.uint64(buf[p])) * _FNV_PRIME
    return h


@njit(cache=True, inline="always")
def _same(buf: np.ndarray, a: int, b: int, n: int) -> bool:
    for p in range(n):  # noqa: SIM110 (compiled code: a loop, not a generator)
        if buf[a + p] != buf[b + p]:
            return False
    return True


@njit(cache=True, inline="always")
def _same_as(buf: np.ndarray, s: int, store: np.ndarray, at: int, n: int) -> bool:
    for p in range(n):  # noqa: SIM110 (compiled code: a loop, not a generator)
        if buf[s + p] != store[at + p]:
            return False
    return True


@njit(cache=True)
def _grow(slots: np.ndarray, hashes: np.ndarray) -> np.ndarray:
    """A table twice as large with every code re-inserted by its stored hash, its packed key
    (``_pack``) with it."""
    size = slots.shape[0] * 2
    mask = np.uint64(size - 1)
    out = np.full((size, 2), -1, dtype=np.int64)
    for old in range(slots.shape[0]):
        code = slots[old, 0]
        if code < 0:
            continue
        s = hashes[code] & mask
        while out[s, 0] >= 0:
            s = (s + np.uint64(1)) & mask
        out[s, 0] = code
        out[s, 1] = slots[old, 1]
    return out


@njit(cache=True, inline="always")
def _pack(buf: np.ndarray, start: int, end: int) -> int:
    """An id of at most 7 bytes as one integer: its bytes (all below 128), then its length in
    the top byte, so equal integers are equal ids, byte for byte; 0 for a longer id."""
    n = end - start
    if n > 7:
        return 0
    key = n << 56
    for p in range(n):
        key |= np.int64(buf[start + p]) << (8 * p)
    return key


@njit(cache=True)
def _room(values: np.ndarray, n: int) -> np.ndarray:
    if n < values.shape[0]:
        return values
    out = np.empty(values.shape[0] * 2, dtype=values.dtype)
    out[:n] = values[:n]
    return out


@njit(cache=True, inline="always")
def _integer(buf: np.ndarray, start: int, end: int) -> tuple[bool, int]:
    """An optional minus sign and 1-9 ASCII digits (always within 32 bits), else not read."""
    p = start
    negative = False
    if p < end and buf[p] == 45:  # '-'
        negative = True
        p += 1
    if end - p < 1 or end - p > 9:
        return False, 0
    value = 0
    while p < end:
        d = buf[p] - 48
        if d < 0 or d > 9:
            return False, 0
        value = value * 10 + d
        p += 1
    return True, -value if negative else value


@njit(cache=True, inline="always")
def _find(buf: np.ndarray, s: int, e: int, group: int, grouped: bool, slots: np.ndarray,
          hashes: np.ndarray, groups: np.ndarray, offsets: np.ndarray, store: np.ndarray
          ) -> tuple[int, int, int, int]:
    """(code, slot, hash, packed key) of the id buf[s:e] within ``group`` (a task's topic; 0
    otherwise: ``grouped`` False); code -1 when unseen, ``slot`` then the free slot for it. An
    id of at most 7 bytes is compared by its packed key, which the slot holds beside the code
    (one load: the annotators' 10 M look-ups); a longer one against its bytes in ``store``
    (``offsets[c]`` to ``offsets[c + 1]``), compact, so a hit compares against recent memory.
    Only integers come back: the hot path passes no array out (no reference counts)."""
    h = _hash(buf, s, e, np.uint64(group) * _FNV_PRIME)
    packed = _pack(buf, s, e)
    mask = np.uint64(slots.shape[0] - 1)
    slot = h & mask
    n = e - s
    while True:
        code = slots[slot, 0]
        if code < 0:
            return -1, slot, h, packed
        if packed != 0:
            if slots[slot, 1] == packed and (not grouped or groups[code] == group):
                return code, slot, h, packed
        elif hashes[code] == h and groups[code] == group and \
                offsets[code + 1] - offsets[code] == n and \
                _same_as(buf, s, store, offsets[code], n):
            return code, slot, h, packed
        slot = (slot + np.uint64(1)) & mask


@njit(cache=True, inline="always")
def _insert(buf: np.ndarray, s: int, e: int, group: int, slot: int, h: np.uint64, packed: int,
            slots: np.ndarray, hashes: np.ndarray, groups: np.ndarray, offsets: np.ndarray,
            store: np.ndarray, n_codes: int):  # type: ignore[no-untyped-def]
    """A new code (``n_codes``) for the id buf[s:e] at ``slot`` (``_find``'s); the table's arrays
    back, grown when full."""
    n = e - s
    hashes = _room(hashes, n_codes)
    groups = _room(groups, n_codes)
    offsets = _room(offsets, n_codes + 1)
    at = offsets[n_codes]
    while at + n > store.shape[0]:
        store = _room(store, store.shape[0])
    store[at:at + n] = buf[s:e]
    hashes[n_codes], groups[n_codes], offsets[n_codes + 1] = h, group, at + n
    slots[slot, 0] = n_codes
    slots[slot, 1] = packed
    if 2 * (n_codes + 1) > slots.shape[0]:
        slots = _grow(slots, hashes)
    return slots, hashes, groups, offsets, store


@njit(cache=True)
def _table(size: int):  # type: ignore[no-untyped-def]
    """An empty interning table: slots (code, packed key), hashes, groups, offsets, byte
    store."""
    offsets = np.zeros(size + 1, dtype=np.int64)
    return (np.full((2 * size, 2), -1, dtype=np.int64), np.empty(size, dtype=np.uint64),
            np.empty(size, dtype=np.int64), offsets, np.empty(16 * size, dtype=np.uint8))


@njit(cache=True)
def scan(buf: np.ndarray, start: int, delimiter: int, n_fields: int, f_topic: int, f_doc: int,
         f_ann: int, f_label: int, f_gold: int, max_rows: int):  # type: ignore[no-untyped-def]
    """Rows from ``buf[start:]`` (after the header line). Returns (status, n_rows, task,
    annotator, label, gold, task topic codes, then (offsets, byte store, count) of the tasks'
    documents, the topics and the annotators). ``f_topic`` / ``f_gold`` -1 when absent; gold is
    -2**31 for an empty cell (no gold)."""
    task = np.empty(max_rows, dtype=np.int64)
    annotator = np.empty(max_rows, dtype=np.int64)
    label = np.empty(max_rows, dtype=np.int64)
    gold = np.empty(max_rows if f_gold >= 0 else 0, dtype=np.int64)
    t_slots, t_hash, t_group, t_off, t_store = _table(1024)
    p_slots, p_hash, p_group, p_off, p_store = _table(64)
    a_slots, a_hash, a_group, a_off, a_store = _table(1024)
    n_tasks = 0
    n_topics = 0
    n_ann = 0
    starts = np.empty(n_fields, dtype=np.int64)
    ends = np.empty(n_fields, dtype=np.int64)
    n = buf.shape[0]
    p = start
    row = 0
    status = OK
    topic = 0
    prev_topic = (0, 0)
    prev_doc = (0, 0)
    while p < n:
        # one line into exactly n_fields fields; give up on anything unusual
        field = 0
        starts[0] = p
        while p < n and buf[p] != 10:
            b = buf[p]
            if b == delimiter:
                ends[field] = p
                field += 1
                if field >= n_fields:
                    status = GIVE_UP
                    break
                starts[field] = p + 1
            elif b < 33 or b > 126 or b == 34:  # control, space, non-ASCII, DEL, quote
                status = GIVE_UP
                break
            p += 1
        if status != OK or field != n_fields - 1 or row >= max_rows:
            status = GIVE_UP
            break
        ends[field] = p
        p += 1  # past the line feed
        if ends[f_doc] == starts[f_doc] or ends[f_ann] == starts[f_ann] or (
                f_topic >= 0 and ends[f_topic] == starts[f_topic]):
            status = GIVE_UP
            break
        ok, value = _integer(buf, starts[f_label], ends[f_label])
        if not ok:
            status = GIVE_UP
            break
        label[row] = value
        if f_gold >= 0:
            if ends[f_gold] == starts[f_gold]:
                gold[row] = -2147483648
            else:
                ok, value = _integer(buf, starts[f_gold], ends[f_gold])
                if not ok:
                    status = GIVE_UP
                    break
                gold[row] = value
        # the topic, then the task (topic, document): a file grouped by task repeats the last
        # row's, found by comparing bytes with it instead of a look-up
        same_topic = row > 0
        if f_topic >= 0:
            s, e = starts[f_topic], ends[f_topic]
            same_topic = same_topic and e - s == prev_topic[1] - prev_topic[0] and \
                _same(buf, prev_topic[0], s, e - s)
            if not same_topic:
                topic, slot, h, key = _find(buf, s, e, 0, False, p_slots, p_hash, p_group,
                                            p_off, p_store)
                if topic < 0:
                    p_slots, p_hash, p_group, p_off, p_store = _insert(
                        buf, s, e, 0, slot, h, key, p_slots, p_hash, p_group, p_off, p_store,
                        n_topics)
                    topic = n_topics
                    n_topics += 1
            prev_topic = (s, e)
        s, e = starts[f_doc], ends[f_doc]
        if same_topic and e - s == prev_doc[1] - prev_doc[0] and \
                _same(buf, prev_doc[0], s, e - s):
            task[row] = task[row - 1]
        else:
            code, slot, h, key = _find(buf, s, e, topic, True, t_slots, t_hash, t_group, t_off,
                                       t_store)
            if code < 0:
                t_slots, t_hash, t_group, t_off, t_store = _insert(
                    buf, s, e, topic, slot, h, key, t_slots, t_hash, t_group, t_off, t_store,
                    n_tasks)
                code = n_tasks
                n_tasks += 1
            task[row] = code
        prev_doc = (s, e)
        s, e = starts[f_ann], ends[f_ann]
        code, slot, h, key = _find(buf, s, e, 0, False, a_slots, a_hash, a_group, a_off,
                                   a_store)
        if code < 0:
            a_slots, a_hash, a_group, a_off, a_store = _insert(
                buf, s, e, 0, slot, h, key, a_slots, a_hash, a_group, a_off, a_store, n_ann)
            code = n_ann
            n_ann += 1
        annotator[row] = code
        row += 1
    return (status, row, task, annotator, label, gold, t_group, t_off, t_store, n_tasks,
            p_off, p_store, n_topics, a_off, a_store, n_ann)


@njit(cache=True)
def gather(offsets: np.ndarray, store: np.ndarray, count: int, width: int) -> np.ndarray:
    """(count, width) bytes: row c holds id c's bytes, NUL-padded (an ``S{width}`` view)."""
    out = np.zeros((count, width), dtype=np.uint8)
    for c in range(count):
        for p in range(offsets[c + 1] - offsets[c]):
            out[c, p] = store[offsets[c] + p]
    return out
