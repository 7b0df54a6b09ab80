"""What a job's process costs to start: the job starter (a fork of a preloaded interpreter)
against a fresh interpreter per job (``CROWDQRELS_JOB_STARTER=false``), in the same run.

    .venv/bin/python bench/bench_job_start.py [--fits 20] [--rounds 2]

Two API processes on SQLite (the embedded default, in-process runner), one per setting, are
measured in alternation, round by round, so both see the same machine load. Each round POSTs
``--fits`` majority-vote fits of a small collection one after another and waits for each: the
seconds from POST to succeeded (median), and the CPU seconds the API process and every process
it started spent (``/proc``, the job processes included: a fork's CPU is counted in its
starter's children once reaped).
"""

from __future__ import annotations

import argparse
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


def fits(client: httpx.Client, n: int) -> list[float]:
    seconds = []
    for _ in range(n):
        start = time.perf_counter()
        ident = client.post("/api/v1/collections/b/aggregations", json={"method": "mv"}
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
    args = parser.parse_args()
    results: dict[str, tuple[list[float], float]] = {"starter": ([], 0.0),
                                                     "fresh interpreter": ([], 0.0)}
    with tempfile.TemporaryDirectory() as tmp, \
            running_api(f"sqlite:///{tmp}/a.db", CROWDQRELS_JOB_STARTER="true") as (a, pa), \
            running_api(f"sqlite:///{tmp}/b.db", CROWDQRELS_JOB_STARTER="false") as (b, pb):
        servers = {"starter": (a, pa), "fresh interpreter": (b, pb)}
        clients = {k: httpx.Client(base_url=base, timeout=60) for k, (base, _) in servers.items()}
        for client in clients.values():
            setup(client)
            fits(client, 1)  # the first job: the starter's own start is not a job's
        for _ in range(args.rounds):
            for name, (_, process) in servers.items():
                before = tree_cpu_s(process.pid)
                seconds = fits(clients[name], args.fits)
                time.sleep(0.5)  # the last job's process reaped
                cpu = tree_cpu_s(process.pid) - before
                results[name] = (results[name][0] + seconds, results[name][1] + cpu)
    n = args.fits * args.rounds
    print(f"{n} mv fits of 1,000 judgments each, one after another, per setting "
          f"(load average {os.getloadavg()[0]:.1f})\n")
    print("| job process | POST to succeeded, median (s) | CPU per job (s) |")
    print("|---|---:|---:|")
    for name, (seconds, cpu) in results.items():
        print(f"| {name} | {statistics.median(seconds):.3f} | {cpu / n:.3f} |")
    fork, fresh = results["starter"], results["fresh interpreter"]
    wall = statistics.median(fresh[0]) / statistics.median(fork[0])
    print(f"\nratio fresh / starter: wall {wall:.1f}×, CPU {fresh[1] / max(fork[1], 1e-9):.1f}×")


if __name__ == "__main__":
    main()
