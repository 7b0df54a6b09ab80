"""The re-judging loop's refit through the real API: a fit warm-started from the previous one
(``"warm_start": <id>``) against a cold fit on the same judgments, on RF10, in the same run.

    .venv/bin/python bench/bench_refit_api.py [--database sqlite|postgres] [--repeat 3]
                                              [--methods ds,mace] [--batch-share 0.01]

The API runs in its own process (uvicorn) with the inline runner (each fit in a fresh child
interpreter, as deployed). RF10 goes into a collection of scale 0/1/2 (relevant from 1, -2
ignored; the fits are binary): 99 % of its judgment rows (a random order, seed 0), one cold
fit per method, then the last 1 %; then
``--repeat`` times, alternating, a cold refit and a warm refit from that first fit (unchecked:
1 % of growth is below the 10 % at which a warm refit also runs the cold fit, and the bench
asserts it did not). Each time is the wall time from the POST to the first GET that reports
``succeeded`` (polled every 10 ms); the fit's own stages (``timings``: load, fit, store) are
shown beside it (a warm fit's fit includes rebuilding its start from the stored result,
``timings.warm_start_s``, shown too), and the rest: the child interpreter's start, the job's
bookkeeping and the polling. Prints a markdown table; never part of the test run.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import statistics
import sys
import tempfile
import time

import httpx
import numpy as np
from _server import RF10, ROOT, reset_postgres, running_api, running_worker

sys.path.insert(0, str(ROOT))
POSTGRES = os.environ.get("CROWDQRELS_BENCH_POSTGRES_URL",
                          "postgresql+psycopg://postgres@127.0.0.1:5432/crowdqrels_bench_refit")
TSV = {"content-type": "text/tab-separated-values"}


def timed_fit(client: httpx.Client, body: dict) -> tuple[float, dict]:
    """Seconds from the POST to the first GET that reports the fit finished, and the fit."""
    start = time.perf_counter()
    response = client.post("/api/v1/collections/rf10/aggregations", json=body)
    response.raise_for_status()
    ident = response.json()["id"]
    while True:
        fit = client.get(f"/api/v1/aggregations/{ident}").json()
        if fit["status"] in ("succeeded", "failed", "cancelled"):
            seconds = time.perf_counter() - start
            assert fit["status"] == "succeeded", fit["error"]
            return seconds, fit
        time.sleep(0.01)


def stages(runs: list[tuple[float, dict]]) -> str:
    """Median load / fit / store seconds of the fits (``timings``; a warm fit's fit includes
    rebuilding its start, ``warm_start_s``) and the rest of the wall time (the child
    interpreter's start, the job's bookkeeping, the polling)."""
    t = [f["timings"] for _, f in runs]
    parts = [statistics.median(x[k] for x in t) for k in ("load_s", "fit_s", "store_s")]
    rest = statistics.median(s - sum(f["timings"][k] for k in ("load_s", "fit_s", "store_s"))
                             for s, f in runs)
    return " / ".join(f"{v:.2f}" for v in [*parts, rest])


def ingest(client: httpx.Client, header: str, lines: list[str]) -> None:
    body = io.StringIO()
    body.write(header)
    body.writelines(lines)
    response = client.post("/api/v1/collections/rf10/judgments/file",
                           content=body.getvalue().encode(), headers=TSV, timeout=600)
    response.raise_for_status()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--database", choices=("sqlite", "postgres"), default="sqlite")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--methods", default="ds,mace")
    parser.add_argument("--batch-share", type=float, default=0.01)
    parser.add_argument("--jobs", choices=("inline", "celery"), default="inline",
                        help="inline: each fit in a fresh child interpreter of the API; celery: "
                             "fits in a Celery worker that stays up (PostgreSQL; a Redis broker, "
                             "CROWDQRELS_BENCH_BROKER_URL, default redis://127.0.0.1:6379/9)")
    args = parser.parse_args()

    with open(RF10) as f:
        header, *lines = f.readlines()
    order = np.random.default_rng(0).permutation(len(lines))
    batch = int(round(args.batch_share * len(lines)))
    first = [lines[i] for i in np.sort(order[:-batch])]
    last = [lines[i] for i in np.sort(order[-batch:])]

    with tempfile.TemporaryDirectory() as tmp:
        if args.database == "postgres":
            url = POSTGRES
            reset_postgres(url)
        else:
            url = f"sqlite:///{tmp}/bench.db"
        jobs = {"CROWDQRELS_JOBS": args.jobs}
        if args.jobs == "celery":
            jobs["CROWDQRELS_BROKER_URL"] = os.environ.get("CROWDQRELS_BENCH_BROKER_URL",
                                                           "redis://127.0.0.1:6379/9")
        with running_api(url, **jobs) as (base, _), \
                (running_worker(url, **jobs) if args.jobs == "celery"
                 else contextlib.nullcontext()), \
                httpx.Client(base_url=base, timeout=600) as client:
            client.post("/api/v1/collections", json={
                "name": "rf10", "labels": [0, 1, 2], "relevant_from": 1, "ignore": [-2],
            }).raise_for_status()
            ingest(client, header, first)
            methods = args.methods.split(",")
            previous = {m: timed_fit(client, {"method": m, "seed": 0})[1] for m in methods}
            ingest(client, header, last)
            print(f"RF10 ({args.database}, {args.jobs} jobs): {len(first):,} judgment rows, "
                  f"one cold fit per method, then {len(last):,} more ({args.batch_share:.0%}); "
                  f"{args.repeat} refits each, alternating\n")
            print("| method | cold POST→succeeded (s) | warm POST→succeeded (s) | warm / cold "
                  "| cold load / fit / store / rest (s) | warm load / fit / store / rest (s) "
                  "| of which rebuilding the start (s) | accuracy cold | accuracy warm |")
            print("|---|---:|---:|---:|---|---|---:|---:|---:|")
            for m in methods:
                runs: dict[str, list[tuple[float, dict]]] = {"cold": [], "warm": []}
                for _ in range(args.repeat):
                    runs["cold"].append(timed_fit(client, {"method": m, "seed": 0}))
                    runs["warm"].append(timed_fit(client, {
                        "method": m, "seed": 0, "warm_start": previous[m]["id"]}))
                for _, fit in runs["warm"]:
                    assert fit["warm_start"] == previous[m]["id"]
                    assert fit["cold_checked"] is False and fit["info"]["start"] == "warm"
                cold = statistics.median(s for s, _ in runs["cold"])
                warm = statistics.median(s for s, _ in runs["warm"])
                accuracy = [runs[k][0][1]["evaluation"]["accuracy"] for k in ("cold", "warm")]
                rebuild = statistics.median(f["timings"]["warm_start_s"] for _, f in runs["warm"])
                print(f"| {m} | {cold:.2f} | {warm:.2f} | {warm / cold:.2f} "
                      f"| {stages(runs['cold'])} | {stages(runs['warm'])} | {rebuild:.3f} "
                      f"| {accuracy[0]:.4f} | {accuracy[1]:.4f} |")


if __name__ == "__main__":
    main()
