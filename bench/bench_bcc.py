"""Accuracy, F1, log loss and fit time on TREC RF10 for every method, beside crowd-kit, over seeds;
plus the new methods on a reduced synthetic grid (Algorithm 10).

    python bench/bench_bcc.py rf10 --seeds 5            # binary and graded, unsupervised + held out
    python bench/bench_bcc.py rf10 --seeds 5 --no-lk     # without LK (20 s+ per fit)
    python bench/bench_bcc.py grid --seeds 3             # noise levels x beta 5, 1,000 tasks
    python bench/bench_bcc.py grid --only lk "lk (asymmetric noise)"   # some methods only
    python bench/bench_bcc.py grid --seeds 5 --gold-share 0.3   # gold clamped: calibrated or not

RF10: relevant from 1, -2 dropped, NIST gold. Two settings per method:
- "no gold": the gold is never shown to the model (the figures of docs/models.md until now);
- "gold clamped, 5-fold held out": gold tasks split in 5 stratified folds; each fold is predicted
  by a fit with the other folds' gold clamped (``use_gold``), so no task is scored by a fit that
  saw its label (``models.evaluation.heldout``).
The binary table also has the FROM_GRADES rows: a model fitted on the crowd's grades and read out
as P(grade >= 1). Rows "calibrated on gold" (``calibrate_folds``) need the gold, so they have the
held-out setting only, with the calibration refitted inside every outer fold (nested). The seed
is the method's ``random_state`` (where it has one) and the fold split's. Mean ± sample standard
deviation over seeds; fit time is the mean of the "no gold" fits.
A script, not a test.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from models.data import AnnotationData

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
RF10 = Path(os.environ.get(
    "CROWDQRELS_RF10_FILE",
    ROOT.parent / "shared" / "data" / "trec-rf10-crowd" / "trec-rf10-data.txt",
))

# name -> (registry method, params); every method's defaults unless the name says otherwise.
OURS = {
    "mv": ("mv", {}),
    "ds": ("ds", {}),
    "mace": ("mace", {}),
    "ibcc": ("ibcc", {}),
    "ibcc (empirical prior, per-topic class prior)": (
        "ibcc", {"prior": "empirical", "class_prior_by": "topic"}),
    "ebcc": ("ebcc", {}),
    "ebcc (per-topic class prior)": ("ebcc", {"class_prior_by": "topic"}),
    "lk": ("lk", {}),
    "lk (asymmetric noise)": ("lk", {"asymmetric_noise": True}),
    "lk (per-topic prior)": ("lk", {"class_prior_by": "topic"}),
    # P(relevant) recalibrated on held-out gold (models.calibration): held out only, nested
    "ds, calibrated on gold": ("ds", {"calibrate_folds": 5}),
    "ibcc (empirical prior, per-topic class prior), calibrated on gold": (
        "ibcc", {"prior": "empirical", "class_prior_by": "topic", "calibrate_folds": 5}),
}
# Binary table only: fitted on the crowd's grades (0/1/2, the gold clamped as grades), read out
# as P(grade >= 1) — the grades say more than their binarised labels (a 2 is stronger than a 1).
FROM_GRADES = {
    "ordinal-ds (per-topic class prior), fitted on the grades": (
        "ordinal-ds", {"class_prior_by": "topic"}),
    "ordinal-ds (per-topic class prior), fitted on the grades, calibrated on gold": (
        "ordinal-ds", {"class_prior_by": "topic", "calibrate_folds": 5}),
}


def _score(labels: np.ndarray, proba: np.ndarray, gold: np.ndarray, relevant: int
           ) -> tuple[float, float, float]:
    from models.evaluation import evaluate

    e = evaluate(proba, gold, relevant_index=relevant, labels=labels)
    assert e is not None
    return e.accuracy, e.f1, e.log_loss


def _row(name: str, setting: str, runs: list[tuple[float, ...]], seconds: float | None) -> str:
    a = np.array(runs)
    mean, sd = a.mean(axis=0), a.std(axis=0, ddof=1) if len(runs) > 1 else np.zeros(3)
    cells = " | ".join(f"{m:.4f} ± {s:.4f}" for m, s in zip(mean, sd, strict=True))
    t = "" if seconds is None else f"{seconds:.2f}"
    return f"| {name} | {setting} | {cells} | {t} |"


def rf10(args: argparse.Namespace) -> None:
    import pandas as pd
    from crowdkit.aggregation import MACE as CKMACE
    from crowdkit.aggregation import DawidSkene as CKDS
    from crowdkit.aggregation import MajorityVote as CKMV
    from crowdkit.aggregation import OneCoinDawidSkene as CKOneCoin

    from app.cli.aggregate import build_aggregator
    from app.cli.loading import load_annotation_data
    from models.evaluation.heldout import heldout_predictions
    from models.registry import get_method

    seeds = list(range(args.seeds))
    for graded in {"both": (False, True), "binary": (False,), "graded": (True,)}[args.labels]:
        data = load_annotation_data(RF10.read_bytes(), relevant_from=1, graded=graded,
                                    ignore=(-2,))
        assert data.gold is not None
        gold = np.where(data.judgments_per_task() > 0, data.gold, -1)
        data = replace(data, gold=gold)
        relevant = int(np.searchsorted(data.classes, 1)) if graded else 1
        print(f"\nTREC RF10, {'graded ' + str(data.classes.tolist()) if graded else 'binary'}: "
              f"{int((gold >= 0).sum()):,} gold tasks, {data.n_judgments:,} judgments, "
              f"{args.seeds} seeds\n")
        print("| method | setting | accuracy | F1 | log loss | fit s |")
        print("|---|---|---:|---:|---:|---:|")
        for name, (method, params) in OURS.items():
            if method == "lk" and (graded or not args.lk):
                continue
            if args.only and name not in args.only:
                continue
            plain, held, times = [], [], []
            clampable = "use_gold" in get_method(method).defaults
            calibrated = "calibrate_folds" in params
            if calibrated and graded:
                continue
            for seed in seeds:
                if not calibrated:
                    start = time.perf_counter()
                    model = build_aggregator(method, params, seed).fit(data)
                    times.append(time.perf_counter() - start)
                    plain.append(_score(np.asarray(model.labels_), model.proba_, gold, relevant))
                if clampable:
                    clamped = {**params, "use_gold": True}
                    h = heldout_predictions(
                        lambda m=method, p=clamped, s=seed: build_aggregator(m, p, s), data, 5,
                        random_state=seed)
                    held.append(_score(h.labels, h.proba, gold, relevant))
                print(f"  {name} seed {seed}: {plain[-1] if plain else ''} "
                      f"{held[-1] if held else ''}", file=sys.stderr, flush=True)
            if plain:
                print(_row(name, "no gold", plain, float(np.mean(times))), flush=True)
            if held:
                print(_row(name, "gold clamped, 5-fold held out", held, None), flush=True)
        if not graded:
            _from_grades(args, data, gold, seeds)
        frame = pd.DataFrame({"task": data.task, "worker": data.annotator, "label": data.label})
        frame_sorted = frame.sort_values("worker", kind="stable")
        crowdkit = {
            "crowd-kit MV": (lambda s: CKMV(), False),
            "crowd-kit DS": (lambda s: CKDS(n_iter=100), False),
            "crowd-kit OneCoinDS": (lambda s: CKOneCoin(n_iter=100), False),
            "crowd-kit MACE (rows sorted by worker)": (
                lambda s: CKMACE(n_restarts=1, random_state=s), True),
        }
        for name, (make, by_worker) in crowdkit.items():
            if args.only and name not in args.only:
                continue
            runs, times = [], []
            for seed in seeds:
                model, df = make(seed), frame_sorted if by_worker else frame
                start = time.perf_counter()
                model.fit(df)
                times.append(time.perf_counter() - start)
                probas = getattr(model, "probas_", None)
                labels = model.labels_.reindex(np.arange(data.n_tasks)).fillna(0).to_numpy()
                labels = labels.astype(np.int64)
                if probas is not None:
                    proba = probas.reindex(index=np.arange(data.n_tasks),
                                           columns=np.arange(data.n_classes)).fillna(0).to_numpy()
                    proba = proba / np.maximum(proba.sum(axis=1, keepdims=True), 1e-12)
                else:
                    proba = np.eye(data.n_classes)[labels]
                runs.append(_score(labels, proba, gold, relevant))
            print(_row(name, "no gold", runs, float(np.mean(times))), flush=True)


def _from_grades(args: argparse.Namespace, binary: AnnotationData, gold: np.ndarray,
                 seeds: list[int]) -> None:
    """The FROM_GRADES rows of the binary table: each fit on the graded labels of the same
    tasks, scored as binary (P(grade >= 1) >= 1/2) against the binary gold."""
    from app.cli.aggregate import build_aggregator
    from app.cli.loading import load_annotation_data
    from models.evaluation.heldout import heldout_predictions

    graded = load_annotation_data(RF10.read_bytes(), relevant_from=1, graded=True,
                                  ignore=(-2,))
    assert np.array_equal(graded.topic_ids, binary.topic_ids)
    assert np.array_equal(graded.doc_ids, binary.doc_ids)
    assert graded.gold is not None
    graded = replace(graded, gold=np.where(gold >= 0, graded.gold, -1))
    first = int(np.searchsorted(graded.classes, 1))

    def as_binary(proba: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        p = proba[:, first:].sum(axis=1)
        return (p >= 0.5).astype(np.int64), np.column_stack([1.0 - p, p])

    for name, (method, params) in FROM_GRADES.items():
        if args.only and name not in args.only:
            continue
        plain, held, times = [], [], []
        for seed in seeds:
            if "calibrate_folds" not in params:
                start = time.perf_counter()
                model = build_aggregator(method, params, seed).fit(graded)
                times.append(time.perf_counter() - start)
                plain.append(_score(*as_binary(model.proba_), gold, 1))
            clamped = {**params, "use_gold": True}
            h = heldout_predictions(
                lambda m=method, p=clamped, s=seed: build_aggregator(m, p, s, relevant_from=1),
                graded, 5, random_state=seed)
            held.append(_score(*as_binary(h.proba), gold, 1))
            print(f"  {name} seed {seed}: {plain[-1] if plain else ''} {held[-1]}",
                  file=sys.stderr, flush=True)
        if plain:
            print(_row(name, "no gold", plain, float(np.mean(times))), flush=True)
        print(_row(name, "gold clamped, 5-fold held out", held, None), flush=True)


def grid(args: argparse.Namespace) -> None:
    from app.cli.aggregate import build_aggregator
    from models.data import UNKNOWN
    from models.evaluation.heldout import heldout_predictions
    from models.registry import get_method
    from models.synthetic import NOISE_LEVELS, generate

    methods = {"mv": ("mv", {}), "ds": ("ds", {}), "ibcc": ("ibcc", {}),
               "ibcc (empirical prior)": ("ibcc", {"prior": "empirical"}), "ebcc": ("ebcc", {})}
    if args.gold_share:
        methods = {"ds": ("ds", {}), "ds, calibrated on gold": ("ds", {"calibrate_folds": 5}),
                   "ibcc (empirical prior)": ("ibcc", {"prior": "empirical"}),
                   "ibcc (empirical prior), calibrated on gold": (
                       "ibcc", {"prior": "empirical", "calibrate_folds": 5})}
    if args.only:  # any of these or of the RF10 table's methods (the LK variants: 20 s+ a fit)
        methods = {name: spec for name, spec in {**OURS, **methods}.items()
                   if name in args.only}
    gold_note = ("" if not args.gold_share else
                 f", gold on {args.gold_share:.0%} of the tasks clamped and scored 5-fold held "
                 "out (accuracy on the gold tasks)")
    print(f"Algorithm 10, {args.tasks} tasks, {args.annotators} annotators, beta "
          f"{args.redundancy}, seeds 0..{args.seeds - 1}{gold_note}: accuracy mean ± sd\n")
    print("| noise | " + " | ".join(methods) + " |")
    print("|---|" + "---:|" * len(methods))
    for noise in NOISE_LEVELS:
        accs: dict[str, list[float]] = {m: [] for m in methods}
        for seed in range(args.seeds):
            synth = generate(args.tasks, args.annotators, noise_level=NOISE_LEVELS[noise],
                             redundancy=args.redundancy, random_state=seed)
            data = synth.to_annotation_data(with_features=False)
            if args.gold_share:
                shown = np.random.default_rng(seed).random(data.n_tasks) < args.gold_share
                data = replace(data, gold=np.where(shown, synth.truth, UNKNOWN))
            for name, (method, params) in methods.items():
                if not args.gold_share:
                    model = build_aggregator(method, params, seed).fit(data)
                    accs[name].append(float(np.mean(np.asarray(model.labels_) == synth.truth)))
                    continue
                assert "use_gold" in get_method(method).defaults, method
                clamped = {**params, "use_gold": True}
                held = heldout_predictions(
                    lambda m=method, p=clamped, s=seed: build_aggregator(m, p, s), data, 5,
                    random_state=seed)
                known = data.gold != UNKNOWN
                accs[name].append(float(np.mean(held.labels[known] == synth.truth[known])))
        cells = " | ".join(f"{np.mean(v):.3f} ± {np.std(v, ddof=1):.3f}" for v in accs.values())
        print(f"| {noise} | {cells} |", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="what", required=True)
    p = sub.add_parser("rf10")
    p.add_argument("--seeds", type=int, default=5)
    p.add_argument("--no-lk", dest="lk", action="store_false")
    p.add_argument("--labels", choices=("both", "binary", "graded"), default="both")
    p.add_argument("--only", nargs="*", help="method names (as in the table) to run")
    g = sub.add_parser("grid")
    g.add_argument("--seeds", type=int, default=3)
    g.add_argument("--tasks", type=int, default=1000)
    g.add_argument("--annotators", type=int, default=50)
    g.add_argument("--redundancy", type=int, default=5)
    g.add_argument("--only", nargs="*", help="method names (as in the table) to run")
    g.add_argument("--gold-share", type=float, default=0.0,
                   help="clamp gold on this share of the tasks and score held out (the "
                        "calibrated rows)")
    args = parser.parse_args()
    rf10(args) if args.what == "rf10" else grid(args)


if __name__ == "__main__":
    main()
