"""Coverage of a probit class prior on the GP's features, and its in-sample bound (issue 34;
docs/gp.md, "The class prior as a probit regression on the features").

One collection of ``bench_coverage.py`` (Algorithm 10, 600 tasks, 6 runs): fit MAGP with the
Gaussian read-out, take its judgments layer (``models.gp.truth``), give it a class prior
Φ(x̃·w) on the same features and report how often the nominal-95 % intervals of the runs' P@10,
AP and nDCG@10 hold the true score, with independent label draws (``labels``) and with draws of
the weights from their Laplace posterior (``joint``). MODE:

- a number s: w ~ N(0, s²), fitted by the layer's marginal likelihood (the service's default is
  s = 1, ``label_layer="discrete-regression"``);
- ``ev``: one common s by the Laplace evidence over a grid; ``ard``: one s per weight (MacKay);
- ``truth``: w fitted to the true labels (in sample, no weight uncertainty): the bound of a
  probit prior on these features.

    python bench/coverage_probit_bound.py SEED [normal|log_rr|both] MODE

Prints the calibration of P(relevant) by bins and the coverage; writes
/tmp/runfeat_out/raykar_<transform>_<mode>_False_<seed>.json when that folder exists.
"""
import argparse
import json
import os
import sys

import numpy as np
from scipy.optimize import minimize
from scipy.special import log_ndtr, logsumexp, ndtr
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_coverage as bc
from models.gp import truth as T
from models.features import build_features
from models.registry import make_aggregator
from models.evaluation.measures import parse_measures
from models.evaluation.scoring import evaluate_runs, report
from models.evaluation.uncertainty import Posterior

def log_z(d, c, s, nodes=16):
    x, w = np.polynomial.hermite_e.hermegauss(nodes)
    log_w = np.log(w / np.sqrt(2 * np.pi))
    ell = np.empty((2, nodes, d.n_tasks))
    for ci, y in enumerate((1.0, -1.0)):
        for k in range(nodes):
            u = d.sign * (y * c + s * x[k] + d.shift) / d.scale
            ell[ci, k] = np.bincount(d.task, log_ndtr(u), minlength=d.n_tasks)
    return logsumexp(ell + log_w[None, :, None], axis=1)

def fit_prior(X, lz, prior_sd):
    Xb = np.column_stack([X, np.ones(len(X))])
    def obj(wb):
        eta = Xb @ wb
        lp, lm = log_ndtr(eta), log_ndtr(-eta)
        a, b = lp + lz[0], lm + lz[1]
        tot = np.logaddexp(a, b)
        # d tot / d eta = phi(eta) (Z+ - Z-)/ (..)
        phi = np.exp(-0.5 * eta**2 - 0.5 * np.log(2 * np.pi))
        g_eta = phi * (np.exp(lz[0] - tot) - np.exp(lz[1] - tot))
        var = np.broadcast_to(np.asarray(prior_sd, float) ** 2, wb[:-1].shape)
        pen = 0.5 * np.sum(wb[:-1] ** 2 / var)
        return -(tot.sum()) + pen, -(Xb.T @ g_eta) + np.r_[wb[:-1] / var, 0.0]
    r = minimize(obj, np.zeros(Xb.shape[1]), jac=True, method="L-BFGS-B")
    # Hessian by finite differences of the gradient
    h = 1e-5; k = len(r.x); H = np.zeros((k, k))
    for i in range(k):
        e = np.zeros(k); e[i] = h
        H[:, i] = (obj(r.x + e)[1] - obj(r.x - e)[1]) / (2 * h)
    return r.x, 0.5 * (H + H.T), Xb

seed = int(sys.argv[1]); tr = sys.argv[2]; prior_sd = sys.argv[3]; samples = 200
with_gp = len(sys.argv) > 4 and sys.argv[4] == "gp"
ns = argparse.Namespace(data="algorithm10", annotators=60, noise=[4, 8], redundancy=5,
                        run_noise=[0.3, 0.6, 0.9, 1.2, 1.6, 2.5])
data, truth, runs, synth, scores = bc.collection(600, seed, ns)
tasks = list(zip(data.topic_ids.tolist(), data.doc_ids.tolist()))
F = build_features(tasks, runs=runs, rank_transform=tr)
data = data.with_features(F.as_dict(), dim=F.dim)
model = make_aggregator("magp", {"random_state": seed, "label_layer": "gaussian"}).fit(data)
core = model.core_
p0 = model.proba_[:, 1]
# judgments as in truth.readout
lik = core.likelihood
task = core.task.numpy(); ann = core.annotator.numpy()
d = T.LayerJudgments(task=task, sign=core.sign.numpy(),
    shift=lik.task_bias.numpy()[task] + lik.annotator_bias.numpy()[ann],
    scale=np.sqrt(1 + lik.task_variance.numpy()[task] + lik.annotator_variance.numpy()[ann]), n_tasks=core.n_tasks)
X = F.matrix  # same task order? check
assert [tuple(t) for t in F.tasks] == tasks
m_f, v_f = (t.numpy() for t in core.q())
m_c, v_c = T.cavity(m_f, v_f, core.nat1.numpy(), core.nat2.numpy())
layer = T.fit_layer(d, ndtr(m_c / np.sqrt(v_c)))
c, s = layer.separation, np.sqrt(layer.deviation)
if with_gp:
    X = np.column_stack([m_c / np.sqrt(v_c), X])
def evidence(sd, lz):
    wb, H, Xb = fit_prior(X, lz, sd)
    eta = Xb @ wb
    ll = np.logaddexp(log_ndtr(eta) + lz[0], log_ndtr(-eta) + lz[1]).sum()
    k = len(wb) - 1
    ev = ll - 0.5 * np.sum(wb[:-1]**2) / sd**2 - k * np.log(sd) - 0.5 * np.linalg.slogdet(H)[1]
    return ev, wb, H, Xb
for it in range(4):
    lz = log_z(d, c, s)
    if prior_sd == "truth":  # bound: probit of the truth on the features (in sample)
        lz_t = np.where(np.stack([truth == 1, truth == 0]), 0.0, -np.inf)
        lz_t = np.where(np.isfinite(lz_t), lz_t, -50.0)
        wb, H, Xb = fit_prior(X, lz_t, 100.0); sd_used = "truth"
        H = H * 1e6  # no weight uncertainty
    elif prior_sd == "ard":
        sds = np.ones(X.shape[1]) if it == 0 else sds
        for _ in range(30):
            wb, H, Xb = fit_prior(X, lz, sds)
            S = np.linalg.inv(H)
            alpha = 1 / sds**2
            gamma = 1 - alpha * np.diag(S)[:-1]
            new = np.clip(np.sqrt(wb[:-1]**2 / np.maximum(gamma, 1e-6)), 1e-3, 100)
            if np.max(np.abs(np.log(new) - np.log(sds))) < 1e-3: sds = new; break
            sds = new
        wb, H, Xb = fit_prior(X, lz, sds); sd_used = np.round(sds, 2)
    elif prior_sd == "ev":
        grid = np.exp(np.linspace(np.log(0.1), np.log(20), 25))
        evs = [evidence(g, lz) for g in grid]
        best = int(np.argmax([e[0] for e in evs]))
        sd_used = grid[best]; _, wb, H, Xb = evs[best]
    else:
        sd_used = float(prior_sd); wb, H, Xb = fit_prior(X, lz, sd_used)
    Sigma = np.linalg.inv(H)
    q2 = np.einsum("ij,jk,ik->i", Xb, Sigma, Xb)
    prior = ndtr(Xb @ wb / np.sqrt(1 + q2))
    layer = T.fit_layer(d, prior)
    c, s = layer.separation, np.sqrt(layer.deviation)
print("sd_used", sd_used)
p = layer.p_relevant
print(f"seed {seed}: c {c:.3f} s {s:.3f} w {np.round(wb, 2)} acc gp {np.mean((p0>=.5)==truth):.3f} raykar {np.mean((p>=.5)==truth):.3f}")
bins = [0, .01, .05, .2, .5, .8, .95, .99, 1.0001]
for lo, hi in zip(bins[:-1], bins[1:]):
    m = (p >= lo) & (p < hi)
    if m.any(): print(f"  P in [{lo},{hi}): n={m.sum()} meanP={p[m].mean():.3f} share={truth[m].mean():.3f}")
measures = parse_measures(["P@10", "AP", "nDCG@10"])
true = evaluate_runs(Posterior.binary(data.topic_ids, data.doc_ids, truth.astype(float)), runs, measures, samples=0)
post = Posterior(topics=data.topic_ids, docs=data.doc_ids, proba=np.column_stack([1-p, p]), classes=np.array([0, 1]), relevant_index=1)
sc = evaluate_runs(post, runs, measures, samples=samples, seed=seed)
rows = {}
for row in report(sc)["results"]:
    if row["topic"] != "all": continue
    t = float(true.mean_value(row["measure"])[sc.runs.index(row["run"])])
    rows[(row["run"], row["measure"])] = [t, row["low"] <= t <= row["high"]]
# joint: draw w from Laplace, label draws from the layer posterior given the prior
rng = np.random.default_rng([seed, 11])
L = np.linalg.cholesky(np.linalg.inv(H))
lz = log_z(d, c, s)
vals = {k: [] for k in rows}
for i in range(samples):
    wdraw = wb + L @ rng.standard_normal(len(wb))
    eta = Xb @ wdraw
    a, b = log_ndtr(eta) + lz[0], log_ndtr(-eta) + lz[1]
    pd = np.exp(a - np.logaddexp(a, b))
    lab = (rng.random(len(pd)) < pd).astype(float)
    ev = evaluate_runs(Posterior.binary(data.topic_ids, data.doc_ids, lab), runs, measures, samples=0)
    for (run, meas) in rows:
        vals[(run, meas)].append(float(ev.mean_value(meas)[ev.runs.index(run)]))
out = []
for k, (t, holds) in rows.items():
    lo, hi = np.quantile(vals[k], [.025, .975])
    out.append({"seed": seed, "run": k[0], "measure": k[1], "truth": t, "labels": holds, "joint": bool(lo <= t <= hi), "lo": lo, "hi": hi, "acc": float(np.mean((p>=.5)==truth))})
print(f"  labels {np.mean([o['labels'] for o in out]):.3f} joint {np.mean([o['joint'] for o in out]):.3f}")
for o in out:
    if o["measure"] == "AP": print("  ", o["run"], "%.3f [%.3f, %.3f]" % (o["truth"], o["lo"], o["hi"]), o["joint"])
if os.path.isdir("/tmp/runfeat_out"):
    with open(f"/tmp/runfeat_out/raykar_{tr}_{prior_sd}_{with_gp}_{seed}.json", "w") as fh:
        json.dump(out, fh)
