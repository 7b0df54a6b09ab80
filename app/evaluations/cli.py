"""``crowdqrels evaluate``: score runs on qrels or on an aggregation's posterior, without a
server; the same computation (and, for the same posterior and seed, the same numbers) as the
API's evaluation job."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def add_commands(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    evaluate = subparsers.add_parser(
        "evaluate", help="score TREC runs on (crowd) qrels, with the crowd's uncertainty",
        description="Score runs on fixed qrels (--qrels) or on the posterior of an aggregation "
                    "(--tasks, the TSV of `aggregate --tasks`): each measure on the most probable "
                    "qrels, and its mean, std and 95% interval over --samples draws of the qrels; "
                    "P(a beats b) for every pair of runs; Kendall's tau of the rankings.")
    source = evaluate.add_mutually_exclusive_group(required=True)
    source.add_argument("--qrels", help="TREC qrels (fixed labels)")
    source.add_argument("--tasks", help="per-task TSV with p_<label> columns "
                                        "(crowdqrels aggregate --tasks)")
    evaluate.add_argument("--runs", nargs="+", required=True, metavar="RUN", help="TREC run files")
    evaluate.add_argument("--measures", nargs="+", metavar="M",
                          help="ir_measures names: P@10 AP nDCG@10 R@100 Rprec Bpref RR "
                               "PRES@1000 nP@95 snP@95 TNR@95 LastRel unjudged@10 SimP@10 "
                               "(default: a standard set)")
    evaluate.add_argument("--samples", type=int, default=1000, help="draws of the qrels")
    evaluate.add_argument("--seed", type=int, default=0)
    evaluate.add_argument("--gold", help="reference qrels for Kendall's tau (default: the gold "
                                         "column of --tasks, if any)")
    evaluate.add_argument("--relevant-from", type=int, default=1,
                          help="lowest label value that counts as relevant")
    evaluate.add_argument("--format", choices=("json", "tsv", "trec"), default="json")
    evaluate.add_argument("--output", help="write here (default: standard output)")
    evaluate.add_argument("--quiet", action="store_true", help="no progress bar")
    evaluate.set_defaults(func=_evaluate)


def _evaluate(args: argparse.Namespace) -> int:
    from app.evaluations.inputs import posterior_from_qrels, posterior_from_tasks
    from app.formats.errors import FileFormatError
    from app.formats.qrels import parse_qrels
    from app.formats.runs import merge_runs, parse_runs
    from app.offline import _ProgressBar
    from models.evaluation.measures import DEFAULT_MEASURES, UnknownMeasure, parse_measures
    from models.evaluation.scoring import evaluate_runs, format_trec, format_tsv, report
    from models.evaluation.uncertainty import Posterior

    def fail(message: str) -> int:
        print(f"crowdqrels evaluate: {message}", file=sys.stderr)
        return 2

    if args.samples < 0:
        return fail("--samples must be at least 0")
    try:
        measures = parse_measures(args.measures or DEFAULT_MEASURES)
    except UnknownMeasure as exc:
        return fail(str(exc))
    gold: dict[tuple[str, str], int] = {}
    try:
        if args.qrels:
            posterior = posterior_from_qrels(Path(args.qrels).read_bytes(),
                                             relevant_from=args.relevant_from)
        else:
            posterior, gold = posterior_from_tasks(Path(args.tasks).read_bytes(),
                                                   relevant_from=args.relevant_from)
        if args.gold:
            gold = parse_qrels(Path(args.gold).read_bytes())
        runs = merge_runs(parse_runs(Path(p).read_bytes()) for p in args.runs)
    except FileFormatError as exc:
        return fail(str(exc))
    except OSError as exc:
        return fail(str(exc))

    bar = _ProgressBar("evaluate", enabled=not args.quiet)
    try:
        scores = evaluate_runs(posterior, runs, measures, samples=args.samples, seed=args.seed,
                               progress=bar)
    finally:
        bar.close()
    reference = None
    if gold:
        reference = evaluate_runs(Posterior.from_qrels(gold, relevant_from=args.relevant_from),
                                  runs, measures, samples=0)
    result = report(scores, reference=reference)
    for run, count in result["unjudged_topics"].items():
        print(f"run {run}: {count} topic(s) without judgments, not scored", file=sys.stderr)
    if args.format == "json":
        text = json.dumps(result, indent=1) + "\n"
    elif args.format == "tsv":
        text = format_tsv(result["results"])
    else:
        text = format_trec(result["results"])
    if args.output:
        Path(args.output).write_text(text)
    else:
        sys.stdout.write(text)
    return 0
