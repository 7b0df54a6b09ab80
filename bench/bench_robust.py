"""Dense correlated LLM-like judges and sparse skewed crowds (issue #38): every model against
majority vote, the best single judge and crowd-kit 1.4.2, on models.synthetic's generators.

    python bench/bench_robust.py judges            # dense judges: exact accuracy / quadratic κ
    python bench/bench_robust.py crowds            # sparse skewed crowds: accuracy
    python bench/bench_robust.py judges --seeds 3 --tasks 2000
    python bench/bench_robust.py crowds --methods 'mace;mace{"class_prior":"uniform"}'
    python bench/bench_robust.py judges --methods 'judge-family;judge-family{"families":"none"}'
    python bench/bench_robust.py judges --methods 'oracle;oracle{"leniency":"unknown"}'
    python bench/bench_robust.py mixed             # crowd + LLM panel (+ experts): the same
    python bench/bench_robust.py judges --ece      # and each posterior's top-class ECE (crowds too)

mixed: models.synthetic.mixed_dataset, a sparse Algorithm-10 crowd (3 per task), a dense
correlated lenient LLM panel and, in every other row, 3 experts on 10 % of the tasks; the
single sources are the best LLM judge and the crowd's own majority vote (all tasks).

judges: ``judge-family{"families":"id"}`` reads the generator's true families from the judges'
ids; ``oracle`` is the Bayes posterior under the generator's true parameters (a bound),
``oracle{"leniency":"unknown"}`` the same with the judges' biases centred (the shared leniency
unknown, as to every gold-free model).

No gold is used by any fit; gold only scores. Prints markdown tables (mean over seeds). A
script, never part of the test run.
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from dataclasses import replace
from pathlib import Path

import numpy as np
from scipy.special import logsumexp

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from models.evaluation.gold import quadratic_kappa  # noqa: E402
from models.ordinal_scale import _log_diff_ndtr  # noqa: E402
from models.registry import make_aggregator  # noqa: E402
from models.synthetic import (  # noqa: E402
    JUDGE_PRIOR,
    crowd_dataset,
    judges_dataset,
    mixed_dataset,
)

# (judges, judge_correlation, leniency, noise): from independent to strongly shared errors
JUDGE_SETS = ((12, 0.0, 0.0, 0.8), (12, 0.6, 0.0, 0.8), (30, 0.6, 0.5, 1.0),
              (12, 0.8, 0.7, 0.8), (30, 0.3, 0.3, 1.2), (8, 0.4, 0.3, 0.8),
              # harder: shared errors without leniency at other noise levels, and 30 lenient
              # judges with less noise of their own (the shared part then dominates)
              (12, 0.6, 0.0, 0.5), (12, 0.6, 0.0, 1.2), (30, 0.6, 0.5, 0.6))
JUDGE_METHODS = (
    ("mv", {}), ("ds", {"dependence": "ignore"}), ("ds", {}),
    ("ibcc", {"dependence": "ignore"}), ("ibcc", {}),
    ("ordinal-ds", {"dependence": "ignore"}), ("ordinal-ds", {}),
    ("mace", {}), ("ebcc", {}), ("judge-family", {}),
)
# (grades, class prior or None for the generator's default, workers, power-law exponent,
# worker accuracy range): 150 workers drawn by a power law (a few do most tasks), or 1,000
# drawn uniformly (many workers with a handful of tasks each, as on most real crowd sets); 3
# judgments per task; the last two: weak workers (majority vote near .65, as on two real sets)
CROWD_SETS = ((2, None, 150, 1.0, (0.6, 0.95)), (2, (0.7, 0.3), 150, 1.0, (0.6, 0.95)),
              (4, None, 150, 1.0, (0.6, 0.95)), (5, None, 150, 1.0, (0.6, 0.95)),
              (2, None, 1000, 0.0, (0.6, 0.95)), (4, None, 1000, 0.0, (0.6, 0.95)),
              (5, None, 1000, 0.0, (0.6, 0.95)), (4, None, 1000, 0.0, (0.35, 0.85)),
              (5, None, 1000, 0.0, (0.35, 0.85)))
# (judges, judge_correlation, leniency, judge noise, experts): with experts, then without
MIXED_SETS = ((12, 0.6, 0.5, 0.8, 3), (12, 0.6, 0.5, 0.8, 0),
              (30, 0.6, 0.5, 1.0, 3), (30, 0.6, 0.5, 1.0, 0),
              (8, 0.4, 0.3, 0.8, 3), (8, 0.4, 0.3, 0.8, 0))
MIXED_METHODS = (("mv", {}), ("ds", {}), ("ibcc", {}), ("ebcc", {}), ("mace", {}),
                 ("ordinal-ds", {}), ("judge-family", {}))
CROWD_METHODS = (("mv", {}), ("ds", {}), ("ibcc", {}), ("ebcc", {}), ("mace", {}),
                 ("judge-family", {}),
                 ("mace", {"class_prior": "uniform"}), ("crowdkit-ds", {}),
                 ("crowdkit-mace", {}), ("crowdkit-mace-sorted", {}))


def _name(method: str, params: dict) -> str:
    return method + ("" if not params else " " + ",".join(f"{k}={v}" for k, v in params.items()))


def _fit(method: str, params: dict, s, seed: int  # type: ignore[no-untyped-def]
         ) -> tuple[np.ndarray, np.ndarray | None]:
    """The method's labels and its posterior (tasks × grades; None for crowd-kit)."""
    if method.startswith("crowdkit-"):
        import pandas as pd
        from crowdkit.aggregation import MACE, DawidSkene

        frame = pd.DataFrame({"task": s.task, "worker": s.annotator, "label": s.label})
        if method == "crowdkit-mace-sorted":
            # crowd-kit 1.4.2 gives worker k the spam distribution of the k-th worker in sorted
            # order while it numbers workers by first appearance (docs/models.md): rows sorted
            # by worker make the two agree
            frame = frame.sort_values("worker", kind="stable")
        # crowd-kit re-seeds every MACE restart alike: one restart is its 10
        model = (DawidSkene(n_iter=100) if method == "crowdkit-ds"
                 else MACE(n_restarts=1, random_state=seed))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            found = model.fit_predict(frame)
        return found.reindex(range(s.truth.shape[0])).to_numpy().astype(np.int64), None
    params = dict(params)
    if method in ("mace", "ebcc"):
        params.setdefault("random_state", seed)
    data = s.to_annotation_data(with_features=False)
    if params.get("families") == "id":
        # the generator's families as the judges' ids say them (judge j is in family j mod 3):
        # judge-family with the true families instead of the clustered ones
        data = replace(data, annotator_ids=np.array(
            [f"f{j % 3}/j{j}" for j in range(data.n_annotators)]))
    model = make_aggregator(method, params).fit(data)
    return model.labels_, model.proba_


def _scores(labels: np.ndarray, proba: np.ndarray | None, truth: np.ndarray,
            with_ece: bool) -> tuple[float, ...]:
    """Exact accuracy, quadratic κ and, with ``--ece``, the top-class ECE (the most probable
    grade's probability against whether it is the true grade; 10 bins, as the calibration
    bench) — NaN where the method gives no posterior."""
    scores = (float(np.mean(labels == truth)), quadratic_kappa(labels, truth, 4))
    if not with_ece:
        return scores
    return (*scores, _top_class_ece(proba, truth))


def _top_class_ece(proba: np.ndarray | None, truth: np.ndarray) -> float:
    """The most probable class's probability against whether it is the true one (10 bins, as
    the calibration bench); NaN without a posterior."""
    if proba is None:
        return float("nan")
    from models.evaluation.reliability import calibration_event, reliability

    return reliability(*calibration_event(proba, truth)).ece


def _cells(mean: np.ndarray) -> str:
    return " | ".join(" / ".join("–" if np.isnan(v) else f"{v:.3f}" for v in cell)
                      for cell in mean)


def _oracle(s, n_tasks: int, judges: int, r: float, *, leniency_known: bool,
            nodes: int = 20) -> np.ndarray:  # type: ignore[no-untyped-def]
    """The Bayes posterior's labels under the generator with its true parameters (class prior,
    each judge's bias and spread, the correlation R, the 3 families): an upper bound for any
    gold-free aggregate. ``leniency_known=False``: the judges' biases centred on 0, i.e. the
    shared leniency B unknown (the convention every gold-free model takes: judges unbiased on
    average). Nested Gauss–Hermite over u and each family's v, as models.judge_family."""
    x, w = np.polynomial.hermite_e.hermegauss(nodes)
    lw = np.log(w / w.sum())
    grades = s.label.reshape(n_tasks, judges)
    spread = np.sqrt(s.annotator_noise)
    bias = s.annotator_bias if leniency_known else s.annotator_bias - s.annotator_bias.mean()
    load, own = spread * np.sqrt(r / 2), spread * np.sqrt(1 - r)
    family = np.arange(judges) % 3
    upper = np.array([0.5, 1.5, 2.5, np.inf])[grades][:, :, None, None]
    lower = np.array([-np.inf, 0.5, 1.5, 2.5])[grades][:, :, None, None]
    out = np.zeros((n_tasks, 4))
    for t in range(4):
        mu = (t + bias[:, None, None]
              + load[:, None, None] * (x[None, :, None] + x[None, None, :]))[None]
        scale = own[None, :, None, None]
        cell = np.maximum(_log_diff_ndtr(np.clip((upper - mu) / scale, -50, 50),
                                         np.clip((lower - mu) / scale, -50, 50)), -700.0)
        total = sum(logsumexp(cell[:, family == f].sum(axis=1) + lw[None, None, :], axis=2)
                    for f in range(3))
        out[:, t] = logsumexp(total + lw[None, :], axis=1) + np.log(JUDGE_PRIOR[t])
    return np.argmax(out, axis=1)


def _judges(args: argparse.Namespace) -> None:
    methods = _methods(args.methods, JUDGE_METHODS)
    names = ["best judge"] + [_name(m, p) for m, p in methods]
    print("| judges, R, B, noise | " + " | ".join(names) + " |")
    print("|---|" + "---:|" * len(names))
    for judges, r, b, noise in JUDGE_SETS:
        rows = []
        for seed in range(args.seeds):
            s = judges_dataset(args.tasks, judges, judge_correlation=r, leniency=b, noise=noise,
                               random_state=seed + 1)
            grades = s.label.reshape(args.tasks, judges)
            best = max(_scores(grades[:, j], None, s.truth, args.ece) for j in range(judges))
            row = [best]
            for method, params in methods:
                if method == "oracle":
                    lab, proba = _oracle(s, args.tasks, judges, r, leniency_known=params.get(
                        "leniency") != "unknown"), None
                else:
                    lab, proba = _fit(method, params, s, seed)
                row.append(_scores(lab, proba, s.truth, args.ece))
            rows.append(row)
        mean = np.mean(np.array(rows), axis=0)
        print(f"| {judges}, {r}, {b}, {noise} | {_cells(mean)} |", flush=True)


def _mixed(args: argparse.Namespace) -> None:
    methods = _methods(args.methods, MIXED_METHODS)
    names = ["best judge", "crowd mv"] + [_name(m, p) for m, p in methods]
    print("| judges, R, B, noise, experts | " + " | ".join(names) + " |")
    print("|---|" + "---:|" * len(names))
    for judges, r, b, noise, experts in MIXED_SETS:
        rows = []
        for seed in range(args.seeds):
            s = mixed_dataset(args.tasks, judges, judge_correlation=r, leniency=b, noise=noise,
                              experts=experts, random_state=seed + 1)
            panel = s.kind[s.annotator] == "llm"
            grades = s.label[panel].reshape(args.tasks, judges)
            best = max(_scores(grades[:, j], None, s.truth, args.ece) for j in range(judges))
            crowd = s.kind[s.annotator] == "crowd"
            alone = replace(s, task=s.task[crowd], annotator=s.annotator[crowd],
                            label=s.label[crowd])
            row = [best, _scores(*_fit("mv", {}, alone, seed), s.truth, args.ece)]
            for method, params in methods:
                row.append(_scores(*_fit(method, params, s, seed), s.truth, args.ece))
            rows.append(row)
        mean = np.mean(np.array(rows), axis=0)
        print(f"| {judges}, {r}, {b}, {noise}, {experts} | {_cells(mean)} |", flush=True)


def _methods(spec: str | None, default: tuple[tuple[str, dict], ...]
             ) -> tuple[tuple[str, dict], ...]:
    """``--methods 'mace;mace{"class_prior":"uniform"}'``: method names with JSON params."""
    if not spec:
        return default
    out = []
    for item in spec.split(";"):
        name, brace, rest = item.partition("{")
        out.append((name, json.loads(brace + rest) if brace else {}))
    return (("mv", {}), *out)


def _crowds(args: argparse.Namespace) -> None:
    methods = _methods(args.methods, CROWD_METHODS)
    names = [_name(m, p) for m, p in methods]
    print("| grades, class mix, workers | " + " | ".join(names) + " |")
    print("|---|" + "---:|" * len(names))
    for grades, prior, workers, alpha, accuracy in CROWD_SETS:
        rows = []
        for seed in range(args.seeds):
            s = crowd_dataset(args.tasks, workers, grades=grades, class_prior=prior,
                              alpha=alpha, accuracy=accuracy, random_state=seed)
            row = []
            for m, p in methods:
                labels, proba = _fit(m, p, s, seed)
                accuracy_ = float(np.mean(labels == s.truth))
                if args.ece:  # and the top-class ECE (NaN for crowd-kit: no posterior)
                    row.append((accuracy_, _top_class_ece(proba, s.truth)))
                else:
                    row.append((accuracy_,))
            rows.append(row)
        mean = np.mean(np.array(rows), axis=0)
        label = "default" if prior is None else "/".join(str(v) for v in prior)
        drawn = "power law" if alpha > 0 else "uniformly"
        weak = "" if accuracy == (0.6, 0.95) else f", accuracy {accuracy[0]}-{accuracy[1]}"
        print(f"| {grades}, {label}, {workers} {drawn}{weak} | {_cells(mean)} |", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=("judges", "crowds", "mixed"))
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--tasks", type=int, default=1500)
    parser.add_argument("--methods", help="';'-separated methods, each with optional JSON "
                                          "params (majority vote is always first)")
    parser.add_argument("--ece", action="store_true",
                        help="add each method's top-class ECE against the truth")
    args = parser.parse_args()
    {"judges": _judges, "crowds": _crowds, "mixed": _mixed}[args.what](args)


if __name__ == "__main__":
    main()
