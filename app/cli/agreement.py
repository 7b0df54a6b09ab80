"""``crowdqrels agreement``: judging the judges on files, without a server (the report of the
API's ``GET /collections/{c}/judge-agreement``; ``app.judges.cli.offline_report``)."""

from __future__ import annotations

import argparse
import json

from app.cli.errors import UsageError
from app.cli.loading import file_error, load_judgment_file, read_input
from app.cli.options import (
    add_judge_option,
    add_scale_options,
    int_at_least,
    parse_params,
    seed_arg,
)
from app.cli.outputs import check_outputs, write_outputs


def add_command(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    agreement = subparsers.add_parser(
        "agreement", help="judging the judges: each judge against gold and an aggregate",
        description="Each judge (--judge NAME=QRELS) and each annotator of INPUT with at least "
                    "--min-tasks tasks against the gold and an aggregate (--method): exact "
                    "agreement, Cohen's kappa, quadratic kappa, leniency, confusion; "
                    "Krippendorff's alpha; with --runs, Kendall's tau of the run rankings on "
                    "each judge's qrels against the aggregate's and the gold's.")
    agreement.add_argument("input", nargs="?", help="judgment file (- for standard input); may "
                           "be left out when --judge files are given")
    add_judge_option(agreement)
    agreement.add_argument("--gold", help="expert qrels (TREC); default: INPUT's gold column")
    agreement.add_argument("--method", help="an aggregation method to compare with (e.g. mv, "
                                            "ds), fitted on the graded labels")
    agreement.add_argument("--params", help="its parameters as a JSON object")
    agreement.add_argument("--seed", type=seed_arg, help="its random_state, if it has one")
    agreement.add_argument("--runs", nargs="+", default=[], metavar="RUN",
                           help="TREC run files: rank them on each judge's qrels")
    agreement.add_argument("--measure", default="nDCG@10",
                           help="the measure the runs are ranked by (default nDCG@10)")
    agreement.add_argument("--min-tasks", type=int_at_least(1), default=20,
                           help="annotators that are not judges are listed from this many tasks")
    agreement.add_argument("--relevant-from", type=int, default=1,
                           help="grades from this value up are relevant (default 1)")
    add_scale_options(agreement)
    agreement.add_argument("--format", choices=("json", "tsv"), default="json",
                           help="json: the API's answer; tsv: the leaderboard")
    agreement.add_argument("--output", default="-", help="where to write (default: standard "
                                                         "output)")
    agreement.add_argument("--quiet", action="store_true", help="no notes on standard error")
    agreement.set_defaults(func=_agreement)


def _agreement(args: argparse.Namespace) -> int:
    if args.input is None and not args.judge:
        raise UsageError("give a judgment file (INPUT), judge files (--judge NAME=QRELS), "
                         "or both")
    from app.formats.errors import FileFormatError
    from app.formats.runs import merge_runs, parse_runs
    from app.judges.cli import offline_report, report_tsv
    from models.evaluation.measures import UnknownMeasure, parse_measure

    try:
        params = parse_params(args.params)
        parse_measure(args.measure)
    except (ValueError, UnknownMeasure) as exc:
        raise UsageError(str(exc)) from None
    check_outputs({"--output": args.output}, stdout=True)
    runs = None
    if args.runs:
        current = None
        try:
            parsed = []
            for current in args.runs:
                parsed.append(parse_runs(read_input(current, "--runs")))
            runs = merge_runs(parsed)
        except FileFormatError as exc:
            raise UsageError(file_error(exc, current)) from None
    data, _ = load_judgment_file(args, graded=True, quiet=args.quiet)
    fit_labels = None
    if args.method:
        from app.cli.aggregate import build_aggregator
        from models.registry import InvalidParams, UnknownMethod

        try:
            fit_labels = build_aggregator(args.method, params, args.seed).fit(data).labels_
        except (UnknownMethod, InvalidParams, ValueError) as exc:
            raise UsageError(str(exc)) from None
    found = offline_report(data, judges=[name for name, _ in args.judge],
                           fit_labels=fit_labels, runs=runs, measure=args.measure,
                           relevant_from=args.relevant_from, min_tasks=args.min_tasks)
    text = (json.dumps(found, indent=2) + "\n" if args.format == "json" else report_tsv(found))
    write_outputs([(args.output, text)])
    return 0
