"""The design effect of a dense panel: the ρ̄ that DS, IBCC and ordinal-ds temper a dense fit by
(``models.dependence``'s τ_i = 1 / (1 + (n_i − 1) ρ̄)), from the majority-vote start's residuals
and, on an ordinal scale, from judge-family's model with one task effect (docs/models.md, "The
design effect of a correlated panel"). Its own module: it imports ``models.judge_family_model``,
which imports ``models.dependence`` (the density rule)."""

from __future__ import annotations

import numpy as np

from models.data import AnnotationData
from models.dependence import TASK_EFFECT_GRADES, agreement_correlation
from models.judge_family_model import JudgeFamilyModel


def design_correlation(data: AnnotationData, start_rho: float, use_gold: bool = False) -> float:
    """The ρ̄ a dense fit is tempered by: the larger of ``start_rho`` (``residual_correlation``
    under the majority-vote start) and, on an ordinal scale of at least ``TASK_EFFECT_GRADES``
    grades, ``task_effect_correlation``.

    Residuals under any posterior of the independence model miss the error the whole panel
    shares: the task's posterior moves with it (a passage that misleads all 12 judges moves
    their vote shares, and the start's expected labels follow), so ρ̄ under the start is a
    fraction of the correlation given the true grade (12 judges, R .6, noise 1.2: .061 against
    .141 at the truth; docs/models.md, "The design effect of a correlated panel"). The task-effect
    model writes that error down as u_i and leaves the grades to the grades (.113 there); its own
    class prior drifts on some lenient panels (30 judges, R .6, B .5, noise .6, seed 1: .092
    against the start's .124, the truth's .175), so neither estimate is taken alone: both fall
    short of the truth's on the correlated sets measured, and the larger is the nearer. On
    independent judges the start reads ≈ .055 (the truth's 0) and stays the larger: the
    fits there are as before."""
    rho = start_rho
    if ordinal_grades(data) >= TASK_EFFECT_GRADES:
        rho = max(rho, task_effect_correlation(data, use_gold))
    return rho


def ordinal_grades(data: AnnotationData) -> int:
    """The number of grades when ``data``'s classes are an ordinal scale (strictly increasing
    finite numbers, at least two of them judged), else 0 (``models.ordinal_scale``'s check, as a
    count)."""
    values = np.asarray(data.classes)
    if (values.dtype.kind not in "iuf" or values.ndim != 1 or values.shape[0] < 2
            or not np.all(np.isfinite(values)) or np.any(np.diff(values) <= 0)):
        return 0
    used = np.count_nonzero(np.bincount(data.label, minlength=values.shape[0]))
    return int(values.shape[0]) if used >= 2 else 0


def task_effect_correlation(data: AnnotationData, use_gold: bool = False) -> float:
    """ρ̄ of ``agreement_correlation`` at the class prior and the confusion matrices (marginal
    over the task effect) of the ordinal model with one task effect,
    z_ij = t_i + b_j + λ_j u_i + e_ij, u_i ~ N(0, 1) (``models.judge_family_model`` with
    ``families="none"``, ``task_effect=True``): the agreement of two judgments of one task
    beyond what independence given the grade predicts, where the grade's prior and each
    judge's confusion come from a model that did not have to bend its classes to explain the
    shared error. About 0 on independent judges (.005 on 12 independent judges, the truth's
    .000)."""
    model = JudgeFamilyModel(families="none", task_effect=True, use_gold=use_gold).fit(data)
    return agreement_correlation(data.task, data.annotator, data.label, model.prior_,
                                 model.confusion_)
