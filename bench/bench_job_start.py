"""What a job's process costs to start: the job starter (a fork of a preloaded interpreter)
against a fresh interpreter per job (``CROWDQRELS_JOB_STARTER=false``), in the same run.

    .venv/bin/python bench/bench_job_start.py [--fits 20] [--rounds 2] [--method lk]

Two API processes on SQLite (the embedded default, in-process runner), one per setting, are
measured in alternation, round by round, so both see the same machine load. Each round POSTs
``--fits`` majority-vote fits of a small collection one after another and waits for each: the
seconds from POST to succeeded (median), and the CPU seconds the API process and every process
it started spent (``/proc``, the job processes included: a fork's CPU is counted in its
starter's children once reaped).

With ``--method`` a GP method (``lk``), a third API process forks GP jobs from the plain starter
(``CROWDQRELS_JOB_STARTER_TENSORFLOW=false``: each job imports TensorFlow after its fork), beside
the default (GP jobs forked from the starter that has imported TensorFlow).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx
from _server import ROOT, running_api

sys.path.insert(0, str(ROOT))


def tree_cpu_s(pid: int) -> float:
    """CPU seconds of a process, its reaped children, and its live descendants."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(entry.name) == pid or _descends(int(entry.name), pid):
            utime, stime, cutime, cstime = (int(x) for x in fields[11:15])
            total += (utime + stime + cutime + cstime) / tick
    return total


def _descends(pid: int, ancestor: int) -> bool:
    while pid > 1:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            return False
        pid = int(fields[1])
        if pid == ancestor:
            return True
    return False


def setup(client: httpx.Client) -> None:
    assert client.post("/api/v1/collections", json={"name": "b", "labels": [0, 1]}
                       ).status_code == 201
    rows = [{"topic": "t", "doc": f"d{i}", "annotator": f"w{j}", "label": (i * j) % 2}
            for i in range(200) for j in range(5)]
    assert client.post("/api/v1/collections/b/judgments", json={"judgments": rows}
                       ).status_code == 201


def fits(client: httpx.Client, n: int, method: str = "mv") -> list[float]:
    seconds = []
    for _ in range(n):
        start = time.perf_counter()
        ident = client.post("/api/v1/collections/b/aggregations", json={"method": method}
                            ).json()["id"]
        while client.get(f"/api/v1/aggregations/{ident}").json()["status"] in ("queued",
                                                                               "running"):
            time.sleep(0.005)
        seconds.append(time.perf_counter() - start)
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fits", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--method", default="mv")
    args = parser.parse_args()
    from models.registry import GP_METHODS

    settings = {"starter": {"CROWDQRELS_JOB_STARTER": "true"},
                "fresh interpreter": {"CROWDQRELS_JOB_STARTER": "false"}}
    if args.method in GP_METHODS:
        settings = {"starter (GP: the TensorFlow starter)": settings["starter"],
                    "starter (GP: the plain starter)": {
                        "CROWDQRELS_JOB_STARTER": "true",
                        "CROWDQRELS_JOB_STARTER_TENSORFLOW": "false"},
                    **settings}
        del settings["starter"]
    results: dict[str, tuple[list[float], float]] = {name: ([], 0.0) for name in settings}
    with tempfile.TemporaryDirectory() as tmp, contextlib.ExitStack() as stack:
        servers = {name: stack.enter_context(running_api(f"sqlite:///{tmp}/{i}.db", **env))
                   for i, (name, env) in enumerate(settings.items())}
        clients = {k: httpx.Client(base_url=base, timeout=120) for k, (base, _) in servers.items()}
        for client in clients.values():
            setup(client)
            fits(client, 1, args.method)  # the first job: a starter's own start is not a job's
        for _ in range(args.rounds):
            for name, (_, process) in servers.items():
                before = tree_cpu_s(process.pid)
                seconds = fits(clients[name], args.fits, args.method)
                time.sleep(0.5)  # the last job's process reaped
                cpu = tree_cpu_s(process.pid) - before
                results[name] = (results[name][0] + seconds, results[name][1] + cpu)
    n = args.fits * args.rounds
    print(f"{n} {args.method} fits of 1,000 judgments each, one after another, per setting "
          f"(load average {os.getloadavg()[0]:.1f})\n")
    print("| job process | POST to succeeded, median (s) | CPU per job (s) |")
    print("|---|---:|---:|")
    for name, (seconds, cpu) in results.items():
        print(f"| {name} | {statistics.median(seconds):.3f} | {cpu / n:.3f} |")
    names = list(results)
    fork, fresh = results[names[0]], results["fresh interpreter"]
    wall = statistics.median(fresh[0]) / statistics.median(fork[0])
    print(f"\nratio fresh / {names[0]}: wall {wall:.1f}×, "
          f"CPU {fresh[1] / max(fork[1], 1e-9):.1f}×")


if __name__ == "__main__":
    main()
