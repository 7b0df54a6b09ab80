"""Dense correlated LLM-like judges and sparse skewed crowds (issue #38): every model against
majority vote, the best single judge and crowd-kit 1.4.2, on models.synthetic's generators.

    python bench/bench_robust.py judges            # dense judges: exact accuracy / quadratic κ
    python bench/bench_robust.py crowds            # sparse skewed crowds: accuracy
    python bench/bench_robust.py judges --seeds 3 --tasks 2000

No gold is used by any fit; gold only scores. Prints markdown tables (mean over seeds). A
script, never part of the test run.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from models.evaluation.gold import quadratic_kappa  # noqa: E402
from models.registry import make_aggregator  # noqa: E402
from models.synthetic import crowd_dataset, judges_dataset  # noqa: E402

# (judges, judge_correlation, leniency, noise): from independent to strongly shared errors
JUDGE_SETS = ((12, 0.0, 0.0, 0.8), (12, 0.6, 0.0, 0.8), (30, 0.6, 0.5, 1.0),
              (12, 0.8, 0.7, 0.8), (30, 0.3, 0.3, 1.2), (8, 0.4, 0.3, 0.8))
JUDGE_METHODS = (
    ("mv", {}), ("ds", {"dependence": "ignore"}), ("ds", {}),
    ("ibcc", {"dependence": "ignore"}), ("ibcc", {}),
    ("ordinal-ds", {"dependence": "ignore"}), ("ordinal-ds", {}),
    ("mace", {}), ("ebcc", {}),
)
# (grades, class prior or None for the generator's default)
CROWD_SETS = ((2, None), (2, (0.7, 0.3)), (4, None), (5, None))
CROWD_METHODS = (("mv", {}), ("ds", {}), ("ibcc", {}), ("ebcc", {}), ("mace", {}),
                 ("mace", {"class_prior": "learned"}), ("crowdkit-ds", {}),
                 ("crowdkit-mace", {}))


def _name(method: str, params: dict) -> str:
    return method + ("" if not params else " " + ",".join(f"{k}={v}" for k, v in params.items()))


def _labels(method: str, params: dict, s, seed: int) -> np.ndarray:  # type: ignore[no-untyped-def]
    if method.startswith("crowdkit-"):
        import pandas as pd
        from crowdkit.aggregation import MACE, DawidSkene

        frame = pd.DataFrame({"task": s.task, "worker": s.annotator, "label": s.label})
        model = DawidSkene(n_iter=100) if method == "crowdkit-ds" else MACE(random_state=seed)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            found = model.fit_predict(frame)
        return found.reindex(range(s.truth.shape[0])).to_numpy().astype(np.int64)
    params = dict(params)
    if method in ("mace", "ebcc"):
        params.setdefault("random_state", seed)
    model = make_aggregator(method, params).fit(s.to_annotation_data(with_features=False))
    return model.labels_


def _judges(args: argparse.Namespace) -> None:
    names = ["best judge"] + [_name(m, p) for m, p in JUDGE_METHODS]
    print("| judges, R, B, noise | " + " | ".join(names) + " |")
    print("|---|" + "---:|" * len(names))
    for judges, r, b, noise in JUDGE_SETS:
        rows = []
        for seed in range(args.seeds):
            s = judges_dataset(args.tasks, judges, judge_correlation=r, leniency=b, noise=noise,
                               random_state=seed + 1)
            grades = s.label.reshape(args.tasks, judges)
            best = max((float(np.mean(grades[:, j] == s.truth)),
                        quadratic_kappa(grades[:, j], s.truth, 4)) for j in range(judges))
            row = [best]
            for method, params in JUDGE_METHODS:
                lab = _labels(method, params, s, seed)
                row.append((float(np.mean(lab == s.truth)), quadratic_kappa(lab, s.truth, 4)))
            rows.append(row)
        mean = np.mean(np.array(rows), axis=0)
        cells = " | ".join(f"{a:.3f} / {k:.3f}" for a, k in mean)
        print(f"| {judges}, {r}, {b}, {noise} | {cells} |", flush=True)


def _crowds(args: argparse.Namespace) -> None:
    names = [_name(m, p) for m, p in CROWD_METHODS]
    print("| grades, class prior | " + " | ".join(names) + " |")
    print("|---|" + "---:|" * len(names))
    for grades, prior in CROWD_SETS:
        rows = []
        for seed in range(args.seeds):
            s = crowd_dataset(args.tasks, 150, grades=grades, class_prior=prior,
                              random_state=seed)
            rows.append([float(np.mean(_labels(m, p, s, seed) == s.truth))
                         for m, p in CROWD_METHODS])
        mean = np.mean(np.array(rows), axis=0)
        label = "default" if prior is None else "/".join(str(v) for v in prior)
        print(f"| {grades}, {label} | " + " | ".join(f"{v:.3f}" for v in mean) + " |",
              flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=("judges", "crowds"))
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--tasks", type=int, default=1500)
    args = parser.parse_args()
    (_judges if args.what == "judges" else _crowds)(args)


if __name__ == "__main__":
    main()
