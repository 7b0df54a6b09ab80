"""The Algorithm-10 generator: determinism, shapes, and its files read back by the loader."""

from __future__ import annotations

import numpy as np

from app.offline import load_annotation_data
from models.synthetic import NOISE_LEVELS, generate


def test_deterministic_and_well_formed() -> None:
    a = generate(300, 20, noise_level=NOISE_LEVELS["4-8"], redundancy=4, random_state=5)
    b = generate(300, 20, noise_level=NOISE_LEVELS["4-8"], redundancy=4, random_state=5)
    np.testing.assert_array_equal(a.label, b.label)
    assert a.task.shape == (1200,)
    assert np.all((a.annotator_noise >= 4) & (a.annotator_noise <= 8))
    # Distinct annotators per task.
    pairs = a.task * 100 + a.annotator
    assert np.unique(pairs).shape[0] == pairs.shape[0]


def test_noise_lowers_majority_vote_accuracy() -> None:
    def mv_accuracy(level: str) -> float:
        s = generate(2000, 50, noise_level=NOISE_LEVELS[level], random_state=1)
        data = s.to_annotation_data()
        votes = data.counts()
        return float(np.mean(np.argmax(votes, axis=1) == s.truth))

    assert mv_accuracy("0-2") > mv_accuracy("8-12") + 0.05


def test_written_files_load_back(tmp_path) -> None:  # type: ignore[no-untyped-def]
    s = generate(50, 10, random_state=2)
    paths = s.write(tmp_path)
    data = load_annotation_data(paths["judgments"].read_bytes(),
                                gold_qrels=paths["gold"].read_bytes(),
                                features=paths["features"].read_bytes())
    direct = s.to_annotation_data()
    order = np.argsort(direct.doc_ids)  # the loader sorts tasks by id
    assert data.doc_ids.tolist() == direct.doc_ids[order].tolist()
    assert data.gold is not None
    np.testing.assert_array_equal(data.gold, s.truth[order])
    assert data.features is not None
    np.testing.assert_allclose(data.features, s.features[order], atol=1e-6)
    np.testing.assert_array_equal(data.counts(), direct.counts()[order])
