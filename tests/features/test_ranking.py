from __future__ import annotations

import math

import numpy as np
import pytest

from app.formats.runs import parse_runs
from models.features.ranking import ranking_features, task_ranks

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
    names, values = ranking_features(TASKS, RUNS)
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
    names, values = ranking_features(TASKS, {})
    assert names == [] and values.shape == (6, 0)


def test_plain_mappings_are_runs_too() -> None:
    names, values = ranking_features([("q", "d2")], {"r": {"q": ["d1", "d2"]}})
    assert values[0, 1] == 0.5 and np.isfinite(values).all()
