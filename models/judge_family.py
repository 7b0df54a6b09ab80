"""The judge-family method: the model of ``models.judge_family_model`` on dense judges, and
ordinal-ds in its place on a sparse crowd.

On a sparse crowd with the defaults there is no family to cluster and no task effect to tell from
the grade, so the model is ordinal-ds without its per-judge scale use, and that collapses on RF10
graded (every task a 1: exact .264, κ 0, the middle-grade drift of docs/models.md); the nesting
model, ordinal-ds, is fitted instead (``fallback_``; the result says ``"fallback":
"ordinal-ds"``). The model lives in a module of its own because ordinal-ds, through
Dawid–Skene's design effect (``models.design_effect``), measures a dense panel's shared error
with it: the model imports neither, this method both.
"""

from __future__ import annotations

from models.base import AggregationResult, ProgressCallback
from models.data import AnnotationData
from models.judge_family_model import (  # noqa: F401 (the model's helpers, public here too)
    JudgeFamilyModel,
    gauss_hermite,
    nested_log_likelihood,
    residual_families,
)
from models.ordinal_ds import OrdinalDawidSkene


class JudgeFamily(JudgeFamilyModel):
    """judge-family (``models.judge_family_model``'s docstring), ordinal-ds on a sparse crowd."""

    def _sparse_crowd(self, data: AnnotationData, progress: ProgressCallback) -> bool:
        inner = OrdinalDawidSkene(use_gold=self.use_gold).fit(data, progress)
        self.fallback_ = inner
        self.families_how_ = "none"
        self.proba_ = inner.proba_
        self.prior_ = inner.prior_
        # its gold-free read-out (models.tempering), for the fit's info (``readout_info``)
        self.temperature_, self.readout_rho_ = inner.temperature_, inner.readout_rho_
        return True

    def result(self, data: AnnotationData) -> AggregationResult:
        if self.fallback_ is None:
            return super().result(data)
        inner = self.fallback_.result(data)
        inner.method = self.method
        inner.info = {**inner.info, "fallback": "ordinal-ds", "families": "none"}
        return inner
