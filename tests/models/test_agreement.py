"""models/agreement.py against hand computations and independent library paths."""

from __future__ import annotations

import krippendorff
import numpy as np
import pytest
from scipy.stats import kendalltau

from models.agreement import (
    Labels,
    agreement,
    krippendorff_alpha,
    latest_labels,
    pairwise,
    ranking_agreement,
    report,
)

SCALE = [0, 1, 2, 3]


def test_agreement_by_hand() -> None:
    rater = Labels(np.array([0, 1, 2, 3, 9]), np.array([0, 1, 2, 3, 3]))  # task 9: no reference
    gold = Labels(np.array([0, 1, 2, 3]), np.array([0, 1, 2, 2]))
    found = agreement(rater, gold, scale=SCALE)
    assert found["n"] == 4
    assert found["exact"] == pytest.approx(3 / 4)
    assert found["leniency"] == pytest.approx(1.5 - 1.25)
    # p_o = 3/4; p_e = 1/4·1/4 + 1/4·1/4 + 1/4·2/4 = 1/4 -> κ = (3/4 − 1/4) / (3/4)
    assert found["kappa"] == pytest.approx(2 / 3)
    # weighted disagreement observed 1/4·1, expected Σ p_a q_b (a − b)² = 2 -> 1 − 1/8
    assert found["quadratic_kappa"] == pytest.approx(7 / 8)
    # rows: the rater's grade, columns: the reference's
    assert found["confusion"] == [[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 1, 0]]


def test_no_common_task_and_one_grade() -> None:
    a = Labels(np.array([0, 1]), np.array([1, 1]))
    assert agreement(a, Labels(np.array([5]), np.array([1])), scale=SCALE)["exact"] is None
    same = agreement(a, a, scale=SCALE)
    assert same["exact"] == 1.0 and same["kappa"] is None  # undefined: one grade only


def test_krippendorff_alpha_nominal_by_hand() -> None:
    # units (0,0), (1,1), (0,1), (1,1): o00 = 2, o11 = 4, o01 = o10 = 1, n = 8, n0 = 3, n1 = 5
    # D_o = 2/8, D_e = 2·3·5 / (8·7) -> α = 1 − (1/4) / (30/56) = 16/30
    a = Labels(np.arange(4), np.array([0, 1, 0, 1]))
    b = Labels(np.arange(4), np.array([0, 1, 1, 1]))
    assert krippendorff_alpha([a, b], scale=[0, 1], level="nominal") == pytest.approx(16 / 30)


def test_krippendorff_alpha_equals_the_reliability_matrix_path() -> None:
    rng = np.random.default_rng(3)
    raters, tasks = 4, 30
    grid = rng.integers(0, 4, size=(raters, tasks)).astype(float)
    grid[rng.random(grid.shape) < 0.3] = np.nan  # sparse
    labels = [Labels(np.flatnonzero(~np.isnan(row)), row[~np.isnan(row)].astype(int))
              for row in grid]
    expected = krippendorff.alpha(reliability_data=grid, level_of_measurement="ordinal",
                                  value_domain=SCALE)
    assert krippendorff_alpha(labels, scale=SCALE) == pytest.approx(expected)


def test_pairwise_is_symmetric_with_counts() -> None:
    a = Labels(np.array([0, 1, 2]), np.array([0, 1, 2]))
    b = Labels(np.array([1, 2, 3]), np.array([1, 0, 3]))
    found = pairwise([a, b], scale=SCALE)
    assert found["n"] == [[3, 2], [2, 3]]
    assert found["exact"][0][1] == found["exact"][1][0] == pytest.approx(1 / 2)
    assert found["exact"][0][0] == 1.0


def test_ranking_agreement_against_scipy() -> None:
    scores = np.array([0.1, 0.2, 0.3, np.nan, 0.5])
    reference = np.array([0.1, 0.3, 0.2, 0.4, 0.6])
    found = ranking_agreement(scores, reference, top=3)
    ok = ~np.isnan(scores)
    assert found["runs"] == 4
    assert found["tau"] == pytest.approx(kendalltau(scores[ok], reference[ok]).statistic)
    # the reference's top 3 among the scored runs: 0.6, 0.3, 0.2 -> runs 4, 1, 2
    assert found["tau_top"] == pytest.approx(
        kendalltau(scores[[4, 1, 2]], reference[[4, 1, 2]]).statistic)


def test_latest_labels_and_report_listing() -> None:
    task = np.array([0, 0, 1, 0, 1, 2])
    rater = np.array([0, 0, 0, 1, 1, 1])
    label = np.array([1, 3, 2, 0, 2, 1])
    t, r, y = latest_labels(task, rater, label)
    assert list(zip(t.tolist(), r.tolist(), y.tolist(), strict=True)) == [
        (0, 0, 3), (1, 0, 2), (0, 1, 0), (1, 1, 2), (2, 1, 1)]
    gold = Labels(np.array([0, 1, 2]), np.array([3, 2, 1]))
    out = report(t, r, y, names=["judge", "worker"], kinds=["llm", "crowd"],
                 judges=[True, False], scale=SCALE, gold=gold, aggregate=None, min_tasks=3)
    # the judge always; the worker has 3 tasks
    assert [row["name"] for row in out["raters"]] == ["judge", "worker"]
    assert out["raters"][0]["vs_gold"]["exact"] == 1.0
    assert out["raters"][1]["vs_gold"]["leniency"] == pytest.approx(1.0 - 2.0)
    assert out["pairwise"]["names"] == ["judge"]
    fewer = report(t, r, y, names=["judge", "worker"], kinds=["llm", "crowd"],
                   judges=[True, False], scale=SCALE, gold=gold, aggregate=None, min_tasks=4)
    assert [row["name"] for row in fewer["raters"]] == ["judge"]


@pytest.mark.parametrize("seed", range(5))
def test_kappas_equal_scikit_learns(seed: int) -> None:
    from sklearn.metrics import cohen_kappa_score

    rng = np.random.default_rng(seed)
    n = int(rng.integers(5, 200))
    grades = rng.integers(0, 4, size=n)
    other = np.clip(grades + rng.integers(-2, 3, size=n), 0, 3)
    if seed == 0:
        other[:] = 2  # a constant rater
    found = agreement(Labels(np.arange(n), grades), Labels(np.arange(n), other), scale=SCALE)
    for key, weights in (("kappa", None), ("quadratic_kappa", "quadratic")):
        with np.errstate(divide="ignore", invalid="ignore"):
            expected = cohen_kappa_score(grades, other, labels=SCALE, weights=weights)
        assert found[key] == pytest.approx(expected, abs=1e-12)
