"""Where the test suite's time goes: read the report of ``pytest --durations=0`` and print the
slowest tests, and the totals per directory and per file (set-up, call and tear-down summed).

    python -m pytest -q -n 2 --dist loadfile --durations=0 > durations.txt
    python bench/durations.py durations.txt --top 30

With ``-n 2`` the figures are each test's own time in its worker: their sum is about twice the
wall time. On a loaded machine every figure grows; the ranking is what counts.
"""

from __future__ import annotations

import argparse
import re
from collections import defaultdict
from pathlib import Path

LINE = re.compile(r"^\s*(\d+(?:\.\d+)?)s\s+(setup|call|teardown)\s+(\S+)")


def read(path: Path) -> list[tuple[float, str, str]]:
    """(seconds, phase, test id) for every line of the durations report."""
    rows = []
    for line in path.read_text(errors="replace").splitlines():
        match = LINE.match(line)
        if match:
            rows.append((float(match[1]), match[2], match[3]))
    return rows


def totals(rows: list[tuple[float, str, str]], key) -> list[tuple[float, int, str]]:  # type: ignore[no-untyped-def]
    seconds: dict[str, float] = defaultdict(float)
    tests: dict[str, set[str]] = defaultdict(set)
    for s, _, test in rows:
        seconds[key(test)] += s
        tests[key(test)].add(test)
    return sorted(((s, len(tests[k]), k) for k, s in seconds.items()), reverse=True)


def directory(test: str) -> str:
    return test.split("::")[0].rpartition("/")[0] + "/"


def file(test: str) -> str:
    return test.split("::")[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("report", type=Path, help="the output of pytest --durations=0")
    parser.add_argument("--top", type=int, default=30, help="slowest tests to list")
    parser.add_argument("--files", type=int, default=20, help="slowest files to list")
    args = parser.parse_args()
    rows = read(args.report)
    total = sum(s for s, _, _ in rows)
    print(f"{len({t for _, _, t in rows})} tests, {total:.0f} s in all (the workers' sum)\n")
    print(f"## The {args.top} slowest tests (set-up + call + tear-down)\n")
    print("| s | test |\n|---:|---|")
    for s, _, test in totals(rows, lambda t: t)[:args.top]:
        print(f"| {s:.1f} | `{test}` |")
    print("\n## Per directory\n\n| s | share | tests | directory |\n|---:|---:|---:|---|")
    for s, n, name in totals(rows, directory):
        print(f"| {s:.0f} | {100 * s / total:.1f} % | {n} | `{name}` |")
    print(f"\n## The {args.files} slowest files\n\n| s | tests | file |\n|---:|---:|---|")
    for s, n, name in totals(rows, file)[:args.files]:
        print(f"| {s:.0f} | {n} | `{name}` |")


if __name__ == "__main__":
    main()
