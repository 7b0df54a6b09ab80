"""models.pipeline: one fit for the job and the CLI; P(relevant) by the relevant index."""

from __future__ import annotations

import numpy as np
import pytest

from models.base import AggregationResult
from models.data import AnnotationData
from models.dawid_skene import DawidSkene
from models.evaluation import evaluate
from models.pipeline import FitSpec, fit
from models.synthetic import NOISE_LEVELS, generate


@pytest.fixture(scope="module")
def graded() -> AnnotationData:
    """Three grades 0, 1, 2 with gold: a scale whose relevant grades may start at 2."""
    return generate(300, 20, noise_level=NOISE_LEVELS["0-2"], redundancy=5, grades=3,
                    random_state=3).to_annotation_data(with_features=False)


def test_result_p_relevant_counts_from_the_relevant_grade() -> None:
    """1 − P(lowest grade) counted grade 1 as relevant on a scale relevant from 2."""
    proba = np.array([[0.1, 0.7, 0.2], [0.5, 0.1, 0.4]])
    result = AggregationResult("x", np.array([0, 1, 2]), proba)
    assert np.allclose(result.p_relevant(2), [0.2, 0.4])
    assert np.allclose(result.p_relevant(1), [0.9, 0.5])


@pytest.mark.parametrize("relevant_from", [1, 2])
def test_fit_reads_p_relevant_labels_and_scores_by_one_rule(graded: AnnotationData,
                                                            relevant_from: int) -> None:
    spec = FitSpec("ds", {}, seed=0, relevant_from=relevant_from, graded=True)
    fitted = fit(spec, graded)
    proba = fitted.result.proba
    assert fitted.relevant == relevant_from  # classes 0, 1, 2
    assert np.array_equal(fitted.p_relevant, proba[:, relevant_from:].sum(axis=1))
    assert np.array_equal(fitted.labels, fitted.model.labels_)
    scores = fitted.score()
    assert not scores.held_out
    expected = evaluate(proba, graded.gold, relevant_index=relevant_from,
                        classes=graded.classes, labels=fitted.labels)
    assert scores.evaluation == expected


def test_held_out_scores_come_from_fits_without_the_fold_gold(graded: AnnotationData) -> None:
    """use_gold clamps the gold: in sample it is perfect, held out it is not."""
    spec = FitSpec("ds", {"use_gold": True}, seed=0, relevant_from=1, graded=True)
    fitted = fit(spec, graded)
    in_sample, held = fitted.score(), fitted.score(3)
    assert in_sample.evaluation is not None and in_sample.evaluation.accuracy == 1.0
    assert held.held_out and held.folds == 3 and held.folds_seed == 0
    assert held.evaluation is not None and held.evaluation.accuracy < 1.0


def test_a_warm_fit_starts_from_init(graded: AnnotationData) -> None:
    spec = FitSpec("ds", {}, seed=0, graded=True)
    cold = fit(spec, graded)
    warm = fit(spec, graded, init=cold.model)
    assert isinstance(warm.model, DawidSkene) and warm.model.start_ in ("warm", "cold")
    with pytest.raises(ValueError, match="cannot start from an earlier fit"):
        fit(FitSpec("mv", {}, graded=True), graded, init=cold.model)
