"""Speed, peak memory and accuracy of mv / mace / ds against crowd-kit 1.4.2.

    python bench/bench_models.py                      # 1,000,000 judgments + RF10
    python bench/bench_models.py --tasks 20000 --annotators 1000   # a quick run
    python bench/bench_models.py --skip-rf10 --repeats 3 --no-peak --cases mace crowdkit-mace
    python bench/bench_models.py --skip-rf10 --repeats 3 --no-peak --warm --cases ds ebcc
    python bench/bench_models.py --skip-rf10 --repeats 3 --no-peak --baseline /tmp/main \
        --cases mv mace mace+readout crowdkit-mv crowdkit-mace

Speed: one synthetic data set of Algorithm 10 (default 200,000 tasks x 5 judgments = 1,000,000
judgments, 10,000 annotators), saved once; every fit then runs in its own subprocess: timed once,
then fitted again under tracemalloc for the peak memory allocated during the fit (Python objects
and numpy/pandas buffers alike), so neither the timing nor another fit disturbs the figure.
MACE runs EM with 1 restart and 50 iterations in both implementations; Dawid-Skene runs 50
iterations in both (tolerance disabled), so the times compare the same work: the EM alone
(``temper_folds`` 0). ``X+readout`` is the same fit with the default gold-free read-out
(models.tempering), ``mace-default`` MACE with every default, ``mv-share`` majority vote's vote
shares (crowd-kit's work; the default also fits the exchangeable crowd's posterior). Times are
wall and CPU seconds of the fit; ``--baseline ROOT`` runs every case of ours with ROOT's models
too, in the same rounds.
Accuracy: TREC RF10, binary (relevant from 1, -2 dropped), NIST gold, every method's defaults;
crowd-kit's MACE with n_restarts=1, which is identical to its default 10 (it re-seeds every
restart with the same random_state, see docs/models.md).

Prints markdown tables. A script, never part of the test run.
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
import tracemalloc
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
RF10 = Path(os.environ.get(  # beside the checkout, as the tests expect it
    "CROWDQRELS_RF10_FILE",
    Path(__file__).resolve().parents[1].parent / "shared" / "data" / "trec-rf10-crowd"
    / "trec-rf10-data.txt",
))

CASES = ("mv", "mace", "ds", "crowdkit-mv", "crowdkit-mace", "crowdkit-ds", "ibcc", "ebcc",
         "ordinal-ds", "mace+readout", "ds+readout", "ibcc+readout", "ebcc+readout",
         "ordinal-ds+readout",
         "mace-default", "mv-share")
N_ITER = 50


def _peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # KiB on Linux


def _load(path: Path):  # type: ignore[no-untyped-def]
    from models.data import AnnotationData

    arrays = np.load(path)
    n_tasks, n_ann = int(arrays["n_tasks"]), int(arrays["n_annotators"])
    return AnnotationData(
        task=arrays["task"], annotator=arrays["annotator"], label=arrays["label"],
        topic_ids=np.full(n_tasks, "synth"), doc_ids=np.arange(n_tasks).astype(str),
        annotator_ids=np.arange(n_ann).astype(str), classes=np.array([0, 1]),
        gold=arrays["truth"],
    )


def _fit(case: str, data):  # type: ignore[no-untyped-def]
    """Fit one case; return hard labels as class indices per task."""
    if case.startswith("crowdkit-"):
        import pandas as pd
        from crowdkit.aggregation import MACE, DawidSkene, MajorityVote

        frame = pd.DataFrame({"task": data.task, "worker": data.annotator, "label": data.label})
        model = {
            "crowdkit-mv": lambda: MajorityVote(),
            "crowdkit-mace": lambda: MACE(method="em", n_restarts=1, n_iter=N_ITER,
                                          random_state=0),
            "crowdkit-ds": lambda: DawidSkene(n_iter=N_ITER, tol=-np.inf),
        }[case]()
        start, cpu = time.perf_counter(), time.process_time()
        labels = model.fit_predict(frame)
        seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
        out = labels.reindex(np.arange(data.n_tasks)).fillna(-1).to_numpy().astype(np.int64)
        return seconds, cpu, out

    from models.bcc import EBCC, IBCC
    from models.dawid_skene import DawidSkene
    from models.mace import MACE
    from models.majority_vote import MajorityVote
    from models.ordinal_ds import OrdinalDawidSkene

    # "X": the EM (VB) alone, crowd-kit's work (temper_folds 0); "X+readout": the same fit with
    # the model's default gold-free read-out (models.tempering: two half fits, τ search, ρ̄)
    method, _, readout = case.partition("+")
    folds = {"temper_folds": 2 if readout else 0}
    model = {
        "ibcc": lambda: IBCC(**folds),  # defaults: stops on the ELBO (tol 1e-6 per judgment)
        # defaults: M = 10, stops when q(T) moves < 1e-3
        "ebcc": lambda: EBCC(random_state=0, **folds),
        "mv": lambda: MajorityVote(),
        # crowd-kit's work: vote shares and the majority (the default also fits the
        # exchangeable crowd's posterior, models.majority_vote)
        "mv-share": lambda: MajorityVote(probability="share"),
        # MACE's own uniform class prior, as crowd-kit's: "auto" (the default) would fit a
        # learned prior from the same start too, twice crowd-kit's work
        "mace": lambda: MACE(variant="em", n_restarts=1, n_iter=N_ITER, random_state=0,
                             class_prior="uniform", **folds),
        # MACE as the service fits it: every default (VB, 10 restarts, "auto" class prior,
        # the read-out), seeded
        "mace-default": lambda: MACE(random_state=0),
        "ds": lambda: DawidSkene(n_iter=N_ITER, tol=0.0, **folds),
        "ordinal-ds": lambda: OrdinalDawidSkene(n_iter=N_ITER, tol=0.0, **folds),
    }[method]()
    start, cpu = time.perf_counter(), time.process_time()
    model.fit(data)
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    return seconds, cpu, np.asarray(model.labels_)


def run_case(case: str, path: Path, peak: bool = True, warm: bool = False) -> dict[str, float]:
    """In a fresh process: load, fit once for the time (and the growth of the peak RSS), then
    (``peak``) once more under tracemalloc for the peak of memory allocated during the fit.
    ``warm``: one untimed fit first, so the process's one-off costs (numba loading its compiled
    kernels, about 1 s on a loaded machine) stay out of the figure, as in a long-lived worker."""
    data = _load(path)
    if case.startswith("crowdkit-"):
        import crowdkit.aggregation  # noqa: F401  (import cost is not part of the fit)
    if warm:
        _fit(case, data)
    before = _peak_rss_mib()
    seconds, cpu, labels = _fit(case, data)
    after = _peak_rss_mib()
    peak_bytes = float("nan")
    if peak:
        tracemalloc.start()
        _fit(case, data)
        _, peak_bytes = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    return {"seconds": seconds, "cpu_seconds": cpu, "peak_mib": peak_bytes / 2**20,
            "rss_growth_mib": max(after - before, 0.0), "rss_mib": after,
            "accuracy": float(np.mean(labels == data.gold))}


def speed_table(args: argparse.Namespace) -> str:
    from models.synthetic import NOISE_LEVELS, generate

    start = time.perf_counter()
    synthetic = generate(args.tasks, args.annotators, noise_level=NOISE_LEVELS[args.noise],
                         redundancy=args.redundancy, random_state=args.seed)
    generated = time.perf_counter() - start
    n_judgments = synthetic.task.shape[0]
    runs: dict[str, list[dict[str, float]]] = {case: [] for case in args.cases}
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "data.npz"
        np.savez(path, task=synthetic.task.astype(np.int64),
                 annotator=synthetic.annotator.astype(np.int64),
                 label=synthetic.label.astype(np.int64), truth=synthetic.truth.astype(np.int64),
                 n_tasks=synthetic.truth.shape[0], n_annotators=synthetic.annotator_noise.shape[0])
        load_before = os.getloadavg()[0]
        # Interleaved rounds (every case once per round), so a change in the machine's load
        # strikes every case alike; each figure is the median over the rounds.
        # --baseline: every case of ours run with that checkout's models as well, in the same
        # round ("base:<case>")
        roots = [("", None)] + ([("base:", args.baseline)] if args.baseline else [])
        for prefix, _ in roots[1:]:
            runs.update({prefix + case: [] for case in args.cases
                         if not case.startswith("crowdkit-")})
        for _ in range(args.repeats):
            for case in args.cases:
                for prefix, root in roots:
                    if root and case.startswith("crowdkit-"):
                        continue
                    proc = subprocess.run([sys.executable, __file__, "--case", case, "--data",
                                           str(path), *(["--no-peak"] if args.no_peak else []),
                                           *(["--warm"] if args.warm else []),
                                           *(["--root", root] if root else [])],
                                          capture_output=True, text=True, check=True)
                    runs[prefix + case].append(json.loads(proc.stdout.strip().splitlines()[-1]))
                    print(f"  {prefix}{case}: {runs[prefix + case][-1]}", file=sys.stderr)
        load_after = os.getloadavg()[0]
        rows = {case: {key: float(np.median([run[key] for run in found]))
                       for key in found[0]} for case, found in runs.items()}
    def ratio(slow: str, fast: str) -> str:
        """The median of the rounds' ratios: a round's two fits ran under the same load; wall
        seconds, then CPU seconds of the fitting process (less moved by the others' load)."""
        if slow not in runs or fast not in runs:
            return "-"
        out = []
        for key in ("seconds", "cpu_seconds"):
            pairs = zip(runs[fast], runs[slow], strict=True)
            out.append(f"{np.median([t[key] / o[key] for o, t in pairs]):.1f}x")
        return " (CPU ".join(out) + ")"

    lines = [
        f"Synthetic (Algorithm 10): {args.tasks:,} tasks, {args.annotators:,} annotators, "
        f"{n_judgments:,} judgments, noise {args.noise}; generated in {generated:.1f} s. "
        f"Medians of {args.repeats} interleaved run(s) on {os.cpu_count()} CPUs; 1-minute load "
        f"average {load_before:.1f} before, {load_after:.1f} after. X: the EM (VB) alone "
        "(temper_folds 0, crowd-kit's work); X+readout: with the default gold-free read-out."
        + (f" base: the models of {args.baseline}, same rounds." if args.baseline else ""),
        "",
        "| method | ours: fit s (CPU s) | crowd-kit: fit s (CPU s) | speed-up (median of rounds) | "
        "ours: peak MiB | crowd-kit: peak MiB | ours: acc | crowd-kit: acc | base: fit s (CPU s) | "
        "base / ours (median of rounds) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for case in [c for c in CASES if not c.startswith("crowdkit-")]:
        ours = rows.get(case)
        if ours is None:
            continue
        method = {"mv-share": "mv"}.get(case.partition("+")[0], case.partition("+")[0])
        theirs, base = rows.get(f"crowdkit-{method}"), rows.get(f"base:{case}")
        t_ck = f"{theirs['seconds']:.2f} ({theirs['cpu_seconds']:.2f})" if theirs else "-"
        m_ck = f"{theirs['peak_mib']:.0f}" if theirs else "-"
        a_ck = f"{theirs['accuracy']:.4f}" if theirs else "-"
        t_base = f"{base['seconds']:.2f} ({base['cpu_seconds']:.2f})" if base else "-"
        lines.append(f"| {case} | {ours['seconds']:.2f} ({ours['cpu_seconds']:.2f}) | {t_ck} | "
                     f"{ratio(f'crowdkit-{method}', case)} | "
                     f"{ours['peak_mib']:.0f} | {m_ck} | {ours['accuracy']:.4f} | {a_ck} | "
                     f"{t_base} | {ratio(f'base:{case}', case)} |")
    for prefix in ("", "base:"):
        for suffix in ("", "+readout"):  # issue 36's target: EBCC at most 2x DS
            ebcc, ds = f"{prefix}ebcc{suffix}", f"{prefix}ds{suffix}"
            if ds in runs and ebcc in runs:
                pairs = zip(runs[ebcc], runs[ds], strict=True)
                ratios = [e["cpu_seconds"] / d["cpu_seconds"] for e, d in pairs]
                lines += ["", f"{ebcc} / {ds} per round (CPU seconds): "
                          + ", ".join(f"{r:.2f}" for r in ratios)
                          + f"; median {np.median(ratios):.2f}"]
    return "\n".join(lines)


def rf10_table() -> str:
    import pandas as pd
    from crowdkit.aggregation import MACE as CKMACE
    from crowdkit.aggregation import DawidSkene as CKDS
    from crowdkit.aggregation import MajorityVote as CKMV

    from app.cli.loading import load_annotation_data
    from models.dawid_skene import DawidSkene
    from models.mace import MACE
    from models.majority_vote import MajorityVote

    data = load_annotation_data(RF10.read_bytes(), relevant_from=1, ignore=(-2,))
    assert data.gold is not None
    gold = np.where(data.judgments_per_task() > 0, data.gold, -1)
    known = gold >= 0
    frame = pd.DataFrame({"task": data.task, "worker": data.annotator, "label": data.label})

    def acc(labels: np.ndarray) -> float:
        return float(np.mean(labels[known] == gold[known]))

    def ck(model) -> tuple[float, float]:  # type: ignore[no-untyped-def]
        start = time.perf_counter()
        labels = model.fit_predict(frame)
        seconds = time.perf_counter() - start
        return acc(labels.reindex(np.arange(data.n_tasks)).fillna(-1).to_numpy()), seconds

    def ours(model) -> tuple[float, float]:  # type: ignore[no-untyped-def]
        start = time.perf_counter()
        model.fit(data)
        return acc(np.asarray(model.labels_)), time.perf_counter() - start

    results = [
        ("mv", ours(MajorityVote()), ck(CKMV())),
        ("mace", ours(MACE(random_state=0)), ck(CKMACE(n_restarts=1, random_state=0))),
        ("ds", ours(DawidSkene()), ck(CKDS(n_iter=100))),
    ]
    lines = [
        f"TREC RF10, binary, {int(known.sum()):,} tasks with NIST gold "
        f"({data.n_judgments:,} judgments, {data.n_annotators} annotators); defaults.",
        "",
        "| method | ours: accuracy | crowd-kit 1.4.2: accuracy | ours: fit s | crowd-kit: fit s |",
        "|---|---:|---:|---:|---:|",
    ]
    for name, (a, s), (a_ck, s_ck) in results:
        lines.append(f"| {name} | {a:.4f} | {a_ck:.4f} | {s:.2f} | {s_ck:.2f} |")
    sorted_frame = frame.sort_values("worker", kind="stable")
    start = time.perf_counter()
    fixed = CKMACE(n_restarts=1, random_state=0).fit_predict(sorted_frame)
    s_fixed = time.perf_counter() - start
    a_fixed = acc(fixed.reindex(np.arange(data.n_tasks)).fillna(-1).to_numpy())
    lines.append(f"| mace, crowd-kit with rows sorted by worker | | {a_fixed:.4f} | | "
                 f"{s_fixed:.2f} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=200_000)
    parser.add_argument("--annotators", type=int, default=10_000)
    parser.add_argument("--redundancy", type=int, default=5)
    parser.add_argument("--noise", default="0-2")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeats", type=int, default=1,
                        help="interleaved runs of every case; the table shows their medians")
    parser.add_argument("--cases", nargs="*", default=list(CASES), choices=CASES)
    parser.add_argument("--skip-rf10", action="store_true")
    parser.add_argument("--no-peak", action="store_true",
                        help="skip the second fit under tracemalloc (peak MiB shows nan)")
    parser.add_argument("--warm", action="store_true",
                        help="fit once untimed in each case's process before the timed fit")
    parser.add_argument("--baseline", metavar="ROOT",
                        help="also run every case with the models of the checkout ROOT (e.g. "
                        "a worktree of main), in the same rounds")
    parser.add_argument("--case", choices=CASES, help=argparse.SUPPRESS)  # subprocess mode
    parser.add_argument("--data", help=argparse.SUPPRESS)
    parser.add_argument("--root", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.root:  # subprocess mode, a baseline's models
        sys.path.insert(0, str(Path(args.root).resolve()))
    if args.case:
        print(json.dumps(run_case(args.case, Path(args.data), peak=not args.no_peak,
                                  warm=args.warm)))
        return
    print(speed_table(args))
    if not args.skip_rf10 and RF10.exists():
        print()
        print(rf10_table())


if __name__ == "__main__":
    main()
