"""What refusing NUL costs a JSON ingest request: the RefuseNul middleware (app/api/nul.py) in
front of an ASGI app that reads the body whole, as FastAPI does, against the same app without it;
beside it, the json.loads of the same body that FastAPI does anyway (the peer of the ratio).

    .venv/bin/python bench/bench_nul.py [--judgments 1000 10000] [--repeat 2000]

Bodies are JSON ingest requests ({"judgments": [...]}, RF10-like ids) delivered in chunks of
64 KiB, as uvicorn hands them on, in three kinds, none with a NUL: plain ASCII ids; every
annotator id with a non-ASCII character (sent as the escape \\u00e9, so every chunk holds a
backslash); every document id with the text "\\u0000" (an escaped backslash, then u0000: the
worst case, which makes the whole body go through the regular expression). In process, no
server, no database.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

CHUNK = 65_536


KINDS = ("plain", "escapes", "look-alike")


def body_of(n: int, kind: str) -> bytes:
    name = "w\u00e9{}" if kind == "escapes" else "w{}"
    doc = "clueweb09-en0000-{:05d}-{:05d}" + ("\\u0000" if kind == "look-alike" else "")
    rows = [{"topic": str(20000 + i % 100), "doc": doc.format(i, i % 997),
             "annotator": name.format(i % 700), "label": i % 3} for i in range(n)]
    return json.dumps({"judgments": rows}, ensure_ascii=True).encode()


async def reader(scope, receive, send) -> None:  # type: ignore[no-untyped-def]
    """An endpoint that reads the whole body, then answers 200."""
    parts = []
    while True:
        message = await receive()
        parts.append(message.get("body", b""))
        if not message.get("more_body", False):
            break
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b""})


async def one(app, body: bytes) -> int:  # type: ignore[no-untyped-def]
    chunks = [body[i:i + CHUNK] for i in range(0, len(body), CHUNK)] or [b""]
    messages = [{"type": "http.request", "body": c, "more_body": i < len(chunks) - 1}
                for i, c in enumerate(chunks)]
    status = 0

    async def receive():  # type: ignore[no-untyped-def]
        return messages.pop(0)

    async def send(message) -> None:  # type: ignore[no-untyped-def]
        nonlocal status
        if message["type"] == "http.response.start":
            status = message["status"]

    scope = {"type": "http", "path": "/api/v1/collections/c/judgments",
             "query_string": b"", "headers": [(b"content-type", b"application/json")]}
    await app(scope, receive, send)
    return status


def timed(app, body: bytes, repeat: int) -> float:  # type: ignore[no-untyped-def]
    """Median µs per request over ``repeat`` requests."""
    async def run() -> list[float]:
        out = []
        for _ in range(repeat):
            t = time.perf_counter()
            assert await one(app, body) == 200
            out.append(time.perf_counter() - t)
        return out
    return statistics.median(asyncio.run(run())) * 1e6


def main() -> None:
    from app.api.nul import RefuseNul

    parser = argparse.ArgumentParser()
    parser.add_argument("--judgments", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--repeat", type=int, default=2000)
    args = parser.parse_args()
    guarded = RefuseNul(reader)
    print("| judgments | body | kind | without µs | with µs | cost µs | json.loads µs "
          "| cost / json.loads |")
    print("|---:|---:|---|---:|---:|---:|---:|---:|")
    for n in args.judgments:
        for kind in KINDS:
            body = body_of(n, kind)
            repeat = max(50, args.repeat * 1000 // n)
            bare, with_mw = [], []
            for _ in range(3):  # alternate, so both see the same machine
                bare.append(timed(reader, body, repeat))
                with_mw.append(timed(guarded, body, repeat))
            b, w = min(bare), min(with_mw)
            loads = []
            for _ in range(repeat):
                t = time.perf_counter()
                json.loads(body)
                loads.append(time.perf_counter() - t)
            j = statistics.median(loads) * 1e6
            print(f"| {n:,} | {len(body) / 1024:,.0f} KiB | {kind} "
                  f"| {b:,.1f} | {w:,.1f} | {w - b:,.1f} | {j:,.0f} | {(w - b) / j:.3f} |")


if __name__ == "__main__":
    main()
