"""What to judge next on RF10: the time of a /next request through the real API, against the
same plan computed in memory (the offline ``crowdqrels next``'s work) in the same run.

    .venv/bin/python bench/bench_next.py [--database sqlite|postgres] [--repeat 5]
                                         [--batch 1000] [--methods ds,mace]

The API runs in its own process (uvicorn). The RF10 file goes in graded (0/1/2, relevant from 1),
each method is fitted once (binary, and ``ds`` graded too), then per fit and strategy:
``first`` is the first request after the fit (nothing read yet), ``again`` the median of
``--repeat`` more (the dashboard's page, its TSV and JSON links ask for the same list),
``after batch`` the first request after ``--batch`` new judgments arrived (new annotators and
tasks among them), ``page`` the median time of /ui/aggregations/{a}/next; ``nothing kept``: the
same call's work without the cache (``next_tasks`` in this process on the same database, every
row read again: what each call cost before it). ``in memory``:
``models.sampling.rejudge.plan_next`` on the fit's posterior and the judgments as arrays, the
floor a service request cannot go below. Prints a markdown table; never part of the test run.
"""

from __future__ import annotations

import argparse
import functools
import gc
import os
import statistics
import sys
import tempfile
import time

import httpx
import numpy as np
from _server import RF10, ROOT, reset_postgres, running_api

sys.path.insert(0, str(ROOT))
POSTGRES = os.environ.get("CROWDQRELS_BENCH_POSTGRES_URL",
                          "postgresql+psycopg://postgres@127.0.0.1:5432/crowdqrels_bench_next")


def wait(client: httpx.Client, ident: int) -> dict:
    while True:
        body = client.get(f"/api/v1/aggregations/{ident}").json()
        if body["status"] in ("succeeded", "failed", "cancelled"):
            assert body["status"] == "succeeded", body["error"]
            return body
        time.sleep(0.1)


def timed(client: httpx.Client, url: str) -> float:
    start = time.perf_counter()
    response = client.get(url)
    seconds = time.perf_counter() - start
    response.raise_for_status()
    return seconds


@functools.cache
def _fitted(method: str, graded: bool):  # type: ignore[no-untyped-def]
    """The file's judgments and a fit of them, once per method (every strategy plans on it)."""
    from app.cli.aggregate import build_aggregator
    from app.cli.loading import load_annotation_data
    from app.formats.judgments_file import parse_judgments

    data = load_annotation_data(parse_judgments(RF10.read_bytes()), relevant_from=1,
                                graded=graded, ignore=[-2])
    model = build_aggregator(method, {}, 1)
    model.fit(data)
    competence = model.result(data).annotator_columns.get("competence")
    competence = (np.full(data.n_annotators, np.nan) if competence is None
                  else np.asarray(competence, dtype=np.float64))
    return data, model, competence, np.array([str(a) for a in data.annotator_ids])


def in_memory(method: str, graded: bool, strategy: str, repeat: int) -> float:
    """plan_next on the file's judgments and a fit of them: the computation alone."""
    from models.sampling.rejudge import plan_next

    data, model, competence, names = _fitted(method, graded)
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        plan_next(np.asarray(model.proba_), task=data.task, annotator=data.annotator,
                  label=data.label, competence=competence, annotator_names=names,
                  n=100, strategy=strategy, max_judgments=None, n_annotators=10,
                  random_state=0)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def full_read(database_url: str, ident: int, strategy: str, repeat: int) -> float:
    """The same request's work with nothing kept (``next_tasks`` without the cache), in this
    process against the same database: what every call cost before the cache."""
    from sqlalchemy import create_engine
    from sqlalchemy.orm import Session

    from app.aggregations.tables import Aggregation
    from app.sampling.inputs import NextInputs
    from app.sampling.rejudging import next_tasks

    engine = create_engine(database_url)
    times = []
    gc.collect()
    gc.freeze()  # as the API process does (``app.core.collector.settle``): no full collections over
    # this process's long-lived objects while the rows are read (they doubled the time)
    with Session(engine) as session:
        aggregation = session.get(Aggregation, ident)
        for _ in range(repeat):
            start = time.perf_counter()
            next_tasks(session, aggregation=aggregation, n=100, strategy=strategy, seed=0,
                       inputs=NextInputs(max_fits=0, max_collections=0))
            times.append(time.perf_counter() - start)
    engine.dispose()
    gc.unfreeze()
    return statistics.median(times)


def main() -> None:
    from models.sampling.rejudge import REJUDGE_STRATEGIES

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database", choices=("sqlite", "postgres"), default="sqlite")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--batch", type=int, default=1000)
    parser.add_argument("--methods", default="ds,mace")
    args = parser.parse_args()

    if args.database == "postgres":
        reset_postgres(POSTGRES)
        url = POSTGRES
    else:
        tmp = tempfile.mkdtemp(prefix="bench-next-")
        url = f"sqlite:///{tmp}/crowdqrels.sqlite"
    fits = [(m, False) for m in args.methods.split(",") if m] + [("ds", True)]
    rows = []
    with running_api(url) as (base, _), httpx.Client(base_url=base, timeout=600) as client:
        client.post("/api/v1/collections", json={
            "name": "rf10", "labels": [0, 1, 2], "relevant_from": 1, "ignore": [-2]}
        ).raise_for_status()
        client.post("/api/v1/collections/rf10/judgments/file", content=RF10.read_bytes(),
                    headers={"content-type": "text/tab-separated-values"}).raise_for_status()
        ids = {}
        for method, graded in fits:
            created = client.post("/api/v1/collections/rf10/aggregations", json={
                "method": method, "seed": 1, "graded": graded}).json()
            ids[(method, graded)] = wait(client, created["id"])["id"]
        batch = 0
        for (method, graded), ident in ids.items():
            for strategy in REJUDGE_STRATEGIES:
                url_ = f"/api/v1/aggregations/{ident}/next?n=100&strategy={strategy}&seed=0"
                first = timed(client, url_)
                again = statistics.median(timed(client, url_) for _ in range(args.repeat))
                batch += 1
                judgments = [{"topic": f"bench{batch}", "doc": f"d{i % 300}",
                              "annotator": f"bench-annotator{i % 50}", "label": i % 3}
                             for i in range(args.batch)]
                client.post("/api/v1/collections/rf10/judgments",
                            json={"judgments": judgments}).raise_for_status()
                after = timed(client, url_)
                page = statistics.median(
                    timed(client, f"/ui/aggregations/{ident}/next?n=100&strategy={strategy}")
                    for _ in range(args.repeat))
                memory = in_memory(method, graded, strategy, args.repeat)
                full = full_read(url, ident, strategy, args.repeat)
                rows.append((f"{method}{' graded' if graded else ''}", strategy, first, again,
                             after, page, full, memory))
                print(rows[-1], file=sys.stderr, flush=True)
    print(f"/next?n=100 on RF10 ({args.database}; seconds, median of {args.repeat} where "
          f"repeated; batches of {args.batch} judgments)")
    print("| fit | strategy | first | again | after batch | page | nothing kept | in memory "
          "| nothing kept / again | again / in memory |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for fit, strategy, first, again, after, page, full, memory in rows:
        print(f"| {fit} | {strategy} | {first:.3f} | {again:.3f} | {after:.3f} | {page:.3f} | "
              f"{full:.3f} | {memory:.3f} | {full / again:.1f} | {again / memory:.1f} |")


if __name__ == "__main__":
    main()
