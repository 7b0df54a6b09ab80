"""Document sampling on synthetic runs with known qrels (thesis chapter 2, RQ2): RMSE of the
runs' estimated MAP and Kendall's τ of their ranking against the full-judgment values, per
strategy and budget; and the warm-start refit times of DS and MACE on RF10.

    python bench/bench_sampling.py                 # both parts
    python bench/bench_sampling.py --part sampling --seeds 10
    python bench/bench_sampling.py --part warm
    python bench/bench_sampling.py --part speed    # an active round and the estimates, 50 topics
    python bench/bench_sampling.py --part stopping --seeds 10   # chapter 3's stopping rules

Synthetic collection: ``--topics`` topics of ``--docs`` documents, each relevant with a topic
prevalence drawn from U(0.05, 0.2); ``--runs`` runs whose quality q_k is spread evenly over
[0.2, 2.5]: run k scores a document q_k·rel + N(0, 1) and returns its top ``--depth``. The
qrels are the full judgments of the pooled documents; every strategy gets the same budget per
round (``--round-share`` of the pool) and is scored after each round at the budgets listed.
Prints markdown tables. A script, never part of the test run.
"""

from __future__ import annotations

import argparse
import time

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
    from models.sampling.sampler import STRATEGIES, TopicState, estimate, plan_round

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
    for strategy in args.strategies or STRATEGIES:
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
    from pathlib import Path

    from app.offline import load_annotation_data
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--part", choices=("sampling", "stopping", "warm", "speed", "all"),
                        default="all")
    parser.add_argument("--topics", type=int, default=20)
    parser.add_argument("--docs", type=int, default=400)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--depth", type=int, default=50)
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--round-share", type=float, default=0.025)
    parser.add_argument("--budgets", type=float, nargs="+", default=[0.05, 0.1, 0.2])
    parser.add_argument("--strategies", nargs="+")
    parser.add_argument("--rf10", default="/work/shared/data/trec-rf10-crowd/trec-rf10-data.txt")
    parser.add_argument("--batch-share", type=float, default=0.01)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--targets", type=float, nargs="+", default=[0.8, 0.9, 1.0])
    args = parser.parse_args()
    if args.part in ("sampling", "all"):
        run_sampling(args)
    if args.part in ("stopping", "all"):
        run_stopping(args)
    if args.part in ("warm", "all"):
        run_warm(args)
    if args.part in ("speed", "all"):
        run_speed(args)


if __name__ == "__main__":
    main()
