"""Ordinal DS's per-annotator Newton step: its hand-written batched solvers (closed forms for
P ≤ 3 parameters: Sylvester's criterion and the adjugate; a vectorised Cholesky recursion above)
against numpy's stacked ``np.linalg`` routines doing the same step.

    python bench/bench_ordinal_solvers.py step [--annotators 700,10000] [--params 2,3,4,5]
    python bench/bench_ordinal_solvers.py fit [--tasks 20000] [--annotators 2000] [--grades 3]
                                            [--repeats 3]

``step``: seconds per call of ``models.ordinal_ds._ascent_step`` (hand) and of the same step
with ``np.linalg`` (``eigvalsh`` to find the blocks where the eigenvalue cap does nothing,
``solve`` on those, ``eigh`` on the rest), on J stacked (P, P) Hessians, 90 % negative definite
(a fit near its optimum) and 10 % not; and the largest difference between the two steps. ``fit``:
ordinal-ds's fit seconds with either step on one graded synthetic set (noise 0-2), and the
largest difference of the posteriors. Not part of the tests.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import models.ordinal_ds as ordinal_ds  # noqa: E402
from models.registry import make_aggregator  # noqa: E402
from models.synthetic import NOISE_LEVELS, generate  # noqa: E402

HAND = ordinal_ds._ascent_step


def numpy_step(hess: np.ndarray, grad: np.ndarray, floor: float = 1e-3) -> np.ndarray:
    """The step of ``_ascent_step`` with numpy's stacked LAPACK routines."""
    h = np.moveaxis(hess, -1, 0)  # (J, P, P)
    p = h.shape[1]
    step = np.empty_like(grad)
    ok = np.linalg.eigvalsh(-h - np.eye(p) * floor)[:, 0] > 0
    if ok.any():
        step[ok] = np.linalg.solve(-h[ok], grad[ok][:, :, None])[:, :, 0]
    if not ok.all():
        w, vecs = np.linalg.eigh(h[~ok])
        w = np.minimum(w, -floor)
        coef = np.einsum("jcb,jc->jb", vecs, grad[~ok]) / w
        step[~ok] = -np.einsum("jab,jb->ja", vecs, coef)
    return step


def hessians(j: int, p: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    a = rng.normal(size=(j, p, p))
    neg = -(a @ np.swapaxes(a, 1, 2) + 0.1 * np.eye(p))  # negative definite
    bad = rng.random(j) < 0.1
    neg[bad] += 3.0 * np.eye(p) * rng.random((int(bad.sum()), 1, 1))  # some not
    return np.moveaxis(neg, 0, -1).copy(), rng.normal(size=(j, p))


def per_call(fn: Callable[[], object], budget: float = 1.5) -> float:
    """Best of a few batches of calls, seconds per call."""
    fn()
    best = float("inf")
    for _ in range(5):
        n, start = 0, time.perf_counter()
        while (elapsed := time.perf_counter() - start) < budget / 5:
            fn()
            n += 1
        best = min(best, elapsed / n)
    return best


def step(args: argparse.Namespace) -> None:
    rng = np.random.default_rng(0)
    print("| annotators J | parameters P | hand (µs) | np.linalg (µs) | np.linalg / hand "
          "| max abs diff |")
    print("|---:|---:|---:|---:|---:|---:|")
    for j in map(int, args.annotators.split(",")):
        for p in map(int, args.params.split(",")):
            hess, grad = hessians(j, p, rng)
            hand = per_call(lambda h=hess, g=grad: HAND(h, g))
            lapack = per_call(lambda h=hess, g=grad: numpy_step(h, g))
            diff = np.max(np.abs(HAND(hess, grad) - numpy_step(hess, grad)))
            print(f"| {j:,} | {p} | {hand * 1e6:,.0f} | {lapack * 1e6:,.0f} | "
                  f"{lapack / hand:.1f} | {diff:.1e} |", flush=True)


def fit(args: argparse.Namespace) -> None:
    synth = generate(args.tasks, args.annotators, noise_level=NOISE_LEVELS["0-2"], redundancy=5,
                     grades=args.grades, bias_sd=0.5, random_state=0)
    data = synth.to_annotation_data(with_features=False)
    print(f"{data.n_tasks} tasks, {data.n_annotators} annotators, {data.n_judgments} judgments, "
          f"{args.grades} grades")
    proba: dict[str, np.ndarray] = {}
    seconds: dict[str, list[float]] = {"hand": [], "np.linalg": []}
    for _ in range(args.repeats):  # alternately, the best of each (the first fit warms up)
        for name, solver in (("hand", HAND), ("np.linalg", numpy_step)):
            ordinal_ds._ascent_step = solver
            try:
                model = make_aggregator("ordinal-ds", {})
                start = time.perf_counter()
                model.fit(data)
                seconds[name].append(time.perf_counter() - start)
            finally:
                ordinal_ds._ascent_step = HAND
            proba[name] = model.result(data).proba
    for name, times in seconds.items():
        print(f"{name}\tbest {min(times):.2f} s of {len(times)}\t{model.n_iter_} EM iterations",
              flush=True)
    print(f"np.linalg / hand: {min(seconds['np.linalg']) / min(seconds['hand']):.2f}")
    print(f"max |Δ posterior| {np.max(np.abs(proba['hand'] - proba['np.linalg'])):.1e}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    s = sub.add_parser("step")
    s.add_argument("--annotators", default="700,10000")
    s.add_argument("--params", default="2,3,4,5")
    f = sub.add_parser("fit")
    f.add_argument("--tasks", type=int, default=20000)
    f.add_argument("--annotators", type=int, default=2000)
    f.add_argument("--grades", type=int, default=3)
    f.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    {"step": step, "fit": fit}[args.command](args)


if __name__ == "__main__":
    main()
