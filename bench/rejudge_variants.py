"""Re-judging variants measured with the simulator's own loop (issue #13, 2026-11-25).

``python bench/rejudge_variants.py INPUT [--gold QRELS] --strategies S ... [--who W] [--seeds K]
[--start SHARE] [--batch-share B] [--cold] [--output DIR]`` replays INPUT exactly as
``crowdqrels simulate --method ds`` does (``models.sampling.simulate.simulate``, rounds of 2.5 %,
warm refits with the cold checks), with two of the module's names patched for the experiment.
Strategies, besides ``rejudge_order``'s own (uncertainty, expected-change, random):

- ``info-gain``: the mutual information between the task's truth and its next label,
  I(T; y) = H(y) − E_T[H(y | T)], under the symmetric noise model at the accuracy of the task's
  next annotator (the one the simulator will reveal);
- ``opt-kg``: optimistic knowledge gradient (Chen, Lin & Zhou 2013), max over the next label
  of the gain in max_t p_t (expected-change's gain is the plain knowledge gradient);
- ``joint-info`` (needs ``--who eb``): I(T, c; y) = H(y) − E_c[h(c)], the information of the next
  label about the truth and the next annotator's accuracy c ~ Beta (its EB posterior), binary;
- ``S-shrunk`` for S in uncertainty, expected-change, info-gain: S computed on the posterior
  recomputed with every annotator at their EB posterior-mean accuracy (``shrunk_posterior``),
  not on the fit's (DS's point estimates: 0.999 from 24 judgments); the labels stay the fit's;
  ``S-cshrunk``: the same with each annotator's accuracy per true class (DS's asymmetry), an
  EB Beta per class (``class_shrunk_posterior``);
- ``oracle-gold`` (the tasks with gold first, each group by entropy), ``oracle-gold-random``
  (gold first, the rest at random): they know which tasks are scored, a strategy cannot;
  ``oracle-wrong`` (the gold tasks whose current label is wrong first, then at random) also
  knows the gold labels: a cheat, to show what the reveal rule allows.

``--who``: who is asked next (and the accuracy the strategies assume): ``agreement`` (the
simulator's: agreement with the posterior plus one pseudo-judgment of the mean), ``eb`` (the
posterior mean under an empirical-Bayes Beta(α, β) prior fitted to the annotator population by
type-II maximum likelihood, beta-binomial on the summed agreements), ``loo`` (agreement with the
posterior without the annotator's own label), ``random`` (a random hidden judgment of the
chosen task; only for strategies that do not use the accuracy: uncertainty, random).

Prints per strategy and seed the accuracy at the last point with at most 60 % of the judgments,
the first share reaching the accuracy of DS fitted cold on all judgments and the first within
one binomial standard error of it, and the means over seeds; writes DIR/curve.tsv when asked.
``--subsets`` instead fits DS cold on fixed subsets: the gold tasks' judgments plus one random
judgment per task, and that topped up with random judgments to 60 %, for each seed.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
from scipy.optimize import minimize
from scipy.special import betaln

import models.sampling.simulate as sim
from models.sampling.rejudge import agreement_competence, entropy, rejudge_order


def info_gain(proba: np.ndarray, accuracy: np.ndarray) -> np.ndarray:
    """I(T; y) in nats for one more label from an annotator of ``accuracy`` per task."""
    p = np.asarray(proba, dtype=np.float64)
    k = p.shape[1]
    a = np.clip(np.broadcast_to(np.asarray(accuracy, dtype=np.float64), (p.shape[0],)),
                1e-12, 1 - 1e-12)
    off = (1.0 - a) / (k - 1)
    p_y = a[:, None] * p + off[:, None] * (1.0 - p)  # P(y = l) = Σ_t p_t P(y = l | t)
    h_y = entropy(p_y)
    h_y_given_t = -(a * np.log(a) + (1.0 - a) * np.log(np.where(off > 0, off, 1.0)))
    return np.maximum(h_y - h_y_given_t, 0.0)


def optimistic_kg(proba: np.ndarray, accuracy: np.ndarray) -> np.ndarray:
    """max_l [max_t p'(t | y = l) − max_t p_t] under the symmetric noise model."""
    p = np.asarray(proba, dtype=np.float64)
    n, k = p.shape
    a = np.broadcast_to(np.asarray(accuracy, dtype=np.float64), (n,))
    off = (1.0 - a) / (k - 1)
    best = np.full(n, -np.inf)
    for label in range(k):
        like = np.repeat(off[:, None], k, axis=1)
        like[:, label] = a
        joint = p * like
        updated = joint / joint.sum(axis=1, keepdims=True)
        best = np.maximum(best, updated.max(axis=1))
    return best - p.max(axis=1)


def eb_competence(proba: np.ndarray, task: np.ndarray, annotator: np.ndarray,
                  label: np.ndarray, n_annotators: int, prior: float | None = None
                  ) -> np.ndarray:
    """(k_j + α) / (n_j + α + β): k_j the annotator's summed agreement with the posterior, n_j
    their labels, Beta(α, β) maximising Σ_j log B(k_j + α, n_j − k_j + β) − log B(α, β)."""
    used = label >= 0
    agree = np.asarray(proba)[task[used], label[used]]
    n = np.bincount(annotator[used], minlength=n_annotators).astype(np.float64)
    k = np.bincount(annotator[used], weights=agree, minlength=n_annotators)
    seen = n > 0
    kk, nn = k[seen], n[seen]

    def nll(theta: np.ndarray) -> float:
        al, be = np.exp(theta)
        return -float(np.sum(betaln(kk + al, nn - kk + be) - betaln(al, be)))

    m = float(kk.sum() / nn.sum())
    res = minimize(nll, np.log([2.0 * m, 2.0 * (1 - m)]), method="Nelder-Mead",
                   options={"xatol": 1e-6, "fatol": 1e-8, "maxiter": 2000})
    al, be = np.exp(res.x)
    eb_competence.last = (float(al), float(be))  # type: ignore[attr-defined]
    mean = (k + al) / (n + al + be)
    # each annotator's Beta posterior, found again from its mean by ``joint_info``
    eb_competence.posterior = (mean, k + al, n - k + be)  # type: ignore[attr-defined]
    return mean


def joint_info(proba: np.ndarray, accuracy: np.ndarray) -> np.ndarray:
    """I(T, c; y) = H(y) − E_c[h(c)] (nats) for the next label from an annotator whose accuracy
    c ~ Beta(a, b) (EB posterior; binary symmetric noise): the information about the task's
    truth and about the annotator together. E[c log c] = a/(a+b) (ψ(a+1) − ψ(a+b+1))."""
    from scipy.special import digamma

    p = np.asarray(proba, dtype=np.float64)
    mean, a_all, b_all = eb_competence.posterior  # type: ignore[attr-defined]
    order = np.argsort(mean)
    acc = np.broadcast_to(np.asarray(accuracy, dtype=np.float64), (p.shape[0],))
    pos = np.clip(np.searchsorted(mean[order], acc), 0, mean.size - 1)
    idx = order[pos]
    known = np.isclose(mean[idx], acc, rtol=0, atol=1e-12)
    a = np.where(known, a_all[idx], acc * 1e6)
    b = np.where(known, b_all[idx], (1 - acc) * 1e6)
    cbar = a / (a + b)
    p_y = cbar[:, None] * p + (1 - cbar)[:, None] * (1.0 - p)
    e_h = -(a / (a + b) * (digamma(a + 1) - digamma(a + b + 1))
            + b / (a + b) * (digamma(b + 1) - digamma(a + b + 1)))
    return entropy(p_y) - e_h


def loo_competence(proba: np.ndarray, task: np.ndarray, annotator: np.ndarray,
                   label: np.ndarray, n_annotators: int, prior: float | None = None
                   ) -> np.ndarray:
    """Agreement with the posterior without the annotator's own label (the cavity
    p_-j(t) ∝ p(t) / P(y_j | t), symmetric noise at their plain agreement c_j clipped to
    [0.5, 0.99]), shrunk by one pseudo-judgment of the mean, as ``agreement_competence``."""
    p = np.asarray(proba)
    k = p.shape[1]
    c = np.clip(agreement_competence(p, task, annotator, label, n_annotators, prior=None),
                0.5, 0.99)
    used = label >= 0
    own = p[task[used], label[used]]
    cj = c[annotator[used]]
    num = own / cj
    cavity = num / (num + (1.0 - own) * (k - 1) / (1.0 - cj))
    n = np.bincount(annotator[used], minlength=n_annotators).astype(np.float64)
    total = np.bincount(annotator[used], weights=cavity, minlength=n_annotators)
    mean = float(cavity.mean()) if cavity.size else 0.5
    return (total + mean) / (n + 1.0)


def shrunk_posterior(proba: np.ndarray, task: np.ndarray, annotator: np.ndarray,
                     label: np.ndarray, n_annotators: int) -> np.ndarray:
    """Each task's posterior again with every annotator at their EB posterior-mean accuracy
    c̃_j (symmetric noise) instead of the fit's point estimate: p̃_i(t) ∝ π_t Π_j c̃_j^[y_j = t]
    ((1 − c̃_j)/(K − 1))^[y_j ≠ t], π the fit's mean posterior (in log space: long products)."""
    p = np.asarray(proba, dtype=np.float64)
    n, k = p.shape
    c = np.clip(eb_competence(p, task, annotator, label, n_annotators), 1e-6, 1 - 1e-6)
    used = label >= 0
    t, a, y = task[used], annotator[used], label[used]
    log_off = np.log((1.0 - c[a]) / (k - 1))
    log_post = np.log(p.mean(axis=0))[None, :] + np.bincount(t, weights=log_off,
                                                                minlength=n)[:, None]
    log_post += np.bincount(t * k + y, weights=np.log(c[a]) - log_off,
                            minlength=n * k).reshape(n, k)
    log_post -= log_post.max(axis=1, keepdims=True)
    out = np.exp(log_post)
    return out / out.sum(axis=1, keepdims=True)


def _beta_eb(k: np.ndarray, n: np.ndarray) -> tuple[float, float]:
    """Beta(α, β) maximising the beta-binomial likelihood of (k_j, n_j), n_j > 0."""
    seen = n > 0
    kk, nn = k[seen], n[seen]

    def nll(theta: np.ndarray) -> float:
        al, be = np.exp(theta)
        return -float(np.sum(betaln(kk + al, nn - kk + be) - betaln(al, be)))

    m = float(np.clip(kk.sum() / nn.sum(), 0.01, 0.99))
    res = minimize(nll, np.log([2.0 * m, 2.0 * (1 - m)]), method="Nelder-Mead",
                   options={"xatol": 1e-6, "fatol": 1e-8, "maxiter": 2000})
    al, be = np.exp(res.x)
    return float(al), float(be)


def class_shrunk_posterior(proba: np.ndarray, task: np.ndarray, annotator: np.ndarray,
                           label: np.ndarray, n_annotators: int) -> np.ndarray:
    """As ``shrunk_posterior``, with DS's asymmetry kept: each annotator's accuracy on each true
    class t, P(y = t | T = t), at its posterior mean under an EB Beta(α_t, β_t) fitted per class
    to the soft counts (Σ_i p_it [y = t], Σ_i p_it); the other labels share the rest."""
    p = np.asarray(proba, dtype=np.float64)
    n, k = p.shape
    used = label >= 0
    t_, a_, y_ = task[used], annotator[used], label[used]
    acc = np.empty((n_annotators, k))
    for t in range(k):
        w = p[t_, t]
        tot = np.bincount(a_, weights=w, minlength=n_annotators)
        ok = np.bincount(a_, weights=w * (y_ == t), minlength=n_annotators)
        al, be = _beta_eb(ok, tot)
        acc[:, t] = (ok + al) / (tot + al + be)
    acc = np.clip(acc, 1e-6, 1 - 1e-6)
    # log P(y | T = t) for each judgment and class t: (m, K)
    like = np.log((1.0 - acc[a_]) / (k - 1))
    rows = np.arange(y_.shape[0])
    like[rows, y_] = np.log(acc[a_, y_])
    log_post = np.log(p.mean(axis=0))[None, :] + np.stack(
        [np.bincount(t_, weights=like[:, t], minlength=n) for t in range(k)], axis=1)
    log_post -= log_post.max(axis=1, keepdims=True)
    out = np.exp(log_post)
    return out / out.sum(axis=1, keepdims=True)


SEEN: dict[str, tuple] = {}


def patch(gold: np.ndarray, who: str) -> None:
    def order(proba, *, strategy, eligible=None, accuracy=0.7, random_state=None):
        p = np.asarray(proba, dtype=np.float64)
        idx = np.arange(p.shape[0])
        if strategy.endswith(("-shrunk", "-cshrunk")):
            if strategy.endswith("-cshrunk"):
                p = class_shrunk_posterior(p, *SEEN["judgments"])
                strategy = strategy.removesuffix("-cshrunk")
            else:
                p = shrunk_posterior(p, *SEEN["judgments"])
                strategy = strategy.removesuffix("-shrunk")
            if strategy == "info-gain":
                score = info_gain(p, np.broadcast_to(accuracy, (p.shape[0],)))
                return idx[np.argsort(-np.round(score, 12), kind="stable")]
            return rejudge_order(p, strategy=strategy, eligible=eligible, accuracy=accuracy,
                                 random_state=random_state)
        if strategy == "info-gain":
            score = info_gain(p, np.broadcast_to(accuracy, (p.shape[0],)))
            return idx[np.argsort(-np.round(score, 12), kind="stable")]
        if strategy == "opt-kg":
            score = optimistic_kg(p, np.broadcast_to(accuracy, (p.shape[0],)))
            return idx[np.argsort(-np.round(score, 12), kind="stable")]
        if strategy == "joint-info":
            if who != "eb":
                raise ValueError("joint-info needs --who eb (the annotators' Beta posteriors)")
            score = joint_info(p, np.broadcast_to(accuracy, (p.shape[0],)))
            return idx[np.argsort(-np.round(score, 12), kind="stable")]
        if strategy == "oracle-gold":
            h = entropy(p)
            return np.lexsort((idx, -h, gold < 0))
        if strategy == "oracle-wrong":  # gold tasks whose label is wrong now, then at random
            wrong = (gold >= 0) & (np.argmax(p, axis=1) != gold)
            shuffled = np.random.default_rng(random_state).permutation(p.shape[0])
            return shuffled[np.argsort(~wrong[shuffled], kind="stable")]
        if strategy == "oracle-gold-random":
            shuffled = np.random.default_rng(random_state).permutation(p.shape[0])
            return shuffled[np.argsort(gold[shuffled] < 0, kind="stable")]
        return rejudge_order(proba, strategy=strategy, eligible=eligible, accuracy=accuracy,
                             random_state=random_state)

    sim.rejudge_order = order  # type: ignore[assignment]
    def anyone(proba, task, annotator, label, n_annotators, prior=None):
        """A random order of the annotators, new each round: a random hidden judgment."""
        return np.random.default_rng(int(task.shape[0])).random(n_annotators)

    competence = {"eb": eb_competence, "loo": loo_competence, "random": anyone,
                  "agreement": agreement_competence}[who]

    def stash(proba, task, annotator, label, n_annotators, prior=None):
        SEEN["judgments"] = (task, annotator, label, n_annotators)
        return competence(proba, task, annotator, label, n_annotators, prior=prior)

    sim.agreement_competence = stash  # type: ignore[assignment]


def fixed_subsets(data, make, seeds: int, target: float) -> int:
    """DS cold on the gold tasks' judgments plus one random judgment per task, then topped up
    with random judgments to 60 %: what knowing the gold tasks buys without any strategy."""
    total = data.n_judgments
    on_gold = data.gold[data.task] >= 0

    def accuracy(keep: np.ndarray) -> float:
        fitted = make(0).fit(sim.subset(data, np.flatnonzero(keep)))
        return sim.accuracy_against_gold(fitted.labels_, data.gold)

    print(f"target {target:.4f}; judgments on gold tasks {int(on_gold.sum())} "
          f"({on_gold.mean():.3f})")
    for seed in range(seeds):
        rng = np.random.default_rng(seed)
        order = rng.permutation(total)
        _, first = np.unique(data.task[order], return_index=True)
        keep = on_gold.copy()
        keep[order[first]] = True
        line = f"seed {seed}\tgold + one per task {accuracy(keep):.4f} at {keep.mean():.3f}"
        rest = np.flatnonzero(~keep)
        keep[rng.choice(rest, int(0.6 * total) - int(keep.sum()), replace=False)] = True
        print(f"{line}\t+ random to {keep.mean():.3f}: {accuracy(keep):.4f}")
    return 0


def main() -> int:
    from app.cli.aggregate import build_aggregator
    from app.cli.loading import load_judgment_file

    ap = argparse.ArgumentParser()
    ap.add_argument("input")
    ap.add_argument("--gold")
    ap.add_argument("--strategies", nargs="+", default=["uncertainty"])
    ap.add_argument("--who", choices=("agreement", "eb", "loo", "random"), default="agreement")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--start", type=float, default=0.0)
    ap.add_argument("--batch-share", type=float, default=0.025)
    ap.add_argument("--method", default="ds")
    ap.add_argument("--cold", action="store_true")
    ap.add_argument("--subsets", action="store_true")
    ap.add_argument("--output")
    args = ap.parse_args()
    args.relevant_from, args.labels = 1, None
    data, _ = load_judgment_file(args, quiet=True)
    patch(data.gold, args.who)
    make = lambda seed: build_aggregator(args.method, {}, seed)  # noqa: E731
    full = make(0).fit(data)
    target = sim.accuracy_against_gold(full.labels_, data.gold)
    n_gold = int((data.gold >= 0).sum())
    se = float(np.sqrt(target * (1 - target) / n_gold))
    if args.subsets:
        return fixed_subsets(data, make, args.seeds, target)
    batch = max(1, int(round(args.batch_share * data.n_judgments)))
    points = sim.simulate(data, make=make, strategies=args.strategies, seeds=range(args.seeds),
                          batch=batch, start_share=args.start, warm=not args.cold)
    print(f"target {target:.4f} (se {se:.4f}), judgments {data.n_judgments}, gold {n_gold}, "
          f"who {args.who}{', cold refits' if args.cold else ''}")
    for s in args.strategies:
        at60, first, near, end = [], [], [], []
        for seed in range(args.seeds):
            curve = [p for p in points if p.strategy == s and p.seed == seed]
            below = [p for p in curve if p.share <= 0.6 + 1e-9]
            at60.append(f"{below[-1].accuracy:.4f}@{below[-1].share:.3f}")
            hit = [p.share for p in curve if p.accuracy >= target]
            first.append(f"{hit[0]:.3f}" if hit else "-")
            hit = [p.share for p in curve if p.accuracy >= target - se]
            near.append(f"{hit[0]:.3f}" if hit else "-")
            end.append(f"{curve[-1].accuracy:.4f}")
        acc60 = [float(x.split("@")[0]) for x in at60]
        area = [np.mean([p.accuracy for p in points if p.strategy == s and p.seed == seed
                         and p.share <= 0.6 + 1e-9]) for seed in range(args.seeds)]
        print(f"{s}\tmean at60 {np.mean(acc60):.4f}\tmean area(<=60%) {np.mean(area):.4f}")
        print(f"{s}\tat60 {' '.join(at60)}\treach {' '.join(first)}\twithin1se "
              f"{' '.join(near)}\tend {' '.join(end)}")
    if args.output:
        out = Path(args.output)
        out.mkdir(parents=True, exist_ok=True)
        with open(out / "curve.tsv", "w") as fh:
            fh.write("strategy\tseed\tround\tjudgments\tshare\taccuracy\tskipped\n")
            for p in points:
                fh.write(f"{p.strategy}\t{p.seed}\t{p.round}\t{p.judgments}\t{p.share:.6f}\t"
                         f"{p.accuracy:.6f}\t{p.skipped}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
