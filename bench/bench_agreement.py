"""The agreement matrix of a collection's fits: the endpoint and the comparison page, by fits.

    .venv/bin/python bench/bench_agreement.py [--database sqlite|postgres] [--fits 3,6,12,24]
                                              [--repeat 3]

The whole TREC RF10 file (20,232 tasks) goes into a collection of an API running in its own
process (uvicorn, the in-process job runner); fits are added, cycling through mv, ds, mace,
ibcc and ordinal-ds, binary then graded, one seed each, until the collection has each count of
``--fits``. At each count:

- in this process, on the same database, the matrix computed the way it was until 2026-11-24
  (a self-join of the fits' per-task results on the task, one row per pair of fits and task;
  kept here only) and the way the service computes it now (one read of the fits' labels, pair
  counts in numpy; ``agreement_matrix`` without a cache), best of ``--repeat``, and checked
  equal;
- over HTTP, ``GET /api/v1/collections/{c}/aggregations/agreement`` and the comparison page
  ``/ui/collections/{c}/comparison``: the first request after the new fits (it computes the
  matrix) and the median of 5 after it (the matrix of a set of succeeded fits is kept by the
  process). The page is asked of a second API process on the same database, so that both
  first requests compute.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from typing import Any

import httpx
from _server import RF10, ROOT, reset_postgres, running_api

sys.path.insert(0, str(ROOT))
POSTGRES = os.environ.get("CROWDQRELS_BENCH_POSTGRES_URL",
                          "postgresql+psycopg://postgres@127.0.0.1:5432/crowdqrels_bench_agreement")
METHODS = ("mv", "ds", "mace", "ibcc", "ordinal-ds")
COLLECTION = "rf10"


def fit_spec(k: int) -> dict[str, Any]:
    """The k-th fit: the methods in turn, binary then graded, then again with other seeds."""
    method = METHODS[k % len(METHODS)]
    return {"method": method, "graded": (k // len(METHODS)) % 2 == 1, "seed": k,
            "params": {"n_restarts": 2} if method == "mace" else {}}


def add_fits(client: httpx.Client, start: int, stop: int) -> None:
    ids = []
    for k in range(start, stop):
        r = client.post(f"/api/v1/collections/{COLLECTION}/aggregations", json=fit_spec(k))
        r.raise_for_status()
        ids.append(r.json()["id"])
    for a in ids:
        while True:
            body = client.get(f"/api/v1/aggregations/{a}").json()
            if body["status"] in ("succeeded", "failed", "cancelled"):
                assert body["status"] == "succeeded", body["error"]
                break
            time.sleep(0.5)


def self_join_matrix(session: Any, *, collection: Any) -> dict[str, Any]:
    """The agreement matrix as the service computed it until 2026-11-24 (for the ratio only)."""
    from sqlalchemy import case, func, select

    from app.aggregations.tables import Aggregation, AggregationTask

    fits = session.execute(select(Aggregation.id, Aggregation.graded).where(
        Aggregation.collection_id == collection.id, Aggregation.status == "succeeded")
        .order_by(Aggregation.id)).all()
    ids = [i for i, _ in fits]
    graded = {i: bool(g) for i, g in fits}
    a1 = AggregationTask.__table__.alias("a1")
    a2 = AggregationTask.__table__.alias("a2")
    cells: dict[tuple[int, int], tuple[int, int]] = {}
    if ids:
        graded_ids = [i for i in ids if graded[i]]

        def relevant(t: Any) -> Any:
            return case((t.c.aggregation_id.in_(graded_ids),
                         case((t.c.label >= collection.relevant_from, 1), else_=0)),
                        else_=t.c.label)

        rows = session.execute(
            select(a1.c.aggregation_id, a2.c.aggregation_id, func.count(),
                   func.sum(case((a1.c.label == a2.c.label, 1), else_=0)),
                   func.sum(case((relevant(a1) == relevant(a2), 1), else_=0)))
            .select_from(a1.join(a2, a1.c.task_id == a2.c.task_id))
            .where(a1.c.aggregation_id.in_(ids), a2.c.aggregation_id.in_(ids),
                   a1.c.aggregation_id <= a2.c.aggregation_id)
            .group_by(a1.c.aggregation_id, a2.c.aggregation_id))
        for x, y, n, same, same_relevance in rows:
            agree = same if graded[x] == graded[y] else same_relevance
            cells[(x, y)] = cells[(y, x)] = (int(n), int(agree or 0))
    share = [[(cells[(x, y)][1] / cells[(x, y)][0]) if cells.get((x, y), (0, 0))[0] else None
              for y in ids] for x in ids]
    return {"aggregation_ids": ids, "agreement": share,
            "common_tasks": [[cells.get((x, y), (0, 0))[0] for y in ids] for x in ids]}


def in_process(url: str, repeat: int) -> dict[str, float]:
    """Best of ``repeat`` for the old and the new computation, and that they are equal."""
    from sqlalchemy import select

    from app.aggregations.agreement import agreement_matrix
    from app.collections.tables import Collection
    from app.core.db import get_sessionmaker

    out: dict[str, float] = {}
    with get_sessionmaker(url)() as session:
        collection = session.scalar(select(Collection).where(Collection.name == COLLECTION))
        answers = {}
        for name, compute in (("old", self_join_matrix), ("new", agreement_matrix)):
            times = []
            for _ in range(repeat):
                start = time.perf_counter()
                answers[name] = compute(session, collection=collection)
                times.append(time.perf_counter() - start)
                session.rollback()
            out[name] = min(times)
    assert json.dumps(answers["old"]) == json.dumps(answers["new"]), "the answers differ"
    return out


def timed(client: httpx.Client, url: str) -> tuple[float, float]:
    """(first request, median of the next 5), in ms."""
    times = []
    for _ in range(6):
        start = time.perf_counter()
        client.get(url).raise_for_status()
        times.append((time.perf_counter() - start) * 1000)
    return times[0], statistics.median(times[1:])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--database", choices=["sqlite", "postgres"], default="sqlite")
    parser.add_argument("--fits", default="3,6,12,24", help="fit counts, ascending")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    counts = sorted(int(x) for x in args.fits.split(","))
    load = os.getloadavg()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        if args.database == "postgres":
            reset_postgres(POSTGRES)
            url = POSTGRES
        else:
            url = f"sqlite:///{tmp}/bench.db"
        with running_api(url) as (base, _), httpx.Client(base_url=base, timeout=3600) as api:
            api.post("/api/v1/collections", json={"name": COLLECTION, "labels": [0, 1, 2],
                                                  "relevant_from": 1, "ignore": [-2]}
                     ).raise_for_status()
            api.post(f"/api/v1/collections/{COLLECTION}/judgments/file",
                     content=RF10.read_bytes(),
                     headers={"content-type": "text/tab-separated-values"}).raise_for_status()
            # the page's own process: started with no job queued or running (an inline runner
            # takes those over at start-up), it only reads
            with running_api(url) as (page_base, _), \
                    httpx.Client(base_url=page_base, timeout=3600) as pages:
                have = 0
                for n in counts:
                    add_fits(api, have, n)
                    have = n
                    endpoint = timed(api, f"/api/v1/collections/{COLLECTION}"
                                          "/aggregations/agreement")
                    page = timed(pages, f"/ui/collections/{COLLECTION}/comparison")
                    rows.append((n, in_process(url, args.repeat), endpoint, page))
    print(f"agreement matrix of RF10 fits ({args.database}; 20,232 tasks; load average "
          f"{load[0]:.1f} at the start, {os.getloadavg()[0]:.1f} at the end)")
    print("| fits | self-join, before (s) | numpy, now (s) | before / now | endpoint first (ms) "
          "| endpoint after (ms) | page first (ms) | page after (ms) |")
    print("|---|---|---|---|---|---|---|---|")
    for n, t, endpoint, page in rows:
        print(f"| {n} | {t['old']:.2f} | {t['new']:.3f} | {t['old'] / t['new']:.1f}x "
              f"| {endpoint[0]:.0f} | {endpoint[1]:.1f} | {page[0]:.0f} | {page[1]:.1f} |")


if __name__ == "__main__":
    main()
