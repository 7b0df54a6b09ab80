"""A small least-recently-used map, safe to share between threads: the application's caches of
posteriors, judgment columns and page memos keep a handful of entries each."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

from app.core.metrics import CACHE_ENTRIES

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class LRU(Generic[K, V]):
    def __init__(self, size: int, *, name: str | None = None) -> None:
        self.size = size  # 0: nothing is kept
        # named: its entries count in the crowdqrels_cache_entries gauge under that name
        self._gauge = CACHE_ENTRIES.labels(name) if name else None
        self._lock = threading.Lock()
        self._items: OrderedDict[K, V] = OrderedDict()

    def get(self, key: K) -> V | None:
        with self._lock:
            hit = self._items.get(key)
            if hit is not None:
                self._items.move_to_end(key)
            return hit

    def put(self, key: K, value: V, *, replaces: Callable[[V, V], bool] | None = None) -> None:
        """Keep ``value`` under ``key``, dropping the least recently used beyond ``size``; with
        ``replaces``, a value already kept under ``key`` gives way only if
        ``replaces(value, kept)`` (checked under the lock: two threads cannot undo each other)."""
        with self._lock:
            kept = self._items.get(key)
            if kept is not None and replaces is not None and not replaces(value, kept):
                return
            before = len(self._items)
            self._items[key] = value
            self._items.move_to_end(key)
            while len(self._items) > self.size:
                self._items.popitem(last=False)
            if self._gauge is not None and len(self._items) != before:
                self._gauge.inc(len(self._items) - before)
