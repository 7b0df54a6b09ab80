"""Acceptance: on a collection where relevance is term overlap, the features carry the signal.

The collection comes from ``tests.features.corpus.generate`` (20 topics of 4 words, 400 documents,
a document is relevant to a topic when it holds at least 3 of its words; pools of about 30
documents per topic; 3 noisy crowd judgments per task, annotators 55–85 % accurate).
"""

from __future__ import annotations

import numpy as np
import pytest

from app.formats.runs import parse_runs
from models.features.build import build_features
from tests.features.corpus import Collection, auc, generate


@pytest.fixture(scope="module")
def collection() -> Collection:
    return generate(seed=0)


def simulated_runs(collection: Collection, n_runs: int = 5, depth: int = 15, seed: int = 1
                   ) -> str:
    """TREC run text: each run scores a topic's pool by true relevance plus noise, keeps the top."""
    rng = np.random.default_rng(seed)
    lines = []
    by_topic: dict[str, list[int]] = {}
    for i, (topic, _) in enumerate(collection.tasks):
        by_topic.setdefault(topic, []).append(i)
    for r in range(n_runs):
        for topic, rows in by_topic.items():
            score = collection.relevant[rows] + rng.normal(scale=0.8, size=len(rows))
            top = np.argsort(-score)[:depth]
            lines += [f"{topic} Q0 {collection.tasks[rows[k]][1]} {rank} {score[k]:.4f} run{r}"
                      for rank, k in enumerate(top, start=1)]
    return "\n".join(lines) + "\n"


def test_lexical_features_separate_relevant_documents(collection: Collection) -> None:
    f = build_features(collection.tasks, topic_texts=collection.topic_texts,
                       doc_texts=collection.doc_texts)
    assert 0.15 < collection.relevant.mean() < 0.5
    scores = {name: auc(f.raw[:, j], collection.relevant) for j, name in enumerate(f.names)}
    assert scores["lex:bm25"] > 0.9
    assert scores["lex:ql"] > 0.9
    assert all(value > 0.8 for value in scores.values()), scores
    # The standardised matrix keeps the order within each column.
    j = f.names.index("lex:bm25")
    assert auc(f.matrix[:, j], collection.relevant) == pytest.approx(scores["lex:bm25"])


def test_ranking_features_separate_relevant_documents(collection: Collection) -> None:
    runs = parse_runs(simulated_runs(collection), topics=set(collection.topic_texts))
    f = build_features(collection.tasks, runs=runs)
    assert auc(f.raw[:, f.names.index("runs:mean_normal")], collection.relevant) > 0.8
    assert auc(f.raw[:, f.names.index("run:run0:normal")], collection.relevant) > 0.7
    old = build_features(collection.tasks, runs=runs, rank_transform="log_rr")
    assert auc(old.raw[:, old.names.index("runs:mean_rr")], collection.relevant) > 0.8
    assert auc(-old.raw[:, old.names.index("run:run0:log_rank")], collection.relevant) > 0.7


@pytest.mark.slow
def test_magp_with_lexical_features_beats_lk(collection: Collection) -> None:
    """MAGP (GP over the lexical features) recovers the truth better than LK (no GP) and the
    majority vote from 3 noisy judgments per task. About a minute on two shared cores."""
    gp = pytest.importorskip("models.gp.model")
    from models.data import AnnotationData

    f = build_features(collection.tasks, topic_texts=collection.topic_texts,
                       doc_texts=collection.doc_texts)
    truth = dict(zip(collection.tasks, collection.relevant.tolist(), strict=True))
    topics, docs, annotators, labels = zip(*collection.judgments, strict=True)
    data = AnnotationData.from_rows(
        topics, docs, annotators, labels, relevant_from=1,
        gold=[truth[(t, d)] for t, d in zip(topics, docs, strict=True)],
    ).with_features(f.as_dict(), dim=f.dim)
    gold = data.classes[data.gold]

    counts = data.counts()
    majority = (counts[:, 1] > counts[:, 0]).astype(int)
    lk = gp.LK(random_state=0).fit(data).result(data)
    magp = gp.MAGP(random_state=0, **f.gp_params()).fit(data).result(data)
    acc = {
        "mv": float(np.mean(majority == gold)),
        "lk": float(np.mean(lk.labels == gold)),
        "magp": float(np.mean(magp.labels == gold)),
    }
    assert acc["magp"] > acc["lk"] + 0.03, acc
    assert acc["magp"] > acc["mv"] + 0.03, acc
