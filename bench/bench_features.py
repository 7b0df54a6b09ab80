"""Feature-building speed and memory on a synthetic collection (a script, not a test).

Default size (issue 6): 20,000 tasks over 20,000 documents of 1,000 words, 50 topics, 30 runs of
depth 1,000. Texts come from a Zipfian vocabulary (P(rank r) ∝ 1/r over ``--vocab`` words);
topic texts are a few mid-frequency words. The texts and runs are written out as files and read
back with the service's parsers, so parsing is timed too.

    python bench/bench_features.py
    python bench/bench_features.py --docs 2000 --tasks 2000 --runs 5      # a quick look
    python bench/bench_features.py --embeddings --embed-docs 200          # + semantic stage

Prints seconds per stage and the peak resident memory of the process (``ru_maxrss``) after the
data generation and after feature building.
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from app.formats.runs import parse_runs  # noqa: E402
from app.formats.texts import parse_texts  # noqa: E402
from models.features.build import build_features  # noqa: E402

CONSONANTS = list("bcdfghjklmnpqrstvwxz")
VOWELS = list("aeiou")


def peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def make_vocab(n: int, rng: np.random.Generator) -> list[str]:
    """Distinct pseudo-words of 2-4 consonant-vowel syllables."""
    consonants, vowels = np.array(CONSONANTS), np.array(VOWELS)
    words: set[str] = set()
    while len(words) < n:
        size = 2 * n
        c = consonants[rng.integers(0, consonants.size, size=(size, 4))]
        v = vowels[rng.integers(0, vowels.size, size=(size, 4))]
        k = rng.integers(2, 5, size=size)
        for row in range(size):
            words.add("".join(c[row, j] + v[row, j] for j in range(k[row])))
            if len(words) == n:
                break
    return sorted(words)


def generate(args: argparse.Namespace) -> tuple[str, str, str, list[tuple[str, str]]]:
    rng = np.random.default_rng(args.seed)
    vocab = make_vocab(args.vocab, rng)
    rng.shuffle(vocab)
    cdf = np.cumsum(1.0 / np.arange(1, args.vocab + 1))
    cdf /= cdf[-1]
    doc_lines = []
    for i in range(args.docs):
        idx = np.searchsorted(cdf, rng.random(args.words))
        doc_lines.append(f"D{i}\t" + " ".join(map(vocab.__getitem__, idx.tolist())))
    docs_tsv = "id\ttext\n" + "\n".join(doc_lines) + "\n"
    topics = [f"T{t}" for t in range(args.topics)]
    mid = np.array(vocab[100:5000])
    topics_tsv = "id\ttext\n" + "".join(
        f"{t}\t{' '.join(rng.choice(mid, size=int(rng.integers(2, 6))))}\n" for t in topics
    )
    per_topic = args.tasks // args.topics
    pools = {t: rng.choice(args.docs, size=per_topic, replace=False) for t in topics}
    tasks = [(t, f"D{i}") for t in topics for i in pools[t]]
    run_lines = []
    for r in range(args.runs):
        for t in topics:
            # Half of the ranking from the judged pool, the rest from the collection.
            from_pool = rng.choice(pools[t], size=min(args.depth // 2, per_topic), replace=False)
            others = rng.choice(args.docs, size=args.depth, replace=False)
            ranked = list(dict.fromkeys([*from_pool.tolist(), *others.tolist()]))[:args.depth]
            rng.shuffle(ranked)
            run_lines += [f"{t} Q0 D{d} {k} {args.depth - k:.4f} run{r}"
                          for k, d in enumerate(ranked, start=1)]
    return topics_tsv, docs_tsv, "\n".join(run_lines) + "\n", tasks


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=int, default=20_000)
    parser.add_argument("--words", type=int, default=1_000, help="words per document")
    parser.add_argument("--vocab", type=int, default=50_000)
    parser.add_argument("--topics", type=int, default=50)
    parser.add_argument("--tasks", type=int, default=20_000)
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--depth", type=int, default=1_000)
    parser.add_argument("--embeddings", action="store_true",
                        help="also time the semantic stage on --embed-docs documents")
    parser.add_argument("--embed-docs", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    start = time.perf_counter()
    topics_tsv, docs_tsv, runs_txt, tasks = generate(args)
    print(f"generated {len(tasks)} tasks, {args.docs} docs x {args.words} words, "
          f"{args.runs} runs x {args.topics} topics x depth {args.depth} "
          f"in {time.perf_counter() - start:.1f} s; peak RSS {peak_mib():.0f} MiB")
    print(f"  sizes: documents {len(docs_tsv) / 2**20:.0f} MiB, runs {len(runs_txt) / 2**20:.0f}"
          " MiB of text")
    rss_before = peak_mib()

    stages: dict[str, float] = {}
    clock = time.perf_counter()
    topic_texts = parse_texts(topics_tsv.encode())
    doc_texts = parse_texts(docs_tsv.encode())
    stages["parse texts"] = time.perf_counter() - clock
    print(f"  peak RSS after parsing texts: {peak_mib():.0f} MiB")
    clock = time.perf_counter()
    runs = parse_runs(runs_txt.encode(), topics=set(topic_texts))
    stages["parse runs"] = time.perf_counter() - clock
    print(f"  peak RSS after parsing runs: {peak_mib():.0f} MiB")
    del docs_tsv, runs_txt

    timings: dict[str, float] = {}
    clock = time.perf_counter()
    features = build_features(tasks, topic_texts=topic_texts, doc_texts=doc_texts, runs=runs,
                              timings=timings)
    total = time.perf_counter() - clock
    stages.update({f"build: {k}": v for k, v in timings.items()})
    stages["build_features total"] = total
    for name, seconds in stages.items():
        print(f"  {name:<24} {seconds:8.2f} s")
    print(f"features: {features.matrix.shape[1]} columns ({', '.join(f'{g} {len(c)}' for g, c in features.groups.items())}); "  # noqa: E501
          f"peak RSS {peak_mib():.0f} MiB (before parsing {rss_before:.0f} MiB)")

    if args.embeddings:
        from models.features.embeddings import load_embedder, semantic_features

        sub_docs = {d: doc_texts[d] for d in list(doc_texts)[:args.embed_docs]}
        sub_tasks = [(t, d) for t, d in tasks if d in sub_docs]
        clock = time.perf_counter()
        embed = load_embedder()
        load = time.perf_counter() - clock
        clock = time.perf_counter()
        semantic_features(sub_tasks, topic_texts, sub_docs, embedder=embed)
        seconds = time.perf_counter() - clock
        print(f"  semantic: model load {load:.1f} s; {len(sub_docs)} docs + "
              f"{len(topic_texts)} topics embedded in {seconds:.1f} s "
              f"({seconds / (len(sub_docs) + len(topic_texts)):.3f} s per text); "
              f"peak RSS {peak_mib():.0f} MiB")


if __name__ == "__main__":
    main()
