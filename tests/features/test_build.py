from __future__ import annotations

import numpy as np
import pytest

from app.formats.features_file import parse_features
from app.formats.runs import parse_runs
from models.features.build import build_features
from models.features.lexical import LEXICAL_FEATURES

TOPICS = {"q1": "cat fish", "q2": "dog"}
DOCS = {"d1": "cat cat dog", "d2": "dog fish", "d3": "fish fish fish bird", "d4": "bird"}
RUNS = parse_runs("q1 Q0 d3 1 2 r1\nq1 Q0 d1 2 1 r1\nq2 Q0 d2 1 5 r1\nq1 Q0 d1 1 5 r2\n")
TASKS = [("q1", "d1"), ("q1", "d2"), ("q1", "d3"), ("q2", "d1"), ("q2", "d4")]


def test_groups_names_and_standardisation() -> None:
    f = build_features(TASKS, topic_texts=TOPICS, doc_texts=DOCS, runs=RUNS)
    assert f.names[:6] == list(LEXICAL_FEATURES)
    assert f.groups == {"lexical": list(range(6)), "ranking": list(range(6, 12))}
    assert f.matrix.shape == f.raw.shape == (5, 12)
    varying = [j for j, name in enumerate(f.names) if name not in f.constant]
    np.testing.assert_allclose(f.matrix[:, varying].mean(axis=0), 0.0, atol=1e-12)
    np.testing.assert_allclose(f.matrix[:, varying].std(axis=0), 1.0)
    np.testing.assert_allclose(f.standardise(f.raw), f.matrix)
    assert f.gp_params() == {}  # one RBF over every column: the GP default


def test_constant_columns_are_kept_at_zero() -> None:
    # r2 retrieved only (q1, d1): its columns vary. Ask for tasks r2 never retrieved.
    f = build_features([("q2", "d1"), ("q2", "d4")], runs=RUNS)
    assert "run:r2:rr" in f.constant
    j = f.names.index("run:r2:rr")
    assert np.all(f.matrix[:, j] == 0.0) and np.all(f.raw[:, j] == 0.0)
    assert f.standardise(np.full((1, f.dim), 7.0))[0, j] == 0.0


def test_missing_text_is_imputed_and_flagged() -> None:
    tasks = TASKS + [("q3", "d1"), ("q1", "d9")]
    f = build_features(tasks, topic_texts=TOPICS, doc_texts=DOCS)
    assert f.missing_text.tolist() == [False] * 5 + [True, True]
    assert np.isnan(f.raw[5:, :6]).all() and not np.isnan(f.raw[:5]).any()
    assert f.imputed[5:].all() and not f.imputed[:5].any()
    np.testing.assert_allclose(f.matrix[5:], 0.0, atol=1e-12)  # column mean -> 0 after z-score
    assert f.notes and "2 tasks" in f.notes[0]


def test_the_collection_statistics_use_all_documents() -> None:
    only = build_features([("q1", "d1")], topic_texts=TOPICS, doc_texts={"d1": DOCS["d1"]})
    full = build_features([("q1", "d1")], topic_texts=TOPICS, doc_texts=DOCS)
    assert only.raw[0, 4] != full.raw[0, 4]  # BM25 idf depends on N and df


def test_ranking_only_and_nothing() -> None:
    f = build_features(TASKS, runs=RUNS)
    assert list(f.groups) == ["ranking"] and f.dim == 6
    empty = build_features(TASKS)
    assert empty.dim == 0 and empty.matrix.shape == (5, 0)
    with pytest.raises(ValueError):
        build_features(TASKS + [("q1", "d1")])


def test_semantic_group_with_a_custom_embedder() -> None:
    def embed(texts: list[str]) -> np.ndarray:
        rng = np.random.default_rng(len(texts))
        return rng.normal(size=(len(texts), 8))

    f = build_features(TASKS, topic_texts=TOPICS, doc_texts=DOCS, runs=RUNS, embeddings=True,
                       embedder=embed, n_product_dims=3)
    assert f.groups["semantic"] == list(range(12, 16))
    assert f.names[12:] == ["sem:cosine", "sem:prod0", "sem:prod1", "sem:prod2"]
    assert f.gp_params() == {"kernel": "rbf+linear", "feature_groups": "0:12;12:16"}


def test_tsv_round_trip_through_the_features_file_parser() -> None:
    f = build_features(TASKS, topic_texts=TOPICS, doc_texts=DOCS, runs=RUNS)
    parsed = parse_features(f.to_tsv())
    assert parsed.names == f.names
    np.testing.assert_allclose(np.array([parsed.vectors[t] for t in TASKS]), f.matrix)
    assert f.as_dict()[("q1", "d3")] == f.matrix[2].tolist()
