"""Score runs on a qrels posterior: the most probable qrels and ``samples`` draws, vectorised.

Per topic, the draws are one (draws x judged tasks) matrix of classes; per run and topic the
ranking is reduced once to the positions (and label-matrix columns) of its judged documents; a
compiled loop (``_kernel``) then scores every run on every draw, reading each draw's labels of
the run's judged documents once — no qrels dict and no library call per draw. Topics are those
a run answered that have judgments; a run's mean over topics ("all") is over the topics it
answered, as trec_eval averages without ``-c``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from models.evaluation.joint import JointDraws, JointLoadings
from models.evaluation.measures import Measure
from models.evaluation.parameters import AnnotatorDraws, draw_tilted
from models.evaluation.ppi import PPI_DRAWS, interval, projections, recalibrate
from models.evaluation.uncertainty import Posterior, draw_classes, kendall_tau, summarise
from models.evaluation.uncertainty import win_probabilities as _win_probabilities

Progress = Callable[[float, str], None]


@dataclass
class RunScores:
    """Scores of ``runs`` x ``topics`` per measure: ``value`` (R, T) on the most probable
    qrels and ``draws`` (S, R, T) over the posterior draws (None when the qrels are fixed);
    NaN where a run did not answer a topic."""

    runs: list[str]
    topics: list[str]
    measures: list[Measure]
    value: dict[str, np.ndarray]
    draws: dict[str, np.ndarray] | None
    n_draws: int
    seed: int | None
    unjudged_topics: dict[str, list[str]] = field(default_factory=dict)
    fixed: bool = True  # the qrels are certain: every draw would equal the value
    qrels_topics: int = 0  # topics with judgments, answered by a run or not
    # PPI (``models.evaluation.ppi``): per measure (R, G) each gold pair's rectifier d_rp of
    # each run's mean over topics, (R, T) the prediction E_q[m] of the recalibrated posterior,
    # and N, the judged pairs the G gold pairs were sampled from.
    ppi: dict[str, np.ndarray] | None = None
    ppi_prediction: dict[str, np.ndarray] | None = None
    # (R, G, C) each gold pair's d_rp(c) for every class c, and (G, C) its recalibrated q_p(c):
    # the rectifier's variance under the posterior (``ppi.interval``'s floor).
    ppi_all: dict[str, np.ndarray] | None = None
    ppi_q: np.ndarray | None = None
    ppi_pairs: int = 0
    # how the draws were made: "labels" (independent per task), "parameters" (tilted by drawn
    # annotator parameters) or "joint-gp" (one draw of a GP's latent function for all tasks)
    draw_kind: str = "labels"

    def answered(self) -> np.ndarray:
        """(R, T) True where a run answered a judged topic: the topics of its mean."""
        if not self.measures:
            return np.zeros((len(self.runs), len(self.topics)), dtype=bool)
        return ~np.isnan(self.value[self.measures[0].name])

    def mean_value(self, measure: str) -> np.ndarray:
        """(R,) mean over the topics each run answered, on the most probable qrels."""
        return _nanmean(self.value[measure], axis=1)

    def mean_draws(self, measure: str) -> np.ndarray:
        """(S, R) mean over topics per draw (S = 1, the value, for fixed qrels)."""
        if self.draws is None:
            return self.mean_value(measure)[None, :]
        return _nanmean(self.draws[measure], axis=2)


def _nanmean(a: np.ndarray, axis: int) -> np.ndarray:
    counts = np.sum(~np.isnan(a), axis=axis)
    sums = np.nansum(a, axis=axis, dtype=np.float64)
    return np.divide(sums, counts, out=np.full(sums.shape, np.nan), where=counts > 0)


class _Topic:
    """A topic's judged tasks: doc -> column, class values and gains, and what the kernel needs
    to score several runs on one (S, J_t) matrix of classes."""

    def __init__(self, docs: np.ndarray, classes: np.ndarray, relevant_index: int) -> None:
        self.column = {d: i for i, d in enumerate(docs.tolist())}
        self.n_judged = len(docs)
        self.rel_class = np.arange(len(classes)) >= relevant_index
        self.gains = np.maximum(classes, 0).astype(np.float64)
        positive = np.flatnonzero(self.gains > 0)
        order = positive[np.argsort(-self.gains[positive], kind="stable")]
        self.level_classes = order
        self.gain_levels = self.gains[order]
        # Gains are 1 exactly on the relevant classes: nDCG reuses the relevant documents.
        self.binary_gain = bool(np.array_equal(self.gains > 0, self.rel_class)
                                and np.all(self.gains[self.rel_class] == 1.0))

    def locate(self, ranking: Sequence[str]) -> tuple[np.ndarray, np.ndarray, int]:
        """Positions (1-based) and columns of the ranking's judged documents, and its length."""
        column = self.column
        pos, cols = [], []
        for rank, doc in enumerate(ranking, start=1):
            c = column.get(doc)
            if c is not None:
                pos.append(rank)
                cols.append(c)
        return np.array(pos, dtype=np.int64), np.array(cols, dtype=np.int64), len(ranking)

    def score(self, labels: np.ndarray, located: Sequence[tuple[np.ndarray, np.ndarray, int]],
              measures: Sequence[Measure]) -> np.ndarray:
        """(M, S, R_runs) scores of the ``located`` runs for each draw (row) of ``labels``."""
        from models.evaluation._kernel import score_topic
        from models.evaluation.standard import ideal_dcg

        labels = np.ascontiguousarray(labels, dtype=np.int8)
        n_draws = labels.shape[0]
        rel = self.rel_class[labels]
        n_rel = np.count_nonzero(rel, axis=1).astype(np.int64)
        idcg = np.zeros((n_draws, len(measures)))
        if any(m.family == "nDCG" for m in measures):
            counts = np.stack([np.count_nonzero(labels == c, axis=1)
                               for c in self.level_classes], axis=1) if len(
                self.level_classes) else np.zeros((n_draws, 0), dtype=np.int64)
            for i, m in enumerate(measures):
                if m.family == "nDCG":
                    idcg[:, i] = ideal_dcg(counts, self.gain_levels, m.param)
        lengths = np.array([len(p) for p, _, _ in located], dtype=np.int64)
        offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        pos = np.concatenate([p for p, _, _ in located]).astype(np.int64)
        cols = np.concatenate([c for _, c, _ in located]).astype(np.int64)
        n_ret = np.array([n for _, _, n in located], dtype=np.int64)
        params = np.array([m.param for m in measures], dtype=np.int64)
        judged_upto = np.array([[np.searchsorted(p, k, side="right") for k in params]
                                for p, _, _ in located], dtype=np.int64).reshape(
                                    len(located), len(measures))
        depth = int(max(n_ret.max(initial=0), 1))
        disc = np.zeros(depth + 1)
        disc[1:] = 1.0 / np.log2(np.arange(2, depth + 2))
        out = np.empty((len(measures), n_draws, len(located)))
        score_topic(labels, self.rel_class, self.gains, self.binary_gain, cols, pos, offsets,
                    n_ret, np.array([m.code for m in measures], dtype=np.int64), params,
                    n_rel, self.n_judged - n_rel, self.n_judged, idcg, judged_upto, disc, out)
        return out


def evaluate_runs(posterior: Posterior, runs: Mapping[str, Mapping[str, Sequence[str]]],
                  measures: Sequence[Measure], *, samples: int = 1000, seed: int | None = 0,
                  progress: Progress | None = None,
                  gold_class: np.ndarray | None = None,
                  parameters: AnnotatorDraws | None = None,
                  joint: JointLoadings | None = None) -> RunScores:
    """Score every run on every judged topic it answered, for the most probable qrels and for
    ``samples`` draws from the posterior (none when it is deterministic or samples is 0).
    ``gold_class`` ((J,) class index per posterior task, -1 without gold; ``ppi.gold_classes``)
    adds what a prediction-powered interval needs (``ppi``: it needs draws of an uncertain
    posterior). ``parameters`` (``parameters.AnnotatorDraws`` with ``samples`` draws) makes
    draw s tilt every task's posterior by the same draw of the annotators' parameters, so an
    annotator's errors move together across topics. ``joint`` (a GP fit's
    ``joint.JointLoadings``, binary posteriors) draws the qrels jointly from the GP's posterior
    of f: one draw of the latent function for the whole collection (``default_rng([seed, 0,
    2])``), so tasks that share features move together.

    ``runs`` maps a run name to {topic: [doc, ...] best first} (``app.formats.runs.TrecRun``).
    The draws of a topic come from ``default_rng([seed, i])``, i the topic's index among the
    posterior's sorted topics, so they do not depend on which runs are scored.
    """
    run_names = list(runs)
    all_topics = sorted(set(posterior.topics.tolist()))
    topic_seed_index = {t: i for i, t in enumerate(all_topics)}
    answered = set().union(*(set(r) for r in runs.values())) if runs else set()
    topics = [t for t in all_topics if t in answered]
    unjudged = {name: sorted(t for t in run if t not in topic_seed_index)
                for name, run in runs.items()}
    stochastic = samples > 0 and not posterior.deterministic
    n_draws = samples if stochastic else 0
    latent = _joint_draws(posterior, n_draws, seed, parameters, joint)

    value = {m.name: np.full((len(run_names), len(topics)), np.nan) for m in measures}
    draws = ({m.name: np.full((n_draws, len(run_names), len(topics)), np.nan)
              for m in measures} if stochastic else None)
    by_topic = _rows_by_topic(posterior, topics)
    most_probable = posterior.most_probable()
    if gold_class is not None and not stochastic and not posterior.deterministic:
        raise ValueError("prediction-powered intervals need draws of the posterior (samples > 0)")
    ppi = (_PPIParts(posterior, gold_class, measures, len(run_names), len(topics), stochastic)
           if gold_class is not None else None)

    for ti, t in enumerate(topics):
        rows = by_topic[t]
        topic = _Topic(posterior.docs[rows], posterior.classes, posterior.relevant_index)
        located = {ri: topic.locate(runs[name][t]) for ri, name in enumerate(run_names)
                   if t in runs[name]}
        order = list(located)
        batch = [located[ri] for ri in order]
        if not order:
            continue
        scored = topic.score(most_probable[rows][None, :], batch, measures)
        for mi, m in enumerate(measures):
            value[m.name][order, ti] = scored[mi, 0]
        if draws is not None:
            rng = np.random.default_rng([int(seed or 0), topic_seed_index[t]])
            labels = _topic_draws(posterior, rows, n_draws, rng, latent, parameters)
            scored = topic.score(labels, batch, measures)
            for mi, m in enumerate(measures):
                draws[m.name][:, order, ti] = scored[mi]
        if ppi is not None:
            ppi.add_topic(topic, batch, order, ti, rows, most_probable,
                          np.random.default_rng([int(seed or 0), topic_seed_index[t], 1]))
        if progress is not None:
            progress((ti + 1) / len(topics), f"topic {ti + 1}/{len(topics)}")
    scores = RunScores(runs=run_names, topics=topics, measures=list(measures), value=value,
                       draws=draws, n_draws=n_draws, seed=seed, unjudged_topics=unjudged,
                       fixed=posterior.deterministic, qrels_topics=len(all_topics),
                       draw_kind=("joint-gp" if latent is not None else "parameters"
                                  if parameters is not None and stochastic else "labels"))
    if ppi is not None:
        ppi.finish(scores)
    return scores


def _joint_draws(posterior: Posterior, n_draws: int, seed: int | None,
                 parameters: AnnotatorDraws | None, joint: JointLoadings | None
                 ) -> JointDraws | None:
    """The GP's joint draws of ``evaluate_runs`` (None without loadings, with rank 0, or
    without draws); ValueError for parameter draws that do not fit the request."""
    if parameters is not None and n_draws and parameters.samples != n_draws:
        raise ValueError(f"{parameters.samples} parameter draws for {n_draws} draws of the qrels")
    if parameters is not None and joint is not None:
        raise ValueError("give annotator-parameter draws or joint GP draws, not both")
    if joint is None or joint.rank == 0 or not n_draws:  # rank 0: no g to draw
        return None
    return JointDraws(posterior, joint, n_draws, np.random.default_rng([int(seed or 0), 0, 2]))


def _rows_by_topic(posterior: Posterior, topics: Sequence[str]) -> dict[str, np.ndarray]:
    """Each topic's tasks in doc order: the draws do not depend on the input order."""
    by_topic: dict[str, np.ndarray] = {}
    for t in topics:
        rows = np.flatnonzero(posterior.topics == t)
        by_topic[t] = rows[np.argsort(posterior.docs[rows], kind="stable")]
    return by_topic


def _topic_draws(posterior: Posterior, rows: np.ndarray, n_draws: int, rng: np.random.Generator,
                 latent: JointDraws | None, parameters: AnnotatorDraws | None) -> np.ndarray:
    """(S, n) class indices of a topic's tasks in S draws: from the GP's joint draws, tilted by
    the annotators' drawn parameters, or independently per task."""
    if latent is not None:
        return latent.topic_labels(rows, rng)
    if parameters is not None:
        return draw_tilted(parameters.topic_proba(rows, posterior.proba[rows]), rng)
    return draw_classes(posterior.proba[rows], n_draws, rng)


class _PPIParts:
    """What a prediction-powered interval needs, gathered topic by topic: the recalibrated
    posterior's prediction per (run, topic) and each gold pair's projections h(c)."""

    def __init__(self, posterior: Posterior, gold_class: np.ndarray,
                 measures: Sequence[Measure], n_runs: int, n_topics: int,
                 stochastic: bool) -> None:
        self.gold_class, self.measures, self.stochastic = gold_class, measures, stochastic
        self.n_pairs = posterior.n_tasks
        self.gold_index = np.cumsum(gold_class >= 0) - 1
        n_gold = int(np.count_nonzero(gold_class >= 0))
        self.h = {m.name: np.zeros((n_runs, n_gold, len(posterior.classes))) for m in measures}
        self.prediction = {m.name: np.full((n_runs, n_topics), np.nan) for m in measures}
        self.proba = (recalibrate(posterior.proba, gold_class, posterior.relevant_index)
                      if stochastic else posterior.proba)

    def add_topic(self, topic: _Topic, batch: list, order: list[int], ti: int, rows: np.ndarray,
                  most_probable: np.ndarray, rng: np.random.Generator) -> None:
        measures = self.measures
        base = (draw_classes(self.proba[rows], PPI_DRAWS, rng) if self.stochastic
                else most_probable[rows][None, :].astype(np.int8))
        scored = topic.score(base, batch, measures)
        for mi, m in enumerate(measures):
            self.prediction[m.name][order, ti] = scored[mi].mean(axis=0)
        cols = np.flatnonzero(self.gold_class[rows] >= 0)
        if not len(cols):
            return
        h = projections(lambda labels: topic.score(labels, batch, measures), base,
                        self.proba[rows], cols, len(measures), len(order))  # (M, g, C, r)
        for mi, m in enumerate(measures):
            self.h[m.name][np.ix_(order, self.gold_index[rows][cols])] = h[mi].transpose(2, 0, 1)

    def finish(self, scores: RunScores) -> None:
        """Each pair's share of a run's mean over the n_r topics it answered, into ``scores``."""
        n_topics = np.maximum(scores.answered().sum(axis=1), 1)
        known = self.gold_class >= 0
        picked = np.arange(int(known.sum()))
        for name in self.h:
            self.h[name] /= n_topics[:, None, None]
        scores.ppi_all, scores.ppi_q, scores.ppi_pairs = self.h, self.proba[known], self.n_pairs
        scores.ppi_prediction = self.prediction
        scores.ppi = {name: h[:, picked, self.gold_class[known]] for name, h in self.h.items()}


def win_matrix(scores: RunScores, measure: Measure) -> np.ndarray:
    """(R, R): P(run a scores better than run b on the mean over topics)."""
    return _win_probabilities(scores.mean_draws(measure.name),
                              higher_is_better=measure.higher_is_better)


def _round(x: float) -> float | None:
    return None if not np.isfinite(x) else float(x)


def _no_draws(value: np.ndarray, fixed: bool) -> dict[str, np.ndarray]:
    """Summaries without draws: the value itself for certain qrels, unknown (NaN) otherwise
    (an uncertain posterior scored with samples = 0)."""
    if fixed:
        return {"mean": value, "std": np.where(np.isnan(value), np.nan, 0.0), "low": value,
                "high": value}
    unknown = np.full(value.shape, np.nan)
    return {"mean": unknown, "std": unknown, "low": unknown, "high": unknown}


def _with_estimate(summary: dict[str, np.ndarray], kind: str) -> dict[str, np.ndarray]:
    """The posterior mean as the estimate; the central interval stretched to hold it where a
    skewed distribution of draws leaves the mean outside its 2.5-97.5 percentiles."""
    estimate = summary["mean"]
    with np.errstate(invalid="ignore"):
        low, high = np.fmin(summary["low"], estimate), np.fmax(summary["high"], estimate)
    return {**summary, "estimate": estimate, "low": low, "high": high,
            "interval_kind": np.full(estimate.shape, kind, dtype=object)}


def _summaries(scores: RunScores, m: Measure) -> tuple[dict[str, np.ndarray],
                                                       dict[str, np.ndarray]]:
    """Per (run, topic) and per run ("all"): mean, std, estimate, low, high, interval_kind."""
    value = scores.value[m.name]
    if scores.draws is None:
        topic = _no_draws(value, scores.fixed)
        whole = _no_draws(scores.mean_value(m.name), scores.fixed)
    else:
        topic = summarise(scores.draws[m.name].astype(np.float64), axis=0)
        whole = summarise(scores.mean_draws(m.name), axis=0)
    topic, whole = _with_estimate(topic, "posterior"), _with_estimate(whole, "posterior")
    if scores.ppi is not None and scores.ppi_prediction is not None:
        predicted = _nanmean(scores.ppi_prediction[m.name], axis=1)
        ppi = interval(predicted, scores.ppi[m.name], scores.ppi_pairs, (0.0, _top(m)),
                       model_variance=_model_variance(scores, m.name))
        whole.update(estimate=ppi.estimate, low=ppi.low, high=ppi.high,
                     interval_kind=np.full(ppi.estimate.shape, "ppi", dtype=object))
    return topic, whole


def _model_variance(scores: RunScores, measure: str, paired: bool = False) -> np.ndarray | None:
    """(R, G), or (R, R, G) for the differences a − b: each gold pair's variance of its
    rectifier under the recalibrated posterior, Σ_c q_p(c) d_p(c)²."""
    if scores.ppi_all is None or scores.ppi_q is None:
        return None
    h, q = scores.ppi_all[measure], scores.ppi_q
    if not paired:
        return np.einsum("rgc,gc->rg", h * h, q)
    out = np.empty((h.shape[0], h.shape[0], h.shape[1]))
    for a in range(h.shape[0]):
        diff = h[a][None] - h
        out[a] = np.einsum("rgc,gc->rg", diff * diff, q)
    return out


def _top(m: Measure) -> float:
    """The largest score of the measure: 100 for a percentage (LastRel), else 1."""
    return 100.0 if m.unit == "%" else 1.0


def _pair_rows(scores: RunScores, m: Measure) -> list[dict[str, Any]]:
    """Every ordered pair of runs: P(a beats b) over the draws and the difference a − b of their
    means over topics with its interval (posterior draws, or PPI's paired rectifier)."""
    mean_draws = scores.mean_draws(m.name)
    known = scores.fixed or scores.draws is not None
    wins = _win_probabilities(mean_draws, higher_is_better=m.higher_is_better)
    diffs = mean_draws[:, :, None] - mean_draws[:, None, :]  # (S, R, R)
    summary = _with_estimate(summarise(diffs, axis=0), "posterior")
    if scores.ppi is not None and scores.ppi_prediction is not None:
        rect = scores.ppi[m.name]
        predicted = _nanmean(scores.ppi_prediction[m.name], axis=1)
        ppi = interval(predicted[:, None] - predicted[None, :], rect[:, None, :] - rect[None, :, :],
                       scores.ppi_pairs, (-_top(m), _top(m)),
                       model_variance=_model_variance(scores, m.name, paired=True))
        summary.update(estimate=ppi.estimate, low=ppi.low, high=ppi.high,
                       interval_kind=np.full(ppi.estimate.shape, "ppi", dtype=object))
    rows = []
    for a, run_a in enumerate(scores.runs):
        for b, run_b in enumerate(scores.runs):
            if a == b:
                continue
            rows.append({"measure": m.name, "a": run_a, "b": run_b,
                         "p_a_beats_b": float(wins[a, b]) if known else None,
                         "difference": _round(summary["estimate"][a, b]) if known else None,
                         "low": _round(summary["low"][a, b]) if known else None,
                         "high": _round(summary["high"][a, b]) if known else None,
                         "interval_kind": summary["interval_kind"][a, b]})
    return rows


def report(scores: RunScores, *, reference: RunScores | None = None) -> dict[str, Any]:
    """The JSON form: ``results`` (run, measure, topic | "all", value, mean, std, estimate,
    low, high, interval_kind), ``draws`` (how the posterior draws were made,
    ``RunScores.draw_kind``), ``pairs`` (measure, a, b, p_a_beats_b, difference, low, high,
    interval_kind), ``rankings`` (per measure: runs best first on the most probable qrels,
    Kendall's tau against ``reference`` (gold) and across the draws).

    ``value`` is the score on the most probable qrels; ``estimate`` the posterior mean (the
    draws' ``mean``), or with a gold sample (``interval_kind`` "ppi", on the means over topics)
    the prediction-powered estimate; ``low``, ``high`` its 95 % interval, which holds it.
    Without draws of an uncertain posterior (samples = 0) mean, std, estimate, low, high and
    p_a_beats_b are null.

    Which topics the means are over: ``qrels_topics`` (topics with judgments),
    ``run_topics`` (per run, those of them it answered: the topics of its mean) and
    ``common_topics`` (those every run answered). Runs' means are over the same topics only
    when every ``run_topics`` equals ``common_topics``."""
    results: list[dict[str, Any]] = []
    pairs: list[dict[str, Any]] = []
    rankings: list[dict[str, Any]] = []
    for m in scores.measures:
        value = scores.value[m.name]
        summary, all_summary = _summaries(scores, m)
        mean_value = scores.mean_value(m.name)
        mean_draws = scores.mean_draws(m.name)
        for ri, run in enumerate(scores.runs):
            for ti, topic in enumerate(scores.topics):
                if np.isnan(value[ri, ti]):
                    continue
                results.append({"run": run, "measure": m.name, "topic": topic,
                                "value": float(value[ri, ti]),
                                **{k: _cell(summary[k][ri, ti]) for k in _FIELDS}})
            results.append({"run": run, "measure": m.name, "topic": "all",
                            "value": _round(mean_value[ri]),
                            **{k: _cell(all_summary[k][ri]) for k in _FIELDS}})
        pairs.extend(_pair_rows(scores, m))
        rankings.append(_ranking(scores, m, mean_value, mean_draws, reference))
    answered = scores.answered()
    return {"results": results, "pairs": pairs, "rankings": rankings,
            "samples": scores.n_draws, "seed": scores.seed, "draws": scores.draw_kind,
            "topics": len(scores.topics),
            "qrels_topics": scores.qrels_topics,
            "run_topics": {run: int(n) for run, n in zip(scores.runs, answered.sum(axis=1),
                                                         strict=True)},
            "common_topics": int(answered.all(axis=0).sum()) if scores.runs else 0,
            "unjudged_topics": {r: len(t) for r, t in scores.unjudged_topics.items() if t}}


_FIELDS = ("mean", "std", "estimate", "low", "high", "interval_kind")


def _cell(x: Any) -> Any:
    return x if isinstance(x, str) else _round(x)


def _ranking(scores: RunScores, m: Measure, mean_value: np.ndarray, mean_draws: np.ndarray,
             reference: RunScores | None) -> dict[str, Any]:
    sign = -1.0 if m.higher_is_better else 1.0
    order = np.argsort(np.where(np.isnan(mean_value), np.inf, sign * mean_value),
                       kind="stable")
    ranking: dict[str, Any] = {"measure": m.name, "higher_is_better": m.higher_is_better,
                               "unit": m.unit, "runs": [scores.runs[i] for i in order],
                               "kendall_tau_gold": None, "kendall_tau_draws": None}
    if reference is not None and m.name in reference.value:
        ref = reference.mean_value(m.name)
        ranking["kendall_tau_gold"] = _round(float(kendall_tau(mean_value, ref)))
    if scores.draws is not None and len(scores.runs) > 1:
        taus = kendall_tau(mean_value, mean_draws)
        taus = taus[np.isfinite(taus)]  # a draw in which every run ties has no ranking
        if len(taus):
            ranking["kendall_tau_draws"] = {k: _round(float(v))
                                            for k, v in summarise(taus).items()}
    return ranking


def format_tsv(results: Sequence[Mapping[str, Any]]) -> str:
    header = ("run", "measure", "topic", "value", "mean", "std", "estimate", "low", "high",
              "interval_kind")
    lines = ["\t".join(header)]
    for r in results:
        lines.append("\t".join(
            str(r[k]) if k in ("run", "measure", "topic", "interval_kind")
            else ("" if r[k] is None else f"{r[k]:.6f}") for k in header))
    return "\n".join(lines) + "\n"


def format_trec(results: Sequence[Mapping[str, Any]]) -> str:
    """``measure<TAB>topic<TAB>value`` lines as trec_eval -q prints them, with the run first:
    ``run measure topic value`` (per topic, then ``all``), value on the most probable qrels.
    A run without a score (it answered no judged topic: its mean is null) has no line: one
    without its value would split into three fields where every reader expects four."""
    lines = []
    ordered = sorted(results, key=lambda r: (r["run"], r["measure"], r["topic"] == "all"))
    for r in ordered:
        if r["value"] is None:
            continue
        lines.append(f"{r['run']}\t{r['measure']}\t{r['topic']}\t{r['value']:.4f}\n")
    return "".join(lines)
