"""Shared data for the model tests: the real RF10 file (binary: relevant from 1, -2 dropped, NIST
gold) and small synthetic sets; ``helpers`` gives the crowd-kit adapters as a fixture, so the
test files import nothing local."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from models.data import AnnotationData
from models.synthetic import NOISE_LEVELS, SyntheticData, generate


@pytest.fixture(scope="session")
def rf10(rf10_path: Path) -> AnnotationData:
    """Binary RF10: relevant from 1, broken links (-2) dropped, NIST gold from the gold column."""
    from app.cli.loading import load_annotation_data

    return load_annotation_data(rf10_path.read_bytes(), relevant_from=1, ignore=(-2,))


@pytest.fixture(scope="session")
def rf10_gold(rf10: AnnotationData) -> np.ndarray:
    """Gold class per task, UNKNOWN (-1) for tasks without gold or without any judgment."""
    assert rf10.gold is not None
    return np.where(rf10.judgments_per_task() > 0, rf10.gold, -1)


@pytest.fixture(scope="session")
def synth_small() -> SyntheticData:
    return generate(1000, 50, noise_level=NOISE_LEVELS["2-4"], redundancy=5, random_state=7)


def to_crowdkit(data: AnnotationData) -> pd.DataFrame:
    """crowd-kit's input: columns task, worker, label (integer codes from the long arrays)."""
    return pd.DataFrame({"task": data.task, "worker": data.annotator, "label": data.label})


def crowdkit_labels(series: pd.Series, n_tasks: int) -> np.ndarray:
    """crowd-kit's labels (indexed by task code) as an array over all tasks, -1 where absent."""
    return series.reindex(np.arange(n_tasks)).fillna(-1).to_numpy().astype(np.int64)


def accuracy(labels: np.ndarray, gold: np.ndarray) -> float:
    known = gold >= 0
    return float(np.mean(labels[known] == gold[known]))


@pytest.fixture(scope="session")
def helpers() -> SimpleNamespace:
    return SimpleNamespace(to_crowdkit=to_crowdkit, crowdkit_labels=crowdkit_labels,
                           accuracy=accuracy)
