"""The annotator listing under load, measured with wrk against /healthz in the same run.

    .venv/bin/python bench/bench_listing.py [--database sqlite|postgres] [--duration 15]
                                            [--connections 20] [--rounds 2]

The API runs in its own process (uvicorn, one worker). A collection of 10,000 annotators
(synthetic: 20,000 tasks x 5 judgments) gets a MACE fit; then wrk (Debian package ``wrk``;
``apt-get install -y wrk``) with ``--connections`` connections on 2 threads requests, in
alternating rounds, ``/healthz`` and the annotator listing sorted by competence, 50 a page, at
random pages (bench/wrk/report.lua). Reported: requests/s, p50 and p99 of each, their ratios
(targets: listing p99 <= 1.5x and requests/s >= 0.6x those of /healthz; p99 < 50 ms on
PostgreSQL), the server-side time of each dashboard page at that size (median of 5), and each
page's first request in a restarted API process (at once, and 2 s after it started).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
from _server import ROOT, reset_postgres, running_api

sys.path.insert(0, str(ROOT))
POSTGRES = os.environ.get("CROWDQRELS_BENCH_POSTGRES_URL",
                          "postgresql+psycopg://postgres@127.0.0.1:5432/crowdqrels_bench_listing")
LUA = Path(__file__).resolve().parent / "wrk" / "report.lua"


def seed(client: httpx.Client, n_annotators: int) -> int:
    from models.synthetic import generate

    with tempfile.TemporaryDirectory() as tmp:
        generate(2 * n_annotators, n_annotators, redundancy=5, alpha=0.0,
                 random_state=3).write(Path(tmp))
        body = (Path(tmp) / "judgments.tsv").read_bytes()
        gold = (Path(tmp) / "gold.qrels").read_bytes()
    client.post("/api/v1/collections", json={"name": "crowd10k", "labels": [0, 1]})
    client.post("/api/v1/collections/crowd10k/judgments/file", content=body,
                headers={"content-type": "text/tab-separated-values"}).raise_for_status()
    client.put("/api/v1/collections/crowd10k/gold", content=gold).raise_for_status()
    created = client.post("/api/v1/collections/crowd10k/aggregations",
                          json={"method": "mace", "params": {"n_restarts": 1}}).json()
    while True:
        body_ = client.get(f"/api/v1/aggregations/{created['id']}").json()
        if body_["status"] in ("succeeded", "failed", "cancelled"):
            assert body_["status"] == "succeeded", body_["error"]
            return int(created["id"])
        time.sleep(0.2)


def wrk(base: str, *, path: str | None, n_rows: int, duration: int,
        connections: int) -> dict[str, float]:
    env = {**os.environ, "LISTING_PATH": path or "", "N_ROWS": str(n_rows), "PAGE_SIZE": "50"}
    url = base + ("/healthz" if path is None else "/")
    out = subprocess.run(["wrk", "-t2", f"-c{connections}", f"-d{duration}s", "--timeout", "10s",
                          "-s", str(LUA), url], env=env, capture_output=True, text=True,
                         check=True).stdout
    line = next(x for x in out.splitlines() if x.startswith("WRK_JSON "))
    r = json.loads(line.removeprefix("WRK_JSON "))
    assert r["non_2xx"] == 0 and r["socket_errors"] == 0, out
    return {"rps": r["requests"] / (r["duration_us"] / 1e6), "p50_ms": r["p50_us"] / 1000,
            "p99_ms": r["p99_us"] / 1000, "requests": r["requests"]}


def page_urls(client: httpx.Client, aggregation_id: int) -> dict[str, str]:
    annotator = client.get(f"/api/v1/aggregations/{aggregation_id}/annotators?limit=1"
                           ).json()["data"][0]["annotator"]
    task = client.get(f"/api/v1/aggregations/{aggregation_id}/tasks?limit=1"
                      ).json()["data"][0]["task_id"]
    return {
        "/": "/ui/",  # the collections page (/ redirects here)
        "collection": "/ui/collections/crowd10k",
        "aggregation": f"/ui/aggregations/{aggregation_id}",
        "annotator": f"/ui/collections/crowd10k/annotators/{annotator}",
        "task": f"/ui/aggregations/{aggregation_id}/tasks/{task}",
        "comparison": "/ui/collections/crowd10k/comparison",
    }


def first_requests(base: str, pages: dict[str, str], *, pause_s: float) -> dict[str, float]:
    """The first request of every page in a fresh API process, ``pause_s`` after it answered
    /healthz (0: at once, racing the start-up warm-up; the pages in the order a person opens
    them)."""
    time.sleep(pause_s)
    out = {}
    with httpx.Client(base_url=base, timeout=3600) as client:
        for name, url in pages.items():
            start = time.perf_counter()
            client.get(url).raise_for_status()
            out[name] = (time.perf_counter() - start) * 1000
    return out


def page_times(client: httpx.Client, aggregation_id: int) -> dict[str, float]:
    pages = page_urls(client, aggregation_id)
    out = {}
    for name, url in pages.items():
        times = []
        for _ in range(6):
            start = time.perf_counter()
            client.get(url).raise_for_status()
            times.append((time.perf_counter() - start) * 1000)
        out[name] = statistics.median(times[1:])  # the first builds the cached orderings
        out[name + " (first)"] = times[0]
    # New judgments change the collection's distributions: its page computes them again once.
    client.post("/api/v1/collections/crowd10k/judgments", json={"judgments": [
        {"topic": "extra", "doc": f"x{i}", "annotator": "late-worker", "label": i % 2}
        for i in range(100)]}).raise_for_status()
    start = time.perf_counter()
    client.get(pages["collection"]).raise_for_status()
    out["collection (first after 100 new judgments)"] = (time.perf_counter() - start) * 1000
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--database", choices=["sqlite", "postgres"], default="sqlite")
    parser.add_argument("--annotators", type=int, default=10_000)
    parser.add_argument("--duration", type=int, default=15)
    parser.add_argument("--connections", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    if shutil.which("wrk") is None:
        sys.exit("bench_listing: needs wrk (apt-get install -y wrk)")
    with tempfile.TemporaryDirectory() as tmp:
        if args.database == "postgres":
            reset_postgres(POSTGRES)
            url = POSTGRES
        else:
            url = f"sqlite:///{tmp}/bench.db"
        with running_api(url) as (base, _), httpx.Client(base_url=base, timeout=3600) as client:
            a = seed(client, args.annotators)
            n = client.get(f"/api/v1/aggregations/{a}/annotators?limit=1").json()["count"]
            path = f"/api/v1/aggregations/{a}/annotators?sort=-competence&limit=50"
            pages = page_times(client, a)
            results: dict[str, list[dict[str, float]]] = {"healthz": [], "listing": []}
            for _ in range(args.rounds):
                results["healthz"].append(wrk(base, path=None, n_rows=n, duration=args.duration,
                                              connections=args.connections))
                results["listing"].append(wrk(base, path=path, n_rows=n,
                                              duration=args.duration,
                                              connections=args.connections))
            urls = page_urls(client, a)
        fresh = {}
        for pause in (0.0, 2.0):  # a restarted process: its first request of every page
            with running_api(url) as (base, _):
                fresh[pause] = first_requests(base, urls, pause_s=pause)
    print(f"annotator listing vs /healthz ({args.database}): {n:,} annotators, sorted by "
          f"competence, 50 a page, random pages; wrk -t2 -c{args.connections} "
          f"-d{args.duration}s, {args.rounds} alternating rounds")
    print("| round | endpoint | requests/s | p50 (ms) | p99 (ms) |")
    print("|---|---|---|---|---|")
    for i in range(args.rounds):
        for name in ("healthz", "listing"):
            r = results[name][i]
            print(f"| {i + 1} | {name} | {r['rps']:.0f} | {r['p50_ms']:.1f} | {r['p99_ms']:.1f} |")
    h = {k: statistics.median(r[k] for r in results["healthz"]) for k in ("rps", "p99_ms")}
    L = {k: statistics.median(r[k] for r in results["listing"]) for k in ("rps", "p99_ms")}
    print(f"\nmedian of rounds: listing p99 {L['p99_ms']:.1f} ms = "
          f"{L['p99_ms'] / h['p99_ms']:.2f}x /healthz ({h['p99_ms']:.1f} ms; target <= 1.5x); "
          f"listing {L['rps']:.0f} requests/s = {L['rps'] / h['rps']:.2f}x /healthz "
          f"({h['rps']:.0f}/s; target >= 0.6x)")
    print("\ndashboard pages, server round trip (median of 5 after the first; first in brackets):")
    for name in ("/", "collection", "aggregation", "annotator", "task", "comparison"):
        print(f"  {name}: {pages[name]:.0f} ms ({pages[name + ' (first)']:.0f} ms)")
    print(f"  collection, first render after 100 new judgments: "
          f"{pages['collection (first after 100 new judgments)']:.0f} ms")
    print("\na fresh API process on the same database, each page's first request "
          "(at once after /healthz answers | 2 s later):")
    for name in urls:
        print(f"  {name}: {fresh[0.0][name]:.0f} ms | {fresh[2.0][name]:.0f} ms")


if __name__ == "__main__":
    main()
