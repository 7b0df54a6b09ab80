"""``crowdqrels next``: fit a judgment file and list the tasks to judge next, as the API's
``/next`` does (app.sampling.rejudging)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

    from app.formats.judgments_file import JudgmentRows
    from models.data import AnnotationData


def _next(args: argparse.Namespace) -> int:
    """Fit a model on a judgment file and write the tasks to judge next, as /next does."""
    import json

    import numpy as np

    from app.cli.console import quiet_tensorflow
    from app.cli.errors import UsageError
    from app.cli.loading import load_judgment_file
    from app.cli.options import parse_params
    from app.cli.outputs import check_outputs, write_outputs
    from app.sampling.rejudging import next_tasks_tsv, plan_rows
    from models.pipeline import FitSpec, fit
    from models.registry import BINARY_ONLY_METHODS, InvalidParams, validate_params
    from models.sampling.rejudge import plan_next

    if args.quiet:
        quiet_tensorflow(args.method)
    if args.graded and args.method in BINARY_ONLY_METHODS:
        raise UsageError(f"method {args.method!r} needs binary labels: drop --graded (graded "
                         "GP: ordinal-gp)")
    check_outputs({"--output": args.output}, stdout=True)
    try:
        params = validate_params(args.method, parse_params(args.params))
    except (ValueError, InvalidParams) as exc:
        raise UsageError(str(exc)) from None
    data, rows = load_judgment_file(args, graded=args.graded, quiet=args.quiet)
    spec = FitSpec(args.method, params, args.seed, relevant_from=args.relevant_from,
                   graded=args.graded)
    try:
        model = spec.build()
    except (ValueError, InvalidParams) as exc:
        raise UsageError(str(exc)) from None
    fitted = fit(spec, data, model=model)
    # tasks by (topic, doc), as the service orders them: ties fall the same way
    order = np.lexsort((data.doc_ids.astype(str), data.topic_ids.astype(str)))
    place = np.empty_like(order)
    place[order] = np.arange(order.shape[0])
    proba = np.asarray(model.proba_)[order]
    p_relevant = fitted.p_relevant[order]
    task, annotator, label, cannot = _judged(args, data, rows, place)
    # the competence the service stores with the fit (its annotator column)
    competence = fitted.result.annotator_columns.get("competence")
    competence = (np.full(data.n_annotators, np.nan) if competence is None
                  else np.asarray(competence, dtype=np.float64))
    names = np.array([str(a) for a in data.annotator_ids])
    plan = plan_next(proba, task=task, annotator=annotator, label=label, competence=competence,
                     annotator_names=names, n=args.n, strategy=args.strategy,
                     max_judgments=args.max_judgments, n_annotators=args.annotators,
                     random_state=args.seed,
                     min_annotator_judgments=args.min_annotator_judgments,
                     per_annotator=args.per_annotator, could_not_judge=cannot,
                     keep_could_not_judge=args.keep_could_not_judge)
    labels = data.classes[fitted.labels[order]]
    result = {"method": args.method, "strategy": args.strategy, "data": plan_rows(
        plan, proba=proba, topics=data.topic_ids[order], docs=data.doc_ids[order], labels=labels,
        p_relevant=p_relevant, annotator_names=names)}
    result["count"] = len(result["data"])
    text = (json.dumps(result, indent=1) + "\n" if args.format == "json"
            else next_tasks_tsv(result))
    write_outputs([(args.output or "-", text)])
    return 0


def _judged(args: argparse.Namespace, data: AnnotationData, rows: JudgmentRows,
            place: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Every judgment of the file as (task in (topic, doc) order, annotator, class index,
    whether it is a could-not-judge answer)."""
    import numpy as np

    # every judgment of the file, as the service keeps them: a repeated one counts again, and
    # one with an ignored value means the annotator was asked (label −1: no label)
    task_of = {(str(t), str(d)): int(place[i]) for i, (t, d) in enumerate(
        zip(data.topic_ids, data.doc_ids, strict=True))}
    annotator_of = {str(a): j for j, a in enumerate(data.annotator_ids)}
    ignored = set(args.ignore)
    class_of = {int(v): k for k, v in enumerate(data.classes)}
    judged = [(task_of[(str(t), str(d))], annotator_of[str(a)],
               -1 if v in ignored else class_of.get(
                   int(v) if args.graded else int(v >= args.relevant_from), -1), v in ignored)
              for t, d, a, v in zip(rows.topics, rows.docs, rows.annotators, rows.labels,
                                    strict=True)
              if (str(t), str(d)) in task_of and str(a) in annotator_of]
    task, annotator, label, cannot = (np.array(c, dtype=np.int64) for c in (
        zip(*judged, strict=True) if judged else ((), (), (), ())))
    return task, annotator, label, cannot.astype(bool)


def add_command(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    from app.cli.options import add_scale_options, int_at_least, seed_arg
    from models.registry import METHOD_PATHS
    from models.sampling.rejudge import REJUDGE_STRATEGIES

    following = subparsers.add_parser(
        "next", help="fit a judgment file and list the tasks to judge next (as /next)",
        description="Fit the method on the file, then write the tasks whose next crowd label "
                    "helps most, best first, with the annotators not yet asked (best first by "
                    "the fit's competence): TSV (as /next?format=tsv) or JSON.",
    )
    following.add_argument("input", help="judgment file (TSV/CSV, as for aggregate; - for "
                                         "standard input)")
    following.add_argument("--method", required=True, choices=sorted(METHOD_PATHS))
    following.add_argument("--params", help="the model's parameters as a JSON object")
    following.add_argument("--graded", action="store_true", help="fit the graded labels")
    following.add_argument("--relevant-from", type=int, default=1)
    add_scale_options(following, ignore_help=": the annotator counts as asked, the value as "
                                              "no label")
    following.add_argument("-n", type=int_at_least(1), default=10,
                           help="how many tasks (default 10)")
    following.add_argument("--strategy", choices=REJUDGE_STRATEGIES, default="uncertainty")
    following.add_argument("--max-judgments", type=int_at_least(1), metavar="K",
                           help="only tasks with fewer than K judgments (answers 'could not "
                                "judge', the --ignore values, count)")
    following.add_argument("--keep-could-not-judge", action="store_true",
                           help="also propose tasks mostly answered 'could not judge' (left "
                                "out by default)")
    following.add_argument("--annotators", type=int_at_least(0), default=10,
                           help="annotators to suggest per task (default 10)")
    following.add_argument("--min-annotator-judgments", type=int_at_least(0), default=0,
                           metavar="M",
                           help="suggest only annotators with at least M labels (default 0)")
    following.add_argument("--per-annotator", type=int_at_least(1), metavar="C",
                           help="assign at most C of the listed tasks to one annotator "
                                "(default: each task to its best annotator)")
    following.add_argument("--seed", type=seed_arg,
                           help="0 to 2**32 - 1: random_state of the method and of the random "
                                "strategy")
    following.add_argument("--format", choices=("tsv", "json"), default="tsv")
    following.add_argument("--output", help="write here (default, or -: standard output)")
    following.add_argument("--quiet", action="store_true", help="no notes, no TensorFlow log "
                                                               "lines")
    following.set_defaults(func=_next)
