"""The process's garbage collector, settled once the application has started.

The application's caches (``app.aggregations.listing``'s orderings, the dashboard's pages) hold
hundreds of thousands of long-lived objects (10,000 annotator rows per ordering, a fit page's
tables); a full collection walked them all, a 100–160 ms pause for every request in flight
(measured under wrk: the listing's p99 outliers). ``settle`` takes the objects alive now out of
the cyclic collector's full passes (``gc.freeze``); frozen objects are still freed by reference
counting when dropped (cached rows hold no cycles). ``release``, at the application's end, hands
everything back to the collector.
"""

from __future__ import annotations

import gc


def settle() -> None:
    """``gc.freeze``: the objects alive now leave the collector's full passes."""
    gc.freeze()


def release() -> None:
    """``gc.unfreeze``: the frozen objects go back to the collector."""
    gc.unfreeze()
