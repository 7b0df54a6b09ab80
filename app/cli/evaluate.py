"""``crowdqrels evaluate``: score runs on qrels or on an aggregation's posterior, without a
server; the same computation (and, for the same posterior and seed, the same numbers) as the
API's evaluation job."""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

    from app.formats.runs import TrecRun
    from models.evaluation.joint import JointLoadings
    from models.evaluation.parameters import AnnotatorDraws
    from models.evaluation.uncertainty import Posterior



def _population_prior(value: str) -> float | None:
    """``--population-prior``: a strength S >= 0, or ``ml`` (None: DS's type-II ML strength)."""
    if value == "ml":
        return None
    try:
        strength = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number or 'ml', got {value!r}") from None
    if not strength >= 0:
        raise argparse.ArgumentTypeError(f"expected a number >= 0 or 'ml', got {value!r}")
    return strength

def add_command(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    from app.cli.options import int_at_least, seed_arg

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
    evaluate.add_argument("--samples", type=int_at_least(0), default=None,
                          help="draws of the qrels from the --tasks posterior (default 1000; "
                               "fixed --qrels have nothing to draw)")
    evaluate.add_argument("--seed", type=seed_arg, default=0,
                          help="seed of the draws, 0 to 2**32 - 1 (default 0)")
    evaluate.add_argument("--joint", metavar="NPZ",
                          help="the GP fit's joint posterior (`aggregate --joint NPZ`, with "
                               "--tasks of the same fit): the draws move tasks that share "
                               "features together, as the service's evaluation of a GP fit does")
    evaluate.add_argument("--gold", help="reference qrels for Kendall's tau (default: the gold "
                                         "column of --tasks, if any)")
    evaluate.add_argument("--interval", choices=("posterior", "ppi"), default="posterior",
                          help="posterior: the 95%% interval of the draws; ppi: prediction-"
                               "powered intervals of the means over topics (and of the paired "
                               "differences), the gold labels (--gold, or the gold column of "
                               "--tasks) a random sample of the judged pairs correcting the "
                               "posterior's bias (default posterior)")
    evaluate.add_argument("--judgments", metavar="FILE",
                          help="the judgment file the --tasks posterior was fitted on: each draw "
                               "then first draws the annotators' parameters from their posterior "
                               "(confusion matrices; MACE's with --annotators), then every task's "
                               "label given them, so one annotator's errors move together")
    evaluate.add_argument("--annotators", metavar="TSV",
                          help="with --judgments: the annotators TSV of the fit (aggregate "
                               "--annotators); its spam_p_<label> columns make MACE's draws")
    evaluate.add_argument("--population-prior", type=_population_prior, default=0.0,
                          metavar="S|ml",
                          help="with --judgments, for a ds fit: its population_prior, or 'ml' "
                               "for ds's default (its strength type-II ML, found again from "
                               "the judgments); the draws then use the fit's own prior on each "
                               "confusion row, as the service's do (default 0: other methods)")
    # the methods with annotator parameters (models.evaluation.parameters.METHOD_FAMILY; a test
    # keeps the two equal), named here so that the parser imports no model
    evaluate.add_argument("--method", choices=("ds", "ebcc", "ibcc", "mace", "ordinal-ds"),
                          default=None,
                          help="with --judgments: the fit's method; the draws then use its own "
                               "prior on the annotators' parameters (with --params), as the "
                               "service's do (default: DS's with --population-prior, Dir(1) "
                               "rows and MACE's Beta(1, 1))")
    evaluate.add_argument("--params", default=None, metavar="JSON",
                          help="with --method: the fit's params, and for a choice its \"auto\" "
                               "made, the one its info names (e.g. {\"class_prior\": "
                               "\"learned\"} for MACE, {\"prior\": \"fixed\"} for IBCC)")
    evaluate.add_argument("--readout", type=float, nargs=2, default=None, metavar=("TAU", "RHO"),
                          help="with --judgments, for a fit with the gold-free read-out: its "
                               "info's readout_temperature and readout_rho; the draws then start "
                               "from the fit's own posterior, as the service's do")
    evaluate.add_argument("--draws", choices=("parameters", "labels"), default=None,
                          help="parameters: the annotators' parameters, then the labels (needs "
                               "--judgments); labels: every task's label independently from "
                               "--tasks (default: parameters with --judgments, else labels)")
    evaluate.add_argument("--relevant-from", type=int, default=1,
                          help="lowest label value that counts as relevant")
    evaluate.add_argument("--format", choices=("json", "tsv", "trec"), default="json")
    evaluate.add_argument("--output", help="write here (default, or -: standard output)")
    evaluate.add_argument("--quiet", action="store_true", help="no progress bar")
    evaluate.set_defaults(func=_evaluate)


def _evaluate(args: argparse.Namespace) -> int:
    from app.cli.console import ProgressBar
    from app.cli.errors import UsageError
    from app.cli.outputs import check_outputs, write_outputs
    from models.evaluation.measures import DEFAULT_MEASURES, UnknownMeasure, parse_measures
    from models.evaluation.scoring import evaluate_runs, format_trec, format_tsv, report
    from models.evaluation.uncertainty import Posterior

    try:
        measures = parse_measures(args.measures or DEFAULT_MEASURES)
    except UnknownMeasure as exc:
        raise UsageError(str(exc)) from None
    check_outputs({"--output": args.output}, stdout=True)
    samples = args.samples
    if args.qrels and samples:
        print("warning: --samples applies to a --tasks posterior; fixed --qrels have nothing "
              "to draw: ignored", file=sys.stderr)
    if samples is None:
        samples = 1000
    draws = args.draws or ("parameters" if args.judgments else "labels")
    if draws == "parameters" and not args.judgments:
        raise UsageError("--draws parameters needs --judgments (the judgments of the fit)")
    if args.annotators and not args.judgments:
        raise UsageError("--annotators goes with --judgments")
    if args.qrels and args.judgments:
        raise UsageError("--judgments goes with --tasks: fixed --qrels have nothing to draw")
    posterior, gold, runs = _read_inputs(args)
    gold_class = _ppi_gold(args, posterior, gold, samples) if args.interval == "ppi" else None
    joint = _joint(args.joint, posterior) if args.joint else None
    stochastic = samples > 0 and not posterior.deterministic
    parameters = (_parameter_draws(args, posterior, samples)
                  if draws == "parameters" and stochastic and joint is None else None)
    bar = ProgressBar("evaluate", enabled=not args.quiet)
    try:
        scores = evaluate_runs(posterior, runs, measures, samples=samples, seed=args.seed,
                               progress=bar, gold_class=gold_class, parameters=parameters,
                               joint=joint)
    finally:
        bar.close()
    reference = None
    if gold:
        reference = evaluate_runs(Posterior.from_qrels(gold, relevant_from=args.relevant_from),
                                  runs, measures, samples=0)
    result = report(scores, reference=reference)
    if not result["samples"]:
        result["draws"] = None  # how draws were made (report: labels, parameters, joint-gp)
    for run, count in result["unjudged_topics"].items():
        print(f"run {run}: {count} topic(s) without judgments, not scored", file=sys.stderr)
    if args.format == "json":
        text = json.dumps(result, indent=1) + "\n"
    elif args.format == "tsv":
        text = format_tsv(result["results"])
    else:
        text = format_trec(result["results"])
    write_outputs([(args.output or "-", text)])
    return 0


def _joint(path: str, posterior: Posterior) -> JointLoadings:
    """The loadings of ``aggregate --joint``; a usage error for a file that is not one, or a
    posterior they cannot draw (fixed --qrels, graded)."""
    from app.cli.errors import UsageError
    from models.evaluation.joint import JointLoadings

    if len(posterior.classes) != 2 or posterior.relevant_index != 1:
        raise UsageError("--joint draws binary posteriors only (the --tasks of a binary GP fit)")
    try:
        with open(path, "rb") as f:
            return JointLoadings.from_bytes(f.read())
    except OSError as exc:
        raise UsageError(f"--joint {path}: {exc.strerror}") from None
    except ValueError as exc:
        raise UsageError(f"--joint {path}: {exc}; write one with `aggregate --joint`") from None


def _read_inputs(args: argparse.Namespace
                 ) -> tuple[Posterior, dict[tuple[str, str], int], dict[str, TrecRun]]:
    """(the posterior of --qrels or --tasks, the gold of --gold or of the tasks file, the
    merged --runs); UsageError naming the file that cannot be read."""
    from app.cli.errors import UsageError
    from app.cli.loading import file_error, read_input
    from app.evaluations.inputs import posterior_from_qrels, posterior_from_tasks
    from app.formats.errors import FileFormatError
    from app.formats.qrels import parse_qrels
    from app.formats.runs import merge_runs, parse_runs

    gold: dict[tuple[str, str], int] = {}
    current = args.qrels or args.tasks
    try:
        if args.qrels:
            posterior = posterior_from_qrels(read_input(args.qrels, "--qrels"),
                                             relevant_from=args.relevant_from)
        else:
            posterior, gold = posterior_from_tasks(read_input(args.tasks, "--tasks"),
                                                   relevant_from=args.relevant_from)
        if args.gold:
            current = args.gold
            gold = parse_qrels(read_input(args.gold, "--gold"))
        parsed = []
        for path in args.runs:  # one at a time: an error names its file
            current = path
            parsed.append(parse_runs(read_input(path, "--runs")))
        return posterior, gold, merge_runs(parsed)
    except FileFormatError as exc:
        raise UsageError(file_error(exc, current)) from None


def _ppi_gold(args: argparse.Namespace, posterior: Posterior,
              gold: dict[tuple[str, str], int], samples: int) -> np.ndarray:
    """The gold class of each judged pair for ``--interval ppi``; a usage error (exit 2,
    ``ppi_needs_gold`` with the counts) when the gold cannot carry a prediction-powered
    interval."""
    from app.cli.errors import UsageError
    from models.evaluation.ppi import PPINeedsGold, check_gold, gold_classes

    if samples == 0 and not posterior.deterministic:
        raise UsageError("--interval ppi needs draws of the posterior: --samples > 0")
    gold_class = gold_classes(posterior.classes, posterior.relevant_index, posterior.topics,
                              posterior.docs, gold, args.relevant_from)
    try:
        check_gold(gold_class, posterior.relevant_index)
    except PPINeedsGold as exc:
        raise UsageError(f"ppi_needs_gold: {exc} (give --gold QRELS, or a gold column in "
                         "--tasks)") from None
    return gold_class


def _parameter_draws(args: argparse.Namespace, posterior: Posterior,
                     samples: int) -> AnnotatorDraws:
    """The annotators' parameter draws for ``--judgments`` (and ``--annotators``): the same
    function as the service's evaluation job, on the judgments of the --tasks pairs."""
    import numpy as np

    from app.cli.errors import UsageError
    from app.cli.loading import file_error, load_annotation_data, read_input
    from app.evaluations.inputs import mace_parameters
    from app.formats.errors import FileFormatError
    from models.evaluation.parameters import RowPrior, draw_parameters

    graded = posterior.classes.tolist() != [0, 1]
    current = args.judgments
    try:
        data = load_annotation_data(read_input(args.judgments, "--judgments"),
                                    relevant_from=args.relevant_from, graded=graded,
                                    scale=posterior.classes.tolist() if graded else None)
        mace = None
        if args.annotators:
            current = args.annotators
            mace = mace_parameters(read_input(args.annotators, "--annotators"),
                                   annotators=data.annotator_ids, classes=posterior.classes)
    except FileFormatError as exc:
        raise UsageError(file_error(exc, current)) from None
    except ValueError as exc:
        raise UsageError(f"{current}: {exc}") from None
    if data.classes.tolist() != posterior.classes.tolist():
        raise UsageError(f"--judgments has the classes {data.classes.tolist()}, --tasks "
                         f"{posterior.classes.tolist()}: give the fit's own judgments (and "
                         "--relevant-from)")
    row_of = {key: r for r, key in enumerate(zip(posterior.topics.tolist(),
                                                  posterior.docs.tolist(), strict=True))}
    rows = np.array([row_of.get(key, -1) for key in zip(data.topic_ids.tolist(),
                                                       data.doc_ids.tolist(), strict=True)],
                    dtype=np.int64)
    on = rows[data.task] >= 0  # judgments of pairs the --tasks posterior has
    if not on.any():
        raise UsageError("--judgments has no judgment of a --tasks pair")
    family = "confusion" if mace is None else "mace"
    proba = posterior.proba
    if args.readout is not None:  # the fit's own posterior, not its read-out (models.tempering)
        from models.tempering import plugin_posterior

        proba = plugin_posterior(proba, rows[data.task][on], proba.shape[0],
                                 {"readout_temperature": args.readout[0],
                                  "readout_rho": args.readout[1]})
    row_prior, class_prior = None, mace is None
    if args.method is not None:
        params = _fit_params(args.params)
        row_prior = RowPrior.of_fit(args.method, params, {
            "confusion_prior": None if params.get("prior") in (None, "auto") else params["prior"],
            "class_prior": params.get("class_prior")})
        if mace is not None:  # MACE's class prior is drawn when the fit learned one
            class_prior = params.get("class_prior") == "learned"
    return draw_parameters(family, proba, rows[data.task][on], data.annotator[on],
                           data.label[on], samples=samples, seed=args.seed,
                           competence=None if mace is None else mace[0],
                           spam=None if mace is None else mace[1], class_prior=class_prior,
                           population_prior=args.population_prior if mace is None else 0.0,
                           row_prior=row_prior)


def _fit_params(text: str | None) -> dict:
    """``--params``: a JSON object (UsageError otherwise)."""
    from app.cli.errors import UsageError

    try:
        params = json.loads(text or "{}")
    except json.JSONDecodeError as exc:
        raise UsageError(f"--params is not JSON: {exc}") from None
    if not isinstance(params, dict):
        raise UsageError("--params must be a JSON object")
    return params
