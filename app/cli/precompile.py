"""``crowdqrels precompile``: compile the numba kernels into their on-disk cache once, at install,
so that the first command or fit job after an install runs at the speed of every later one.

The kernels are compiled lazily for the argument types of their first call and cached beside
their source (``cache=True``; ``NUMBA_CACHE_DIR`` elsewhere). Without this step the first run
after an install pays the compilation: RF10 through ``aggregate --method ds`` took 13.2 s with a
cold cache against 0.93 s after this step (README). The step compiles by doing real work, so the
types are those of real calls: the bundled example collection (``crowdqrels example``) through
``aggregate`` with every method that uses kernels (graded and binary) and through ``evaluate``
with draws of the qrels, and the judgment file's two-halves scan (the path of files from
``PARALLEL_BYTES``). The GP methods are left out: their cost is TensorFlow's tracing, per
process, which no cache keeps (their truth layer's kernels, ``models.gp.truth_kernels``, compile
at the first GP fit).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import sys
import tempfile
import time
from pathlib import Path

# the non-GP methods (models.registry): each compiles its own kernels
GRADED = ("mv", "ds", "ibcc", "ebcc", "mace", "ordinal-ds", "judge-family")
BINARY = ("mv", "ds", "ibcc", "mace")


def add_command(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("precompile", help="compile the numba kernels into their cache (run at "
                                          "install; the first command then runs at full speed)",
                       description=__doc__.split("\n\n")[0].split(": ", 1)[1])
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from app.cli import main
    from app.cli.example import write_example

    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="crowdqrels-precompile-") as tmp:
        root = Path(tmp)
        write_example(root / "ex")
        judgments, gold = str(root / "ex" / "judgments.tsv"), str(root / "ex" / "gold.qrels")
        commands = [["aggregate", judgments, "--method", m, "--graded", "--gold", gold,
                     "--quiet", "--output", str(root / "q.txt")] for m in GRADED]
        commands += [["aggregate", judgments, "--method", m, "--gold", gold, "--quiet",
                      "--output", str(root / "q.txt"), "--tasks", str(root / f"{m}.tsv")]
                     for m in BINARY]
        commands.append(["evaluate", "--tasks", str(root / "ds.tsv"), "--runs",
                         *sorted(str(p) for p in (root / "ex" / "runs").glob("*.txt")),
                         "--measures", "P@10", "AP", "nDCG@10", "--samples", "20",
                         "--output", str(root / "scores.json")])
        # a file of PARALLEL_BYTES or more is scanned in two halves by kernels of its own
        from app.cli.columns import read_columns

        read_columns(Path(judgments).read_bytes(), parts=2)
        for command in commands:
            out = io.StringIO()
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
                try:
                    code = main(command)
                except SystemExit as stop:  # argparse's usage errors
                    code = stop.code if isinstance(stop.code, int) else 2
            if code:
                print(out.getvalue(), file=sys.stderr)
                print(f"crowdqrels precompile: `crowdqrels {' '.join(command[:4])}` failed "
                      f"(exit {code})", file=sys.stderr)
                return code
    print(f"crowdqrels precompile: {len(commands)} commands compiled their kernels in "
          f"{time.perf_counter() - start:.1f} s")
    return 0
