"""Fit time and peak memory of DS, MACE and IBCC at 10,000,000 judgments.

    python bench/bench_scale.py            # 2,000,000 tasks x 5, 100,000 annotators
    python bench/bench_scale.py --tasks 200000 --annotators 10000   # a tenth: a busy machine

The judgments are generated as long-format integer arrays (no strings, no file, no database):
every task has a true binary label and ``--redundancy`` distinct annotators, each right with its
own probability (uniform in [0.55, 0.95]). Every method runs in its own subprocess with its
defaults and a fixed seed: the fit is timed, and the process's peak resident set size (which
includes the ~0.3 GB of judgment arrays every method holds) is read after it. Prints a markdown
table. A script, never part of the test run.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

METHODS = ("ds", "mace", "ibcc")


def generate(n_tasks: int, n_annotators: int, redundancy: int, seed: int
             ) -> dict[str, np.ndarray]:
    """Long-format judgments: ``redundancy`` distinct annotators per task (a random offset plus
    multiples of a stride), labels right with each annotator's own accuracy."""
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, 2, n_tasks)
    accuracy = rng.uniform(0.55, 0.95, n_annotators)
    stride = max(n_annotators // redundancy, 1)
    task = np.repeat(np.arange(n_tasks, dtype=np.int64), redundancy)
    offset = np.repeat(rng.integers(0, n_annotators, n_tasks), redundancy)
    annotator = (offset + np.tile(np.arange(redundancy), n_tasks) * stride) % n_annotators
    right = rng.random(task.shape[0]) < accuracy[annotator]
    label = np.where(right, truth[task], 1 - truth[task]).astype(np.int64)
    return {"task": task, "annotator": annotator.astype(np.int64), "label": label,
            "truth": truth.astype(np.int64)}


def run_method(method: str, path: Path) -> dict[str, float]:
    """In a fresh process: load the arrays, fit ``method`` once; seconds, peak RSS, accuracy."""
    from models.bcc import IBCC
    from models.data import AnnotationData
    from models.dawid_skene import DawidSkene
    from models.mace import MACE

    arrays = np.load(path)
    n_tasks, n_annotators = arrays["truth"].shape[0], int(arrays["annotator"].max()) + 1
    data = AnnotationData(
        task=arrays["task"], annotator=arrays["annotator"], label=arrays["label"],
        topic_ids=np.zeros(n_tasks, dtype="U1"), doc_ids=np.zeros(n_tasks, dtype="U1"),
        annotator_ids=np.zeros(n_annotators, dtype="U1"), classes=np.array([0, 1]))
    loaded = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # KiB -> GiB
    model = {"ds": lambda: DawidSkene(), "mace": lambda: MACE(random_state=0),
             "ibcc": lambda: IBCC()}[method]()
    start = time.perf_counter()
    model.fit(data)
    seconds = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    accuracy = float(np.mean(np.asarray(model.labels_) == arrays["truth"]))
    return {"seconds": seconds, "peak_gib": peak, "loaded_gib": loaded, "accuracy": accuracy}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=2_000_000)
    parser.add_argument("--annotators", type=int, default=100_000)
    parser.add_argument("--redundancy", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--methods", nargs="*", default=list(METHODS), choices=METHODS)
    parser.add_argument("--method", choices=METHODS, help=argparse.SUPPRESS)  # subprocess mode
    parser.add_argument("--data", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.method:
        print(json.dumps(run_method(args.method, Path(args.data))))
        return
    start = time.perf_counter()
    arrays = generate(args.tasks, args.annotators, args.redundancy, args.seed)
    generated = time.perf_counter() - start
    n = arrays["task"].shape[0]
    rows = {}
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "data.npz"
        np.savez(path, **arrays)
        del arrays
        for method in args.methods:
            proc = subprocess.run([sys.executable, __file__, "--method", method, "--data",
                                   str(path)], capture_output=True, text=True, check=True)
            rows[method] = json.loads(proc.stdout.strip().splitlines()[-1])
            print(f"  {method}: {rows[method]}", file=sys.stderr)
    print(f"{n:,} judgments ({args.tasks:,} tasks x {args.redundancy}, {args.annotators:,} "
          f"annotators), generated in {generated:.1f} s; {os.cpu_count()} CPUs, 1-minute load "
          f"average {load_before:.1f} before, {os.getloadavg()[0]:.1f} after.\n")
    print("| method (defaults) | fit s | peak RSS GiB | RSS after loading GiB | accuracy |")
    print("|---|---:|---:|---:|---:|")
    for method, row in rows.items():
        print(f"| {method} | {row['seconds']:.2f} | {row['peak_gib']:.2f} | "
              f"{row['loaded_gib']:.2f} | {row['accuracy']:.4f} |")


if __name__ == "__main__":
    main()
