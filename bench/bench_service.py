"""End-to-end figures of the service (the API in its own process, in-process job runner).

    .venv/bin/python bench/bench_service.py [--database postgres|sqlite] [--methods mv,mace,ds,lk]
                                            [--clients 20] [--requests 2000]

1. RF10: upload the file, then per method POST an aggregation, wait for it, download the qrels:
   seconds from POST to qrels downloaded, and the fit's own timings.
2. Dashboards: an aggregation over 10,000 annotators (synthetic, 20,000 tasks x 5 judgments),
   then --clients concurrent clients GET /aggregations/{a}/annotators (sorted by competence,
   50 per page, random pages): latency p50 / p99 and throughput.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx
from _server import RF10, ROOT, reset_postgres, rss_mib, running_api

sys.path.insert(0, str(ROOT))
POSTGRES = "postgresql+psycopg://postgres@127.0.0.1:5432/crowdqrels_bench"


def wait(client: httpx.Client, aggregation_id: int) -> dict:
    while True:
        body = client.get(f"/api/v1/aggregations/{aggregation_id}").json()
        if body["status"] in ("succeeded", "failed", "cancelled"):
            return body
        time.sleep(0.1)


def rf10_end_to_end(client: httpx.Client, methods: list[str]) -> list[tuple[str, dict]]:
    client.post("/api/v1/collections", json={
        "name": "rf10", "labels": [0, 1, 2], "relevant_from": 1, "ignore": [-2]})
    client.post("/api/v1/collections/rf10/judgments/file", content=RF10.read_bytes(),
                headers={"content-type": "text/tab-separated-values"}).raise_for_status()
    rows = []
    for method in methods:
        start = time.perf_counter()
        created = client.post("/api/v1/collections/rf10/aggregations",
                              json={"method": method, "seed": 1}).json()
        done = wait(client, created["id"])
        qrels = client.get(f"/api/v1/aggregations/{created['id']}/qrels")
        seconds = time.perf_counter() - start
        rows.append((method, {"seconds": seconds, "status": done["status"],
                              "timings": done["timings"] or {},
                              "accuracy": (done["evaluation"] or {}).get("accuracy"),
                              "qrels_lines": len(qrels.text.splitlines()),
                              "error": done["error"]}))
    return rows


def annotator_latency(client: httpx.Client, base: str, clients: int,
                      requests: int) -> dict[str, float]:
    from models.synthetic import generate

    with tempfile.TemporaryDirectory() as tmp:
        generate(20_000, 10_000, redundancy=5, alpha=0.0, random_state=3).write(Path(tmp))
        body = (Path(tmp) / "judgments.tsv").read_bytes()
    client.post("/api/v1/collections", json={"name": "crowd10k", "labels": [0, 1]})
    client.post("/api/v1/collections/crowd10k/judgments/file", content=body,
                headers={"content-type": "text/tab-separated-values"}).raise_for_status()
    created = client.post("/api/v1/collections/crowd10k/aggregations",
                          json={"method": "mace", "params": {"n_restarts": 1}}).json()
    done = wait(client, created["id"])
    assert done["status"] == "succeeded", done["error"]
    n_annotators = client.get(f"/api/v1/aggregations/{created['id']}/annotators?limit=1"
                              ).json()["count"]
    latencies: list[float] = []
    lock = threading.Lock()
    per_client = requests // clients

    def worker(seed: int) -> None:
        rng = random.Random(seed)
        mine = []
        with httpx.Client(base_url=base, timeout=60) as c:
            for _ in range(per_client):
                offset = rng.randrange(0, n_annotators, 50)
                start = time.perf_counter()
                r = c.get(f"/api/v1/aggregations/{created['id']}/annotators",
                          params={"sort": "-competence", "limit": 50, "offset": offset})
                mine.append(time.perf_counter() - start)
                r.raise_for_status()
        with lock:
            latencies.extend(mine)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(clients)]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - start
    latencies.sort()
    q = statistics.quantiles(latencies, n=100)
    return {"annotators": n_annotators, "requests": len(latencies), "p50_ms": q[49] * 1000,
            "p99_ms": q[98] * 1000, "rps": len(latencies) / wall}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--database", choices=["postgres", "sqlite"], default="postgres")
    parser.add_argument("--methods", default="mv,mace,ds,lk")
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--requests", type=int, default=2000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        if args.database == "postgres":
            reset_postgres(POSTGRES)
            url = POSTGRES
        else:
            url = f"sqlite:///{tmp}/bench.db"
        with running_api(url) as (base, process), httpx.Client(base_url=base,
                                                               timeout=3600) as client:
            rows = rf10_end_to_end(client, [m for m in args.methods.split(",") if m])
            print(f"RF10 end to end ({args.database}): POST aggregation -> qrels downloaded")
            print("| method | status | seconds | fit (s) | load (s) | store (s) | accuracy |")
            print("|---|---|---|---|---|---|---|")
            for method, r in rows:
                t = r["timings"]
                acc = f"{r['accuracy']:.3f}" if r["accuracy"] is not None else "-"
                print(f"| {method} | {r['status']} | {r['seconds']:.1f} | "
                      f"{t.get('fit_s', float('nan')):.1f} | {t.get('load_s', float('nan')):.1f} | "
                      f"{t.get('store_s', float('nan')):.1f} | {acc} |")
                if r["error"]:
                    print("   error:", r["error"].splitlines()[0])
            lat = annotator_latency(client, base, args.clients, args.requests)
            rss, peak = rss_mib(process.pid)
            print(f"\nannotator listing ({args.database}): {lat['annotators']:,} annotators, "
                  f"{args.clients} concurrent clients, {lat['requests']} requests: "
                  f"p50 {lat['p50_ms']:.1f} ms, p99 {lat['p99_ms']:.1f} ms, "
                  f"{lat['rps']:.0f} requests/s; API RSS {rss:.0f} MiB (peak {peak:.0f} MiB)")


if __name__ == "__main__":
    main()
