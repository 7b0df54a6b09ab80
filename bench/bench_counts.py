"""The judgments count of the collection and home pages: a COUNT over the judgments against the
collection's kept JudgmentTally moved forward, on PostgreSQL, at a size where it shows.

    .venv/bin/python bench/bench_counts.py [--judgments 2000000] [--repeat 5]

Fills a collection with synthetic judgments through the HTTP file endpoint (uploads of 100,000
rows; 20,000 tasks per 1M judgments, 2,000 annotators), then, in this process on the same
database and in the same run:
- ``collection_counts`` as the pages called it before (a COUNT over the judgments table) and as
  they call it now (the count taken from a kept tally), median of ``--repeat`` after one warm-up;
- the same after 1,000 more judgments (the tally moves forward over them first);
- the collection page and the home page through the API (a running server, its tally warmed at
  start-up), median of ``--repeat`` after one request.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import httpx
import numpy as np
from _server import reset_postgres, running_api

POSTGRES = "postgresql+psycopg://postgres@127.0.0.1:5432/crowdqrels_bench"
CHUNK = 100_000


def rows(n: int, n_tasks: int, rng: np.random.Generator) -> bytes:
    task = rng.integers(0, n_tasks, size=n)
    annotator = rng.integers(0, 2_000, size=n)
    label = rng.integers(0, 2, size=n)
    lines = ["topic\tdoc\tannotator\tlabel"] + [
        f"t{t % 100}\td{t}\tw{a}\t{y}" for t, a, y in zip(task.tolist(), annotator.tolist(),
                                                        label.tolist(), strict=True)]
    return ("\n".join(lines) + "\n").encode()


def median_ms(f: Callable[[], object], repeat: int) -> float:
    f()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        f()
        times.append(time.perf_counter() - start)
    return 1000 * statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--judgments", type=int, default=2_000_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()

    from sqlalchemy import select, text

    from app.aggregations.listing import ListingCache
    from app.collections import service
    from app.collections.tables import Collection
    from app.core.db import get_sessionmaker

    reset_postgres(POSTGRES)
    rng = np.random.default_rng(0)
    n_tasks = max(1, args.judgments // 50)
    upload = {"content-type": "text/tab-separated-values"}
    with running_api(POSTGRES) as (base, _), httpx.Client(base_url=base, timeout=600) as http:
        http.post("/api/v1/collections", json={"name": "big", "labels": [0, 1],
                                               "relevant_from": 1}).raise_for_status()
        start = time.perf_counter()
        for done in range(0, args.judgments, CHUNK):
            http.post("/api/v1/collections/big/judgments/file", headers=upload,
                      content=rows(min(CHUNK, args.judgments - done), n_tasks, rng)
                      ).raise_for_status()
        print(f"ingested {args.judgments:,} judgments in {time.perf_counter() - start:.0f} s")

    cache = ListingCache()
    with get_sessionmaker(POSTGRES)() as session:
        collection = session.scalar(select(Collection).where(Collection.name == "big"))
        assert collection is not None
        session.execute(text("ANALYZE"))
        session.commit()

        def counted() -> object:
            session.rollback()  # each look is a fresh read, as a request's
            return service.collection_counts(session, collection=collection)

        def tallied() -> object:
            session.rollback()
            tally = service.advance_tally(session, collection=collection, cache=cache)
            return service.collection_counts(session, collection=collection,
                                             judgments=tally.judgments)

        start = time.perf_counter()
        tallied()
        print(f"building the tally once: {1000 * (time.perf_counter() - start):.0f} ms")
        assert counted() == tallied()
        print(f"collection_counts, COUNT over the judgments: {median_ms(counted, args.repeat):.1f}"
              f" ms; from the kept tally: {median_ms(tallied, args.repeat):.1f} ms")

    with running_api(POSTGRES) as (base, _), httpx.Client(base_url=base, timeout=600) as http:
        http.post("/api/v1/collections/big/judgments/file", headers=upload,
                  content=rows(1_000, n_tasks, rng)).raise_for_status()
        with get_sessionmaker(POSTGRES)() as session:
            collection = session.scalar(select(Collection).where(Collection.name == "big"))
            start = time.perf_counter()
            tally = service.advance_tally(session, collection=collection, cache=cache)
            moved = 1000 * (time.perf_counter() - start)
            assert tally.judgments == service.collection_counts(
                session, collection=collection).judgments
        print(f"the kept tally moved forward over 1,000 new judgments: {moved:.1f} ms")
        for path in ("/ui/collections/big", "/ui/"):
            ms = median_ms(lambda p=path: http.get(p).raise_for_status(), args.repeat)
            print(f"GET {path}: {ms:.0f} ms (median of {args.repeat})")


if __name__ == "__main__":
    main()
