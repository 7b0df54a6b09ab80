"""Benchmarks for the GP aggregators (MAGP, GPMV, LK): accuracy, unseen tasks, RF10, speed.

    python bench/bench_gp.py accuracy [--seeds 10] [--cells 0-2:5,4-8:3 | all]
                                      [--magp-kernel linear]
    python bench/bench_gp.py unseen [--seeds 5]
    python bench/bench_gp.py rf10
    python bench/bench_gp.py speed --tasks 20000 --annotators 1000 --redundancy 5 [--stages]
    python bench/bench_gp.py reference [--tasks 2000]

Prints tab-separated rows (and, for ``accuracy``, a Markdown table). Not part of the test run.
"""

from __future__ import annotations

import argparse
import importlib
import os
import resource
import sys
import time
from pathlib import Path

import numpy as np
from scipy.special import log_ndtr

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from models.data import AnnotationData  # noqa: E402
from models.synthetic import NOISE_LEVELS, generate  # noqa: E402

REDUNDANCIES = (3, 5, 7)
RF10 = Path(os.environ.get(  # beside the checkout, as the tests expect it
    "CROWDQRELS_RF10_FILE",
    Path(__file__).resolve().parents[1].parent / "shared" / "data" / "trec-rf10-crowd"
    / "trec-rf10-data.txt",
))


def _baseline(name: str):  # noqa: ANN202 - an Aggregator class or None
    path = {"MV": "models.majority_vote:MajorityVote", "MACE": "models.mace:MACE",
            "DS": "models.dawid_skene:DawidSkene"}[name]
    module, _, cls = path.partition(":")
    try:
        return getattr(importlib.import_module(module), cls)
    except (ImportError, AttributeError):
        return None


def _make(cls, seed: int):  # noqa: ANN001, ANN202 - an Aggregator class and instance
    import inspect

    if "random_state" in inspect.signature(cls.__init__).parameters:
        return cls(random_state=seed)
    return cls()


def _accuracy(labels: np.ndarray, truth: np.ndarray) -> float:
    return float(np.mean(labels == truth))


def oracle_accuracy(s) -> float:  # noqa: ANN001 - SyntheticData
    """Bayes rule with the generating parameters known, except the class-specific task noise.

    log-odds = (x1 − x2) [the two unit Gaussians] + Σ_a log Φ(s_a/√(2+σ_j²)) − log Φ(−s_a/√(2+σ_j²))
    (σ_i² replaced by its mean, 2): the best any aggregator that weighs features and votes can do.
    """
    x = s.features
    sign = 2.0 * s.label - 1.0
    sd = np.sqrt(2.0 + s.annotator_noise[s.annotator])
    votes = np.bincount(s.task, log_ndtr(sign / sd) - log_ndtr(-sign / sd),
                        minlength=x.shape[0])
    return _accuracy((x[:, 0] - x[:, 1] + votes > 0).astype(int), s.truth)


def cmd_accuracy(args: argparse.Namespace) -> None:
    from models.gp.model import GPMV, LK, MAGP

    cells = _cells(args.cells)
    # The thesis fixes the biases at 0 (Algorithm 10 has none); the models' default learns μ_j.
    bias = args.learn_annotator_bias
    methods = ["MV", "MACE", "DS", "LK", "GPMV", "MAGP"]
    classes = {m: _baseline(m) for m in ("MV", "MACE", "DS")}
    rows = []
    print("noise\tredundancy\tseed\tmethod\taccuracy\tseconds", flush=True)
    for noise, red in cells:
        scores: dict[str, list[float]] = {m: [] for m in [*methods, "oracle"]}
        for seed in range(args.seeds):
            s = generate(args.tasks, args.annotators, noise_level=NOISE_LEVELS[noise],
                         redundancy=red, random_state=seed)
            data = s.to_annotation_data()
            scores["oracle"].append(oracle_accuracy(s))
            for m in methods:
                t0 = time.perf_counter()
                if m in classes:
                    cls = classes[m]
                    if cls is None:
                        continue
                    model = _make(cls, seed).fit(data)
                elif m == "LK":
                    model = LK(random_state=seed, learn_annotator_bias=bias).fit(data)
                elif m == "GPMV":
                    model = GPMV(random_state=seed, kernel=args.magp_kernel).fit(data)
                else:
                    model = MAGP(random_state=seed, kernel=args.magp_kernel,
                                 learn_annotator_bias=bias).fit(data)
                acc = _accuracy(model.labels_, s.truth)
                scores[m].append(acc)
                print(f"{noise}\t{red}\t{seed}\t{m}\t{acc:.4f}\t{time.perf_counter() - t0:.1f}",
                      flush=True)
        # Seeds on which MAGP is at least as accurate as every other method (paired comparison).
        others = [m for m in methods if m != "MAGP" and scores[m]]
        wins = sum(all(scores["MAGP"][k] >= scores[m][k] for m in others)
                   for k in range(len(scores["MAGP"])))
        rows.append((noise, red, {m: (np.mean(v), np.std(v)) if v else None
                                  for m, v in scores.items()}, wins))
    print()
    header = ["noise", "β", *methods, "oracle", "MAGP best on"]
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for noise, red, stats, wins in rows:
        cells_txt = [f"{stats[m][0]:.3f} ± {stats[m][1]:.3f}" if stats[m] is not None
                     else "pending" for m in [*methods, "oracle"]]
        print(f"| [{noise.replace('-', ',')}) | {red} | " + " | ".join(cells_txt)
              + f" | {wins}/{args.seeds} |")


def _cells(spec: str) -> list[tuple[str, int]]:
    if spec == "all":
        return [(n, r) for n in NOISE_LEVELS for r in REDUNDANCIES]
    out = []
    for part in spec.split(","):
        noise, _, red = part.partition(":")
        if noise not in NOISE_LEVELS:
            raise SystemExit(f"unknown noise level {noise!r}; use one of {list(NOISE_LEVELS)}")
        out.append((noise, int(red or 5)))
    return out


def _subset(data: AnnotationData, tasks: np.ndarray) -> AnnotationData:
    keep = np.isin(data.task, tasks)
    remap = np.full(data.n_tasks, -1)
    remap[tasks] = np.arange(tasks.shape[0])
    return AnnotationData(
        task=remap[data.task[keep]], annotator=data.annotator[keep], label=data.label[keep],
        topic_ids=data.topic_ids[tasks], doc_ids=data.doc_ids[tasks],
        annotator_ids=data.annotator_ids, classes=data.classes,
        gold=None if data.gold is None else data.gold[tasks],
        features=None if data.features is None else data.features[tasks],
    )


def cmd_unseen(args: argparse.Namespace) -> None:
    """Thesis §4.6.2: fit on 80 % of the tasks, label the held-out 20 % from features alone."""
    from sklearn.linear_model import LogisticRegression

    from models.gp.model import GPMV, MAGP

    print("noise\tredundancy\tseed\tMAGP\tGPMV\tLR(MV labels)\tLR(true labels)", flush=True)
    for noise, red in _cells(args.cells):
        res = []
        for seed in range(args.seeds):
            s = generate(args.tasks, args.annotators, noise_level=NOISE_LEVELS[noise],
                         redundancy=red, random_state=seed)
            data = s.to_annotation_data()
            order = np.random.default_rng(seed).permutation(data.n_tasks)
            cut = int(0.8 * data.n_tasks)
            train, test = np.sort(order[:cut]), np.sort(order[cut:])
            sub = _subset(data, train)
            magp = MAGP(random_state=seed, kernel=args.magp_kernel).fit(sub)
            gpmv = GPMV(random_state=seed, kernel=args.magp_kernel).fit(sub)
            counts = sub.counts()
            mv = (counts[:, 1] > counts[:, 0]).astype(int)
            lr_mv = LogisticRegression().fit(s.features[train], mv)
            lr_true = LogisticRegression().fit(s.features[train], s.truth[train])
            truth = s.truth[test]
            row = [
                _accuracy(magp.predict_proba(s.features[test]).argmax(1), truth),
                _accuracy(gpmv.predict_proba(s.features[test]).argmax(1), truth),
                _accuracy(lr_mv.predict(s.features[test]), truth),
                _accuracy(lr_true.predict(s.features[test]), truth),
            ]
            res.append(row)
            print(f"{noise}\t{red}\t{seed}\t" + "\t".join(f"{v:.4f}" for v in row), flush=True)
        mean = np.mean(res, axis=0)
        print(f"{noise}\t{red}\tmean\t" + "\t".join(f"{v:.4f}" for v in mean), flush=True)


def cmd_rf10(args: argparse.Namespace) -> None:
    from app.formats.judgments_file import parse_judgments
    from models.evaluation import evaluate
    from models.gp.model import LK, MAGP

    rows = parse_judgments(RF10.read_bytes())
    data = AnnotationData.from_rows(rows.topics, rows.docs, rows.annotators, rows.labels,
                                    ignore=[-2], relevant_from=1, gold=rows.golds)
    print(f"tasks {data.n_tasks}, judgments {data.n_judgments}, annotators {data.n_annotators}, "
          f"gold {(data.gold >= 0).sum()}", flush=True)
    candidates = {"MV": _baseline("MV"), "DS": _baseline("DS"), "MACE": _baseline("MACE")}
    gp = [("LK (default: annotator biases)", LK, {}),
          ("LK (biases fixed at 0, thesis)", LK, {"learn_annotator_bias": False}),
          ("LK (annotator and task biases)", LK, {"learn_task_bias": True}),
          ("MAGP (no features)", MAGP, {})]
    for name, cls, params in [*((n, c, {}) for n, c in candidates.items()), *gp]:
        if cls is None:
            print(f"{name}\tpending")
            continue
        t0 = time.perf_counter()
        model = (cls(random_state=0, **params) if params else _make(cls, 0)).fit(data)
        ev = evaluate(model.proba_, data.gold)
        extra = model.result(data).info.get("fallback", "")
        print(f"{name}\taccuracy {ev.accuracy:.4f}\tF1 {ev.f1:.4f}\tn_gold {ev.n_gold}\t"
              f"{time.perf_counter() - t0:.1f} s\t{extra}", flush=True)


def _time_stages() -> dict[str, list[tuple[float, float]]]:
    """Wrap the EM stages (E step, the M step's two L-BFGS blocks, task difficulty, k-means, the
    truth layer) so that each call's (wall, CPU) seconds are recorded (and each L-BFGS block's
    number of evaluations, as (count, 0)). CPU over wall is the stage's use of the cores."""
    import models.gp.model as gp_model
    import models.gp.training as training

    stages: dict[str, list[tuple[float, float]]] = {}

    def timed(owner, name: str, label: str) -> None:  # noqa: ANN001 - a class or module
        inner = getattr(owner, name)

        def wrapper(*a, **k):  # noqa: ANN002, ANN003, ANN202
            start, cpu = time.perf_counter(), time.process_time()
            out = inner(*a, **k)
            stages.setdefault(label, []).append((time.perf_counter() - start,
                                                 time.process_time() - cpu))
            return out

        setattr(owner, name, wrapper)

    timed(training.CrowdGPCore, "e_step", "E steps")
    timed(training, "fit_task_noise", "task difficulty")
    timed(training, "kmeans_inducing", "k-means")
    timed(gp_model.MAGP, "_discrete_layer", "truth layer")
    lbfgs = training._lbfgs

    def counted(loss_and_grads, variables, maxiter, *rest):  # noqa: ANN001, ANN002, ANN202
        calls = [0]

        def count():  # noqa: ANN202
            calls[0] += 1
            return loss_and_grads()

        start, cpu = time.perf_counter(), time.process_time()
        out = lbfgs(count, variables, maxiter, *rest)
        noise = any("annotator" in v.name or "task_" in v.name for v in variables)
        label = "M step, noise block" if noise else "M step, GP block"
        stages.setdefault(label, []).append((time.perf_counter() - start,
                                             time.process_time() - cpu))
        stages.setdefault(label + " evaluations", []).append((calls[0], 0.0))
        return out

    training._lbfgs = counted
    return stages


def cmd_speed(args: argparse.Namespace) -> None:
    from models.gp.model import LK, MAGP

    # TensorFlow and GPflow load once per process (the service's GP jobs fork from a starter
    # that has loaded them): timed apart, so that "fit" is the fit with or without --stages
    t0 = time.perf_counter()
    import models.gp.training  # noqa: F401
    imports = time.perf_counter() - t0
    stages = _time_stages() if args.stages else None
    t0 = time.perf_counter()
    s = generate(args.tasks, args.annotators, noise_level=(0.0, 2.0),
                 redundancy=args.redundancy, random_state=0)
    data = s.to_annotation_data()
    gen = time.perf_counter() - t0
    load = os.getloadavg()[0]
    t0, c0 = time.perf_counter(), time.process_time()
    if args.model == "lk":  # no features: --magp-kernel and --inducing play no part
        model = LK(random_state=0).fit(data)
    else:
        model = MAGP(random_state=0, kernel=args.magp_kernel, n_inducing=args.inducing).fit(data)
    fit, cpu = time.perf_counter() - t0, time.process_time() - c0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024**2  # KiB -> GiB
    info = model.info_
    print(f"{args.model}\ttasks {data.n_tasks}\tjudgments {data.n_judgments}\t"
          f"annotators {data.n_annotators}\t"
          f"import {imports:.1f} s\tgenerate {gen:.1f} s\tfit {fit:.1f} s\tCPU {cpu:.1f} s\t"
          f"EM iterations {info['n_iter']}\tE sweeps {info['e_step_sweeps']}\t"
          f"{info.get('gp', '-')}\t"
          f"accuracy {_accuracy(model.labels_, s.truth):.4f}\tpeak RSS {peak:.2f} GiB\t"
          f"load average {load:.1f} -> {os.getloadavg()[0]:.1f}", flush=True)
    for label, values in (stages or {}).items():
        wall, stage_cpu = (sum(v) for v in zip(*values, strict=True))
        if label.endswith("evaluations"):
            print(f"  {label}: {wall:.0f} in {len(values)} calls", flush=True)
        else:
            print(f"  {label}: {wall:.2f} s wall, {stage_cpu:.2f} s CPU (CPU/wall "
                  f"{stage_cpu / max(wall, 1e-9):.2f}) in {len(values)} calls", flush=True)


def cmd_reference(args: argparse.Namespace) -> None:
    """One likelihood evaluation, dense (reference code's layout) versus long format (ours).

    Dense: tasks × annotators label and mask matrices, every (i, j) pair evaluated, the noise
    integral of eq. 4.16e done numerically (``--noise-points`` Gauss–Hermite nodes) inside the
    Gauss–Hermite rule over f — a (Q_f, N, M, Q_b) tensor, masked and summed. Long: gather each
    judgment's parameters and use the closed form (one 1-D rule per judgment).
    """
    import tensorflow as tf

    from models.gp.likelihood import gather_noise, gauss_hermite, judgment_expectations

    s = generate(args.tasks, args.annotators, noise_level=(0.0, 2.0),
                 redundancy=args.redundancy, random_state=0)
    n, m = args.tasks, args.annotators
    rng = np.random.default_rng(0)
    fmu = tf.constant(rng.normal(size=n))
    fvar = tf.constant(rng.uniform(0.1, 1.0, size=n))
    tv = tf.constant(np.ones(n))
    av = tf.constant(rng.uniform(0, 2, size=m))
    zeros_n, zeros_m = tf.zeros(n, tf.float64), tf.zeros(m, tf.float64)
    nodes, weights = gauss_hermite(20)
    bnodes, bweights = gauss_hermite(args.noise_points)

    def long_eval() -> float:
        task = tf.constant(s.task, tf.int32)
        ann = tf.constant(s.annotator, tf.int32)
        sign = tf.constant(2.0 * s.label - 1.0)
        offset, scale = gather_noise(task, ann, tv, av, zeros_n, zeros_m)
        ve, _, _ = judgment_expectations(tf.gather(fmu, task), tf.gather(fvar, task), sign,
                                         offset, scale, nodes, weights)
        return float(tf.reduce_sum(ve).numpy())

    def dense_eval() -> float:
        Y = np.zeros((n, m))
        mask = np.zeros((n, m))
        Y[s.task, s.annotator] = 2.0 * s.label - 1.0
        mask[s.task, s.annotator] = 1.0
        Yt, Mt = tf.constant(Y), tf.constant(mask)
        f = fmu[None, :] + tf.sqrt(fvar)[None, :] * tf.constant(nodes)[:, None]  # (Qf, N)
        sd = tf.sqrt(tv[:, None] + av[None, :])  # (N, M)
        b = (f[:, :, None, None] + sd[None, :, :, None]
             * tf.constant(bnodes)[None, None, None, :])  # (Qf, N, M, Qb)
        lik = tf.reduce_sum(tf.constant(bweights) * 0.5
                            * tf.math.erfc(-Yt[None, :, :, None] * b / np.sqrt(2.0)), axis=-1)
        logp = tf.math.log(tf.maximum(lik, 1e-300)) * Mt[None]
        return float(tf.reduce_sum(tf.constant(weights)[:, None, None] * logp).numpy())

    for name, fn in (("long (ours)", long_eval), ("dense reference", dense_eval)):
        fn()  # warm-up
        times = []
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            value = fn()
            times.append(time.perf_counter() - t0)
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024**2
        print(f"{name}\tN={n} M={m} judgments={s.task.shape[0]}\tbest {min(times):.4f} s\t"
              f"value {value:.2f}\tpeak RSS so far {peak:.2f} GiB", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    acc = sub.add_parser("accuracy")
    acc.add_argument("--seeds", type=int, default=10)
    acc.add_argument("--cells", default="all", help="'all' or e.g. 0-2:5,4-8:3 (noise:redundancy)")
    acc.add_argument("--learn-annotator-bias", action="store_true",
                     help="LK and MAGP learn annotator biases (LK's default; off: MAGP's, "
                          "and the thesis' setting)")
    unseen = sub.add_parser("unseen")
    unseen.add_argument("--seeds", type=int, default=5)
    unseen.add_argument("--cells", default="0-2:5,4-8:5")
    for p in (acc, unseen):
        p.add_argument("--tasks", type=int, default=1000)
        p.add_argument("--annotators", type=int, default=50)
        p.add_argument("--magp-kernel", default="linear")
    sub.add_parser("rf10")
    speed = sub.add_parser("speed")
    speed.add_argument("--tasks", type=int, default=20000)
    speed.add_argument("--annotators", type=int, default=1000)
    speed.add_argument("--redundancy", type=int, default=5)
    speed.add_argument("--inducing", type=int, default=200)
    speed.add_argument("--magp-kernel", default="rbf")
    speed.add_argument("--model", choices=("magp", "lk"), default="magp",
                       help="lk: the likelihood part alone, no features (the kernel and inducing "
                            "points play no part)")
    speed.add_argument("--stages", action="store_true",
                       help="also print the seconds of each EM stage and L-BFGS evaluations")
    ref = sub.add_parser("reference")
    ref.add_argument("--tasks", type=int, default=2000)
    ref.add_argument("--annotators", type=int, default=100)
    ref.add_argument("--redundancy", type=int, default=5)
    ref.add_argument("--noise-points", type=int, default=10)
    ref.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    {"accuracy": cmd_accuracy, "unseen": cmd_unseen, "rf10": cmd_rf10, "speed": cmd_speed,
     "reference": cmd_reference}[args.command](args)


if __name__ == "__main__":
    main()
