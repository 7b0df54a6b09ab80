from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.special import ndtri

from app.formats.runs import parse_runs
from models.features.ranking import normal_scores, ranking_features, task_ranks

RUNS = parse_runs("""\
t1 Q0 a 1 3.0 r1
t1 Q0 b 2 2.0 r1
t1 Q0 c 3 1.0 r1
t2 Q0 x 1 1.0 r1
t1 Q0 c 1 5.0 r2
""")
TASKS = [("t1", "a"), ("t1", "c"), ("t1", "z"), ("t2", "x"), ("t2", "y"), ("t3", "a")]


def test_ranks_with_beyond_depth_values() -> None:
    ranks, retrieved = task_ranks(TASKS, RUNS)
    # global depth = 3 (r1 on t1). r1: t1 depth 3, t2 depth 1, t3 unanswered -> 3 + 1.
    # r2: t1 depth 1, t2 and t3 unanswered -> 3 + 1.
    assert ranks[:, 0].tolist() == [1, 3, 4, 1, 2, 4]
    assert ranks[:, 1].tolist() == [2, 1, 2, 4, 4, 4]
    assert retrieved.tolist() == [[True, False], [True, True], [False, False],
                                  [True, False], [False, False], [False, False]]


def test_default_depth_overrides_the_global_depth() -> None:
    ranks, _ = task_ranks(TASKS, RUNS, default_depth=1000)
    assert ranks[5].tolist() == [1001, 1001]
    assert ranks[2].tolist() == [4, 2]  # answered topics keep the run's own depth


def test_feature_values_and_names() -> None:
    names, values = ranking_features(TASKS, RUNS, transform="log_rr")
    assert names == ["run:r1:log_rank", "run:r1:rr", "run:r2:log_rank", "run:r2:rr",
                     "runs:retrieved", "runs:mean_rr"]
    row = dict(zip(names, values[1], strict=True))  # (t1, c): r1 rank 3, r2 rank 1
    assert row["run:r1:log_rank"] == pytest.approx(math.log(3))
    assert row["run:r1:rr"] == pytest.approx(1 / 3)
    assert row["run:r2:rr"] == 1.0 and row["run:r2:log_rank"] == 0.0
    assert row["runs:retrieved"] == 1.0 and row["runs:mean_rr"] == pytest.approx(2 / 3)
    unretrieved = dict(zip(names, values[2], strict=True))  # (t1, z)
    assert unretrieved["run:r1:rr"] == 0.0 and unretrieved["run:r1:log_rank"] == math.log(4)
    assert unretrieved["runs:retrieved"] == 0.0


def test_no_runs_no_columns() -> None:
    for transform in ("normal", "log_rr", "both"):
        names, values = ranking_features(TASKS, {}, transform=transform)
        assert names == [] and values.shape == (6, 0)


def test_plain_mappings_are_runs_too() -> None:
    names, values = ranking_features([("q", "d2")], {"r": {"q": ["d1", "d2"]}},
                                     transform="log_rr")
    assert values[0, 1] == 0.5 and np.isfinite(values).all()


def blom(k: int, n: int) -> float:
    """The Blom normal score of rank k of n, best first (highest)."""
    return float(-ndtri((k - 0.375) / (n + 0.25)))


def test_normal_scores_by_hand() -> None:
    names, values = ranking_features(TASKS, RUNS)
    assert names == ["run:r1:normal", "run:r2:normal", "runs:retrieved", "runs:mean_normal"]
    # t1's tasks a, c, z (n = 3). r1 ranks a 1st and c 3rd (b is not a task): pool ranks a 1,
    # c 2; z unretrieved, rank 3. r2 retrieved c only: c 1st, a and z tied on ranks 2 and 3.
    r1, r2 = values[:, 0], values[:, 1]
    assert r1[:3] == pytest.approx([blom(1, 3), 0.0, blom(3, 3)], abs=1e-12)
    tied = (blom(2, 3) + blom(3, 3)) / 2
    assert r2[:3] == pytest.approx([tied, blom(1, 3), tied])
    # t2's tasks x, y: r1 retrieved x; r2 did not answer t2 (all tied: 0). t3: one task, 0.
    assert r1[3:5] == pytest.approx([blom(1, 2), blom(2, 2)])
    assert r2[3:] == pytest.approx([0.0, 0.0, 0.0], abs=1e-12)
    assert r1[5] == pytest.approx(0.0, abs=1e-12)
    assert values[:, 3] == pytest.approx((r1 + r2) / 2)
    assert values[:, 2].tolist() == [0.5, 1.0, 0.0, 0.5, 0.0, 0.0]
    # a topic's scores are symmetric around 0 when the run ranks every task
    assert r1[3] + r1[4] == pytest.approx(0.0, abs=1e-12)


def test_both_keeps_every_column() -> None:
    names, values = ranking_features(TASKS, RUNS, transform="both")
    normal_names, normal = ranking_features(TASKS, RUNS)
    old_names, old = ranking_features(TASKS, RUNS, transform="log_rr")
    assert set(names) == set(normal_names) | set(old_names)
    for name in names:
        ref = (normal[:, normal_names.index(name)] if name in normal_names
               else old[:, old_names.index(name)])
        np.testing.assert_array_equal(values[:, names.index(name)], ref)


def test_unknown_transform_is_refused() -> None:
    with pytest.raises(ValueError, match="rank transform"):
        ranking_features(TASKS, RUNS, transform="rank")  # type: ignore[arg-type]


def test_normal_scores_are_linear_in_a_gaussian_latent_score() -> None:
    """Why the default (docs/features.md): a run that ranks each topic by a latent Gaussian score
    gives normal scores that are (nearly) that score, linearly, where log rank and reciprocal
    rank are bent at the ends; the GP's linear mean can then weigh a run's evidence as a
    probit/logit model does."""
    rng = np.random.default_rng(0)
    n_topics, per_topic = 10, 200
    tasks = [(f"t{t}", f"d{i}") for t in range(n_topics) for i in range(per_topic)]
    latent = rng.standard_normal(len(tasks))
    run = {}
    for t in range(n_topics):
        rows = np.arange(t * per_topic, (t + 1) * per_topic)
        run[f"t{t}"] = [tasks[i][1] for i in rows[np.argsort(-latent[rows])]]
    names, values = ranking_features(tasks, {"r": run}, transform="both")
    normal = values[:, names.index("run:r:normal")]
    log_rank = values[:, names.index("run:r:log_rank")]
    rr = values[:, names.index("run:r:rr")]
    r_normal = np.corrcoef(normal, latent)[0, 1]
    assert r_normal > 0.99
    assert r_normal > abs(np.corrcoef(log_rank, latent)[0, 1]) + 0.05
    assert r_normal > abs(np.corrcoef(rr, latent)[0, 1]) + 0.4  # .99, .90, .48


def test_normal_scores_of_a_shallow_run() -> None:
    """A run that retrieved k of a topic's n tasks: its k ranked tasks get the top k scores,
    the rest the mean of the bottom n - k (E[z | below the last retrieved one])."""
    tasks = [("t", f"d{i}") for i in range(10)]
    ranks = np.array([[1.0], [2.0], [3.0]] + [[4.0]] * 7)
    retrieved = np.array([[True]] * 3 + [[False]] * 7)
    z = normal_scores(tasks, ranks, retrieved)[:, 0]
    assert z[:3] == pytest.approx([blom(k, 10) for k in (1, 2, 3)])
    assert z[3:] == pytest.approx([np.mean([blom(k, 10) for k in range(4, 11)])] * 7)
    assert z.sum() == pytest.approx(0.0, abs=1e-12)
