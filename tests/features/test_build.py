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
    # ranking: one normal score per run (2), runs:retrieved, runs:mean_normal
    assert f.groups == {"lexical": list(range(6)), "ranking": list(range(6, 10))}
    assert f.matrix.shape == f.raw.shape == (5, 10)
    varying = [j for j, name in enumerate(f.names) if name not in f.constant]
    np.testing.assert_allclose(f.matrix[:, varying].mean(axis=0), 0.0, atol=1e-12)
    np.testing.assert_allclose(f.matrix[:, varying].std(axis=0), 1.0)
    np.testing.assert_allclose(f.standardise(f.raw), f.matrix)
    assert f.gp_params() == {}  # one RBF over every column: the GP default


def test_constant_columns_are_kept_at_zero() -> None:
    # r2 retrieved only (q1, d1): its columns vary. Ask for tasks r2 never retrieved.
    f = build_features([("q2", "d1"), ("q2", "d4")], runs=RUNS)
    assert "run:r2:normal" in f.constant
    j = f.names.index("run:r2:normal")
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
    assert list(f.groups) == ["ranking"] and f.dim == 4  # 2 normal scores, retrieved, mean_normal
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
    assert f.groups["semantic"] == list(range(10, 14))  # 6 lexical, 4 ranking first
    assert f.names[10:] == ["sem:cosine", "sem:prod0", "sem:prod1", "sem:prod2"]
    assert f.gp_params() == {"kernel": "rbf+linear", "feature_groups": "0:10;10:14"}


def test_tsv_round_trip_through_the_features_file_parser() -> None:
    f = build_features(TASKS, topic_texts=TOPICS, doc_texts=DOCS, runs=RUNS)
    parsed = parse_features(f.to_tsv())
    assert parsed.names == f.names
    np.testing.assert_allclose(np.array([parsed.vectors[t] for t in TASKS]), f.matrix)
    assert f.as_dict()[("q1", "d3")] == f.matrix[2].tolist()


# Lexical features of a small fixture as computed before long words were dropped (the output
# of build_features at the time of the change): the bound must leave ordinary text alone.
BEAR_TOPICS = {"t1": "black bear attacks", "t2": "solar panel efficiency"}
BEAR_DOCS = {
    "d1": "a black bear attacks hikers near the camp; bear attacks are rare",
    "d2": "the bear market hit solar stocks",
    "d3": "solar panel efficiency reached a record for silicon panels",
    "d4": "cooking pasta with tomato sauce",
}
BEAR_TASKS = [("t1", "d1"), ("t1", "d2"), ("t1", "d4"), ("t2", "d3"), ("t2", "d2"), ("t2", "d4")]
BEAR_RAW = [
    [5.0, 3.4657359028, 5.5451774445, 0.7777777778, 3.5195542842, -7.7030001284],
    [1.0, 0.6931471806, 0.6931471806, 0.0890870806, 0.715749806, -7.7493964767],
    [0.0, 0.0, 0.0, 0.0, 0.0, -7.7543780856],
    [4.0, 3.4657359028, 4.8520302639, 0.7543365091, 3.3846856456, -8.109432347],
    [1.0, 0.6931471806, 0.6931471806, 0.0890870806, 0.715749806, -8.1509011836],
    [0.0, 0.0, 0.0, 0.0, 0.0, -8.1598431937],
]


def test_lexical_features_of_ordinary_text_are_unchanged() -> None:
    built = build_features(BEAR_TASKS, topic_texts=BEAR_TOPICS, doc_texts=BEAR_DOCS)
    assert built.names == list(LEXICAL_FEATURES)
    np.testing.assert_allclose(built.raw, BEAR_RAW, rtol=1e-9, atol=1e-9)


def test_a_megabyte_token_is_ignored_and_never_stemmed() -> None:
    """A document holding a 1 MB run of letters (or a query with a long one) gets the features
    it has without it, and the stemmer never sees a word over the bound."""
    from models.features.tokenize import MAX_WORD_CHARS
    from tests.features.test_tokenize import recording_analyzer

    analyzer, stemmer = recording_analyzer()
    docs = {**BEAR_DOCS, "d1": BEAR_DOCS["d1"] + " " + "y" * 1_000_000,
            "d3": "x" * (MAX_WORD_CHARS + 1) + " " + BEAR_DOCS["d3"]}
    topics = {**BEAR_TOPICS, "t2": BEAR_TOPICS["t2"] + " " + "q" * 100_000}
    built = build_features(BEAR_TASKS, topic_texts=topics, doc_texts=docs, analyzer=analyzer)
    np.testing.assert_allclose(built.raw, BEAR_RAW, rtol=1e-9, atol=1e-9)
    assert stemmer.seen and max(map(len, stemmer.seen)) <= MAX_WORD_CHARS
