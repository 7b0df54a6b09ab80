"""Precomputed orderings of a succeeded fit's annotator results, for fast listings.

The results of a succeeded aggregation never change (a fit writes them once, then its status
becomes ``succeeded`` and stays). So the first request for a sort order reads every result row
once, sorted by the database exactly as ``service.annotator_results`` sorts them, and keeps the
rows, each already encoded as JSON, in a small in-process LRU cache. Every later page is a slice
of that list: no query, no per-row validation, any depth of page at the same cost (the keyset
problem of deep OFFSETs disappears with it). Filters (``min_judgments``, ``q``) select from the
cached ordering, so they are cheap too.

The cache also remembers which collection each cached aggregation belongs to, so the access check
(``principal.can_see``) needs no query either. The entity tag of a page is derived from the
aggregation, its finish time and the query: a client that sends ``If-None-Match`` gets a 304.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy.orm import Session

from app.aggregations.tables import Aggregation
from app.core.collector import settle
from app.core.metrics import CACHE_ENTRIES

# How the cache reads a fit's annotator rows: the service's ``annotator_results`` (rows, total).
ReadRows = Callable[..., tuple[list[dict[str, Any]], int]]

_ORDERINGS = CACHE_ENTRIES.labels("result_orderings")
_MEMOS = CACHE_ENTRIES.labels("fit_memos")
MAX_ORDERINGS = 64  # (aggregation, sort) pairs kept; 10,000 annotators take about 2 MB each
# Succeeded results are immutable; a day of browser caching, revalidated with the ETag after.
CACHE_CONTROL = "private, max-age=86400"
# ... kept for the caller who asked only: the browser may serve it again to a request with the
# same key or session cookie, not to another key signed in at that browser, an expired session
# or an address typed in without one (Cache-Control alone let any of those read it for a day,
# a key limited to other collections too).
VARY = "Authorization, X-API-Key, Cookie"


@dataclass
class Ordering:
    """Every annotator result of one aggregation in one sort order."""

    aggregation_id: int
    collection_id: int
    version: str  # changes if the aggregation row were ever refitted (finished_at)
    rows: list[dict[str, Any]]
    encoded: list[bytes]  # rows[i] as JSON

    def select(self, *, min_judgments: int, q: str | None,
               kind: str | None = None) -> Sequence[int]:
        """Indexes of the rows that pass the filters, in order (all when there are none: a
        range, so an unfiltered page costs its 50 rows, not a list of 10,000 indexes). An
        annotator's kind never changes, so it may be filtered from the cached rows."""
        if not min_judgments and not q and not kind:
            return range(len(self.rows))
        needle = (q or "").lower()
        return [i for i, r in enumerate(self.rows)
                if r["n_judgments"] >= min_judgments
                and (not needle or needle in r["annotator"].lower())
                and (not kind or r["kind"] == kind)]


class ListingCache:
    """Orderings of one application (one database): an LRU of (aggregation, sort) orderings and
    the collection of every aggregation seen succeeded (both permanent facts)."""

    def __init__(self, max_orderings: int = MAX_ORDERINGS) -> None:
        self.max_orderings = max_orderings
        self._lock = threading.Lock()
        self._orderings: OrderedDict[tuple[int, str], Ordering] = OrderedDict()
        self._succeeded: dict[int, int] = {}
        self._memo: OrderedDict[tuple[Any, ...], Any] = OrderedDict()
        self._building: dict[tuple[Any, ...], threading.Lock] = {}

    def memo(self, key: tuple[Any, ...], compute: Callable[[], Any]) -> Any:
        """``compute()`` once per key: for other immutable results of succeeded fits. A caller
        that asks while another thread computes the same key waits for that result (the
        dashboard prefill and a page request never build the same thing twice)."""
        with self._lock:
            if key in self._memo:
                self._memo.move_to_end(key)
                return self._memo[key]
            building = self._building.setdefault(key, threading.Lock())
        with building:
            with self._lock:
                if key in self._memo:
                    return self._memo[key]
            try:
                value = compute()
                with self._lock:
                    before = len(self._memo)
                    self._memo[key] = value
                    while len(self._memo) > self.max_orderings:
                        self._memo.popitem(last=False)
                    _MEMOS.inc(len(self._memo) - before)
                settle()
            finally:
                with self._lock:
                    self._building.pop(key, None)
        return value

    def memoized(self, key: tuple[Any, ...]) -> bool:
        with self._lock:
            return key in self._memo

    def known_succeeded(self, aggregation_id: int) -> int | None:
        """The collection of an aggregation already seen succeeded, else None."""
        return self._succeeded.get(aggregation_id)

    def cached(self, aggregation_id: int, sort: str) -> Ordering | None:
        with self._lock:
            hit = self._orderings.get((aggregation_id, sort))
            if hit is not None:
                self._orderings.move_to_end((aggregation_id, sort))
            return hit

    def ordering(self, session: Session, *, aggregation: Aggregation, sort: str,
                 read: ReadRows) -> Ordering:
        """The full ordering, cached or read once with ``read`` (the service's
        ``annotator_results``; the aggregation must have succeeded)."""
        hit = self.cached(aggregation.id, sort)
        if hit is not None and hit.version == _version(aggregation.finished_at):
            return hit
        rows, _ = read(session, aggregation=aggregation, sort=sort,
                       min_judgments=0, limit=None, offset=0)
        encoder = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)
        built = Ordering(
            aggregation_id=aggregation.id, collection_id=aggregation.collection_id,
            version=_version(aggregation.finished_at), rows=rows,
            encoded=[encoder.encode(r).encode() for r in rows],
        )
        key = (aggregation.id, sort)
        with self._lock:
            before = len(self._orderings)
            self._orderings[key] = built
            self._orderings.move_to_end(key)
            while len(self._orderings) > self.max_orderings:
                self._orderings.popitem(last=False)
            _ORDERINGS.inc(len(self._orderings) - before)
            self._succeeded[aggregation.id] = aggregation.collection_id
        settle()
        return built


def _version(finished_at: datetime | None) -> str:
    return finished_at.isoformat() if finished_at is not None else "-"


@dataclass(frozen=True)
class Page:
    body: bytes  # {"data": [...], "count": N} as JSON
    etag: str
    data: list[dict[str, Any]]
    count: int


def page(listing: Ordering, *, sort: str, min_judgments: int, q: str | None, limit: int,
         offset: int, kind: str | None = None) -> Page:
    selected = listing.select(min_judgments=min_judgments, q=q, kind=kind)
    chosen = selected[offset:offset + limit]
    body = b'{"data":[' + b",".join(listing.encoded[i] for i in chosen) + \
        b'],"count":' + str(len(selected)).encode() + b"}"
    tag = hashlib.blake2b(
        f"{listing.aggregation_id}|{listing.version}|{sort}|{min_judgments}|{q or ''}|"
        f"{kind or ''}|{limit}|{offset}".encode(), digest_size=12).hexdigest()
    return Page(body=body, etag=f'"{tag}"', data=[listing.rows[i] for i in chosen],
                count=len(selected))
