"""A synthetic test collection where relevance is term overlap, with noisy crowd judgments.

- ``n_topics`` topics, each with ``words_per_topic`` topic words; the topic text is those words with
  a couple of stop words;
- ``n_docs`` documents of Zipfian noise words; each document has a home topic and holds a random
  number (0..words_per_topic) of its home topic's words, a few times each, plus now and then one
  word of another topic;
- relevance: document d is relevant to topic t when it holds at least ``min_overlap`` distinct
  words of t;
- pools: each topic's home documents plus ``extra_per_topic`` random others;
- crowd: each task judged by ``judgments_per_task`` annotators out of ``n_annotators``, each
  annotator correct with its own probability drawn from ``accuracy``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

CONSONANTS = "bcdfghjklmnpqrstvwxz"
VOWELS = "aeiou"


@dataclass(frozen=True)
class Collection:
    topic_texts: dict[str, str]
    doc_texts: dict[str, str]
    tasks: list[tuple[str, str]]
    relevant: np.ndarray  # (n_tasks,) 0/1 truth
    judgments: list[tuple[str, str, str, int]]  # topic, doc, annotator, label


def pseudo_words(n: int, rng: np.random.Generator) -> list[str]:
    """Distinct consonant-vowel words like 'bakotu' (no English stop word has this shape)."""
    out: set[str] = set()
    while len(out) < n:
        syllables = rng.integers(2, 4)
        out.add("".join(rng.choice(list(CONSONANTS)) + rng.choice(list(VOWELS))
                        for _ in range(syllables)) + rng.choice(list("kmnrt")))
    return sorted(out)


def generate(
    *,
    n_topics: int = 20,
    words_per_topic: int = 4,
    n_docs: int = 400,
    min_overlap: int = 3,
    extra_per_topic: int = 10,
    n_noise_words: int = 2000,
    n_annotators: int = 30,
    judgments_per_task: int = 3,
    accuracy: tuple[float, float] = (0.55, 0.85),
    seed: int = 0,
) -> Collection:
    rng = np.random.default_rng(seed)
    vocab = pseudo_words(n_noise_words + n_topics * words_per_topic, rng)
    rng.shuffle(vocab)
    topic_words = [vocab[i * words_per_topic:(i + 1) * words_per_topic] for i in range(n_topics)]
    noise = np.array(vocab[n_topics * words_per_topic:])
    zipf = 1.0 / np.arange(1, noise.size + 1)
    zipf /= zipf.sum()

    topic_texts = {f"T{t}": "the " + " ".join(words) + " of" for t, words in
                   enumerate(topic_words)}
    doc_texts: dict[str, str] = {}
    home = rng.integers(0, n_topics, size=n_docs)
    for i in range(n_docs):
        words = list(rng.choice(noise, size=rng.integers(60, 200), p=zipf))
        own = rng.choice(topic_words[home[i]], size=rng.integers(0, words_per_topic + 1),
                         replace=False)
        for w in own:
            words += [w] * int(rng.integers(1, 4))
        if rng.random() < 0.3:
            other = topic_words[rng.integers(0, n_topics)]
            words.append(other[rng.integers(0, words_per_topic)])
        rng.shuffle(words)
        doc_texts[f"D{i}"] = " ".join(words)

    tasks: list[tuple[str, str]] = []
    for t in range(n_topics):
        pool = set(np.flatnonzero(home == t).tolist())
        pool |= set(rng.choice(n_docs, size=extra_per_topic, replace=False).tolist())
        tasks += [(f"T{t}", f"D{i}") for i in sorted(pool)]
    relevant = np.array([
        sum(w in set(doc_texts[d].split()) for w in topic_words[int(t[1:])]) >= min_overlap
        for t, d in tasks
    ], dtype=np.int64)

    annotator_accuracy = rng.uniform(*accuracy, size=n_annotators)
    judgments = []
    for (t, d), truth in zip(tasks, relevant, strict=True):
        for j in rng.choice(n_annotators, size=judgments_per_task, replace=False):
            label = truth if rng.random() < annotator_accuracy[j] else 1 - truth
            judgments.append((t, d, f"w{j}", int(label)))
    return Collection(topic_texts, doc_texts, tasks, relevant, judgments)


def auc(scores: np.ndarray, truth: np.ndarray) -> float:
    """Area under the ROC curve (Mann–Whitney U with mid-ranks for ties)."""
    from scipy.stats import rankdata

    ranks = rankdata(scores)
    pos = truth == 1
    n_pos, n_neg = int(pos.sum()), int((~pos).sum())
    return float((ranks[pos].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))
