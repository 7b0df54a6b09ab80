"""Graded benchmarks: ordinal models against nominal ones on the graded synthetic generator and on
RF10 graded (NIST grades).

    python bench/bench_ordinal.py synthetic [--grades 3] [--seeds 3] [--tasks 500]
                                            [--noise 0-2,2-4,4-8,8-12] [--bias-sd 0.5]
                                            [--topics 1 --topic-concentration 1]
                                            [--methods 'mv;ds;ordinal-ds;ordinal-gp']
    python bench/bench_ordinal.py rf10 [--methods 'mv;mace;ds;ordinal-ds;ordinal-gp']
                                       [--held-out 5 --seeds 5 | --topic-blocks 20]
    python bench/bench_ordinal.py speed [--tasks 200000] [--annotators 10000] [--topics 1]
                                        [--methods 'ds;ordinal-ds']
    python bench/bench_ordinal.py likelihood rf10|synthetic [--methods 'ds;ordinal-ds']
                                            [--folds 5] [--noise 2-4,8-12 --seeds 2]

``synthetic``: Algorithm 10 extended to K grades (``crowdqrels synth --grades K``) with planted
annotator biases; MV, DS, ordinal-ds and ordinal-gp (with the generator's 2-D features) per noise
level and seed; prints one row per fit and a Markdown table of means (exact accuracy, MAE,
quadratic κ). ``rf10``: the RF10 file graded against its NIST grades; with ``--held-out K`` also
every method that can clamp gold, with the gold clamped and scored K-fold held out. ``speed``: fit
seconds of ds and ordinal-ds on one large graded synthetic set (3 grades, noise 0-2).
``likelihood``: a gold-free score per method, the mean log-probability of held-out judgments
(K folds over the judgments), beside the gold figures. Not part of the tests.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from models.evaluation import evaluate  # noqa: E402
from models.registry import make_aggregator  # noqa: E402
from models.synthetic import NOISE_LEVELS, generate  # noqa: E402

RF10 = Path(os.environ.get(
    "CROWDQRELS_RF10_FILE",
    Path(__file__).resolve().parents[1].parent / "shared" / "data" / "trec-rf10-crowd"
    / "trec-rf10-data.txt",
))
SCORES = ("accuracy", "mae", "kappa", "binary_accuracy")


def _spec(method: str) -> tuple[str, dict]:
    """``name`` or ``name{json params}``, e.g. ``ordinal-ds{"learn_gaps": true}``."""
    name, brace, rest = method.partition("{")
    return name, (json.loads(brace + rest) if brace else {})


def _fit_score(method: str, data, seed: int) -> tuple[dict[str, float], float]:  # noqa: ANN001
    name, params = _spec(method)
    if name in ("mace", "ordinal-gp", "magp", "gpmv", "lk"):
        params = {"random_state": seed, **params}
    model = make_aggregator(name, params)
    start = time.perf_counter()
    model.fit(data)
    seconds = time.perf_counter() - start
    scores = evaluate(model.proba_, data.gold, classes=data.classes,
                      labels=np.asarray(model.labels_))
    assert scores is not None
    # Binary data (--grades 2) have no MAE or κ: NaN in the table.
    return {k: float("nan") if getattr(scores, k) is None else float(getattr(scores, k))
            for k in SCORES}, seconds


def synthetic(args: argparse.Namespace) -> None:
    methods = args.methods.split(";")
    rows: dict[tuple[str, str], list[dict[str, float]]] = {}
    print("noise\tseed\tmethod\taccuracy\tmae\tkappa\tseconds", flush=True)
    for noise in args.noise.split(","):
        for seed in range(args.seeds):
            synth = generate(args.tasks, args.annotators, noise_level=NOISE_LEVELS[noise],
                             redundancy=args.redundancy, grades=args.grades,
                             bias_sd=args.bias_sd, topics=args.topics,
                             topic_concentration=args.topic_concentration, random_state=seed)
            data = synth.to_annotation_data(with_features=True)
            for method in methods:
                scores, seconds = _fit_score(method, data, seed)
                rows.setdefault((noise, method), []).append(scores)
                print(f"{noise}\t{seed}\t{method}\t{scores['accuracy']:.4f}\t{scores['mae']:.4f}"
                      f"\t{scores['kappa']:.4f}\t{seconds:.1f}", flush=True)
    print()
    print("| noise | " + " | ".join(f"{m}: acc / MAE / κ" for m in methods) + " |")
    print("|---|" + "---|" * len(methods))
    for noise in args.noise.split(","):
        cells = []
        for method in methods:
            r = rows[(noise, method)]
            cells.append(" / ".join(f"{np.mean([x[k] for x in r]):.3f}"
                                    for k in ("accuracy", "mae", "kappa")))
        print(f"| {noise} | " + " | ".join(cells) + " |")


def rf10(args: argparse.Namespace) -> None:
    if args.topic_blocks:
        rf10_blocks(args)
        return
    from app.cli.loading import load_annotation_data
    from models.evaluation.heldout import heldout_predictions
    from models.registry import get_method

    data = load_annotation_data(RF10.read_bytes(), graded=True)
    print(f"RF10 graded: {data.n_tasks} tasks, {int((data.gold >= 0).sum())} with NIST grades")
    print("| method | setting | exact accuracy | MAE | quadratic κ | binary accuracy | fit s |")
    print("|---|---|---:|---:|---:|---:|---:|")

    def row(method: str, setting: str, runs: list[dict[str, float]], seconds: str) -> None:
        cells = []
        for k in SCORES:
            values = [r[k] for r in runs]
            spread = f" ± {np.std(values, ddof=1):.4f}" if len(values) > 1 else ""
            cells.append(f"{np.mean(values):.4f}{spread}")
        print(f"| {method} | {setting} | " + " | ".join(cells) + f" | {seconds} |", flush=True)

    for method in args.methods.split(";"):
        name, params = _spec(method)
        if "calibrate_folds" not in params:  # a calibrated fit needs the gold: held out only
            scores, seconds = _fit_score(method, data, 0)
            row(method, "no gold", [scores], f"{seconds:.1f}")
        if not args.held_out or "use_gold" not in get_method(name).defaults:
            continue
        # Gold clamped and scored k-fold held out: every gold task scored by a fit that never
        # saw its grade (models/evaluation/heldout.py); the seed moves the folds (and
        # random_state where the method has one).
        runs = []
        for seed in range(args.seeds):
            clamped = {**params, "use_gold": True}
            if "random_state" in get_method(name).defaults:
                clamped = {"random_state": seed, **clamped}
            held = heldout_predictions(
                lambda n=name, p=clamped: make_aggregator(n, p, relevant_from=1), data,
                args.held_out, random_state=seed)
            e = evaluate(held.proba, data.gold, classes=data.classes, labels=held.labels)
            assert e is not None
            runs.append({k: float(getattr(e, k)) for k in SCORES})
        row(method, f"gold clamped, {args.held_out}-fold held out", runs, "")


def rf10_blocks(args: argparse.Namespace) -> None:
    """``--topic-blocks N``: RF10 cut into collections of N topics each (in topic order, the last
    block short), each fitted on its own without gold, as a smaller collection would be: a row
    per block and method, then the mean over the blocks."""
    from app.cli.loading import load_annotation_data

    header, *rows = RF10.read_text().splitlines()
    topics = sorted({r.split("\t", 1)[0] for r in rows})
    blocks = [set(topics[b:b + args.topic_blocks])
              for b in range(0, len(topics), args.topic_blocks)]
    methods = args.methods.split(";")
    scores: dict[str, list[dict[str, float]]] = {m: [] for m in methods}
    print("| block | topics | gold tasks | gold grades 0/1/2 | method | exact accuracy | MAE "
          "| quadratic κ | binary accuracy |")
    print("|---|---|---:|---|---|---:|---:|---:|---:|")
    for number, block in enumerate(blocks):
        text = "\n".join([header, *(r for r in rows if r.split("\t", 1)[0] in block)]) + "\n"
        data = load_annotation_data(text.encode(), graded=True)
        gold = data.gold[data.gold >= 0]
        grades = "/".join(str(int(c)) for c in np.bincount(gold, minlength=data.n_classes))
        for method in methods:
            result, _ = _fit_score(method, data, 0)
            scores[method].append(result)
            print(f"| {number} | {len(block)} | {gold.shape[0]} | {grades} | {method} | "
                  + " | ".join(f"{result[k]:.4f}" for k in SCORES) + " |", flush=True)
    for method in methods:
        print(f"| mean of {len(blocks)} | | | | {method} | "
              + " | ".join(f"{np.mean([r[k] for r in scores[method]]):.4f}" for k in SCORES)
              + " |")


def judgment_log_likelihood(data, method: str, folds: int, seed: int = 0) -> float:  # noqa: ANN001
    """Mean log-probability of held-out judgments: the judgments split into ``folds`` at random;
    each fold's fit (on the others, without gold) predicts a held-out judgment of annotator j on
    task i as P(y) = Σ_t P(T_i = t | the rest) π_j[t, y]. A gold-free score of how well a model
    predicts the crowd."""
    import dataclasses

    fold = np.random.default_rng(seed).integers(0, folds, data.n_judgments)
    name, params = _spec(method)
    total = 0.0
    for f in range(folds):
        keep = fold != f
        train = dataclasses.replace(data, task=data.task[keep], annotator=data.annotator[keep],
                                    label=data.label[keep], gold=None)
        model = make_aggregator(name, params).fit(train)
        t, a, y = data.task[~keep], data.annotator[~keep], data.label[~keep]
        p = np.einsum("nk,nk->n", model.proba_[t], model.confusion_[a, :, y])
        total += float(np.log(np.clip(p, 1e-12, None)).sum())
    return total / data.n_judgments


def likelihood(args: argparse.Namespace) -> None:
    if args.data == "rf10":
        from app.cli.loading import load_annotation_data

        sets = [("rf10", load_annotation_data(RF10.read_bytes(), graded=True))]
    else:
        sets = [(f"{noise} seed {seed}", generate(
            args.tasks, args.annotators, noise_level=NOISE_LEVELS[noise], grades=3,
            bias_sd=0.5, random_state=seed).to_annotation_data(with_features=False))
            for noise in args.noise.split(",") for seed in range(args.seeds)]
    print("| data | method | held-out judgment log-likelihood | exact accuracy | MAE | κ |")
    print("|---|---|---:|---:|---:|---:|")
    for label, data in sets:
        for method in args.methods.split(";"):
            ll = judgment_log_likelihood(data, method, args.folds)
            scores, _ = _fit_score(method, data, 0)
            print(f"| {label} | {method} | {ll:.4f} | {scores['accuracy']:.4f} | "
                  f"{scores['mae']:.4f} | {scores['kappa']:.4f} |", flush=True)


def speed(args: argparse.Namespace) -> None:
    synth = generate(args.tasks, args.annotators, noise_level=NOISE_LEVELS["0-2"], redundancy=5,
                     grades=3, bias_sd=0.5, topics=args.topics, random_state=0)
    data = synth.to_annotation_data(with_features=False)
    print(f"{data.n_tasks} tasks, {data.n_annotators} annotators, {data.n_judgments} judgments, "
          f"{args.topics} topic(s)")
    for method in args.methods.split(";"):
        name, params = _spec(method)
        model = make_aggregator(name, params)
        start = time.perf_counter()
        model.fit(data)
        seconds = time.perf_counter() - start
        print(f"{method}\t{seconds:.2f} s\t{model.n_iter_} EM iterations\t"
              f"{seconds / max(model.n_iter_, 1) * 1000:.0f} ms per iteration", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    syn = sub.add_parser("synthetic")
    syn.add_argument("--grades", type=int, default=3)
    syn.add_argument("--seeds", type=int, default=3)
    syn.add_argument("--tasks", type=int, default=500)
    syn.add_argument("--annotators", type=int, default=50)
    syn.add_argument("--redundancy", type=int, default=5)
    syn.add_argument("--bias-sd", type=float, default=0.5)
    syn.add_argument("--topics", type=int, default=1,
                     help="topics with their own grade mixes (crowdqrels synth --topics)")
    syn.add_argument("--topic-concentration", type=float, default=1.0)
    syn.add_argument("--noise", default="0-2,2-4,4-8,8-12")
    syn.add_argument("--methods", default="mv;ds;ordinal-ds;ordinal-gp",
                     help='";"-separated; a method may carry params: ordinal-ds{"learn_gaps":true}')
    syn.set_defaults(func=synthetic)
    real = sub.add_parser("rf10")
    real.add_argument("--methods", default="mv;mace;ds;ordinal-ds;ordinal-gp",
                      help='";"-separated; a method may carry params (as for synthetic)')
    real.add_argument("--held-out", type=int, default=0, metavar="K",
                      help="also fit with the gold clamped and score it K-fold held out")
    real.add_argument("--seeds", type=int, default=1, help="fold splits for --held-out")
    real.add_argument("--topic-blocks", type=int, default=0, metavar="N",
                      help="fit each block of N topics as a collection of its own")
    real.set_defaults(func=rf10)
    lik = sub.add_parser("likelihood", help="held-out judgment log-likelihood (no gold)")
    lik.add_argument("data", choices=("rf10", "synthetic"))
    lik.add_argument("--methods", default="ds;ordinal-ds")
    lik.add_argument("--folds", type=int, default=5)
    lik.add_argument("--seeds", type=int, default=2)
    lik.add_argument("--tasks", type=int, default=400)
    lik.add_argument("--annotators", type=int, default=50)
    lik.add_argument("--noise", default="2-4,8-12")
    lik.set_defaults(func=likelihood)
    fast = sub.add_parser("speed")
    fast.add_argument("--tasks", type=int, default=200000)
    fast.add_argument("--annotators", type=int, default=10000)
    fast.add_argument("--topics", type=int, default=1)
    fast.add_argument("--methods", default="ds;ordinal-ds")
    fast.set_defaults(func=speed)
    args = parser.parse_args()
    args.func(args)


if __name__ == "__main__":
    main()
