"""MACE at scale (issue #36; docs/benchmarks.md, "MACE at 10 M judgments").

    python bench/bench_mace_scale.py estep               # 10 M judgments: the E sweep, two layouts
    python bench/bench_mace_scale.py halving --tasks 200000 --annotators 10000   # 1 M: the race

``estep``: in one process, alternating, the compiled two-class sweep (``e_step_binary``) over
the same judgments with the (annotator, label) table as ``models.mace._Buffers`` lays it out
((n_cells, 3) and the knowing counts in a separate array) and as session 20 had it ((n_cells,
4), the counts its last column, 64-byte aligned; slower on a quiet machine, so reverted in
session 22): CPU ms per sweep, the counts checked equal.
``halving``: MACE's default against ``halving=True`` on bench_scale's crowd: CPU s of the fit,
accuracy, log-likelihood, the kept draw.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_scale import generate  # noqa: E402

from models.data import AnnotationData  # noqa: E402


def _data(n_tasks: int, n_annotators: int) -> tuple[AnnotationData, np.ndarray]:
    arrays = generate(n_tasks, n_annotators, 5, 0)
    data = AnnotationData(
        task=arrays["task"], annotator=arrays["annotator"], label=arrays["label"],
        topic_ids=np.zeros(n_tasks, dtype="U1"), doc_ids=np.zeros(n_tasks, dtype="U1"),
        annotator_ids=np.zeros(n_annotators, dtype="U1"), classes=np.array([0, 1]))
    return data, arrays["truth"]


def _aligned_rows(n: int, width: int, align: int = 64) -> np.ndarray:
    """An empty (n, width) float64 array whose first row starts on an ``align``-byte boundary."""
    raw = np.empty(n * width + align // 8)
    skip = (-raw.ctypes.data % align) // 8
    return raw[skip:skip + n * width].reshape(n, width)


def estep(args: argparse.Namespace) -> None:
    from models import mace, mace_kernels

    data, _ = _data(args.tasks, args.annotators)
    idx = mace._Judgments.from_data(data, None)
    cells = args.annotators * 2
    values = np.random.default_rng(0).random((cells, 3))
    old_table, old_know = np.ascontiguousarray(values), np.empty(cells)
    new_table = _aligned_rows(cells, 4)
    new_table[:, :3] = values
    prior, impossible = np.full((1, 2), -np.log(2)), np.zeros((0, 2), dtype=np.bool_)
    proba, norm, top = np.empty((args.tasks, 2)), np.empty(args.tasks), np.empty(args.tasks)
    total = np.empty(2)
    sweeps = {
        "3 columns + counts apart (models.mace)": lambda: mace_kernels.e_step_binary(
            idx.ptr, idx.cell, old_table, prior, impossible, proba, norm, top, old_know, total),
        "4 columns, counts inside (session 20)": lambda: mace_kernels.e_step_binary(
            idx.ptr, idx.cell, new_table, prior, impossible, proba, norm, top, new_table[:, 3],
            total),
    }
    for sweep in sweeps.values():
        sweep()
    assert np.array_equal(old_know, new_table[:, 3])
    times: dict[str, list[float]] = {name: [] for name in sweeps}
    for _ in range(args.repeats):
        for name, sweep in sweeps.items():
            cpu = time.process_time()
            sweep()
            times[name].append(time.process_time() - cpu)
    print(f"{data.n_judgments:,} judgments, {args.annotators:,} annotators; CPU ms per sweep")
    for name, values_ in times.items():
        print(f"| {name} | {1000 * np.median(values_):.1f} | "
              f"{', '.join(f'{1000 * v:.0f}' for v in sorted(values_))} |")


def halving(args: argparse.Namespace) -> None:
    from models.mace import MACE

    data, truth = _data(args.tasks, args.annotators)
    for raced in (False, True):
        cpu = time.process_time()
        model = MACE(random_state=0, halving=raced).fit(data)
        cpu = time.process_time() - cpu
        print(f"| halving={raced} | {cpu:.2f} | {np.mean(model.labels_ == truth):.6f} | "
              f"{model.log_likelihood_:.1f} | {model.start_draw_} | {model.class_prior_used_} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=("estep", "halving"))
    parser.add_argument("--tasks", type=int, default=2_000_000)
    parser.add_argument("--annotators", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=8)
    args = parser.parse_args()
    {"estep": estep, "halving": halving}[args.what](args)


if __name__ == "__main__":
    main()
