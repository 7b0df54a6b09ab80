"""``crowdqrels aggregate``: fit an aggregation model on a judgment file, no server; writes
qrels, the annotator and task tables and prints the evaluation against gold."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from app.cli.console import ProgressBar, quiet_tensorflow
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
from app.cli.tables import annotator_table, task_table, tsv_text

if TYPE_CHECKING:
    import numpy as np

    from models.base import Aggregator
    from models.data import AnnotationData
    from models.pipeline import Fitted, Scores


def build_aggregator(method: str, params: dict[str, Any] | None = None,
                     seed: int | None = None, *, relevant_from: int | None = None) -> Aggregator:
    """The registry's aggregator; ``seed`` becomes ``random_state`` when the method has one and
    the params do not set it already; ``relevant_from`` as ``make_aggregator``'s."""
    from models.registry import make_aggregator, with_seed

    return make_aggregator(method, with_seed(method, dict(params or {}), seed),
                           relevant_from=relevant_from)


def _checked_params(args: argparse.Namespace) -> dict[str, Any]:
    """The method's params from --params, --calibrate and --clamp-gold, every option and output
    path checked (UsageError) before any file is read."""
    if args.quiet:
        quiet_tensorflow(args.method)
    try:
        params = parse_params(args.params)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    from models.registry import BINARY_ONLY_METHODS

    if args.graded and args.method in BINARY_ONLY_METHODS:
        raise UsageError(f"method {args.method!r} needs binary labels: drop --graded (graded "
                         "GP: ordinal-gp)")
    if args.folds is not None and args.folds < 2:
        raise UsageError(f"--folds needs K >= 2, got {args.folds}")
    if args.calibrate is not None:
        params["calibrate_folds"] = args.calibrate
    if args.clamp_gold or args.folds is not None or args.calibrate is not None:
        from models.registry import UnknownMethod, get_method

        try:
            has_use_gold = "use_gold" in get_method(args.method).defaults
        except UnknownMethod as exc:
            raise UsageError(str(exc)) from None
        if not has_use_gold:
            raise UsageError(f"method {args.method!r} cannot clamp gold labels (no use_gold)")
        if args.clamp_gold or args.calibrate is not None:
            params["use_gold"] = True
    if args.grade != "most_probable" and not args.graded:
        print(f"warning: --grade {args.grade} applies to graded qrels only (--graded): ignored",
              file=sys.stderr)
    check_outputs({"--output": args.output, "--annotators": args.annotators,
                   "--tasks": args.tasks, "--joint": args.joint}, stdout=True)
    if args.joint == "-":
        raise UsageError("--joint writes a binary file: give a path")
    from models.gp.joint import JOINT_METHODS

    if args.joint and args.method not in JOINT_METHODS:
        raise UsageError(f"--joint: method {args.method!r} has no joint posterior over tasks "
                         f"(GP methods {', '.join(JOINT_METHODS)})")
    if bool(args.topics) != bool(args.documents):
        raise UsageError("--topics and --documents go together (lexical features need both)")
    from models.registry import InvalidParams, UnknownMethod, validate_params

    try:
        validate_params(args.method, params)
    except (UnknownMethod, InvalidParams) as exc:
        raise UsageError(str(exc)) from None
    except ImportError as exc:
        raise UsageError(f"method {args.method!r} is not available: {exc}") from None
    return params


def _aggregate(args: argparse.Namespace) -> int:
    """Every option and output path is checked before the file is read; the outputs are written
    (atomically) only once the fit and the held-out scores have succeeded."""
    if args.input is None and not args.judge:
        raise UsageError("give a judgment file (INPUT), judge files (--judge NAME=QRELS), "
                         "or both")
    params = _checked_params(args)
    data, _ = load_judgment_file(args, graded=args.graded, features=args.features,
                                 quiet=args.quiet, want_rows=False)
    groups = None
    if args.topics or args.documents or args.runs:
        try:
            data, groups = _built_features(data, args)
        except (ValueError, ImportError) as exc:
            raise UsageError(str(exc)) from None
    if args.folds is not None:
        n_gold = 0 if data.gold is None else int((data.gold >= 0).sum())
        if n_gold < args.folds:
            raise UsageError(f"--folds {args.folds} needs at least {args.folds} gold tasks "
                             f"(--gold or a gold column), found {n_gold}")

    from models.features.build import with_kernel_params
    from models.pipeline import FitSpec, fit

    spec = FitSpec(args.method, with_kernel_params(args.method, params, groups), args.seed,
                   relevant_from=args.relevant_from, graded=args.graded)
    from models.registry import InvalidParams, UnknownMethod

    try:
        model = spec.build()
    except (UnknownMethod, InvalidParams) as exc:
        raise UsageError(str(exc)) from None
    except ImportError as exc:
        raise UsageError(f"method {args.method!r} is not available: {exc}") from None

    # The report goes to standard error when the qrels go to standard output.
    report = sys.stderr if "-" in (args.output, args.annotators, args.tasks) else sys.stdout
    bar = ProgressBar(args.method, enabled=not args.quiet)
    try:
        fitted = fit(spec, data, progress=bar, model=model)
        bar(1.0, "done")  # EM may converge before its last iteration
    finally:
        bar.close()
    published = fitted.published  # a task without evidence, or unselected: no qrels line
    outputs: list[tuple[str, str | bytes]] = list(_outputs(args, fitted, published))
    if args.joint:
        outputs.append((args.joint, _joint_bytes(fitted)))
    lines = _fit_lines(args, fitted)
    if args.folds is None and spec.params.get("use_gold") and data.gold is not None:
        print("warning: gold clamped and scored on the same tasks (in-sample, inflated); "
              "use --folds K for a held-out score", file=sys.stderr)
    scores = fitted.score(args.folds, tasks=published)  # the tasks that got a qrels line
    lines.extend(_score_lines(args, fitted, scores))
    write_outputs(outputs)  # only now: everything above succeeded
    print("\n".join(lines), file=report)
    return 0


def _outputs(args: argparse.Namespace, fitted: Fitted, published: np.ndarray
             ) -> list[tuple[str, str]]:
    """(path, text) of the qrels (--output), annotator and task tables asked for."""
    import numpy as np

    from app.formats.qrels import format_qrels_columns

    data, result = fitted.data, fitted.result
    outputs: list[tuple[str, str]] = []
    if args.output:
        qrels_labels = fitted.labels
        if args.grade == "expected" and args.graded:
            from models.ordinal_scale import expected_grade_index

            qrels_labels = expected_grade_index(result.proba, data.classes)
        shown = np.flatnonzero(published)
        outputs.append((args.output, format_qrels_columns(
            data.topic_ids[shown].astype(str), data.doc_ids[shown].astype(str),
            data.classes[qrels_labels][shown])))
    if args.annotators:
        header, rows = annotator_table(data, result.annotator_columns)
        outputs.append((args.annotators, tsv_text(header, rows)))
    if args.tasks:
        header, rows = task_table(data, result.proba, fitted.labels, fitted.p_relevant,
                                  result.task_columns)
        outputs.append((args.tasks, tsv_text(header, rows)))
    return outputs


def _joint_bytes(fitted: Fitted) -> bytes:
    """The npz of ``models.evaluation.joint.JointLoadings`` (the fit without a GP over tasks:
    no loadings, so ``evaluate`` draws each task on its own, as it would without the file)."""
    import numpy as np

    from models.evaluation.joint import JointLoadings
    from models.gp.joint import joint_posterior

    joint = joint_posterior(fitted.spec.method, fitted.data, fitted.model)
    if joint is not None:
        return bytes(joint.to_bytes())
    data = fitted.data
    return JointLoadings(data.topic_ids, data.doc_ids,
                         np.zeros((data.n_tasks, 0), dtype=np.float32)).to_bytes()


def _fit_lines(args: argparse.Namespace, fitted: Fitted) -> list[str]:
    """The report's first lines: the data, the seed the method chose, a fallback."""
    data, info = fitted.data, fitted.result.info
    lines = [f"method {args.method}: {data.n_tasks} tasks, {data.n_annotators} annotators, "
             f"{data.n_judgments} judgments, classes {data.classes.tolist()}"]
    used_seed = fitted.spec.params.get("random_state",
                                       getattr(fitted.model, "random_state", None))
    if args.seed is None and isinstance(used_seed, int):
        lines.append(f"seed {used_seed} (the method's random_state; --seed to choose one)")
    if "fallback" in info:
        lines.append(f"fallback: {info['fallback']}")
    return lines


def _score_lines(args: argparse.Namespace, fitted: Fitted, scores: Scores) -> list[str]:
    """The report's evaluation against gold (held out with --folds)."""
    lines = []
    if scores.held_out:
        clamp = ("gold clamped" if fitted.spec.params.get("use_gold")
                 else "gold not used in fitting")
        lines.append(f"held-out evaluation: {args.folds} folds over the gold tasks ({clamp}); "
                     "each gold task scored by a fit that did not see its label"
                     + ("" if args.seed is not None else f" (folds seed {scores.folds_seed})"))
    if fitted.data.gold is None:
        return lines
    evaluation = scores.evaluation
    if evaluation is None:
        return [*lines, "no task with a gold label: nothing to evaluate"]
    lines.append(f"gold tasks {evaluation.n_gold}")
    lines.append(f"accuracy {evaluation.accuracy:.4f}")
    if fitted.data.is_binary:
        lines.append(f"precision {evaluation.precision:.4f}")
        lines.append(f"recall {evaluation.recall:.4f}")
        lines.append(f"f1 {evaluation.f1:.4f}")
    lines.append(f"log_loss {evaluation.log_loss:.4f}")
    lines.append(f"ece {evaluation.ece:.4f}" + ("" if fitted.data.is_binary else " (top grade)"))
    lines.append(f"brier {evaluation.brier:.4f}")
    if evaluation.kappa is not None:
        lines.append(f"mae {evaluation.mae:.4f}")
        lines.append(f"kappa {evaluation.kappa:.4f}")
        lines.append(f"binary_accuracy {evaluation.binary_accuracy:.4f} "
                     f"(P(label >= {args.relevant_from}) >= 0.5)")
    return lines


def _built_features(data: AnnotationData, args: argparse.Namespace
                    ) -> tuple[AnnotationData, dict[str, list[int]]]:
    """Features built from --topics/--documents texts and --runs, as the service builds them."""
    from app.formats.errors import FileFormatError
    from app.formats.runs import merge_runs, parse_runs
    from app.formats.texts import parse_texts
    from models.features import build_features

    def parsed(parse: Callable[[bytes], Any], path: str, option: str) -> Any:
        try:
            return parse(read_input(path, option))
        except FileFormatError as exc:  # which of the files, with its line
            raise UsageError(file_error(exc, path)) from None

    topic_texts = parsed(parse_texts, args.topics, "--topics") if args.topics else None
    doc_texts = parsed(parse_texts, args.documents, "--documents") if args.documents else None
    runs = (merge_runs(parsed(parse_runs, p, "--runs") for p in args.runs)
            if args.runs else None)
    tasks = list(zip(data.topic_ids.tolist(), data.doc_ids.tolist(), strict=True))
    features = build_features(tasks, topic_texts=topic_texts, doc_texts=doc_texts, runs=runs,
                              embeddings=args.embeddings, rank_transform=args.rank_transform)
    for note in features.notes:
        print(f"note: {note}", file=sys.stderr)
    return data.with_features(features.as_dict(), dim=features.dim), features.groups


def add_command(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    aggregate = subparsers.add_parser(
        "aggregate", help="fit an aggregation model on a judgment file, without a server",
        description="Fit an aggregation model on a judgment file (TSV/CSV with a header; the TREC "
                    "RF10 and crowd-kit column names are accepted) and write qrels and tables.",
    )
    aggregate.add_argument("input", nargs="?",
                           help="judgment file (- for standard input); may be left out when "
                                "--judge files are given")
    add_judge_option(aggregate)
    from models.registry import METHOD_PATHS

    aggregate.add_argument("--method", required=True, choices=tuple(METHOD_PATHS))
    aggregate.add_argument("--params", help="model parameters as a JSON object")
    aggregate.add_argument("--gold", help="expert qrels (TREC format); default: the file's gold "
                                          "column, if any")
    aggregate.add_argument("--features", help="task features TSV: topic, doc, f1..fd")
    aggregate.add_argument("--topics", help="topic texts (TSV id<TAB>text, or JSON): with "
                           "--documents, builds lexical features")
    aggregate.add_argument("--documents", help="document texts (TSV id<TAB>text, or JSON)")
    aggregate.add_argument("--runs", nargs="+", default=[], metavar="RUN",
                           help="TREC run files: builds ranking features (--rank-transform)")
    aggregate.add_argument("--rank-transform", choices=["normal", "log_rr", "both"],
                           default="normal",
                           help="the ranking features' form: each run's normal scores within a "
                                "topic (default), its log rank and reciprocal rank, or both")
    aggregate.add_argument("--embeddings", action="store_true",
                           help="also semantic features (needs crowdqrels[embeddings])")
    aggregate.add_argument("--output", help="write the aggregated qrels (TREC) here (- for "
                                            "standard output; the report then goes to stderr)")
    aggregate.add_argument("--annotators", help="write the per-annotator TSV here")
    aggregate.add_argument("--tasks", help="write the per-task TSV here")
    aggregate.add_argument("--joint", metavar="NPZ",
                           help="binary GP fits: write the joint posterior of the tasks here "
                                "(npz), for `evaluate --tasks T --joint NPZ`: draws in which "
                                "tasks that share features move together")
    aggregate.add_argument("--seed", type=seed_arg,
                           help="0 to 2**32 - 1: random_state of the method, if it has one, "
                                "and of the held-out folds (--folds; without a seed: the "
                                "method's random_state, printed, else 0)")
    aggregate.add_argument("--relevant-from", type=int, default=1,
                           help="labels from this value up are relevant (default 1)")
    add_scale_options(aggregate)
    aggregate.add_argument("--graded", action="store_true",
                           help="keep graded labels as classes instead of binarising")
    aggregate.add_argument("--grade", choices=("most_probable", "expected"),
                           default="most_probable",
                           help="graded qrels: the most probable grade (default) or the expected "
                                "grade rounded to the scale")
    aggregate.add_argument("--quiet", action="store_true",
                           help="no progress bar, no TensorFlow log lines")
    aggregate.add_argument("--clamp-gold", action="store_true",
                           help="hold gold labels fixed during fitting (use_gold=true; methods "
                                "with a use_gold parameter)")
    aggregate.add_argument("--folds", type=int_at_least(2), metavar="K",
                           help="score by K-fold over the gold tasks: each fold is predicted by a "
                                "fit without its gold (with --clamp-gold the other folds' gold is "
                                "clamped), so gold never inflates the reported figures")
    aggregate.add_argument("--calibrate", type=int_at_least(0), metavar="K",
                           help="clamp the gold and recalibrate P(relevant) on it, K-fold held "
                                "out (Platt's, the beta or the isotonic map, chosen by held-out "
                                "log loss; calibrate_folds=K, implies --clamp-gold); "
                                "with --folds the calibration is refitted per fold")
    aggregate.set_defaults(func=_aggregate)
