"""Document sampling on synthetic runs with known qrels (thesis chapter 2, RQ2): RMSE of the
runs' estimated MAP and Kendall's τ of their ranking against the full-judgment values, per
strategy and budget; and the warm-start refit times of DS and MACE on RF10.

    python bench/bench_sampling.py                 # both parts
    python bench/bench_sampling.py --part sampling --seeds 10
    python bench/bench_sampling.py --part warm
    python bench/bench_sampling.py --part speed    # an active round and the estimates, 50 topics
    python bench/bench_sampling.py --part stopping --seeds 10   # chapter 3's stopping rules
    python bench/bench_sampling.py --part page [--database sqlite|postgres] [--repeat 5]
                                   # /ui/samplings/{s} on RF10 through the API (run_page)

Synthetic collection: ``--topics`` topics of ``--docs`` documents, each relevant with a topic
prevalence drawn from U(0.05, 0.2); ``--runs`` runs whose quality q_k is spread evenly over
[0.2, 2.5]: run k scores a document q_k·rel + N(0, 1) and returns its top ``--depth``. The
qrels are the full judgments of the pooled documents; every strategy gets the same budget per
round (``--round-share`` of the pool) and is scored after each round at the budgets listed.
Prints markdown tables. A script, never part of the test run.
"""

from __future__ import annotations

import argparse
import csv
import os
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import numpy as np


def synthetic_runs(*, topics: int, docs: int, runs: int, depth: int, seed: int):
    rng = np.random.default_rng(seed)
    rankings: dict[str, dict[str, list[str]]] = {f"run{k:02d}": {} for k in range(runs)}
    qrels: dict[str, dict[str, float]] = {}
    quality = np.linspace(0.2, 2.5, runs)
    for t in range(topics):
        topic = f"q{t:02d}"
        prevalence = rng.uniform(0.05, 0.2)
        rel = (rng.random(docs) < prevalence).astype(float)
        names = [f"{topic}-d{i:04d}" for i in range(docs)]
        qrels[topic] = dict(zip(names, rel.tolist(), strict=True))
        for k in range(runs):
            score = quality[k] * rel + rng.normal(0.0, 1.0, docs)
            rankings[f"run{k:02d}"][topic] = [names[i] for i in np.argsort(-score)[:depth]]
    return rankings, qrels


def true_map(pools, runs, qrels) -> np.ndarray:
    from models.sampling.estimators import estimate_topic

    values = np.zeros(len(runs))
    for topic, pool in pools.items():
        y = np.array([qrels[topic][d] for d in pool.docs.tolist()])
        est = estimate_topic(ranks=pool.rank_matrix(), y=y, pi=np.ones(y.size),
                             pi2=np.ones((y.size, y.size)), cutoffs=())
        values += np.array([r.ap.value for r in est.runs])
    return values / len(pools)


def run_sampling(args: argparse.Namespace) -> None:
    from scipy.stats import kendalltau

    from models.sampling.design import build_pools
    from models.sampling.sampler import SAMPLING_STRATEGIES, TopicState, estimate, plan_round

    rankings, qrels = synthetic_runs(topics=args.topics, docs=args.docs, runs=args.runs,
                                     depth=args.depth, seed=1234)
    runs, pools = build_pools(rankings)
    truth = true_map(pools, runs, qrels)
    pool_size = sum(p.n_docs for p in pools.values())
    per_round = max(1, int(round(args.round_share * pool_size)))
    budgets = sorted(args.budgets)
    n_rounds = int(np.ceil(max(budgets) * pool_size / per_round))
    print(f"pool: {pool_size} pairs over {len(pools)} topics, {len(runs)} runs; "
          f"{per_round} pairs per round; {args.seeds} seeds\n")
    rmse: dict[tuple[str, float], list[float]] = {}
    tau: dict[tuple[str, float], list[float]] = {}
    started = time.perf_counter()
    for strategy in args.strategies or SAMPLING_STRATEGIES:
        for seed in range(args.seeds):
            rng = np.random.default_rng(seed)
            states = {t: TopicState() for t in pools}
            labels: dict[str, dict[int, float]] = {t: {} for t in pools}
            for round_no in range(n_rounds):
                picks = plan_round(strategy=strategy, pools=pools, states=states, labels=labels,
                                   budget=per_round, rng=rng, round_no=round_no)
                for topic, topic_picks in picks.items():
                    docs = pools[topic].docs
                    for pick in topic_picks:
                        labels[topic][pick.doc] = qrels[topic][docs[pick.doc]]
                spent = (round_no + 1) * per_round / pool_size
                hit = [b for b in budgets if abs(spent - b) < 0.5 * per_round / pool_size]
                if not hit:
                    continue
                est = np.zeros(len(runs))
                for topic, pool in pools.items():
                    e = estimate(strategy, pool, states[topic], labels[topic], cutoffs=())
                    est += np.array([r.ap.value for r in e.runs])
                est /= len(pools)
                key = (strategy, hit[0])
                rmse.setdefault(key, []).append(float(np.sqrt(np.mean((est - truth) ** 2))))
                tau.setdefault(key, []).append(float(kendalltau(est, truth).statistic))
    elapsed = time.perf_counter() - started
    strategies = list(dict.fromkeys(k[0] for k in rmse))
    header = "| strategy | " + " | ".join(f"{b:.0%} judged" for b in budgets) + " |"
    line = "|---|" + "---|" * len(budgets)
    for name, table in (("RMSE of MAP (mean ± sd over seeds)", rmse),
                        ("Kendall's τ of the MAP ranking", tau)):
        print(f"**{name}**\n\n{header}\n{line}")
        for s in strategies:
            cells = [f"{np.mean(table[(s, b)]):.4f} ± {np.std(table[(s, b)]):.4f}"
                     for b in budgets]
            print(f"| {s} | " + " | ".join(cells) + " |")
        print()
    print(f"({elapsed:.0f} s)")


def run_stopping(args: argparse.Namespace) -> None:
    """Thesis chapter 3's stopping rules on the synthetic runs: each sampling strategy draws
    rounds until the pool is judged; each topic stops the first time a rule fires (r / ρ ≥ R̂,
    optimistic; ≥ R̂ + sd, conservative) and is scored there against its true relevant count:
    reliability (the share of topics whose recall at the stop reaches the target), the mean
    recall at the stop and the mean share of the topic's pool judged by then."""
    from models.sampling.design import build_pools
    from models.sampling.sampler import SAMPLING, TopicState, estimate, plan_round
    from models.sampling.stopping import found_relevant, stopping_check

    rankings, qrels = synthetic_runs(topics=args.topics, docs=args.docs, runs=args.runs,
                                     depth=args.depth, seed=1234)
    runs, pools = build_pools(rankings)
    pool_size = sum(p.n_docs for p in pools.values())
    per_round = max(1, int(round(args.round_share * pool_size)))
    truth = {t: sum(qrels[t][d] for d in pool.docs.tolist()) for t, pool in pools.items()}
    targets = sorted(args.targets)
    print(f"pool: {pool_size} pairs over {len(pools)} topics (relevant per topic "
          f"{min(truth.values()):.0f}–{max(truth.values()):.0f}), {len(runs)} runs; "
          f"{per_round} pairs per round; {args.seeds} seeds\n")
    print("| strategy | rule | target | reliability | recall at the stop | pool judged at the "
          "stop | R̂ / R at the stop | never stopped |")
    print("|---|---|---|---:|---:|---:|---:|---:|")
    started = time.perf_counter()
    for strategy in [s for s in (args.strategies or ("active", "stratified", "uniform"))
                     if s in SAMPLING]:
        # (rule, target) -> per (seed, topic): (recall, judged share) at the first stop
        stops: dict[tuple[str, float], list[tuple[float, float] | None]] = {}
        for seed in range(args.seeds):
            rng = np.random.default_rng(seed)
            states = {t: TopicState() for t in pools}
            labels: dict[str, dict[int, float]] = {t: {} for t in pools}
            first: dict[tuple[str, float, str], tuple[float, float]] = {}
            round_no = 0
            while any(len(states[t].docs) < pools[t].n_docs for t in pools):
                picks = plan_round(strategy=strategy, pools=pools, states=states,
                                   labels=labels, budget=per_round, rng=rng,
                                   round_no=round_no)
                round_no += 1
                for topic, topic_picks in picks.items():
                    docs = pools[topic].docs
                    for pick in topic_picks:
                        labels[topic][pick.doc] = qrels[topic][docs[pick.doc]]
                for topic, pool in pools.items():
                    state = states[topic]
                    if not state.docs:
                        continue
                    rel = estimate(strategy, pool, state, labels[topic], cutoffs=()).n_relevant
                    found = found_relevant(state, labels[topic])
                    for target in targets:
                        check = stopping_check(found, rel.value, rel.variance, target)
                        for rule in ("optimistic", "conservative"):
                            if getattr(check, rule) and (rule, target, topic) not in first:
                                first[(rule, target, topic)] = (
                                    found / truth[topic] if truth[topic] else 1.0,
                                    len(set(state.docs)) / pool.n_docs,
                                    rel.value / truth[topic] if truth[topic] else 1.0)
            for target in targets:
                for rule in ("optimistic", "conservative"):
                    stops.setdefault((rule, target), []).extend(
                        first.get((rule, target, t)) for t in pools)
        for target in targets:
            for rule in ("optimistic", "conservative"):
                got = stops[(rule, target)]
                done = np.array([g for g in got if g is not None]).reshape(-1, 3)
                never = sum(g is None for g in got) / len(got)
                # reliability over the topics that stopped (a topic that never stops before
                # its pool is judged has every relevant document: counted in the last column);
                # R̂ / R at the stop: the estimate where the rule fired (optional stopping: a
                # rule fires more readily where R̂ happens to be low)
                cells = ([f"{np.mean(done[:, 0] >= target - 1e-9):.3f}",
                          f"{done[:, 0].mean():.3f}", f"{done[:, 1].mean():.3f}",
                          f"{done[:, 2].mean():.3f}"]
                         if done.size else ["–", "–", "–", "–"])
                print(f"| {strategy} | {rule} | {target:.1f} | " + " | ".join(cells)
                      + f" | {never:.3f} |")
    print(f"\n({time.perf_counter() - started:.0f} s)")
    run_stopping_skip(args, pools, qrels, truth, per_round)


def run_stopping_skip(args: argparse.Namespace, pools, qrels, truth, per_round: int) -> None:
    """The same rounds, drawn as POST /rounds?stop=conservative does: a topic whose rule fires
    takes no more draws and the budget goes to the others, until every topic has stopped (or
    its pool is judged). Reported: the pairs judged by then, as a share of the pool, and each
    topic's recall at the end, against the same rounds drawn for every topic throughout."""
    from models.sampling.sampler import TopicState, plan_round
    from models.sampling.stopping import check_topic, found_relevant

    pool_size = sum(p.n_docs for p in pools.values())
    print("\nRounds that skip the topics at the target (conservative rule) until every topic "
          "has stopped:\n")
    print("| strategy | target | pool judged (skipping) | pool judged (every topic every round) "
          "| reliability | mean recall |")
    print("|---|---|---:|---:|---:|---:|")
    for strategy in [s for s in (args.strategies or ("active", "stratified", "uniform"))
                     if s != "depth" and s != "mtf"]:
        for target in [t for t in sorted(args.targets) if t < 1.0]:
            judged_skip, judged_all, recalls = [], [], []
            for seed in range(args.seeds):
                for skipping in (True, False):
                    rng = np.random.default_rng(seed)
                    states = {t: TopicState() for t in pools}
                    labels: dict[str, dict[int, float]] = {t: {} for t in pools}
                    stopped: set[str] = set()
                    round_no = 0
                    while len(stopped) < len(pools):
                        open_ = [t for t in pools if t not in stopped
                                 and len(set(states[t].docs)) < pools[t].n_docs]
                        if not open_:
                            break
                        picks = plan_round(strategy=strategy, pools=pools, states=states,
                                           labels=labels, budget=per_round, rng=rng,
                                           round_no=round_no,
                                           skip=stopped if skipping else ())
                        round_no += 1
                        for topic, topic_picks in picks.items():
                            for pick in topic_picks:
                                labels[topic][pick.doc] = qrels[topic][
                                    pools[topic].docs[pick.doc]]
                        for topic, pool in pools.items():
                            if topic in stopped:
                                continue
                            check = check_topic(strategy, pool, states[topic], labels[topic],
                                                target)
                            if check is not None and check.conservative:
                                stopped.add(topic)
                    judged = sum(len(set(states[t].docs)) for t in pools) / pool_size
                    if skipping:
                        judged_skip.append(judged)
                        recalls.extend(found_relevant(states[t], labels[t]) / truth[t]
                                       for t in pools)
                    else:
                        judged_all.append(judged)
            recalls_ = np.array(recalls)
            print(f"| {strategy} | {target:.1f} | {np.mean(judged_skip):.3f} | "
                  f"{np.mean(judged_all):.3f} | {np.mean(recalls_ >= target - 1e-9):.3f} | "
                  f"{recalls_.mean():.3f} |")


def run_warm(args: argparse.Namespace) -> None:
    from app.cli.loading import load_annotation_data
    from models.dawid_skene import DawidSkene
    from models.mace import MACE
    from models.sampling.simulate import subset

    path = Path(args.rf10)
    data = load_annotation_data(path.read_bytes())
    rng = np.random.default_rng(0)
    order = rng.permutation(data.n_judgments)
    batch = int(args.batch_share * data.n_judgments)
    before = subset(data, np.sort(order[:-batch]))
    print(f"RF10: {data.n_judgments} judgments; the batch added: {batch} "
          f"({args.batch_share:.0%})\n")
    print("| method | cold fit (s) | warm refit (s) | speed-up | accuracy cold | accuracy warm |")
    print("|---|---|---|---|---|---|")
    gold = data.gold
    known = gold != -1
    for name, make in (("ds", DawidSkene), ("mace", lambda: MACE(random_state=0))):
        previous = make().fit(before)
        cold_times, warm_times = [], []
        for _ in range(args.repeat):
            t = time.perf_counter()
            cold = make().fit(data)
            cold_times.append(time.perf_counter() - t)
            t = time.perf_counter()
            warm = make().fit(data, init=previous)
            warm_times.append(time.perf_counter() - t)
        c, w = min(cold_times), min(warm_times)
        acc = [np.mean(m.labels_[known] == gold[known]) for m in (cold, warm)]
        print(f"| {name} | {c:.2f} | {w:.2f} | {c / w:.1f}× | {acc[0]:.4f} | {acc[1]:.4f} |")


def run_speed(args: argparse.Namespace) -> None:
    """Time of an active round and of the estimates, in memory, on 50 topics × 30 runs of
    depth 100 (the service adds reading the runs and the judgments)."""
    from models.sampling.design import build_pools
    from models.sampling.sampler import TopicState, estimate, plan_round

    rankings, qrels = synthetic_runs(topics=50, docs=2000, runs=30, depth=100, seed=1)
    runs, pools = build_pools(rankings)
    states = {t: TopicState() for t in pools}
    labels: dict[str, dict[int, float]] = {t: {} for t in pools}
    rng = np.random.default_rng(0)
    pool_size = sum(p.n_docs for p in pools.values())
    print(f"\npool: {pool_size} pairs, 50 topics, 30 runs; rounds of 1,000 pairs\n")
    print("| after round | round (s) | estimates, all runs and topics (s) |")
    print("|---|---|---|")
    for r in range(5):
        started = time.perf_counter()
        picks = plan_round(strategy="active", pools=pools, states=states, labels=labels,
                           budget=1000, rng=rng, round_no=r)
        took = time.perf_counter() - started
        for topic, topic_picks in picks.items():
            for pick in topic_picks:
                labels[topic][pick.doc] = qrels[topic][pools[topic].docs[pick.doc]]
        started = time.perf_counter()
        for topic, pool in pools.items():
            estimate("active", pool, states[topic], labels[topic])
        print(f"| {r + 1} | {took:.2f} | {time.perf_counter() - started:.2f} |")


def rf10_runs(*, runs: int, depth: int, extra: int, seed: int) -> tuple[
        dict[str, str], dict[tuple[str, str], int]]:
    """Synthetic TREC runs over the RF10 topics: per topic the RF10 documents (relevant when
    most of their usable labels are ≥ 1) and ``extra`` unjudged ones (non-relevant); run k
    scores q_k·rel + N(0, 1), q_k spread over [0.2, 2.5], and returns its top ``depth``.
    Returns the run files' text and the relevance of every candidate (topic, doc)."""
    from _server import RF10

    votes: dict[tuple[str, str], list[int]] = defaultdict(list)
    with RF10.open(newline="") as f:
        for row in csv.DictReader(f, delimiter="\t"):
            if int(row["label"]) >= 0:
                votes[(row["topicID"], row["docID"])].append(int(row["label"]) >= 1)
            else:
                votes.setdefault((row["topicID"], row["docID"]), [])
    rel = {k: int(bool(v) and 2 * sum(v) > len(v)) for k, v in votes.items()}
    per_topic: dict[str, list[str]] = defaultdict(list)
    for topic, doc in sorted(rel):
        per_topic[topic].append(doc)
    for topic in per_topic:
        for i in range(extra):
            rel[(topic, f"bench-{topic}-{i:04d}")] = 0
            per_topic[topic].append(f"bench-{topic}-{i:04d}")
    rng = np.random.default_rng(seed)
    quality = np.linspace(0.2, 2.5, runs)
    texts = {}
    for k in range(runs):
        name = f"run{k:02d}"
        lines = []
        for topic, docs in per_topic.items():
            y = np.array([rel[(topic, d)] for d in docs], dtype=np.float64)
            score = quality[k] * y + rng.normal(0.0, 1.0, y.size)
            for r, i in enumerate(np.argsort(-score)[:depth], start=1):
                lines.append(f"{topic} Q0 {docs[i]} {r} {score[i]:.4f} {name}\n")
        texts[name] = "".join(lines)
    return texts, rel


def nothing_kept(database_url: str, sampling_id: int, repeat: int) -> float:
    """The sampling page's context built ``repeat`` times with nothing kept between calls."""
    import gc

    from app.core.db import get_sessionmaker
    from app.sampling.inputs import NextInputs
    from app.sampling.tables import Sampling
    from app.ui.pages.samplings import _sampling_context

    times = []
    gc.collect()
    gc.freeze()  # as the API process does: no full collections over long-lived objects
    with get_sessionmaker(database_url)() as session:
        sampling = session.get(Sampling, sampling_id)
        for _ in range(repeat):
            start = time.perf_counter()
            _sampling_context(session, sampling, None, 0.9,
                              NextInputs(max_fits=0, max_collections=0, max_memos=0))
            times.append(time.perf_counter() - start)
    gc.unfreeze()
    return statistics.median(times)


def run_page(args: argparse.Namespace) -> None:
    """The sampling page (/ui/samplings/{s}) and the JSON it is built from, on RF10 through
    the API (uvicorn in its own process). Set-up: RF10 uploaded (0/1/2, relevant from 1, -2
    ignored), ``--page-runs`` synthetic runs of depth ``--page-depth`` over its topics
    (``rf10_runs``), an active sampling with majority-vote labels (its round 0: the pooled pairs
    RF10 judged), then ``--page-rounds`` rounds of ``--page-budget`` pairs, each judged by 3
    synthetic annotators before the next. Then the API is restarted on the same database and
    timed: the page's first request in the new process, the median of ``--repeat`` more, the
    first after a batch of ``--page-batch`` new judgments, the first after one more round is
    drawn (and after its judgments); the median of ``--repeat`` calls of
    GET /samplings/{s}/estimates and /rounds (every pair, JSON); ``nothing kept``: the page's
    work (``_sampling_context``) in this process on the same database with nothing kept between
    calls, what every request cost before the application kept its inputs. Prints a markdown
    table."""
    import httpx
    from _server import RF10, ROOT, reset_postgres, running_api

    sys.path.insert(0, str(ROOT))
    if args.database == "postgres":
        url = os.environ.get("CROWDQRELS_BENCH_POSTGRES_URL", "postgresql+psycopg://postgres"
                             "@127.0.0.1:5432/crowdqrels_bench_sampling")
        reset_postgres(url)
    else:
        url = f"sqlite:///{tempfile.mkdtemp(prefix='bench-sampling-')}/crowdqrels.sqlite"
    texts, rel = rf10_runs(runs=args.page_runs, depth=args.page_depth, extra=args.page_extra,
                           seed=1)

    def judge(client: httpx.Client, pairs: list[dict], annotators: range) -> None:
        judgments = [{"topic": p["topic"], "doc": p["doc"], "annotator": f"bench{a}",
                      "label": rel[(p["topic"], p["doc"])]} for p in pairs for a in annotators]
        client.post("/api/v1/collections/rf10/judgments",
                    json={"judgments": judgments}).raise_for_status()

    def draw(client: httpx.Client, sid: int) -> list[dict]:
        drawn = client.post(f"/api/v1/samplings/{sid}/rounds")
        drawn.raise_for_status()
        return drawn.json()["pairs"]  # type: ignore[no-any-return]

    def timed(client: httpx.Client, path: str) -> float:
        start = time.perf_counter()
        client.get(path).raise_for_status()
        return time.perf_counter() - start

    with running_api(url) as (base, _), httpx.Client(base_url=base, timeout=600) as client:
        client.post("/api/v1/collections", json={
            "name": "rf10", "labels": [0, 1, 2], "relevant_from": 1, "ignore": [-2]}
        ).raise_for_status()
        client.post("/api/v1/collections/rf10/judgments/file", content=RF10.read_bytes(),
                    headers={"content-type": "text/tab-separated-values"}).raise_for_status()
        for name, text in texts.items():
            client.put(f"/api/v1/collections/rf10/runs/{name}", content=text.encode(),
                       headers={"content-type": "text/plain"}).raise_for_status()
        created = client.post("/api/v1/collections/rf10/samplings", json={
            "runs": None, "budget_per_round": args.page_budget, "seed": 1,
            "strategy": "active", "method": "mv"})
        created.raise_for_status()
        sid = created.json()["id"]
        for _ in range(args.page_rounds):
            judge(client, draw(client, sid), range(3))
    page = f"/ui/samplings/{sid}"
    rows: list[tuple[str, float]] = []
    with running_api(url) as (base, _), httpx.Client(base_url=base, timeout=600) as client:
        info = client.get(f"/api/v1/samplings/{sid}").json()
        rows.append(("page, first request of a new process", timed(client, page)))
        rows.append((f"page again (median of {args.repeat})", statistics.median(
            timed(client, page) for _ in range(args.repeat))))
        last = client.get(f"/api/v1/samplings/{sid}/rounds?round=-1").json()["data"][0]["pairs"]
        judge(client, last[:args.page_batch], range(3, 4))  # one more annotator
        rows.append((f"page after {min(args.page_batch, len(last))} new judgments",
                     timed(client, page)))
        pairs = draw(client, sid)
        rows.append((f"page after a new round ({len(pairs)} pairs)", timed(client, page)))
        judge(client, pairs, range(3))
        rows.append((f"page after its {3 * len(pairs)} judgments", timed(client, page)))
        rows.append((f"page again (median of {args.repeat})", statistics.median(
            timed(client, page) for _ in range(args.repeat))))
        for name in ("estimates", "rounds"):
            rows.append((f"GET /api/v1/samplings/{{s}}/{name} (median of {args.repeat})",
                         statistics.median(timed(client, f"/api/v1/samplings/{sid}/{name}")
                                           for _ in range(args.repeat))))
    rows.append((f"page's work, nothing kept (median of {args.repeat})",
                 nothing_kept(url, sid, args.repeat)))
    print(f"\nRF10 ({args.database}): {len(texts)} runs of depth {args.page_depth}, a pool of "
          f"{info['pool_size']:,} pairs, {info['prejudged']:,} judged before the sampling "
          f"(round 0), {args.page_rounds} rounds of {args.page_budget:,} judged; "
          f"{info['n_sampled']:,} sampled\n")
    print("| request | seconds |")
    print("|---|---:|")
    for label, seconds in rows:
        print(f"| {label} | {seconds:.3f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--part", choices=("sampling", "stopping", "warm", "speed", "page", "all"),
                        default="all")
    parser.add_argument("--topics", type=int, default=20)
    parser.add_argument("--docs", type=int, default=400)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--depth", type=int, default=50)
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--round-share", type=float, default=0.025)
    parser.add_argument("--budgets", type=float, nargs="+", default=[0.05, 0.1, 0.2])
    parser.add_argument("--strategies", nargs="+")
    parser.add_argument("--rf10", default=os.environ.get(
        "CROWDQRELS_RF10_FILE", str(Path(__file__).resolve().parents[1].parent / "shared"
                                    / "data" / "trec-rf10-crowd" / "trec-rf10-data.txt")))
    parser.add_argument("--batch-share", type=float, default=0.01)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--targets", type=float, nargs="+", default=[0.8, 0.9, 1.0])
    parser.add_argument("--database", choices=("sqlite", "postgres"), default="sqlite")
    parser.add_argument("--page-runs", type=int, default=20)
    parser.add_argument("--page-depth", type=int, default=50)
    parser.add_argument("--page-extra", type=int, default=200)
    parser.add_argument("--page-rounds", type=int, default=3)
    parser.add_argument("--page-budget", type=int, default=1000)
    parser.add_argument("--page-batch", type=int, default=100)
    args = parser.parse_args()
    if args.part in ("sampling", "all"):
        run_sampling(args)
    if args.part in ("stopping", "all"):
        run_stopping(args)
    if args.part in ("warm", "all"):
        run_warm(args)
    if args.part in ("speed", "all"):
        run_speed(args)
    if args.part == "page":
        run_page(args)


if __name__ == "__main__":
    main()
