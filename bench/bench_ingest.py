"""Ingest the whole TREC RF10 file through the HTTP file endpoint, into PostgreSQL and SQLite.

    .venv/bin/python bench/bench_ingest.py [--repeat 3] [--postgres URL]
        [--tree main=/work/main --tree branch=.]

Prints seconds and judgments/s per upload (best of --repeat, each into an empty collection) and
the API process' resident memory after the uploads (current and peak). With ``--tree`` each
checkout's API is measured in turn in the same run (peers under the same load).
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

import httpx
from _server import RF10, ROOT, reset_postgres, rss_mib, running_api

POSTGRES = "postgresql+psycopg://postgres@127.0.0.1:5432/crowdqrels_bench"


def bench(database_url: str, repeat: int, root: Path = ROOT) -> dict[str, float]:
    data = RF10.read_bytes()
    n = data.count(b"\n") - 1
    with running_api(database_url, root) as (base, process), httpx.Client(base_url=base,
                                                                     timeout=600) as client:
        _, idle_peak = rss_mib(process.pid)
        times = []
        for i in range(repeat):
            name = f"rf10-{i}"
            client.post("/api/v1/collections", json={
                "name": name, "labels": [0, 1, 2], "relevant_from": 1, "ignore": [-2]
            }).raise_for_status()
            start = time.perf_counter()
            response = client.post(f"/api/v1/collections/{name}/judgments/file", content=data,
                                   headers={"content-type": "text/tab-separated-values"})
            times.append(time.perf_counter() - start)
            response.raise_for_status()
            assert response.json()["judgments"] == n
        rss, peak = rss_mib(process.pid)
    best = min(times)
    return {"judgments": n, "seconds": best, "per_s": n / best, "rss_mib": rss,
            "peak_mib": peak, "idle_mib": idle_peak}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--postgres", default=POSTGRES, help="a database this script may drop")
    parser.add_argument("--tree", action="append", default=[],
                        help="NAME=PATH of a checkout to measure (repeatable; default: this one)")
    args = parser.parse_args()
    trees = [(t.split("=", 1)[0], Path(t.split("=", 1)[1]).resolve()) for t in args.tree] or [
        ("", ROOT)]
    rows = []
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        for tree, root in trees:
            reset_postgres(args.postgres)
            for name, url in (("PostgreSQL", args.postgres),
                              ("SQLite", f"sqlite:///{tmp}/{tree or 'bench'}.db")):
                rows.append((f"{tree} {name}".strip(), bench(url, args.repeat, root)))
    print(f"1-minute load average {load:.1f} before, {os.getloadavg()[0]:.1f} after\n")
    print(f"| database | judgments | seconds (best of {args.repeat}) | judgments/s "
          "| API RSS after (MiB) | API peak RSS (MiB) |")
    print("|---|---|---|---|---|---|")
    for name, r in rows:
        print(f"| {name} | {r['judgments']:,} | {r['seconds']:.2f} | {r['per_s']:,.0f} "
              f"| {r['rss_mib']:.0f} | {r['peak_mib']:.0f} |")


if __name__ == "__main__":
    main()
