"""CPU seconds of every test, whatever else the machine is doing: a pytest plugin and its report.

Wall-clock durations (``--durations``, ``bench/durations.py``) grow with the machine's load; CPU
seconds hardly do. With root and the cgroup-v1 ``cpuacct`` controller (``/sys/fs/cgroup/cpuacct``),
each pytest-xdist worker moves itself into a cgroup of its own, so a test's CPU is that of the
worker's whole process tree: the job processes it forks, the servers, Celery workers and browsers
it starts. Without the controller it falls back to ``getrusage`` of the worker and the children
it has waited for (a job process that outlives its test is then missed).

    PYTHONPATH=bench python -m pytest -q -n 3 --dist loadfile --no-loadscope-reorder -p suite_cpu
    # (writes /tmp/suite-cpu; make test's options, so the costs are those of its schedule)
    python bench/suite_cpu.py /tmp/suite-cpu --top 30
    python bench/suite_cpu.py /tmp/suite-cpu --write-costs tests/file_costs.tsv

``--write-costs`` writes each test file's seconds (its tests' wall time summed) for the suite's
scheduler: ``tests/conftest.py`` hands the costliest files to the workers first.

``SUITE_CPU_DIR`` moves the output. Each worker writes ``<worker>.tsv``: test id, wall s, CPU s.
``SUITE_CPU_GROUP`` names the cgroups (``<group>-gw0``; default ``crowdqrels-suite``): two runs at
once must use two names, or each counts the other's CPU too (seen: 149 CPU s for a test of 70).
"""

from __future__ import annotations

import argparse
import os
import resource
import time
from collections import defaultdict
from pathlib import Path

import pytest

CGROUPS = Path("/sys/fs/cgroup/cpuacct")
OUT = Path(os.environ.get("SUITE_CPU_DIR", "/tmp/suite-cpu"))
_state: dict[str, object] = {}


def _rusage_cpu() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def pytest_configure(config: pytest.Config) -> None:
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if worker is None and config.getoption("numprocesses", default=None):
        return  # the xdist controller runs no test
    worker = worker or "main"
    OUT.mkdir(parents=True, exist_ok=True)
    # SUITE_CPU_GROUP names the cgroups: two runs at once under one name count each other's CPU.
    group = CGROUPS / f"{os.environ.get('SUITE_CPU_GROUP', 'crowdqrels-suite')}-{worker}"
    try:
        group.mkdir(exist_ok=True)
        (group / "cgroup.procs").write_text(str(os.getpid()))
        usage = group / "cpuacct.usage"
        _state["cpu"] = lambda: int(usage.read_text()) / 1e9
    except OSError:
        _state["cpu"] = _rusage_cpu
    _state["out"] = (OUT / f"{worker}.tsv").open("a")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None):  # type: ignore[no-untyped-def]
    cpu = _state.get("cpu")
    if cpu is None:
        yield
        return
    c0, w0 = cpu(), time.perf_counter()  # type: ignore[operator]
    yield
    c1, w1 = cpu(), time.perf_counter()  # type: ignore[operator]
    out = _state["out"]
    out.write(f"{item.nodeid}\t{w1 - w0:.3f}\t{c1 - c0:.3f}\n")  # type: ignore[attr-defined]
    out.flush()  # type: ignore[attr-defined]


def main() -> None:
    parser = argparse.ArgumentParser(description="CPU seconds per test, file and directory")
    parser.add_argument("folder", type=Path, nargs="?", default=OUT)
    parser.add_argument("--top", type=int, default=20)
    parser.add_argument("--write-costs", type=Path, metavar="TSV",
                        help="write each file's wall seconds (files over 1 s), costliest first")
    args = parser.parse_args()
    rows = []
    for path in sorted(args.folder.glob("*.tsv")):
        for line in path.read_text().splitlines():
            test, wall, cpu = line.rsplit("\t", 2)
            rows.append((test, float(wall), float(cpu)))
    wall = sum(r[1] for r in rows)
    cpu = sum(r[2] for r in rows)
    print(f"{len(rows)} tests: {cpu:.0f} CPU s, {wall:.0f} s of the workers' wall time\n")
    print(f"| CPU s | wall s | test (the {args.top} costliest) |\n|---:|---:|---|")
    for test, w, c in sorted(rows, key=lambda r: -r[2])[:args.top]:
        print(f"| {c:.1f} | {w:.1f} | `{test}` |")
    files = per_file(rows, column=2)
    print(f"\n| CPU s | share | file (the {args.top} costliest) |\n|---:|---:|---|")
    for name, c in sorted(files.items(), key=lambda kv: -kv[1])[:args.top]:
        print(f"| {c:.1f} | {100 * c / cpu:.1f} % | `{name}` |")
    if args.write_costs:
        write_costs(rows, args.write_costs)


def per_file(rows: list[tuple[str, float, float]], column: int) -> dict[str, float]:
    """Each test file's sum of one column of the rows (1: wall s, 2: CPU s)."""
    files: dict[str, float] = defaultdict(float)
    for row in rows:
        files[row[0].split("::")[0]] += row[column]
    return files


def write_costs(rows: list[tuple[str, float, float]], path: Path) -> None:
    """Each file's wall seconds, costliest first: what a worker spends on it, waits included
    (a server starting, PostgreSQL's share of a COPY), which is what the schedule must spread."""
    files = per_file(rows, column=1)
    lines = [f"{name}\t{w:.1f}" for name, w in sorted(files.items(), key=lambda kv: -kv[1])
             if w >= 1.0]
    header = ("# test file, seconds: written by `python bench/suite_cpu.py DIR --write-costs "
              "tests/file_costs.tsv`;\n# read by tests/conftest.py to start the costliest files "
              "first (a stale or missing line only changes the order)\n")
    path.write_text(header + "\n".join(lines) + "\n")
    print(f"\n{len(lines)} files' costs written to {path}")


if __name__ == "__main__":
    main()
