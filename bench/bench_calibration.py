"""Calibration of P(relevant) per method: ECE, Brier score, log loss and accuracy against gold.

    python bench/bench_calibration.py rf10                  # RF10 binary, every method
    python bench/bench_calibration.py rf10 --graded         # RF10 graded: top-class calibration
    python bench/bench_calibration.py rf10 --methods ds,mace --calibrated   # + calibrate_folds 5
    python bench/bench_calibration.py rf10 --calibrated --calibration platt   # one map, forced
    python bench/bench_calibration.py grid --tasks 500      # synthetic grid (Algorithm 10)
    python bench/bench_calibration.py tempering             # DS with a tempered posterior (tried)
    python bench/bench_calibration.py maps                  # Platt vs isotonic, cross-fitted
    python bench/bench_calibration.py bound                 # the read-out's τ, ρ̄ and their oracles
    python bench/bench_calibration.py criteria --methods mace,ds,ibcc,ebcc  # τ criteria compared
    python bench/bench_calibration.py readout               # its half fits warm against cold
    python bench/bench_calibration.py predictive            # parameters integrated out (tried)
    python bench/bench_calibration.py worlds                # NIST vs the model's world: the bound
    python bench/bench_calibration.py layers                # LK's read-out by held-out judgments

Scores are ``models.evaluation.gold.evaluate``'s (the fit's evaluation): ECE over 10 equal-width
bins of P(relevant) (graded: of the top grade's probability, against whether it is the gold
grade), Brier score (graded: multi-class), log loss of the gold class, accuracy of the most
probable class; on the gold tasks that have judgments. Two settings:

- "no gold": the model never sees the gold (every method's defaults, ``random_state`` 0);
- "calibrate_folds 5" (``--calibrated``): the method with ``use_gold: true, calibrate_folds: 5``
  (``models.calibration.GoldCalibrated``: the map ``--calibration``, default ``auto``, the one
  of Platt's, the beta and the isotonic map of lowest held-out log loss, fitted on 5-fold
  held-out gold), scored 5-fold
  held out with the calibration refitted inside every outer fold (nested), so no gold task is
  scored by a fit or a calibration that saw its label. 30 fits per method: slow for the GP
  methods on RF10 (a LK fit takes ~1-2 min there).

The grid: ``models.synthetic.generate`` (the model-true data of docs/gp.md), every noise level x
redundancy, ``--tasks`` tasks, 60 annotators, seed 7; MAGP with the two synthetic features.
A script, never part of the test run.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
RF10 = Path(os.environ.get(
    "CROWDQRELS_RF10_FILE",
    ROOT.parent / "shared" / "data" / "trec-rf10-crowd" / "trec-rf10-data.txt",
))

BINARY = "mv,ds,mace,ibcc,ebcc,lk"
GRADED = "mv,ds,ibcc,ordinal-ds,ordinal-gp"
GRID = "mv,ds,mace,ibcc,ebcc,lk,magp"
SCORES = ("accuracy", "ece", "brier", "log_loss")


def _scores(proba: np.ndarray, gold: np.ndarray) -> dict[str, float]:
    from models.evaluation.gold import evaluate

    e = evaluate(proba, gold)
    assert e is not None
    return {k: float(getattr(e, k)) for k in SCORES}


def _params(method: str) -> dict:
    from models.registry import get_method

    defaults = get_method(method).defaults
    return {"random_state": 0} if "random_state" in defaults else {}


def ece_floor(p: np.ndarray, draws: int = 50, seed: int = 0) -> float:
    """The mean ECE of these same P(relevant) were they perfectly calibrated (outcomes drawn
    from them): the ECE a finite gold set reports for a calibrated model (about .04 at 500 tasks,
    .02 at 2,000)."""
    from models.evaluation.reliability import reliability

    rng = np.random.default_rng(seed)
    return float(np.mean([reliability(p, rng.random(p.shape[0]) < p).ece
                          for _ in range(draws)]))


def no_gold(method: str, data, params: dict | None = None  # type: ignore[no-untyped-def]
            ) -> tuple[dict[str, float], float]:
    from dataclasses import replace

    from models.registry import get_method

    scored = np.where(data.judgments_per_task() > 0, data.gold, -1)
    start = time.perf_counter()
    model = get_method(method).build({**_params(method), **(params or {})}).fit(
        replace(data, gold=None))
    seconds = time.perf_counter() - start
    from models.evaluation.reliability import calibration_event

    known = scored >= 0
    p, _ = calibration_event(model.proba_[known], scored[known])
    return {**_scores(model.proba_, scored), "floor": ece_floor(p)}, seconds


def calibrated(method: str, data, calibration: str = "auto"  # type: ignore[no-untyped-def]
               ) -> dict[str, float]:
    from models.evaluation.heldout import heldout_predictions
    from models.registry import get_method

    spec = get_method(method)
    params = {**_params(method), "use_gold": True, "calibrate_folds": 5,
              "calibration": calibration}
    held = heldout_predictions(lambda: spec.build(params, relevant_from=1), data, 5,
                               random_state=0)
    scored = np.where(data.judgments_per_task() > 0, data.gold, -1)
    return _scores(held.proba, scored)


def _row(name: str, setting: str, s: dict[str, float], seconds: str = "") -> str:
    return (f"| {name} | {setting} | " + " | ".join(f"{s[k]:.4f}" for k in SCORES)
            + f" | {seconds} |")


def rf10(args: argparse.Namespace) -> None:
    from app.cli.loading import load_annotation_data

    raw = RF10.read_bytes()
    data = (load_annotation_data(raw, graded=True) if args.graded
            else load_annotation_data(raw, relevant_from=1, ignore=(-2,)))
    kind = "graded (top-class calibration)" if args.graded else "binary (relevant from 1)"
    print(f"RF10 {kind}: {data.n_tasks} tasks, {int((data.gold >= 0).sum())} with gold")
    print("| method | setting | accuracy | ECE | Brier | log loss | fit s | ECE floor |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    methods = args.methods or (GRADED if args.graded else BINARY)
    for method in methods.split(","):
        s, seconds = no_gold(method, data, json.loads(args.params or "{}"))
        print(_row(method, "no gold", s, f"{seconds:.1f} | {s['floor']:.4f}"), flush=True)
        if args.calibrated and "use_gold" in _defaults(method):
            print(_row(method, f"calibrate_folds 5 ({args.calibration}), held out",
                       calibrated(method, data, args.calibration), " |"), flush=True)


def _defaults(method: str) -> dict:
    from models.registry import get_method

    return get_method(method).defaults


def grid(args: argparse.Namespace) -> None:
    from models.synthetic import NOISE_LEVELS, generate

    methods = args.methods or GRID
    noises = args.noise.split(",")
    redundancies = [int(r) for r in args.redundancy.split(",")]
    print(f"Synthetic grid (Algorithm 10): {args.tasks} tasks, 60 annotators, seed {args.seed}; "
          "per cell ECE (its floor: the ECE of the same P were they calibrated) / accuracy")
    print("| noise | β | " + " | ".join(methods.split(",")) + " |")
    print("|---|---|" + "---:|" * len(methods.split(",")))
    for noise in noises:
        for beta in redundancies:
            syn = generate(args.tasks, 60, noise_level=NOISE_LEVELS[noise], redundancy=beta,
                           random_state=args.seed)
            data = syn.to_annotation_data(with_features=True)
            cells = []
            for method in methods.split(","):
                s, _ = no_gold(method, data, json.loads(args.params or "{}"))
                cells.append(f"{s['ece']:.3f} ({s['floor']:.3f}) / {s['accuracy']:.3f}")
            print(f"| {noise} | {beta} | " + " | ".join(cells) + " |", flush=True)


def loo_temperature(model, data) -> float:  # type: ignore[no-untyped-def]
    """A fitted DS's τ of the tempered posterior log q ∝ log ρ + τ Σ_a ℓ_a that predicts every
    judgment best from its task's other judgments (docs/models.md, "Calibration without gold")."""
    import scipy.optimize
    from scipy.special import logsumexp

    table = np.log(model.confusion_[data.annotator, :, data.label])  # (n_judgments, K)
    sums = np.stack([np.bincount(data.task, weights=table[:, k], minlength=data.n_tasks)
                     for k in range(table.shape[1])], axis=1)
    log_prior = np.log(model.prior_)

    def loss(tau: float) -> float:
        log_q = log_prior + tau * (sums[data.task] - table)
        log_q -= logsumexp(log_q, axis=1, keepdims=True)
        return -float(logsumexp(log_q + table, axis=1).sum())

    return float(scipy.optimize.minimize_scalar(loss, bounds=(0.05, 1.0), method="bounded").x)


def tempering(args: argparse.Namespace) -> None:
    """τ chosen without gold, and what it does to DS's calibration: RF10, the synthetic set of
    issue 34, and judgments copied by clones (each judgment given by 3 annotators)."""
    from dataclasses import replace

    from scipy.special import softmax

    from app.cli.loading import load_annotation_data
    from models.dawid_skene import DawidSkene
    from models.synthetic import generate

    rf10 = load_annotation_data(RF10.read_bytes(), relevant_from=1, ignore=(-2,))
    syn = generate(2000, 60, noise_level=(4.0, 8.0), redundancy=5,
                   random_state=7).to_annotation_data(with_features=False)
    copied = replace(syn, task=np.tile(syn.task, 3), label=np.tile(syn.label, 3),
                     annotator=np.concatenate([syn.annotator + c * syn.n_annotators
                                               for c in range(3)]),
                     annotator_ids=np.array([f"a{j}" for j in range(3 * syn.n_annotators)]))
    print("| data | τ | ECE τ = 1 | ECE τ | accuracy τ = 1 | accuracy τ |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, data in (("RF10 binary", rf10), ("synthetic 4-8, β 5", syn),
                       ("synthetic, every judgment x3", copied)):
        model = DawidSkene().fit(replace(data, gold=None))
        tau = loo_temperature(model, data)
        table = np.log(model.confusion_[data.annotator, :, data.label])
        sums = np.stack([np.bincount(data.task, weights=table[:, k], minlength=data.n_tasks)
                         for k in range(2)], axis=1)
        tempered = softmax(np.log(model.prior_) + tau * sums, axis=1)
        gold = np.where(data.judgments_per_task() > 0, data.gold, -1)
        a, b = _scores(model.proba_, gold), _scores(tempered, gold)
        print(f"| {name} | {tau:.3f} | {a['ece']:.4f} | {b['ece']:.4f} | {a['accuracy']:.4f} "
              f"| {b['accuracy']:.4f} |", flush=True)


def maps(args: argparse.Namespace) -> None:
    """RF10 binary, no-gold fits: ECE of P(relevant) raw, and after Platt's and the isotonic
    map, each cross-fitted (5 folds over the gold tasks: a map never scores its own gold)."""
    from dataclasses import replace

    from app.cli.loading import load_annotation_data
    from models.calibration import Isotonic, Platt
    from models.evaluation.reliability import reliability
    from models.registry import get_method

    data = load_annotation_data(RF10.read_bytes(), relevant_from=1, ignore=(-2,))
    known = (data.gold >= 0) & (data.judgments_per_task() > 0)
    y = data.gold[known] == 1
    fold = np.random.default_rng(0).permutation(int(known.sum())) % 5
    print("| method | ECE raw | Platt | isotonic |")
    print("|---|---:|---:|---:|")
    for method in (args.methods or "ds,mace,ibcc,ebcc").split(","):
        model = get_method(method).build(_params(method)).fit(replace(data, gold=None))
        p = model.proba_[known, 1]
        out = {"platt": np.empty_like(p), "isotonic": np.empty_like(p)}
        for k in range(5):
            train, test = fold != k, fold == k
            out["platt"][test] = Platt.fit(p[train], y[train])(p[test])
            out["isotonic"][test] = Isotonic.fit(p[train], y[train])(p[test])
        print(f"| {method} | {reliability(p, y).ece:.4f} | "
              f"{reliability(out['platt'], y).ece:.4f} | "
              f"{reliability(out['isotonic'], y).ece:.4f} |", flush=True)


def bound(args: argparse.Namespace) -> None:
    """The gold-free read-out (models.tempering) against what gold would choose, on RF10 binary
    and the grid's noise 4-8 cells (2,000 tasks): per method its cross-fitted τ and ρ̄ by
    agreement moments; ρ̄ measured against the gold (residuals given the gold label, confusion
    counted from the gold: what the design effect would need); the best ECE of any power
    posterior q ∝ P^τ (τ on a grid 0.1-1.2, chosen with the gold: a bound for every gold-free
    τ), and the ECE of the read-out."""
    from dataclasses import replace

    from app.cli.loading import load_annotation_data
    from models.dependence import residual_correlation
    from models.evaluation.reliability import reliability
    from models.registry import get_method
    from models.synthetic import NOISE_LEVELS, generate
    from models.tempering import power_posterior

    sets = [("RF10 binary", load_annotation_data(RF10.read_bytes(), relevant_from=1,
                                                  ignore=(-2,)))]
    for beta in (3, 5):
        syn = generate(2000, 60, noise_level=NOISE_LEVELS["4-8"], redundancy=beta,
                       random_state=7)
        sets.append((f"grid 4-8, β {beta}", syn.to_annotation_data(with_features=False)))
    print("| data | method | ρ̄ vs gold | ρ̄ (moments) | τ (cross-fit) | ECE plug-in | ECE read-out "
          "| best power τ (gold) | its ECE |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for name, data in sets:
        known = (data.gold >= 0) & (data.judgments_per_task() > 0)
        y = data.gold[known] == 1
        keep = known[data.task]
        k = data.n_classes
        counts = np.full((data.n_annotators, k, k), 0.5)
        np.add.at(counts, (data.annotator[keep], data.gold[data.task[keep]], data.label[keep]), 1)
        onehot = np.zeros((data.n_tasks, k))
        onehot[known, data.gold[known]] = 1.0
        gold_rho = residual_correlation(data.task[keep], data.annotator[keep], data.label[keep],
                                        onehot, counts / counts.sum(axis=2, keepdims=True))
        for method in (args.methods or "ds,mace,ibcc,ebcc").split(","):
            spec = get_method(method)
            model = spec.build(_params(method)).fit(replace(data, gold=None))
            raw = spec.build({**_params(method), "temper_folds": 0}).fit(
                replace(data, gold=None)).proba_
            best = min((reliability(power_posterior(raw, t)[known, 1], y).ece, t)
                       for t in np.arange(0.1, 1.201, 0.05))
            print(f"| {name} | {method} | {gold_rho:.3f} | {model.readout_rho_:.3f} | "
                  f"{model.temperature_:.3f} | {reliability(raw[known, 1], y).ece:.4f} | "
                  f"{reliability(model.proba_[known, 1], y).ece:.4f} | {best[1]:.2f} | "
                  f"{best[0]:.4f} |", flush=True)


def criteria(args: argparse.Namespace) -> None:
    """The held-out τ of ``models.tempering`` by three criteria, on the grid's four 2,000-task
    cells and RF10 binary (docs/models.md, "MACE's held-out τ"): every judgment of a held-out
    task predicted from the task's other judgments (2 folds over tasks, fits never tempered)
    with its annotator's row π_a (``current``, the read-out's), with the tempered row
    π_a^τ / Σ_l π_a^τ (``tempered``), or with the crowd's judgment-weighted mean row
    (``mean``); the ECE of the power posterior q ∝ P^τ (no ρ̄), and the best τ chosen with the
    gold on a 0.1-1.2 grid."""
    from dataclasses import replace

    import scipy.optimize

    from app.cli.loading import load_annotation_data
    from models.evaluation.reliability import reliability
    from models.registry import get_method
    from models.synthetic import NOISE_LEVELS, generate
    from models.tempering import _TINY, _logsumexp_rows, clone, judgment_table, power_posterior

    sets = [(f"grid {n}, β {b}", generate(2000, 60, noise_level=NOISE_LEVELS[n], redundancy=b,
                                          random_state=7).to_annotation_data(with_features=False))
            for n, b in (("0-2", 3), ("0-2", 5), ("4-8", 3), ("4-8", 5))]
    sets.append(("RF10 binary", load_annotation_data(RF10.read_bytes(), relevant_from=1,
                                                     ignore=(-2,))))

    def pieces(model, data):  # type: ignore[no-untyped-def]
        fold = np.random.default_rng(0).permutation(data.n_tasks) % 2
        out = []
        for f in range(2):
            held = fold[data.task] == f
            fitted = clone(model, temper_folds=0).fit(replace(
                data, task=data.task[~held], annotator=data.annotator[~held],
                label=data.label[~held], gold=None))
            table, others = (x.T for x in judgment_table(fitted.prior_, fitted.confusion_,
                                                         data, held))
            rows = np.log(np.maximum(fitted.confusion_[data.annotator[held]], _TINY))
            used = np.bincount(data.annotator[~held], minlength=data.n_annotators)
            mean = np.einsum("j,jtl->tl", used, fitted.confusion_) / used.sum()
            out.append((table, others, rows, np.log(mean[:, data.label[held]].T)))
        return out

    def tau(found, mode: str) -> float:  # type: ignore[no-untyped-def]
        def loss(t: float) -> float:
            total = 0.0
            for table, others, rows, mean in found:
                log_q = t * others
                log_q = log_q - _logsumexp_rows(log_q.T)[:, None]
                if mode == "current":
                    pred = table
                elif mode == "tempered":
                    pred = t * table - np.log(np.exp(t * rows).sum(axis=2))
                else:
                    pred = mean
                total -= float(_logsumexp_rows((log_q + pred).T).sum())
            return total

        return float(scipy.optimize.minimize_scalar(loss, bounds=(0.02, 1.5),
                                                    method="bounded").x)

    print("| data | method | current τ, ECE | tempered τ, ECE | mean row τ, ECE "
          "| best τ (gold), ECE |")
    print("|---|---|---:|---:|---:|---:|")
    for name, data in sets:
        known = (data.gold >= 0) & (data.judgments_per_task() > 0)
        y = data.gold[known] == 1
        for method in (args.methods or "mace,ds,ibcc,ebcc").split(","):
            model = get_method(method).build({**_params(method), "temper_folds": 0}).fit(
                replace(data, gold=None))
            found = pieces(model, data)

            def ece(t: float, p: np.ndarray = model.proba_[known], y: np.ndarray = y) -> float:
                return reliability(power_posterior(p, t)[:, 1], y).ece

            cells = [f"{t:.2f}, {ece(t):.4f}" for t in
                     (tau(found, m) for m in ("current", "tempered", "mean"))]
            best = min((ece(t), t) for t in np.arange(0.1, 1.201, 0.05))
            print(f"| {name} | {method} | " + " | ".join(cells)
                  + f" | {best[1]:.2f}, {best[0]:.4f} |", flush=True)


def readout(args: argparse.Namespace) -> None:
    """The read-out's half fits warm (from the full fit, ``models.tempering.WARM_HALVES``)
    against cold (each half fitted from the model's own start, as before 2026-11-27): on RF10
    binary and the grid's cells, per method one full fit (``temper_folds`` 0), then its
    read-out both ways on copies of it: τ, ρ̄, ECE and accuracy of each, and the read-out's CPU
    seconds (the half fits, the τ search and ρ̄)."""
    import copy
    from dataclasses import replace

    from app.cli.loading import load_annotation_data
    from models import tempering as temp
    from models.registry import get_method
    from models.synthetic import NOISE_LEVELS, generate

    sets = []
    if not args.no_rf10:
        sets.append(("RF10 binary", load_annotation_data(RF10.read_bytes(), relevant_from=1,
                                                          ignore=(-2,))))
    for noise in args.noise.split(","):
        for beta in (int(b) for b in args.redundancy.split(",")):
            syn = generate(args.tasks, 60, noise_level=NOISE_LEVELS[noise], redundancy=beta,
                           random_state=args.seed)
            sets.append((f"grid {noise}, β {beta}", syn.to_annotation_data(with_features=False)))
    print("| data | method | τ cold | τ warm | ρ̄ | ECE cold | ECE warm | accuracy | "
          "read-out CPU s cold | warm | ratio |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name, data in sets:
        scored = np.where(data.judgments_per_task() > 0, data.gold, -1)
        data = replace(data, gold=None)
        for method in (args.methods or "ds,mace,ibcc,ebcc").split(","):
            full = get_method(method).build({**_params(method), "temper_folds": 0}).fit(data)
            out = {}
            for warm in (False, True):
                model = copy.deepcopy(full)
                temp.WARM_HALVES = warm
                start = time.process_time()
                temp.temper_readout(model, data, 2, getattr(model, "random_state", None))
                out[warm] = (model, _scores(model.proba_, scored), time.process_time() - start)
            temp.WARM_HALVES = True
            (cold, sc, tc), (warm_m, sw, tw) = out[False], out[True]
            print(f"| {name} | {method} | {cold.temperature_:.4f} | {warm_m.temperature_:.4f} | "
                  f"{warm_m.readout_rho_:.3f} | {sc['ece']:.4f} | {sw['ece']:.4f} | "
                  f"{sw['accuracy']:.4f} | {tc:.2f} | {tw:.2f} | {tc / max(tw, 1e-9):.1f}× |",
                  flush=True)


def integrated_posterior(method: str, raw, data, samples: int,  # type: ignore[no-untyped-def]
                         chain_prior: str = "population") -> np.ndarray:
    """The posterior predictive of the true labels with the annotator parameters integrated
    out, E_θ[P(T_i | judgments, θ)] over θ from its posterior: the mean over ``samples`` draws
    of the evaluation's parameter draws (``models.evaluation.parameters.draw_parameters``: for
    DS, IBCC, EBCC the Gibbs chain on the confusion matrices and labels, its tilt of each task
    Rao-Blackwellised; MACE its one-step θ, ξ), started from ``raw`` (a fit without the read-out).
    ``chain_prior`` "population": the chain's prior on a confusion row is the crowd's pooled row
    with its strength by type-II ML, as DS's and IBCC's fits have; "service": the evaluation's
    (DS's population prior, IBCC and EBCC none)."""
    from models.evaluation.parameters import draw_parameters, fit_population_prior, parameter_family

    family = parameter_family(method)
    if family is None:
        return raw.proba_
    extra: dict = {}
    prior = True
    if family == "mace":
        extra = {"competence": raw.competence_, "spam": raw.spam_dist_}
        prior = getattr(raw, "class_prior_used_", "") == "learned"
    strength = (None if chain_prior == "population" and method != "mace"
                else fit_population_prior(method, {}, 2))
    draws = draw_parameters(family, raw.proba_, data.task, data.annotator, data.label,
                            samples=samples, seed=0, class_prior=prior,
                            population_prior=strength, **extra)
    return draws.topic_proba(np.arange(data.n_tasks), raw.proba_).mean(axis=0)


def predictive(args: argparse.Namespace) -> None:
    """The posterior predictive with the annotator parameters integrated out (tried, not
    adopted: docs/models.md "The posterior predictive"), alone and with the read-out's
    corrections, against the plug-in and today's read-out: per method and data ECE / accuracy
    of the plug-in (``temper_folds`` 0), the read-out (P^τ_i), the predictive p̄, p̄ with the
    design effect only (τ_i = 1 / (1 + (n_i − 1) ρ̄): the predictive replaces τ's correction
    of parameter error), and p̄^τ_i (both: double counting); and the CPU seconds of the fit, of
    the fit with its read-out and of the predictive's draws. RF10 binary and the grid's four
    2,000-task cells."""
    from dataclasses import replace

    from app.cli.loading import load_annotation_data
    from models.dependence import tempering
    from models.registry import get_method
    from models.synthetic import NOISE_LEVELS, generate
    from models.tempering import power_posterior

    sets = []
    if not args.no_rf10:
        sets.append(("RF10 binary", load_annotation_data(RF10.read_bytes(), relevant_from=1,
                                                          ignore=(-2,))))
    for noise in args.noise.split(","):
        for beta in (int(b) for b in args.redundancy.split(",")):
            syn = generate(args.tasks, 60, noise_level=NOISE_LEVELS[noise], redundancy=beta,
                           random_state=args.seed)
            sets.append((f"grid {noise}, β {beta}", syn.to_annotation_data(with_features=False)))
    print("| data | method | τ | ρ̄ | plug-in | read-out | predictive | predictive, ρ̄ only | "
          "predictive, τ and ρ̄ | CPU s fit / with read-out / draws |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name, data in sets:
        scored = np.where(data.judgments_per_task() > 0, data.gold, -1)
        blind = replace(data, gold=None)
        for method in (args.methods or "ds,mace,ibcc,ebcc").split(","):
            spec = get_method(method)
            start = time.process_time()
            model = spec.build(_params(method)).fit(blind)
            with_readout = time.process_time() - start
            start = time.process_time()
            raw = spec.build({**_params(method), "temper_folds": 0}).fit(blind)
            alone = time.process_time() - start
            start = time.process_time()
            bar = integrated_posterior(method, raw, blind, args.samples, args.chain_prior)
            drawing = time.process_time() - start
            deff = tempering(data.task, data.n_tasks, max(model.readout_rho_, 0.0))
            shown = [raw.proba_, model.proba_, bar, power_posterior(bar, deff),
                     power_posterior(bar, model.temperature_ * deff)]
            cells = []
            for q in shown:
                s = _scores(q, scored)
                cells.append(f"{s['ece']:.4f} / {s['accuracy']:.4f}")
            print(f"| {name} | {method} | {model.temperature_:.3f} | {model.readout_rho_:.3f} | "
                  + " | ".join(cells) + f" | {alone:.2f} / {with_readout:.2f} / {drawing:.2f} |",
                  flush=True)


def world_gap(p: np.ndarray, gold: np.ndarray, world: np.ndarray) -> float:
    """D_W of ``worlds``: (|Σ_{L} (g − w)| + |Σ_{N} (g − w)|) / n, over the tasks L with P(relevant)
    ``p`` ≥ ½ and the others N, for the gold ``gold`` (bool) and the world's P(relevant)
    ``world`` (its expected gold)."""
    upper = p >= 0.5
    diff = gold.astype(np.float64) - world
    return float((abs(diff[upper].sum()) + abs(diff[~upper].sum())) / len(p))


def world_ece(p: np.ndarray, world: np.ndarray) -> float:
    """ECE of ``p`` against a world whose gold is relevant with probability ``world`` (its
    expected gold: no finite-sample floor; the expected ECE against gold drawn from ``world``
    is at least this, by Jensen per bin)."""
    from models.evaluation.reliability import N_BINS

    which = np.minimum((np.clip(p, 0.0, 1.0) * N_BINS).astype(np.int64), N_BINS - 1)
    return float(np.abs(np.bincount(which, weights=p - world, minlength=N_BINS)).sum() / len(p))


def worlds(args: argparse.Namespace) -> None:
    """The non-identifiability bound (docs/benchmarks.md, "A bound for gold-free read-outs").

    A gold-free read-out P is a function of the judgments, the same in every world that has
    these judgments. Two such worlds: NIST's gold g, and W, where the method's own model is
    true (its gold relevant with probability w_i = the model's P(T_i | judgments)). For any P
    whose P(relevant) lies on the same side of ½ as the method's read-out on every task (its
    labels, and so its accuracy, kept), bins 0-4 partition N = {P < ½} and bins 5-9 partition
    L = {P ≥ ½}, so merging bins and the triangle inequality give

        ECE_g(P) + ECE_W(P) ≥ D_W = (|Σ_L (g_i − w_i)| + |Σ_N (g_i − w_i)|) / n:

    a read-out calibrated to within e in the world where its model holds has ECE ≥ D_W − e
    against NIST, and none has both below D_W / 2. Worlds: ``plug-in`` (the fitted model,
    parameters as fitted), ``integrated`` (the model with its annotator parameters drawn from
    their posterior: w the posterior predictive, ``models.evaluation.parameters`` draws with
    the population prior), ``read-out`` (the read-out's own world). Printed per method: the
    read-out's ECE against NIST, per world D_W and the read-out's ECE_W, the power posterior
    q ∝ P^τ whose τ the gold chooses (0.1-1.2) with its ECE against NIST and against the
    integrated world, and what gold itself reaches: the isotonic map of the read-out fitted on
    4/5 of the gold, scored on the rest (5 folds). RF10 binary and, as controls where NIST's
    labels are the truth and the model nearly true, the grid's noise 4-8 cells (2,000 tasks)."""
    from dataclasses import replace

    from app.cli.loading import load_annotation_data
    from models.calibration import Isotonic
    from models.evaluation.parameters import parameter_family
    from models.evaluation.reliability import reliability
    from models.registry import get_method
    from models.synthetic import NOISE_LEVELS, generate
    from models.tempering import power_posterior

    sets = [("RF10 binary", load_annotation_data(RF10.read_bytes(), relevant_from=1,
                                                  ignore=(-2,)))]
    if not args.no_grid:
        for beta in (3, 5):
            syn = generate(2000, 60, noise_level=NOISE_LEVELS["4-8"], redundancy=beta,
                           random_state=7)
            sets.append((f"grid 4-8, β {beta}", syn.to_annotation_data(with_features=False)))
    print("| data | method | ECE NIST | D plug-in (ECE_W) | D integrated (ECE_W) | D read-out "
          "| best power τ (gold): ECE NIST, ECE integrated | gold, isotonic 5-fold |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for name, data in sets:
        known = (data.gold >= 0) & (data.judgments_per_task() > 0)
        g = data.gold[known] == 1
        fold = np.random.default_rng(0).permutation(int(known.sum())) % 5
        blind = replace(data, gold=None)
        for method in (args.methods or "mv,ds,mace,ibcc,ebcc").split(","):
            spec = get_method(method)
            model = spec.build(_params(method)).fit(blind)
            family = parameter_family(method)
            raw = (spec.build({**_params(method), "temper_folds": 0}).fit(blind)
                   if family else model)
            p, plug = model.proba_[known, 1], raw.proba_[known, 1]
            integrated = integrated_posterior(method, raw, blind, args.samples)[known, 1]
            best = min((reliability(power_posterior(raw.proba_, t)[known, 1], g).ece, t)
                       for t in np.arange(0.1, 1.201, 0.05))
            at_best = power_posterior(raw.proba_, best[1])[known, 1]
            iso = np.empty_like(p)
            for k in range(5):
                iso[fold == k] = Isotonic.fit(p[fold != k], g[fold != k])(p[fold == k])
            cells = [f"{reliability(p, g).ece:.4f}"]
            cells += [f"{world_gap(p, g, w):.4f} ({world_ece(p, w):.4f})"
                      for w in (plug, integrated)]
            cells.append(f"{world_gap(p, g, p):.4f}")
            cells.append(f"{best[1]:.2f}: {best[0]:.4f}, {world_ece(at_best, integrated):.4f}")
            cells.append(f"{reliability(iso, g).ece:.4f}")
            print(f"| {name} | {method} | " + " | ".join(cells) + " |", flush=True)


def layers(args: argparse.Namespace) -> None:
    """LK's two read-outs (P(f > 0), the discrete layer) and the read-outs held-out judgments
    choose (``models.gp.heldout``: the layer tempered by τ*, the stacking weight w*), against
    gold: accuracy / ECE / Brier / log loss; the held-out log predictive of each; D_W of
    ``worlds`` for the layer's world (LK's labels); CPU seconds of the fit, the layer and the
    folds' refits."""
    from dataclasses import replace

    from models.gp import heldout
    from models.gp.model import LK
    from models.gp.truth import fit_layer, layer_inputs
    from models.synthetic import NOISE_LEVELS, generate

    sets = []
    if not args.no_rf10:
        from app.cli.loading import load_annotation_data

        sets.append(("RF10 binary", load_annotation_data(RF10.read_bytes(), relevant_from=1,
                                                           ignore=(-2,))))
    for seed in [int(s) for s in args.seeds.split(",") if s]:
        for noise in args.noise.split(","):
            for beta in [int(r) for r in args.redundancy.split(",")]:
                syn = generate(args.tasks, 60, noise_level=NOISE_LEVELS[noise], redundancy=beta,
                               random_state=seed)
                sets.append((f"grid {noise} β {beta} seed {seed}",
                             syn.to_annotation_data(with_features=True)))

    def show(p: np.ndarray, gold: np.ndarray) -> str:
        s = _scores(np.column_stack([1.0 - p, p]), gold)
        return " / ".join(f"{s[k]:.4f}" for k in SCORES)

    print(f"LK (defaults, random_state 0), {args.folds} folds over each task's judgments; "
          "accuracy / ECE / Brier / log loss against gold")
    print("| data | P(f > 0) | layer | held-out log pred. Gaussian, layer | τ* | layer^τ* | w* "
          "| w* mix | D_W layer | CPU s fit / layer / folds |")
    print("|---|---|---|---|---:|---|---:|---|---:|---|")
    for name, data in sets:
        gold = np.where(data.judgments_per_task() > 0, data.gold, -1)
        data = replace(data, gold=None)
        start = time.process_time()
        model = LK(random_state=0).fit(data)
        fit_s = time.process_time() - start
        start = time.process_time()
        judgments, prior = layer_inputs(model.core_)
        layer = fit_layer(judgments, prior)
        layer_s = time.process_time() - start
        assert layer.log_z is not None
        start = time.process_time()
        pieces = heldout.fold_scores(lambda: LK(random_state=0), data, args.folds)
        tau, w = heldout.best_temperature(pieces), heldout.stacking_weight(pieces)
        folds_s = time.process_time() - start
        joint = tau * (np.log(np.stack([prior, 1.0 - prior])) + layer.log_z)
        tempered = np.exp(joint[0] - np.logaddexp(joint[0], joint[1]))
        gauss = model.proba_[:, 1]
        mixed = w * layer.p_relevant + (1.0 - w) * gauss
        known = gold >= 0
        print(f"| {name} | {show(gauss, gold)} | {show(layer.p_relevant, gold)} "
              f"| {heldout.gaussian_log_predictive(pieces):.1f}, "
              f"{heldout.layer_log_predictive(pieces):.1f} | {tau:.3f} | {show(tempered, gold)} "
              f"| {w:.3f} | {show(mixed, gold)} "
              f"| {world_gap(gauss[known], gold[known] == 1, layer.p_relevant[known]):.4f} "
              f"| {fit_s:.1f} / {layer_s:.1f} / {folds_s:.1f} |",
              flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="what", required=True)
    r = sub.add_parser("rf10")
    r.add_argument("--graded", action="store_true")
    r.add_argument("--calibrated", action="store_true", help="also calibrate_folds 5, held out")
    r.add_argument("--methods", default=None, help="comma-separated (default: all)")
    r.add_argument("--calibration", default="auto", choices=("auto", "platt", "beta", "isotonic"))
    r.add_argument("--params", help="model parameters (JSON) for every method, e.g. "
                   '\'{"label_layer": "discrete"}\'')
    g = sub.add_parser("grid")
    g.add_argument("--tasks", type=int, default=500)
    g.add_argument("--noise", default="0-2,2-4,4-8,8-12")
    g.add_argument("--redundancy", default="3,5,7")
    g.add_argument("--seed", type=int, default=7)
    g.add_argument("--methods", default=None)
    g.add_argument("--params", help="model parameters (JSON) for every method")
    sub.add_parser("tempering")
    m = sub.add_parser("maps")
    m.add_argument("--methods", default=None)
    b = sub.add_parser("bound")
    b.add_argument("--methods", default=None)
    c = sub.add_parser("criteria")
    c.add_argument("--methods", default=None)
    o = sub.add_parser("readout")
    o.add_argument("--methods", default=None)
    o.add_argument("--tasks", type=int, default=2000)
    o.add_argument("--noise", default="0-2,4-8")
    o.add_argument("--redundancy", default="3,5")
    o.add_argument("--seed", type=int, default=7)
    o.add_argument("--no-rf10", action="store_true")
    q = sub.add_parser("predictive")
    q.add_argument("--methods", default=None)
    q.add_argument("--samples", type=int, default=200, help="parameter draws")
    q.add_argument("--chain-prior", default="population", choices=("population", "service"))
    q.add_argument("--tasks", type=int, default=2000)
    q.add_argument("--noise", default="0-2,4-8")
    q.add_argument("--redundancy", default="3,5")
    q.add_argument("--seed", type=int, default=7)
    q.add_argument("--no-rf10", action="store_true")
    w = sub.add_parser("worlds")
    w.add_argument("--methods", default=None)
    w.add_argument("--samples", type=int, default=200, help="parameter draws")
    w.add_argument("--no-grid", action="store_true")
    y = sub.add_parser("layers")
    y.add_argument("--folds", type=int, default=2)
    y.add_argument("--tasks", type=int, default=2000)
    y.add_argument("--noise", default="0-2,4-8")
    y.add_argument("--redundancy", default="3,5")
    y.add_argument("--seeds", default="7,8")
    y.add_argument("--no-rf10", action="store_true")
    args = parser.parse_args()
    {"rf10": rf10, "grid": grid, "tempering": tempering, "maps": maps, "bound": bound,
     "criteria": criteria, "readout": readout, "predictive": predictive,
     "worlds": worlds, "layers": layers}[args.what](args)


if __name__ == "__main__":
    main()
