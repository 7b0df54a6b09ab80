"""Lexical features against hand-computed values on a 3-document toy corpus.

Corpus (every word is its own Snowball stem and none is an English stop word):
    d1 = "cat cat dog"           c: cat 2, dog 1        |d1| = 3
    d2 = "dog fish"              c: dog 1, fish 1       |d2| = 2
    d3 = "fish fish fish bird"   c: fish 3, bird 1      |d3| = 4
N = 3, avgdl = 9/3 = 3, |C| = 9; df: cat 1, dog 2, fish 2, bird 1; cf: cat 2, dog 2, fish 4, bird 1.
Query q = "cat fish" (one of each).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from models.features.lexical import LEXICAL_FEATURES, CollectionIndex, lexical_features

DOCS = {"d1": "cat cat dog", "d2": "dog fish", "d3": "fish fish fish bird"}
COL = {name: j for j, name in enumerate(LEXICAL_FEATURES)}


def features(query: str, **params: float) -> np.ndarray:
    index = CollectionIndex.build(DOCS)
    queries = index.query_matrix([query])
    return lexical_features(index, queries, np.zeros(3, dtype=int), np.arange(3), **params)


def test_collection_statistics() -> None:
    index = CollectionIndex.build(DOCS)
    assert index.n_docs == 3 and index.avgdl == 3.0 and index.total_len == 9
    df = {t: int(index.df[i]) for t, i in index.vocab.items()}
    cf = {t: int(index.cf[i]) for t, i in index.vocab.items()}
    assert df == {"cat": 1, "dog": 2, "fish": 2, "bird": 1}
    assert cf == {"cat": 2, "dog": 2, "fish": 4, "bird": 1}
    assert index.doc_len.tolist() == [3, 2, 4]


def test_bm25_by_hand() -> None:
    # idf(cat)  = ln(1 + (3 - 1 + 0.5)/(1 + 0.5)) = ln(8/3);  idf(fish) = ln(1 + 1.5/2.5) = ln(1.6)
    # K(d) = k1 (1 - b + b |d|/avgdl) with k1 = 0.9, b = 0.4:
    #   K(d1) = 0.9 (0.6 + 0.4·3/3) = 0.9;  K(d2) = 0.9 (0.6 + 0.4·2/3) = 0.78;
    #   K(d3) = 0.9 (0.6 + 0.4·4/3) = 1.02
    # d1: cat, tf 2:  ln(8/3) · 2·1.9/(2 + 0.9)
    # d2: fish, tf 1: ln(1.6) · 1·1.9/(1 + 0.78)
    # d3: fish, tf 3: ln(1.6) · 3·1.9/(3 + 1.02)
    expected = [
        math.log(8 / 3) * 3.8 / 2.9,
        math.log(1.6) * 1.9 / 1.78,
        math.log(1.6) * 5.7 / 4.02,
    ]
    got = features("cat fish")[:, COL["lex:bm25"]]
    np.testing.assert_allclose(got, expected, rtol=1e-12)
    assert got.tolist() == pytest.approx([1.285225, 0.501689, 0.666423], abs=1e-6)


def test_bm25_parameters_are_used() -> None:
    # k1 = 1.2, b = 0.75, d3: K = 1.2 (0.25 + 0.75·4/3) = 1.5 -> ln(1.6) · 3·2.2/(3 + 1.5)
    got = features("cat fish", k1=1.2, b=0.75)[2, COL["lex:bm25"]]
    assert got == pytest.approx(math.log(1.6) * 6.6 / 4.5, rel=1e-12)


def test_query_likelihood_dirichlet_by_hand() -> None:
    # p(cat|C) = 2/9, p(fish|C) = 4/9; μ = 10:
    # log P(q|d) = ln((c(cat,d) + 10·2/9)/(|d| + 10)) + ln((c(fish,d) + 10·4/9)/(|d| + 10))
    mu = 10.0
    expected = [
        math.log((2 + 20 / 9) / 13) + math.log((0 + 40 / 9) / 13),
        math.log((0 + 20 / 9) / 12) + math.log((1 + 40 / 9) / 12),
        math.log((0 + 20 / 9) / 14) + math.log((3 + 40 / 9) / 14),
    ]
    got = features("cat fish", mu=mu)[:, COL["lex:ql"]]
    np.testing.assert_allclose(got, expected, rtol=1e-12)
    assert got.tolist() == pytest.approx([-2.197882, -2.476710, -2.472139], abs=1e-6)


def test_query_likelihood_default_mu_is_1000() -> None:
    expected = math.log((2 + 1000 * 2 / 9) / 1003) + math.log((1000 * 4 / 9) / 1003)
    assert features("cat fish")[0, COL["lex:ql"]] == pytest.approx(expected, rel=1e-12)


def test_tf_idf_tfidf_cosine_by_hand() -> None:
    # idf(t) = ln(N/df): cat ln 3, dog ln 1.5, fish ln 1.5, bird ln 3.
    l3, l15 = math.log(3), math.log(1.5)
    got = features("cat fish")
    assert got[:, COL["lex:tf"]].tolist() == [2, 1, 3]
    np.testing.assert_allclose(got[:, COL["lex:idf"]], [l3, l15, l15])
    np.testing.assert_allclose(got[:, COL["lex:tfidf"]], [2 * l3, l15, 3 * l15])
    # q = (cat ln3, fish ln1.5); d1 = (cat 2 ln3, dog ln1.5): dot = 2 ln3²
    q_norm = math.hypot(l3, l15)
    cos_d1 = 2 * l3**2 / (q_norm * math.hypot(2 * l3, l15))
    # d3 = (fish 3 ln1.5, bird ln3): dot = 3 ln1.5²
    cos_d3 = 3 * l15**2 / (q_norm * math.hypot(3 * l15, l3))
    assert got[0, COL["lex:cosine"]] == pytest.approx(cos_d1, rel=1e-12)
    assert got[2, COL["lex:cosine"]] == pytest.approx(cos_d3, rel=1e-12)


def test_terms_unseen_in_the_collection_are_dropped() -> None:
    np.testing.assert_allclose(features("cat fish zebra"), features("cat fish"))


def test_repeated_query_term_counts_twice() -> None:
    once, twice = features("cat fish"), features("cat cat fish")
    assert twice[0, COL["lex:bm25"]] == pytest.approx(2 * once[0, COL["lex:bm25"]])


def test_query_without_collection_terms_scores_zero() -> None:
    assert np.all(features("zebra unicorn") == 0.0)


def test_analyzer_applies_to_queries_and_documents() -> None:
    # "Cats" stems to "cat", "The" is a stop word.
    np.testing.assert_allclose(features("The Cats, fishing?")[:, COL["lex:tf"]], [2, 1, 3])


def test_sparse_vectorised_matches_a_loop_on_random_data() -> None:
    rng = np.random.default_rng(0)
    words = [f"w{i}x" for i in range(60)]
    docs = {f"d{i}": " ".join(rng.choice(words, size=rng.integers(1, 40))) for i in range(50)}
    topics = {f"t{i}": " ".join(rng.choice(words, size=3)) for i in range(8)}
    index = CollectionIndex.build(docs)
    queries = index.query_matrix(list(topics.values()))
    q_of = rng.integers(0, 8, size=200)
    d_of = rng.integers(0, 50, size=200)
    got = lexical_features(index, queries, q_of, d_of)
    tf = index.tf.toarray()
    qm = queries.toarray()
    n, avgdl, p_c = index.n_docs, index.avgdl, index.cf / index.total_len
    for row in range(200):
        q, d = qm[q_of[row]], tf[d_of[row]]
        dl = d.sum()
        bm25 = sum(
            q[t] * math.log1p((n - index.df[t] + 0.5) / (index.df[t] + 0.5))
            * d[t] * 1.9 / (d[t] + 0.9 * (0.6 + 0.4 * dl / avgdl))
            for t in np.flatnonzero(q)
        )
        ql = sum(q[t] * math.log((d[t] + 1000 * p_c[t]) / (dl + 1000)) for t in np.flatnonzero(q))
        assert got[row, COL["lex:bm25"]] == pytest.approx(bm25, rel=1e-10, abs=1e-12)
        assert got[row, COL["lex:ql"]] == pytest.approx(ql, rel=1e-10)
