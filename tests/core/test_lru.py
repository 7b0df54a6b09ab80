"""app.core.lru.LRU: the least recently used entry goes first; ``replaces`` guards a kept value."""

from __future__ import annotations

from app.core.lru import LRU


def test_least_recently_used_goes_first_and_replaces_guards() -> None:
    lru: LRU[str, int] = LRU(2)
    lru.put("a", 1)
    lru.put("b", 2)
    assert lru.get("a") == 1  # "b" is now the least recently used
    lru.put("c", 3)
    assert (lru.get("a"), lru.get("b"), lru.get("c")) == (1, None, 3)
    lru.put("a", 0, replaces=lambda new, kept: new > kept)  # not newer: kept as it was
    assert lru.get("a") == 1
    lru.put("a", 5, replaces=lambda new, kept: new > kept)
    assert lru.get("a") == 5
    none: LRU[str, int] = LRU(0)
    none.put("a", 1)
    assert none.get("a") is None
