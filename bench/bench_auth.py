"""Access control's cost: ingest throughput with auth on vs off (same run), and the per-request
cost of a key check.

    .venv/bin/python bench/bench_auth.py [--batches 40] [--requests 400] [--repeat 3]

1. In process: the auth middleware in front of an empty ASGI app, key already verified (the
   cache), against no middleware; and one cold verification (database look-up + Argon2id).
2. Over HTTP, two API processes at once (auth off, auth required with a key), each on its own
   PostgreSQL database, measured in alternation request by request so both see the same load:
   GET /collections/{c} latency, JSON ingestion (batches of 1,000 judgments) and the RF10 file
   upload (best of --repeat).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time

import httpx
from _server import RF10, ROOT, reset_postgres, running_api

sys.path.insert(0, str(ROOT))

POSTGRES = "postgresql+psycopg://postgres@127.0.0.1:5432/crowdqrels_bench_auth"


def middleware_overhead(url: str, key: str, n: int = 20_000) -> dict[str, float]:
    from app.auth.keys import KeyVerifier
    from app.auth.middleware import AuthMiddleware
    from app.core.config import Settings

    async def empty(scope, receive, send) -> None:  # type: ignore[no-untyped-def]
        return None

    verifier = KeyVerifier(url, cache_s=30)
    cold_start = time.perf_counter()
    assert verifier.verify_key(key) is not None
    cold = time.perf_counter() - cold_start
    uncached = KeyVerifier(url, cache_s=0)
    colds = []
    for _ in range(5):
        start = time.perf_counter()
        uncached.verify_key(key)
        colds.append(time.perf_counter() - start)
    guarded = AuthMiddleware(empty, settings=Settings(database_url=url, auth="required"),
                             verifier=verifier)
    headers = [(b"authorization", f"Bearer {key}".encode()), (b"host", b"x")]

    async def run(app) -> float:  # type: ignore[no-untyped-def]
        start = time.perf_counter()
        for _ in range(n):
            await app({"type": "http", "path": "/api/v1/collections", "headers": headers,
                       "query_string": b""}, None, None)
        return (time.perf_counter() - start) / n

    bare = min(asyncio.run(run(empty)) for _ in range(3))
    checked = min(asyncio.run(run(guarded)) for _ in range(3))
    return {"cached_us": (checked - bare) * 1e6, "cold_first_ms": cold * 1e3,
            "cold_median_ms": statistics.median(colds) * 1e3}


def http_figures(bases: dict[str, tuple[str, dict[str, str]]], *, batches: int,
                 requests: int, repeat: int) -> dict[str, dict[str, float]]:
    """Both API processes measured in alternation, request by request: same machine load."""
    clients = {mode: httpx.Client(base_url=base, timeout=600, headers=headers)
               for mode, (base, headers) in bases.items()}
    latencies: dict[str, list[float]] = {mode: [] for mode in clients}
    json_s = dict.fromkeys(clients, 0.0)
    files: dict[str, list[float]] = {mode: [] for mode in clients}
    data = RF10.read_bytes()
    try:
        for client in clients.values():
            client.post("/api/v1/collections", json={
                "name": "c", "labels": [0, 1, 2], "relevant_from": 1, "ignore": [-2]
            }).raise_for_status()
            for _ in range(20):  # warm up
                client.get("/api/v1/collections/c").raise_for_status()
        for _ in range(requests):
            for mode, client in clients.items():
                start = time.perf_counter()
                client.get("/api/v1/collections/c").raise_for_status()
                latencies[mode].append(time.perf_counter() - start)
        for b in range(batches):
            body = {"judgments": [{"topic": f"t{b}", "doc": f"d{i}", "annotator": f"w{i % 50}",
                                   "label": i % 3} for i in range(1000)]}
            for mode, client in clients.items():
                start = time.perf_counter()
                client.post("/api/v1/collections/c/judgments", json=body).raise_for_status()
                json_s[mode] += time.perf_counter() - start
        for i in range(repeat):
            for mode, client in clients.items():
                name = f"rf10-{i}"
                client.post("/api/v1/collections", json={
                    "name": name, "labels": [0, 1, 2], "relevant_from": 1, "ignore": [-2]
                }).raise_for_status()
                start = time.perf_counter()
                client.post(f"/api/v1/collections/{name}/judgments/file", content=data, headers={
                    "content-type": "text/tab-separated-values"}).raise_for_status()
                files[mode].append(time.perf_counter() - start)
    finally:
        for client in clients.values():
            client.close()
    n = data.count(b"\n") - 1
    return {mode: {"get_ms": statistics.median(latencies[mode]) * 1e3,
                   "json_per_s": batches * 1000 / json_s[mode],
                   "file_per_s": n / min(files[mode])} for mode in clients}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--batches", type=int, default=40)
    parser.add_argument("--requests", type=int, default=400)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    reset_postgres(POSTGRES)
    from app.auth import keys
    from app.core.db import get_sessionmaker, upgrade_database

    upgrade_database(POSTGRES)
    with get_sessionmaker(POSTGRES)() as session:
        _, key = keys.create_key(session, name="bench", scope="admin")

    overhead = middleware_overhead(POSTGRES, key)
    # Two databases, so that both processes start from the same empty state.
    other = POSTGRES + "_off"
    reset_postgres(other)
    with running_api(other, CROWDQRELS_AUTH="off") as (off, _), \
            running_api(POSTGRES, CROWDQRELS_AUTH="required") as (on, _):
        results = http_figures({"off": (off, {}),
                                "required": (on, {"Authorization": f"Bearer {key}"})},
                               batches=args.batches, requests=args.requests,
                               repeat=args.repeat)
    print(f"key check in the middleware, key cached: {overhead['cached_us']:.1f} µs per request")
    print(f"cold verification (DB look-up + Argon2id): first {overhead['cold_first_ms']:.1f} ms, "
          f"median {overhead['cold_median_ms']:.1f} ms")
    print("| auth | GET /collections/{c} median (ms) | JSON ingest (judgments/s, batches of "
          f"1,000) | RF10 file (judgments/s, best of {args.repeat}) |")
    print("|---|---|---|---|")
    for mode, r in results.items():
        print(f"| {mode} | {r['get_ms']:.2f} | {r['json_per_s']:,.0f} | {r['file_per_s']:,.0f} |")


if __name__ == "__main__":
    main()
