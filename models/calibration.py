"""Gold used to calibrate: P(relevant) recalibrated on held-out gold (Platt scaling, cross-fitted).

Crowd models are overconfident: a task's judgments are treated as independent given its label,
so six lenient workers who agree make P(relevant) ≈ 1 even where NIST says no. A collection with
gold can measure that. ``GoldCalibrated`` wraps a model that clamps gold (``use_gold``):

1. fit the model on all the gold (the model one deploys, ``model_``);
2. k-fold over the gold tasks (``models.evaluation.heldout``): every gold task gets the
   P(relevant) of a fit that did not see its label — the only honest scores to calibrate on;
3. fit a map P ↦ P' to those scores and the gold's relevance: with ``calibration="auto"`` (the
   default) the one of Platt's logistic map (Platt 1999; 2 numbers), beta calibration (Kull,
   Silva Filho & Flach 2017; 3 numbers, a smooth monotone map that bends at both ends) and the
   isotonic regression (a monotone step function, as many numbers as it has steps) whose
   held-out log loss over ``SELECTION_FOLDS`` folds of those scores is lowest (``select_map``):
   hundreds of gold tasks pay for the isotonic map's freedom where a parametric shape is wrong,
   thirty do not, and cross-validated log loss measures which is the case rather than assuming
   it; ``"platt"``, ``"beta"`` or ``"isotonic"`` forces one map;
4. apply it to the deployed fit's P(relevant) of every task without gold (a clamped task keeps
   its gold label). With graded labels only the split between relevant and non-relevant grades
   moves: within each side the model's grade distribution is kept, so P(grade ≥ relevant) equals
   the calibrated P(relevant) and the graded and binary views still agree.

The label is then the most probable class of the recalibrated distribution, which for binary data
is the decision P(relevant) ≥ the threshold where σ(a · logit P + b) = ½ — chosen on held-out
gold, never 0.5 by assumption. Scoring such a fit on the same gold would reuse it, so its
held-out evaluation (the service's, ``--held-out`` in the CLI) refits the whole wrapper per outer
fold: the calibration of each outer fold is fitted on that fold's training gold only (nested
cross-validation).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Self

import numpy as np
import scipy.optimize
import scipy.special

from models.base import (
    AggregationResult,
    Aggregator,
    ProgressCallback,
    no_progress,
    p_relevant,
)
from models.data import UNKNOWN, AnnotationData
from models.evaluation.heldout import heldout_predictions
from models.params import Calibration, param_spec

_CLIP = 1e-6
_LOGIT_SPAN = float(np.log((1 - _CLIP) / _CLIP))
SELECTION_FOLDS = 5  # folds of the held-out scores over which "auto" compares the maps


def _outcomes(p: np.ndarray, relevant: np.ndarray) -> np.ndarray:
    """``relevant`` as floats; ValueError unless both outcomes are present (otherwise no map's
    likelihood has a maximum)."""
    y = np.asarray(relevant, dtype=np.float64)
    if y.shape != np.shape(p) or y.size == 0 or y.min() == y.max():
        raise ValueError("calibration needs gold tasks that are relevant and gold tasks "
                         "that are not")
    return y


def _targets(y: np.ndarray) -> np.ndarray:
    """Platt's (1999) targets for a logistic map: (N₊ + 1) / (N₊ + 2) for a relevant task,
    1 / (N₋ + 2) for another (N₊, N₋: how many of each), the posterior of a Bernoulli under a
    uniform prior. Gold that a score separates perfectly then has a finite maximum, and the
    map is never certain: a few dozen gold tasks, often separable, give no slope of ∞."""
    positives = y.sum()
    negatives = y.size - positives
    return np.where(y > 0.5, (positives + 1.0) / (positives + 2.0), 1.0 / (negatives + 2.0))


def _logit(p: np.ndarray) -> np.ndarray:
    p = np.clip(np.asarray(p, dtype=np.float64), _CLIP, 1.0 - _CLIP)
    return np.log(p) - np.log1p(-p)


@dataclass(frozen=True)
class Platt:
    """P' = σ(a · logit P + b); the identity is a = 1, b = 0."""

    a: float = 1.0
    b: float = 0.0

    @classmethod
    def fit(cls, p: np.ndarray, relevant: np.ndarray) -> Platt:
        """Maximum-likelihood (a, b) of the logistic regression of ``relevant`` (bool; as
        Platt's targets, ``_targets``) on logit ``p``. Needs both outcomes present."""
        y = _targets(_outcomes(p, relevant))
        z = _logit(p)

        def nll(w: np.ndarray) -> tuple[float, np.ndarray]:
            u = w[0] * z + w[1]
            value = float(np.sum(np.logaddexp(0.0, u) - y * u))
            r = scipy.special.expit(u) - y
            return value, np.array([np.dot(r, z), r.sum()])

        res = scipy.optimize.minimize(nll, np.array([1.0, 0.0]), jac=True, method="L-BFGS-B")
        return cls(float(res.x[0]), float(res.x[1]))

    def __call__(self, p: np.ndarray) -> np.ndarray:
        return scipy.special.expit(self.a * _logit(p) + self.b)

    @property
    def threshold(self) -> float:
        """The uncalibrated P(relevant) the calibrated ½ corresponds to (a > 0), else NaN."""
        return float(scipy.special.expit(-self.b / self.a)) if self.a > 0 else float("nan")


@dataclass(frozen=True)
class Beta:
    """Beta calibration (Kull, Silva Filho & Flach 2017, *Beyond sigmoids*): P' = σ(a · ln P −
    b · ln(1 − P) + c), a, b ≥ 0 (monotone), the logistic regression of relevance on ln P and
    −ln(1 − P) by maximum likelihood. Platt's map is a = b; the identity a = b = 1, c = 0. Where
    the scores' two ends are miscalibrated by different amounts (a posterior overconfident at 1
    but honest near 0), it bends where Platt's sigmoid cannot, with one number more. Fitted to
    Platt's targets (``_targets``), as Platt's map is."""

    a: float = 1.0
    b: float = 1.0
    c: float = 0.0

    @classmethod
    def fit(cls, p: np.ndarray, relevant: np.ndarray) -> Beta:
        y = _targets(_outcomes(p, relevant))
        q = np.clip(np.asarray(p, dtype=np.float64), _CLIP, 1.0 - _CLIP)
        z = np.stack([np.log(q), -np.log1p(-q), np.ones_like(q)], axis=1)

        def nll(w: np.ndarray) -> tuple[float, np.ndarray]:
            u = z @ w
            # log(1 + e^u) − y u: the Bernoulli log likelihood in log space (no overflow)
            return float(np.sum(np.logaddexp(0.0, u) - y * u)), z.T @ (scipy.special.expit(u) - y)

        res = scipy.optimize.minimize(nll, np.array([1.0, 1.0, 0.0]), jac=True,
                                      method="L-BFGS-B",
                                      bounds=[(0.0, None), (0.0, None), (None, None)])
        return cls(float(res.x[0]), float(res.x[1]), float(res.x[2]))

    def __call__(self, p: np.ndarray) -> np.ndarray:
        q = np.clip(np.asarray(p, dtype=np.float64), _CLIP, 1.0 - _CLIP)
        return scipy.special.expit(self.a * np.log(q) - self.b * np.log1p(-q) + self.c)

    @property
    def threshold(self) -> float:
        """The uncalibrated P(relevant) the calibrated ½ corresponds to (bisection on logit P:
        the map is monotone), NaN when no P reaches ½ or every P does."""
        lo, hi = -_LOGIT_SPAN, _LOGIT_SPAN
        f = lambda t: float(self(scipy.special.expit(np.array([t])))[0]) - 0.5  # noqa: E731
        if f(lo) > 0 or f(hi) < 0 or self.a + self.b == 0:
            return float("nan")
        for _ in range(80):
            mid = 0.5 * (lo + hi)
            lo, hi = (mid, hi) if f(mid) < 0 else (lo, mid)
        return float(scipy.special.expit(0.5 * (lo + hi)))


@dataclass(frozen=True)
class Isotonic:
    """P' = the isotonic (monotone, least-squares) regression of relevance on P: the pool-
    adjacent-violators fit (``scipy.optimize.isotonic_regression``) at the distinct scores,
    linear between them, constant beyond; kept within [1/(2n), 1 − 1/(2n)] (n gold tasks) so that
    no recalibrated probability is certain. No shape is assumed: on RF10 the crowd models'
    held-out P(relevant) is not a logistic function of relevance (DS, cross-fitted on 3,275 gold
    tasks: ECE .067 after Platt, .013 after this; docs/models.md)."""

    x: tuple[float, ...]
    y: tuple[float, ...]

    @classmethod
    def fit(cls, p: np.ndarray, relevant: np.ndarray) -> Isotonic:
        y = _outcomes(p, relevant)
        knots, inverse, counts = np.unique(np.asarray(p, dtype=np.float64),
                                           return_inverse=True, return_counts=True)
        share = np.bincount(inverse, weights=y) / counts
        fitted = scipy.optimize.isotonic_regression(share, weights=counts).x
        edge = 0.5 / y.size
        return cls(tuple(knots.tolist()), tuple(np.clip(fitted, edge, 1.0 - edge).tolist()))

    def __call__(self, p: np.ndarray) -> np.ndarray:
        return np.interp(np.asarray(p, dtype=np.float64), self.x, self.y)

    @property
    def threshold(self) -> float:
        """The smallest uncalibrated P(relevant) mapped to ½ or more, else NaN."""
        above = np.flatnonzero(np.asarray(self.y) >= 0.5)
        return float(self.x[above[0]]) if above.size else float("nan")


Map = Platt | Beta | Isotonic
CALIBRATIONS: dict[str, type[Platt] | type[Beta] | type[Isotonic]] = {
    "platt": Platt, "beta": Beta, "isotonic": Isotonic}
# "auto"'s candidates, simplest first: a tie goes to the map with fewer numbers
CANDIDATES = ("platt", "beta", "isotonic")


def _task_log_loss(p: np.ndarray, y: np.ndarray) -> np.ndarray:
    q = np.clip(p, _CLIP, 1.0 - _CLIP)
    return -(y * np.log(q) + (1.0 - y) * np.log1p(-q))


def select_map(p: np.ndarray, relevant: np.ndarray, *, folds: int = SELECTION_FOLDS,
               random_state: int | None = 0) -> tuple[str, dict[str, float]]:
    """The candidate map (``CANDIDATES``) chosen by held-out log loss on (``p``,
    ``relevant``): ``folds`` folds stratified by outcome (every training part holds both
    outcomes), each map fitted on the other folds and scored on its own; the lowest mean wins,
    the simpler of equals. On a few dozen gold tasks the step function's held-out loss is high
    (a held-out task lands on a step fitted to a handful of others), so it is rarely chosen
    there; the one-standard-error rule (the simplest map within a standard error of the best)
    was tried and not kept (docs/models.md). With fewer than 2 of either outcome nothing can be
    held out: Platt's map, the fewest numbers. Returns (name, {name: mean held-out log loss})
    ({} when not compared).

    Log loss, not ECE: it is the likelihood the maps are fitted by, a proper score, and it
    charges an overfitted step (a held-out task landing on a step fitted near 0 or 1) what a
    wrong probability costs, where ECE's bins would smooth it away."""
    y = _outcomes(p, relevant)
    p = np.asarray(p, dtype=np.float64)
    smaller = int(min(y.sum(), y.size - y.sum()))
    folds = min(folds, smaller)
    if folds < 2:
        return "platt", {}
    rng = np.random.default_rng([0 if random_state is None else int(random_state), 7])
    fold = np.empty(y.size, dtype=np.int64)
    for outcome in (0.0, 1.0):  # stratified: each outcome dealt round the folds
        where = np.flatnonzero(y == outcome)
        fold[rng.permutation(where)] = np.arange(where.size) % folds
    held = {name: np.empty_like(p) for name in CANDIDATES}
    for k in range(folds):
        train, test = fold != k, fold == k
        for name in CANDIDATES:
            held[name][test] = CALIBRATIONS[name].fit(p[train], y[train])(p[test])
    each = {name: _task_log_loss(held[name], y) for name in CANDIDATES}
    losses = {name: float(each[name].mean()) for name in CANDIDATES}
    best = min(CANDIDATES, key=lambda name: (losses[name], CANDIDATES.index(name)))
    return best, losses


def recalibrate(proba: np.ndarray, relevant_index: int, platt: Map) -> np.ndarray:
    """``proba`` (n_tasks, K) with P(class ≥ relevant_index) mapped through ``platt`` and each
    side's distribution over its classes kept (uniform on a side that had no mass)."""
    proba = np.asarray(proba, dtype=np.float64)
    p_rel = p_relevant(proba, relevant_index)
    new = platt(p_rel)
    out = np.empty_like(proba)
    for side, old_mass, new_mass in ((slice(relevant_index, None), p_rel, new),
                                     (slice(0, relevant_index), 1.0 - p_rel, 1.0 - new)):
        part = proba[:, side]
        width = part.shape[1]
        within = np.divide(part, old_mass[:, None], out=np.full_like(part, 1.0 / width),
                           where=old_mass[:, None] > 0)
        out[:, side] = within * new_mass[:, None]
    return out


class GoldCalibrated(Aggregator):
    """``make()`` builds the model (one that clamps gold); see the module doc. ``model_`` is the
    fit on all the gold, ``platt_`` the calibration, ``proba_`` the recalibrated posterior."""

    def __init__(self, make: Callable[[], Aggregator], *, n_folds: int = 5,
                 random_state: int | None = None, relevant_from: int | None = None,
                 calibration: Calibration = "auto") -> None:
        if n_folds < 2:
            raise ValueError("calibration needs at least 2 folds over the gold")
        problem = param_spec("calibration", Calibration, "auto").check_argument(calibration)
        if problem is not None:
            raise ValueError(problem)
        self.calibration = calibration
        self.make = make
        self.n_folds = n_folds
        self.random_state = random_state
        self.relevant_from = relevant_from

    @property
    def method(self) -> str:  # type: ignore[override]
        return getattr(self.model_, "method", "") if hasattr(self, "model_") else ""

    def _relevant_index(self, data: AnnotationData) -> int:
        if data.is_binary or self.relevant_from is None:
            return 1
        index = int(np.searchsorted(data.classes, self.relevant_from))
        if not 0 < index < data.n_classes:
            raise ValueError(f"relevant_from {self.relevant_from} leaves no grade on one side of "
                             f"the scale {data.classes.tolist()}")
        return index

    def fit(self, data: AnnotationData, progress: ProgressCallback = no_progress) -> Self:
        if data.gold is None or not (data.gold != UNKNOWN).any():
            raise ValueError("calibration needs gold labels")
        rel = self._relevant_index(data)
        known = data.gold != UNKNOWN
        relevant = data.gold[known] >= rel
        if relevant.all() or not relevant.any():
            raise ValueError("calibration needs gold tasks that are relevant and gold tasks "
                             "that are not")
        steps = self.n_folds + 1
        self.model_ = self.make().fit(
            data, lambda f, msg: progress(f / steps, f"calibration, all gold: {msg}"))
        held = heldout_predictions(
            self.make, data, self.n_folds, random_state=self.random_state,
            full_model=self.model_,
            progress=lambda f, msg: progress((1.0 + f * self.n_folds) / steps,
                                             f"calibration, {msg}"))
        scores = held.proba[known, rel:].sum(axis=1)
        chosen, self.map_log_loss_ = self.calibration, {}
        if chosen == "auto":
            chosen, self.map_log_loss_ = select_map(scores, relevant,
                                                    random_state=self.random_state)
        calibrator = CALIBRATIONS[chosen].fit(scores, relevant)
        if isinstance(calibrator, Platt):
            self.platt_ = calibrator
        elif isinstance(calibrator, Beta):
            self.beta_ = calibrator
        else:
            self.isotonic_ = calibrator
        self.calibrator_ = calibrator
        self.n_gold_ = int(known.sum())
        proba = recalibrate(self.model_.proba_, rel, calibrator)
        proba[known] = self.model_.proba_[known]  # clamped gold stays what the model made it
        self.proba_ = proba
        return self

    @property
    def labels_(self) -> np.ndarray:
        return np.argmax(self.proba_, axis=1)

    def info(self) -> dict[str, Any]:
        common: dict[str, Any] = {"threshold": self.calibrator_.threshold,
                                  "folds": self.n_folds, "n_gold": self.n_gold_,
                                  "chosen_by": self.calibration}
        if self.map_log_loss_:  # "auto": every candidate's held-out log loss
            common["held_out_log_loss"] = self.map_log_loss_
        if isinstance(self.calibrator_, Platt):
            return {"calibration": {"method": "platt", "a": self.calibrator_.a,
                                    "b": self.calibrator_.b, **common}}
        if isinstance(self.calibrator_, Beta):
            return {"calibration": {"method": "beta", "a": self.calibrator_.a,
                                    "b": self.calibrator_.b, "c": self.calibrator_.c,
                                    **common}}
        return {"calibration": {"method": "isotonic", "knots": len(self.calibrator_.x),
                                **common}}

    def result(self, data: AnnotationData) -> AggregationResult:
        """The model's own result, with the recalibrated posterior in place of its own (task
        columns it derives from the posterior, e.g. the expected grade, follow)."""
        own = self.model_.proba_
        self.model_.proba_ = self.proba_
        try:
            result = self.model_.result(data)
        finally:
            self.model_.proba_ = own
        result.info.update(self.info())
        return result

    def __getattr__(self, name: str) -> Any:
        """The wrapped fit's other learned attributes (``competence_``, ``confusion_``, ...)."""
        if name.endswith("_") and not name.startswith("__") and "model_" in self.__dict__:
            return getattr(self.__dict__["model_"], name)
        raise AttributeError(name)
