"""The compiled scan of ``app.cli.columns``: one pass over a judgment file's bytes that splits the
lines, interns the ids and parses the labels (numba; imported only when a file is read that way).

The ids are interned in open-addressing hash tables keyed by their bytes (a topic; a task: the
topic's code and the document's bytes; an annotator), so each gets a code in the order first
seen, compared byte for byte on every hit (no hash collision can merge two ids): an id of at most
7 bytes as one integer kept in its slot (``_pack``), a longer one against its stored bytes. The
packed keys and ``_insert`` inlined took the scan of 10 M lines from 4.2-4.3 to 3.0-3.2 s of
CPU (2026-11-27, branch mvcli: the annotators' look-ups had read five arrays at random).

The loop over rows (``_rows``) allocates nothing and rebinds no array: a table that is full
stops it, its caller grows the table and it goes on from that line. (A loop-carried array that
may be rebound costs reference counting on every row: 2.1 of the 10 M-line scan's 4.8 s
without any look-up, 0.6 s once nothing in the loop could rebind.) A large file is scanned in
two halves on two threads, and the second half's ids are merged into the first's tables in the
order it saw them (``scan``), which gives every id the code a single scan gives.

The scan gives up (a status other than OK) on anything ``app.formats.judgments_file`` would read
differently or refuse, and the caller then parses the file there, where every such case has its
message.
"""

from __future__ import annotations

from typing import Any

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
            store: np.ndarray, n_codes: int) -> None:
    """A new code (``n_codes``) for the id buf[s:e] at ``slot`` (``_find``'s), in a table that
    has room for it (``_has_room``): nothing is allocated, so the scan's loop never rebinds an
    array (each rebinding of a loop-carried array costs reference counts on every row)."""
    n = e - s
    at = offsets[n_codes]
    store[at:at + n] = buf[s:e]
    hashes[n_codes], groups[n_codes], offsets[n_codes + 1] = h, group, at + n
    slots[slot, 0] = n_codes
    slots[slot, 1] = packed


@njit(cache=True, inline="always")
def _intern(buf: np.ndarray, s: int, e: int, group: int, grouped: bool, slots: np.ndarray,
            hashes: np.ndarray, groups: np.ndarray, offsets: np.ndarray, store: np.ndarray,
            n_codes: int) -> tuple[int, int]:
    """(code, count) of the id buf[s:e] within ``group``: its code, a new one (the count + 1)
    when unseen, in a table with room for it."""
    code, slot, h, key = _find(buf, s, e, group, grouped, slots, hashes, groups, offsets, store)
    if code >= 0:
        return code, n_codes
    _insert(buf, s, e, group, slot, h, key, slots, hashes, groups, offsets, store, n_codes)
    return n_codes, n_codes + 1


@njit(cache=True, inline="always")
def _has_room(slots: np.ndarray, hashes: np.ndarray, offsets: np.ndarray, store: np.ndarray,
              n_codes: int, length: int) -> bool:
    """Whether one more id of ``length`` bytes fits without growing (slots kept at most half
    full)."""
    return (2 * (n_codes + 1) <= slots.shape[0] and n_codes < hashes.shape[0]
            and n_codes + 1 < offsets.shape[0] and offsets[n_codes] + length <= store.shape[0])


@njit(cache=True)
def _grown(slots: np.ndarray, hashes: np.ndarray, groups: np.ndarray, offsets: np.ndarray,
           store: np.ndarray, n_codes: int, length: int):  # type: ignore[no-untyped-def]
    """The table's arrays with room for one more id of ``length`` bytes (each doubled as
    needed)."""
    while 2 * (n_codes + 1) > slots.shape[0]:
        slots = _grow(slots, hashes)
    hashes = _room(hashes, n_codes)
    groups = _room(groups, n_codes)
    offsets = _room(offsets, n_codes + 1)
    while offsets[n_codes] + length > store.shape[0]:
        store = _room(store, store.shape[0])
    return slots, hashes, groups, offsets, store


@njit(cache=True)
def _table(size: int):  # type: ignore[no-untyped-def]
    """An empty interning table: slots (code, packed key), hashes, groups, offsets, byte
    store."""
    offsets = np.zeros(size + 1, dtype=np.int64)
    return (np.full((2 * size, 2), -1, dtype=np.int64), np.empty(size, dtype=np.uint64),
            np.empty(size, dtype=np.int64), offsets, np.empty(16 * size, dtype=np.uint8))


NEED_ROOM = 2  # ``_rows`` stopped before a line whose ids a table has no room for


@njit(cache=True)
def _rows(buf: np.ndarray, p: int, row: int, delimiter: int, n_fields: int, f_topic: int,
          f_doc: int, f_ann: int, f_label: int, f_gold: int, task: np.ndarray,
          annotator: np.ndarray, label: np.ndarray, gold: np.ndarray, starts: np.ndarray,
          ends: np.ndarray, counts: np.ndarray, last: np.ndarray,
          t_slots: np.ndarray, t_hash: np.ndarray, t_group: np.ndarray, t_off: np.ndarray,
          t_store: np.ndarray, p_slots: np.ndarray, p_hash: np.ndarray, p_group: np.ndarray,
          p_off: np.ndarray, p_store: np.ndarray, a_slots: np.ndarray, a_hash: np.ndarray,
          a_group: np.ndarray, a_off: np.ndarray, a_store: np.ndarray
          ) -> tuple[int, int, int, int]:
    """The rows from byte ``p`` (row number ``row``) on, until the end (OK), a line the scan
    does not read (GIVE_UP) or a line whose new ids a table has no room for (NEED_ROOM: ``p``
    and ``row`` are that line's, nothing of it interned; the last value is the longest of its
    fields). ``counts`` holds (tasks, topics, annotators) so far; ``last`` the current topic's
    code and the previous row's topic and document spans. Returns (status, p, row, length)."""
    n = buf.shape[0]
    max_rows = task.shape[0]
    n_tasks, n_topics, n_ann = counts[0], counts[1], counts[2]
    topic = last[0]
    status = OK
    length = 0
    while p < n:
        line = p
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
        length = 0
        for f in range(n_fields):
            length = max(length, ends[f] - starts[f])
        if not (_has_room(t_slots, t_hash, t_off, t_store, n_tasks, length)
                and _has_room(p_slots, p_hash, p_off, p_store, n_topics, length)
                and _has_room(a_slots, a_hash, a_off, a_store, n_ann, length)):
            status = NEED_ROOM
            p = line
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
            same_topic = same_topic and e - s == last[2] - last[1] and _same(buf, last[1], s,
                                                                               e - s)
            if not same_topic:
                topic, n_topics = _intern(buf, s, e, 0, False, p_slots, p_hash, p_group, p_off,
                                          p_store, n_topics)
            last[1], last[2] = s, e
        s, e = starts[f_doc], ends[f_doc]
        if same_topic and e - s == last[4] - last[3] and _same(buf, last[3], s, e - s):
            task[row] = task[row - 1]
        else:
            task[row], n_tasks = _intern(buf, s, e, topic, True, t_slots, t_hash, t_group, t_off,
                                         t_store, n_tasks)
        last[3], last[4] = s, e
        s, e = starts[f_ann], ends[f_ann]
        annotator[row], n_ann = _intern(buf, s, e, 0, False, a_slots, a_hash, a_group, a_off,
                                        a_store, n_ann)
        row += 1
    counts[0], counts[1], counts[2] = n_tasks, n_topics, n_ann
    last[0] = topic
    return status, p, row, length


@njit(cache=True, nogil=True)
def scan_part(buf: np.ndarray, start: int, stop: int, delimiter: int, n_fields: int,
              f_topic: int, f_doc: int, f_ann: int, f_label: int, f_gold: int,
              task: np.ndarray, annotator: np.ndarray, label: np.ndarray,
              gold: np.ndarray):  # type: ignore[no-untyped-def]
    """The rows of ``buf[start:stop]`` (whole lines) into ``task``, ``annotator``, ``label``
    and ``gold`` (as many rows as they hold; ``gold`` empty without a gold column), with codes
    of this part's own. Returns (status, n_rows, counts (tasks, topics, annotators), then the
    three tables (slots, hashes, groups, offsets, store): tasks, topics, annotators). The rows
    are read by ``_rows``, which allocates nothing; here the tables grow when it stops for room
    (a few dozen times for 10 M rows). Releases the GIL: two parts run on two cores."""
    t_slots, t_hash, t_group, t_off, t_store = _table(1024)
    p_slots, p_hash, p_group, p_off, p_store = _table(64)
    a_slots, a_hash, a_group, a_off, a_store = _table(1024)
    starts = np.empty(n_fields, dtype=np.int64)
    ends = np.empty(n_fields, dtype=np.int64)
    counts = np.zeros(3, dtype=np.int64)  # tasks, topics, annotators
    last = np.zeros(5, dtype=np.int64)  # topic code; previous topic span; previous doc span
    part = buf[:stop]
    p = start
    row = 0
    while True:
        status, p, row, length = _rows(
            part, p, row, delimiter, n_fields, f_topic, f_doc, f_ann, f_label, f_gold, task,
            annotator, label, gold, starts, ends, counts, last, t_slots, t_hash, t_group, t_off,
            t_store, p_slots, p_hash, p_group, p_off, p_store, a_slots, a_hash, a_group, a_off,
            a_store)
        if status != NEED_ROOM:
            break
        t_slots, t_hash, t_group, t_off, t_store = _grown(t_slots, t_hash, t_group, t_off,
                                                          t_store, counts[0], length)
        p_slots, p_hash, p_group, p_off, p_store = _grown(p_slots, p_hash, p_group, p_off,
                                                          p_store, counts[1], length)
        a_slots, a_hash, a_group, a_off, a_store = _grown(a_slots, a_hash, a_group, a_off,
                                                          a_store, counts[2], length)
    return (status, row, counts, (t_slots, t_hash, t_group, t_off, t_store),
            (p_slots, p_hash, p_group, p_off, p_store), (a_slots, a_hash, a_group, a_off, a_store))


@njit(cache=True)
def _merge_table(slots: np.ndarray, hashes: np.ndarray, groups: np.ndarray,
                 offsets: np.ndarray, store: np.ndarray, n_codes: int, other_offsets: np.ndarray,
                 other_store: np.ndarray, other_groups: np.ndarray, n_other: int,
                 group_map: np.ndarray, grouped: bool):  # type: ignore[no-untyped-def]
    """A later part's ids (``other_*``, its codes 0..n_other-1 in the order it first saw them)
    looked up in this table and added where new, in that order: the codes the whole file's
    scan gives. ``group_map`` maps the other part's group codes (its topics) to this one's.
    Returns (the code map, the table's arrays, the new count)."""
    code_map = np.empty(n_other, dtype=np.int64)
    for c in range(n_other):
        s, e = other_offsets[c], other_offsets[c + 1]
        group = group_map[other_groups[c]] if grouped and group_map.shape[0] else 0
        if not _has_room(slots, hashes, offsets, store, n_codes, e - s):
            slots, hashes, groups, offsets, store = _grown(slots, hashes, groups, offsets,
                                                           store, n_codes, e - s)
        code_map[c], n_codes = _intern(other_store, s, e, group, grouped, slots, hashes,
                                       groups, offsets, store, n_codes)
    return code_map, slots, hashes, groups, offsets, store, n_codes


@njit(cache=True)
def _line_start(buf: np.ndarray, p: int) -> int:
    """The start of the first line after byte ``p`` (past its line feed); the end of ``buf``
    when there is none."""
    n = buf.shape[0]
    while p < n and buf[p] != 10:
        p += 1
    return min(p + 1, n)


@njit(cache=True)
def _line_ends(buf: np.ndarray, start: int, stop: int) -> int:
    count = 0
    for p in range(start, stop):
        count += buf[p] == 10
    return count


@njit(cache=True)
def _recode(values: np.ndarray, code_map: np.ndarray) -> None:
    for r in range(values.shape[0]):
        values[r] = code_map[values[r]]


def scan(buf: np.ndarray, start: int, delimiter: int, n_fields: int, f_topic: int, f_doc: int,
         f_ann: int, f_label: int, f_gold: int, max_rows: int, parts: int = 1
         ) -> tuple:  # type: ignore[type-arg]
    """Rows from ``buf[start:]`` (after the header line). Returns (status, n_rows, task,
    annotator, label, gold, task topic codes, then (offsets, byte store, count) of the tasks'
    documents, the topics and the annotators). ``f_topic`` / ``f_gold`` -1 when absent; gold is
    -2**31 for an empty cell (no gold).

    ``parts`` 2: the two halves of the file (cut at a line end) are scanned at once on two
    threads, each with tables of its own; the second half's ids are then looked up in the
    first's and added in the order it saw them, so every code is the one a single scan gives
    (an id's code is its place among the file's ids by first appearance)."""
    task = np.empty(max_rows, dtype=np.int64)
    annotator = np.empty(max_rows, dtype=np.int64)
    label = np.empty(max_rows, dtype=np.int64)
    gold = np.empty(max_rows if f_gold >= 0 else 0, dtype=np.int64)
    rows = (task, annotator, label, gold)
    n = buf.shape[0]
    cut = _line_start(buf, start + (n - start) // 2) if parts > 1 else n
    if cut <= start or cut >= n:
        status, n_rows, counts, tasks, topics, annotators = scan_part(
            buf, start, n, delimiter, n_fields, f_topic, f_doc, f_ann, f_label, f_gold, *rows)
        return _output(status, n_rows, rows, tasks, counts[0], topics, counts[1], annotators,
                       counts[2])
    from concurrent.futures import ThreadPoolExecutor

    first_rows = _line_ends(buf, start, cut)
    common = (delimiter, n_fields, f_topic, f_doc, f_ann, f_label, f_gold)
    second = slice(first_rows, max_rows)
    with ThreadPoolExecutor(1) as pool:
        later = pool.submit(scan_part, buf, cut, n, *common, task[second], annotator[second],
                            label[second], gold[second] if f_gold >= 0 else gold)
        one = scan_part(buf, start, cut, *common, task[:first_rows], annotator[:first_rows],
                        label[:first_rows], gold[:first_rows] if f_gold >= 0 else gold)
        two = later.result()
    status = one[0] if one[0] != OK else two[0]
    if status != OK or one[1] != first_rows:  # the caller reads only the status
        return _output(GIVE_UP if status == OK else status, 0, rows, one[3], 0, one[4], 0,
                       one[5], 0)
    n_rows = first_rows + two[1]
    counts1, counts2 = one[2], two[2]
    no_groups = np.zeros(0, dtype=np.int64)
    topic_map, *topics, n_topics = _merge_table(*one[4], counts1[1], two[4][3], two[4][4],
                                                two[4][2], counts2[1], no_groups, False)
    task_map, *tasks, n_tasks = _merge_table(*one[3], counts1[0], two[3][3], two[3][4],
                                             two[3][2], counts2[0], topic_map, True)
    ann_map, *annotators, n_ann = _merge_table(*one[5], counts1[2], two[5][3], two[5][4],
                                               two[5][2], counts2[2], no_groups, False)
    _recode(task[first_rows:n_rows], task_map)
    _recode(annotator[first_rows:n_rows], ann_map)
    return _output(status, n_rows, rows, tasks, n_tasks, topics, n_topics, annotators, n_ann)


def _output(status: int, n_rows: int, rows: tuple[np.ndarray, ...], tasks: Any, n_tasks: int,
            topics: Any, n_topics: int, annotators: Any, n_ann: int) -> tuple:  # type: ignore[type-arg]
    """``scan``'s result from the row arrays and the three tables (slots, hashes, groups,
    offsets, store): the tasks' topic codes, then each table's offsets, byte store and count."""
    return (status, n_rows, *rows, tasks[2], tasks[3], tasks[4], n_tasks, topics[3], topics[4],
            n_topics, annotators[3], annotators[4], n_ann)


@njit(cache=True)
def gather(offsets: np.ndarray, store: np.ndarray, count: int, width: int) -> np.ndarray:
    """(count, width) bytes: row c holds id c's bytes, NUL-padded (an ``S{width}`` view)."""
    out = np.zeros((count, width), dtype=np.uint8)
    for c in range(count):
        for p in range(offsets[c + 1] - offsets[c]):
            out[c, p] = store[offsets[c] + p]
    return out
