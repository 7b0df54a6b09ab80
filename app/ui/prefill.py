"""Fill the dashboard's per-process caches before a person asks for the page.

Three things make a page slow the first time a process shows it: a collection's judgment
tally (``JudgmentTally``: three GROUP BYs over every judgment, 100–350 ms at 100,000 judgments),
a succeeded fit's charts (every annotator and task result, about 120 ms at 10,000 annotators) and
a sampling's estimates (the stored runs parsed into pools, the crowd labels fitted, the
Horvitz–Thompson estimates: about 1.1 s with RF10 and 20 runs). The first two are kept for the
life of the process once built (the tally then only moves forward over new judgments); a
sampling's parts are kept in the application's ``NextInputs`` under keys that name their inputs,
so a prefilled sampling stays cached until its judgments, rounds or runs change. One daemon thread
builds them ahead of time:

- at start-up: the tallies of the most recent collections, the pages of the most recently
  finished fits and of the most recent samplings (bounded, newest first);
- after judgments are accepted in this process: that collection's tally moves forward;
- when a collection page is shown: the pages of its latest succeeded fits and latest samplings
  (the next click).

A page request that arrives while the thread builds the same thing waits for it
(``ListingCache.memo``) instead of building it twice. Nothing here changes what a page shows;
a failure is logged and the page builds on demand as before.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.aggregations.listing import ListingCache
from app.aggregations.tables import Aggregation
from app.collections import service as collections_service
from app.collections.tables import Collection
from app.core.db import get_sessionmaker
from app.core.errors import DomainError
from app.sampling.inputs import NextInputs
from app.sampling.tables import Sampling

log = logging.getLogger("crowdqrels.ui")

STARTUP_COLLECTIONS = 16
STARTUP_AGGREGATIONS = 16
STARTUP_SAMPLINGS = 8
FITS_PER_COLLECTION_PAGE = 4
SAMPLINGS_PER_COLLECTION_PAGE = 2


def page_key(aggregation_id: int) -> tuple[str, int]:
    """The cache key of a succeeded fit's page context."""
    return ("aggregation_page", aggregation_id)


class DashboardPrefill:
    """A queue of (kind, id) to build, deduplicated, and the one thread that builds them."""

    def __init__(self, database_url: str, cache: ListingCache,
                 fit_page: Callable[[Session, ListingCache, Aggregation], dict[str, Any]],
                 inputs: NextInputs | None = None,
                 sampling_page: Callable[[Session, Sampling, NextInputs], Any] | None = None,
                 ) -> None:
        self.database_url = database_url
        self.cache = cache
        self.fit_page = fit_page  # a succeeded fit's page context (app.ui.pages.aggregations)
        # a sampling's page context (app.ui.pages.samplings), built into the app's NextInputs
        self.inputs = inputs
        self.sampling_page = sampling_page
        self._pending: OrderedDict[tuple[str, int], None] = OrderedDict()
        self._busy = False
        self._stopping = False
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None

    # -- queue ---------------------------------------------------------------------------------
    def collection(self, collection_id: int) -> None:
        self._put(("collection", int(collection_id)))

    def aggregation(self, aggregation_id: int) -> None:
        if not self.cache.memoized(page_key(aggregation_id)):
            self._put(("aggregation", int(aggregation_id)))

    def sampling(self, sampling_id: int) -> None:
        if self.sampling_page is not None and self.inputs is not None:
            self._put(("sampling", int(sampling_id)))

    def _put(self, item: tuple[str, int]) -> None:
        with self._cond:
            if self._stopping:
                return
            self._pending[item] = None
            self._cond.notify()

    def wait_idle(self, timeout: float = 30.0) -> bool:
        """True once nothing is queued or being built (tests and benchmarks wait on this)."""
        with self._cond:
            return self._cond.wait_for(lambda: not self._pending and not self._busy, timeout)

    # -- thread --------------------------------------------------------------------------------
    def start(self, *, at_startup: bool = True) -> None:
        if at_startup:
            self._put(("startup", 0))
        self._thread = threading.Thread(target=self._loop, name="crowdqrels-dashboard-prefill",
                                        daemon=True)
        self._thread.start()

    def stop(self) -> None:
        with self._cond:
            self._stopping = True
            self._pending.clear()
            self._cond.notify_all()
        if self._thread is not None:
            self._thread.join(timeout=30)

    def _loop(self) -> None:
        while True:
            with self._cond:
                self._cond.wait_for(lambda: self._pending or self._stopping)
                if self._stopping:
                    return
                item, _ = self._pending.popitem(last=False)
                self._busy = True
            try:
                self.build(*item)
            except Exception:  # the page builds on demand instead; the database may be away
                log.exception("dashboard prefill of %s %s failed", *item)
            finally:
                with self._cond:
                    self._busy = False
                    self._cond.notify_all()

    def build(self, kind: str, ident: int) -> None:
        with get_sessionmaker(self.database_url)() as session:
            if kind == "startup":
                for cid in session.scalars(select(Collection.id).order_by(Collection.id.desc())
                                           .limit(STARTUP_COLLECTIONS)):
                    self.collection(cid)
                for aid in session.scalars(
                        select(Aggregation.id).where(Aggregation.status == "succeeded")
                        .order_by(Aggregation.finished_at.desc()).limit(STARTUP_AGGREGATIONS)):
                    self.aggregation(aid)
                for sid in session.scalars(select(Sampling.id).order_by(Sampling.id.desc())
                                           .limit(STARTUP_SAMPLINGS)):
                    self.sampling(sid)
            elif kind == "collection":
                collection = session.get(Collection, ident)
                if collection is not None:
                    collections_service.advance_tally(session, collection=collection,
                                                      cache=self.cache)
            elif kind == "aggregation":
                aggregation = session.get(Aggregation, ident)
                if aggregation is not None and aggregation.status == "succeeded":
                    self.cache.memo(page_key(ident), lambda: self.fit_page(
                        session, self.cache, aggregation))
            elif kind == "sampling":
                sampling = session.get(Sampling, ident)
                if (sampling is not None and self.sampling_page is not None
                        and self.inputs is not None):
                    # A sampling whose runs changed answers 409 (DomainError): nothing to keep.
                    try:
                        self.sampling_page(session, sampling, self.inputs)
                    except DomainError:
                        log.debug("sampling %s not prefilled: its page shows an error", ident)



def prefill_of(app_state: Any) -> DashboardPrefill | None:
    """The application's prefill thread while its lifespan runs, else None (a bare test
    client)."""
    return getattr(app_state, "prefill", None)
