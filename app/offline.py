"""The offline commands: ``crowdqrels aggregate`` (fit a model on a judgment file, no server) and
``crowdqrels synth`` (write an Algorithm-10 synthetic data set).

``load_annotation_data`` is the one "file -> AnnotationData" path; the service can reuse it.
Heavy imports (numpy, the models, tqdm) happen inside the commands, so ``--help`` stays fast.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

    from app.formats.judgments_file import JudgmentRows
    from models.base import Aggregator
    from models.data import AnnotationData
    from models.evaluation import Evaluation

METHODS = ("mv", "mace", "ds", "magp", "gpmv", "lk", "ibcc", "ebcc", "ordinal-ds", "ordinal-gp")
DEFAULT_IGNORE = (-2,)
NOISE_CHOICES = ("0-2", "2-4", "4-8", "8-12")  # models.synthetic.NOISE_LEVELS, without numpy


# -- shared loading ----------------------------------------------------------------------------
def load_annotation_data(
    judgments: bytes | str | JudgmentRows,
    *,
    relevant_from: int = 1,
    graded: bool = False,
    ignore: Iterable[int] = DEFAULT_IGNORE,
    scale: Iterable[int] | None = None,
    gold_qrels: bytes | str | None = None,
    features: bytes | str | None = None,
) -> AnnotationData:
    """Parse a judgment file (TSV/CSV, any accepted header) into AnnotationData.

    Binary by default (label >= ``relevant_from`` is relevant); ``graded`` keeps the label values
    as classes (``scale`` if given, else the values seen). Gold comes from ``gold_qrels`` (TREC
    qrels text) when given, else from the file's ``gold`` column; qrels values in ``ignore`` or
    negative are unknown, and for binary data they are binarised with ``relevant_from``.
    ``features`` is a feature file (topic, doc, f1..fd). Raises FileFormatError on a bad file.
    ``judgments`` may also be the file already parsed (``parse_judgments``).
    """
    from app.formats.features_file import parse_features
    from app.formats.qrels import parse_qrels
    from models.data import AnnotationData

    ignore = tuple(ignore)
    from app.formats.judgments_file import JudgmentRows, parse_judgments

    rows = judgments if isinstance(judgments, JudgmentRows) else parse_judgments(judgments)
    data = AnnotationData.from_rows(
        rows.topics, rows.docs, rows.annotators, rows.labels,
        ignore=ignore,
        relevant_from=None if graded else relevant_from,
        scale=scale if graded else None,
        gold=None if gold_qrels is not None else rows.golds,
    )
    if gold_qrels is not None:
        qrels = parse_qrels(gold_qrels)
        known = {key: value for key, value in qrels.items() if value >= 0 and value not in ignore}
        if not graded:
            known = {key: int(value >= relevant_from) for key, value in known.items()}
        data = data.with_gold(known)
    if features is not None:
        feature_rows = parse_features(features)
        data = data.with_features(feature_rows.vectors, dim=feature_rows.dim)
    return data


def parse_params(text: str | None) -> dict[str, Any]:
    """A command's ``--params``: a JSON object (none: {}); ValueError saying what is wrong."""
    try:
        params = json.loads(text) if text else {}
    except json.JSONDecodeError as exc:
        raise ValueError(f"--params is not valid JSON: {exc}") from exc
    if not isinstance(params, dict):
        raise ValueError("--params must be a JSON object")
    return params


def build_aggregator(method: str, params: dict[str, Any] | None = None,
                     seed: int | None = None, *, relevant_from: int | None = None) -> Aggregator:
    """The registry's aggregator; ``seed`` becomes ``random_state`` when the method has one and
    the params do not set it already; ``relevant_from`` as ``make_aggregator``'s."""
    from models.registry import make_aggregator, with_seed

    return make_aggregator(method, with_seed(method, dict(params or {}), seed),
                           relevant_from=relevant_from)


def score_labels(labels: np.ndarray, proba: np.ndarray, gold: np.ndarray, *,
                 relevant: int = 1, classes: np.ndarray | None = None) -> Evaluation | None:
    """Accuracy / precision / recall / F1 (and for graded data MAE and quadratic κ) of the hard
    ``labels`` (class indices, so a model's own tie rule counts), log loss and binary-view
    accuracy of ``proba``, against gold class indices."""
    from models.evaluation import evaluate

    return evaluate(proba, gold, relevant_index=relevant, classes=classes, labels=labels)


# -- output tables -----------------------------------------------------------------------------
def _fmt(value: float) -> str:
    return "" if value != value else f"{value:.6g}"  # NaN -> empty cell


def _write_tsv(path: Path, header: list[str], rows: Iterable[list[str]]) -> None:
    with path.open("w") as f:
        f.write("\t".join(header) + "\n")
        for row in rows:
            f.write("\t".join(row) + "\n")


def _annotator_table(data: AnnotationData, columns: dict[str, np.ndarray]
                     ) -> tuple[list[str], list[list[str]]]:
    import numpy as np

    columns = dict(columns)
    columns.setdefault("n_judgments", data.judgments_per_annotator().astype(float))
    if data.gold is not None:
        # Agreement with gold: the share of the annotator's judgments on gold tasks that match.
        gold_of = data.gold[data.task]
        on_gold = gold_of >= 0
        n = np.bincount(data.annotator[on_gold], minlength=data.n_annotators).astype(float)
        hits = np.bincount(data.annotator[on_gold],
                           weights=(data.label[on_gold] == gold_of[on_gold]).astype(float),
                           minlength=data.n_annotators)
        columns["n_gold"] = n
        columns["gold_agreement"] = np.divide(hits, n, out=np.full_like(hits, np.nan),
                                              where=n > 0)
    names = list(columns)
    rows = [
        [str(data.annotator_ids[j]), *(_fmt(float(columns[c][j])) for c in names)]
        for j in range(data.n_annotators)
    ]
    return ["annotator", *names], rows


def _task_table(data: AnnotationData, proba: np.ndarray, labels: np.ndarray,
                p_relevant: np.ndarray, columns: dict[str, np.ndarray]
                ) -> tuple[list[str], list[list[str]]]:
    classes = data.classes.tolist()
    names = [c for c in columns if c not in ("p_relevant",)]
    header = ["topic", "doc", "label", "p_relevant", *(f"p_{v}" for v in classes), "gold", *names]
    rows = []
    for i in range(data.n_tasks):
        gold = ""
        if data.gold is not None and data.gold[i] >= 0:
            gold = str(classes[data.gold[i]])
        rows.append([
            str(data.topic_ids[i]), str(data.doc_ids[i]), str(classes[labels[i]]),
            _fmt(float(p_relevant[i])), *(_fmt(float(p)) for p in proba[i]), gold,
            *(_fmt(float(columns[c][i])) for c in names),
        ])
    return header, rows


# -- commands ----------------------------------------------------------------------------------
class _ProgressBar:
    """Feeds a fit's progress(fraction, message) callback into a tqdm bar on stderr."""

    def __init__(self, desc: str, enabled: bool) -> None:
        from tqdm import tqdm

        self.bar = tqdm(total=1000, desc=desc, file=sys.stderr, disable=not enabled,
                        bar_format="{l_bar}{bar}| {elapsed}<{remaining} {postfix}")
        self.done = 0

    def __call__(self, fraction: float, message: str) -> None:
        target = int(round(min(max(fraction, 0.0), 1.0) * 1000))
        if target > self.done:
            self.bar.update(target - self.done)
            self.done = target
        self.bar.set_postfix_str(message, refresh=False)

    def close(self) -> None:
        self.bar.close()


def _aggregate(args: argparse.Namespace) -> int:
    import numpy as np

    from app.formats.errors import FileFormatError
    from app.formats.qrels import format_qrels
    from models.registry import GP_METHODS, InvalidParams, UnknownMethod

    def fail(message: str) -> int:
        print(f"crowdqrels aggregate: error: {message}", file=sys.stderr)
        return 2

    try:
        params = parse_params(args.params)
    except ValueError as exc:
        return fail(str(exc))
    try:
        data = load_annotation_data(
            Path(args.input).read_bytes(),
            relevant_from=args.relevant_from,
            graded=args.graded,
            ignore=args.ignore,
            gold_qrels=Path(args.gold).read_bytes() if args.gold else None,
            features=Path(args.features).read_bytes() if args.features else None,
        )
    except FileFormatError as exc:
        where = f" (line {exc.line})" if exc.line else ""
        return fail(f"{exc.detail}{where}")
    except (OSError, ValueError) as exc:
        return fail(str(exc))
    groups = None
    if args.topics or args.documents or args.runs:
        try:
            data, groups = _built_features(data, args)
        except FileFormatError as exc:
            where = f" (line {exc.line})" if exc.line else ""
            return fail(f"{exc.detail}{where}")
        except (OSError, ValueError, ImportError) as exc:
            return fail(str(exc))
    for note in data.notes:
        print(f"note: {note}", file=sys.stderr)

    from models.features.build import with_kernel_params

    params = with_kernel_params(args.method, params, groups)
    if args.calibrate is not None:
        params["calibrate_folds"] = args.calibrate
    if args.clamp_gold or args.folds or args.calibrate is not None:
        from models.registry import get_method

        if "use_gold" not in get_method(args.method).defaults:
            return fail(f"method {args.method!r} cannot clamp gold labels (no use_gold)")
        if args.clamp_gold or args.calibrate is not None:
            params["use_gold"] = True
    if args.folds is not None and (args.folds < 2 or data.gold is None):
        return fail("--folds needs K >= 2 and gold labels (--gold or a gold column)")
    split = args.relevant_from if args.graded else None  # where --calibrate splits the grades
    try:
        model = build_aggregator(args.method, params, args.seed, relevant_from=split)
    except (UnknownMethod, InvalidParams) as exc:
        return fail(str(exc))
    except ImportError as exc:
        return fail(f"method {args.method!r} is not available: {exc}")

    bar = _ProgressBar(args.method, enabled=not args.quiet)
    try:
        model.fit(data, progress=bar)
        bar(1.0, "done")  # EM may converge before its last iteration
    finally:
        bar.close()
    result = model.result(data)
    labels = np.asarray(model.labels_)

    # Without features (or for non-GP methods) a task nobody judged has no evidence: no qrels line.
    has_evidence = data.judgments_per_task() > 0
    if args.method in GP_METHODS and data.features is not None:
        has_evidence = np.ones(data.n_tasks, dtype=bool)
    emit = has_evidence.copy()
    if "selected" in result.task_columns:  # MACE --threshold: unselected tasks get no label
        emit &= result.task_columns["selected"] > 0

    if args.output:
        qrels_labels = labels
        if args.grade == "expected":
            from models.ordinal_ds import expected_grade_index

            qrels_labels = expected_grade_index(result.proba, data.classes)
        values = data.classes[qrels_labels]
        Path(args.output).write_text(format_qrels(
            (str(data.topic_ids[i]), str(data.doc_ids[i]), int(values[i]))
            for i in np.flatnonzero(emit)
        ))
    if args.annotators:
        header, rows = _annotator_table(data, result.annotator_columns)
        _write_tsv(Path(args.annotators), header, rows)
    from models.evaluation import relevant_index

    relevant = relevant_index(data.classes, args.relevant_from, graded=args.graded)
    if args.tasks:
        p_relevant = result.proba[:, relevant:].sum(axis=1)  # P(label >= relevant_from)
        header, rows = _task_table(data, result.proba, labels, p_relevant, result.task_columns)
        _write_tsv(Path(args.tasks), header, rows)

    print(f"method {args.method}: {data.n_tasks} tasks, {data.n_annotators} annotators, "
          f"{data.n_judgments} judgments, classes {data.classes.tolist()}")
    if "fallback" in result.info:
        print(f"fallback: {result.info['fallback']}")
    scored_labels, scored_proba = labels, result.proba
    if args.folds is not None:
        from models.evaluation.heldout import held_out_seed, heldout_predictions

        held = heldout_predictions(
            lambda: build_aggregator(args.method, params, args.seed, relevant_from=split), data,
            args.folds, random_state=held_out_seed(args.seed, params), full_model=model)
        scored_labels, scored_proba = held.labels, held.proba
        clamp = "gold clamped" if params.get("use_gold") else "gold not used in fitting"
        print(f"held-out evaluation: {args.folds} folds over the gold tasks ({clamp}); each "
              "gold task scored by a fit that did not see its label")
    elif params.get("use_gold") and data.gold is not None:
        print("warning: gold clamped and scored on the same tasks (in-sample, inflated); "
              "use --folds K for a held-out score", file=sys.stderr)
    if data.gold is not None:
        gold = np.where(emit, data.gold, -1)  # the tasks that got a qrels line
        evaluation = score_labels(scored_labels, scored_proba, gold, relevant=relevant,
                                  classes=data.classes)
        if evaluation is None:
            print("no task with a gold label: nothing to evaluate")
        else:
            print(f"gold tasks {evaluation.n_gold}")
            print(f"accuracy {evaluation.accuracy:.4f}")
            if data.is_binary:
                print(f"precision {evaluation.precision:.4f}")
                print(f"recall {evaluation.recall:.4f}")
                print(f"f1 {evaluation.f1:.4f}")
            print(f"log_loss {evaluation.log_loss:.4f}")
            if evaluation.kappa is not None:
                print(f"mae {evaluation.mae:.4f}")
                print(f"kappa {evaluation.kappa:.4f}")
                print(f"binary_accuracy {evaluation.binary_accuracy:.4f} "
                      f"(P(label >= {args.relevant_from}) >= 0.5)")
    return 0


def _built_features(data: AnnotationData, args: argparse.Namespace
                    ) -> tuple[AnnotationData, dict[str, list[int]]]:
    """Features built from --topics/--documents texts and --runs, as the service builds them."""
    from app.formats.runs import merge_runs, parse_runs
    from app.formats.texts import parse_texts
    from models.features import build_features

    if bool(args.topics) != bool(args.documents):
        raise ValueError("--topics and --documents go together (lexical features need both)")
    topic_texts = parse_texts(Path(args.topics).read_bytes()) if args.topics else None
    doc_texts = parse_texts(Path(args.documents).read_bytes()) if args.documents else None
    runs = merge_runs(parse_runs(Path(p).read_bytes()) for p in args.runs) if args.runs else None
    tasks = list(zip(data.topic_ids.tolist(), data.doc_ids.tolist(), strict=True))
    features = build_features(tasks, topic_texts=topic_texts, doc_texts=doc_texts, runs=runs,
                              embeddings=args.embeddings)
    for note in features.notes:
        print(f"note: {note}", file=sys.stderr)
    return data.with_features(features.as_dict(), dim=features.dim), features.groups


def _synth(args: argparse.Namespace) -> int:
    from models.synthetic import NOISE_LEVELS, generate

    if args.grades < 2 or args.bias_sd < 0:
        print("crowdqrels synth: error: --grades must be at least 2 and --bias-sd >= 0",
              file=sys.stderr)
        return 2
    if not 1 <= args.topics <= args.tasks or not args.topic_concentration > 0:
        print("crowdqrels synth: error: --topics must be from 1 to --tasks and "
              "--topic-concentration > 0", file=sys.stderr)
        return 2
    data = generate(args.tasks, args.annotators, noise_level=NOISE_LEVELS[args.noise],
                    redundancy=args.redundancy, grades=args.grades, bias_sd=args.bias_sd,
                    topics=args.topics, topic_concentration=args.topic_concentration,
                    random_state=args.seed)
    paths = data.write(Path(args.outdir))
    for name, path in paths.items():
        print(f"{name}\t{path}")
    return 0


def add_offline_commands(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    aggregate = subparsers.add_parser(
        "aggregate", help="fit an aggregation model on a judgment file, without a server",
        description="Fit an aggregation model on a judgment file (TSV/CSV with a header; the TREC "
                    "RF10 and crowd-kit column names are accepted) and write qrels and tables.",
    )
    aggregate.add_argument("input", help="judgment file")
    aggregate.add_argument("--method", required=True, choices=METHODS)
    aggregate.add_argument("--params", help="model parameters as a JSON object")
    aggregate.add_argument("--gold", help="expert qrels (TREC format); default: the file's gold "
                                          "column, if any")
    aggregate.add_argument("--features", help="task features TSV: topic, doc, f1..fd")
    aggregate.add_argument("--topics", help="topic texts (TSV id<TAB>text, or JSON): with "
                           "--documents, builds lexical features")
    aggregate.add_argument("--documents", help="document texts (TSV id<TAB>text, or JSON)")
    aggregate.add_argument("--runs", nargs="+", default=[], metavar="RUN",
                           help="TREC run files: builds rank / reciprocal-rank features")
    aggregate.add_argument("--embeddings", action="store_true",
                           help="also semantic features (needs crowdqrels[embeddings])")
    aggregate.add_argument("--output", help="write the aggregated qrels (TREC) here")
    aggregate.add_argument("--annotators", help="write the per-annotator TSV here")
    aggregate.add_argument("--tasks", help="write the per-task TSV here")
    aggregate.add_argument("--seed", type=int, help="random_state of the method, if it has one, "
                           "and of the held-out folds (--folds; without a seed: the method's "
                           "random_state, else 0)")
    aggregate.add_argument("--relevant-from", type=int, default=1,
                           help="labels from this value up are relevant (default 1)")
    aggregate.add_argument("--ignore", type=int, nargs="*", default=list(DEFAULT_IGNORE),
                           help="label values meaning 'could not judge' (default -2)")
    aggregate.add_argument("--graded", action="store_true",
                           help="keep graded labels as classes instead of binarising")
    aggregate.add_argument("--grade", choices=("most_probable", "expected"),
                           default="most_probable",
                           help="graded qrels: the most probable grade (default) or the expected "
                                "grade rounded to the scale")
    aggregate.add_argument("--quiet", action="store_true", help="no progress bar")
    aggregate.add_argument("--clamp-gold", action="store_true",
                           help="hold gold labels fixed during fitting (use_gold=true; methods "
                                "with a use_gold parameter)")
    aggregate.add_argument("--folds", type=int, metavar="K",
                           help="score by K-fold over the gold tasks: each fold is predicted by a "
                                "fit without its gold (with --clamp-gold the other folds' gold is "
                                "clamped), so gold never inflates the reported figures")
    aggregate.add_argument("--calibrate", type=int, metavar="K",
                           help="clamp the gold and recalibrate P(relevant) on it, K-fold held "
                                "out (Platt scaling; calibrate_folds=K, implies --clamp-gold); "
                                "with --folds the calibration is refitted per fold")
    aggregate.set_defaults(func=_aggregate)

    synth = subparsers.add_parser(
        "synth", help="write a synthetic data set (thesis Algorithm 10)",
        description="Write judgments.tsv, features.tsv, gold.qrels, annotators.tsv, tasks.tsv.",
    )
    synth.add_argument("outdir")
    synth.add_argument("--tasks", type=int, default=1000)
    synth.add_argument("--annotators", type=int, default=50)
    synth.add_argument("--noise", choices=NOISE_CHOICES, default="0-2",
                       help="annotator noise variance range (default 0-2)")
    synth.add_argument("--redundancy", type=int, default=5)
    synth.add_argument("--seed", type=int)
    synth.add_argument("--grades", type=int, default=2,
                       help="number of grades K (default 2: binary Algorithm 10); labels 0..K-1")
    synth.add_argument("--bias-sd", type=float, default=0.0,
                       help="standard deviation of planted annotator biases (default 0: none)")
    synth.add_argument("--topics", type=int, default=1,
                       help="split the tasks into this many topics, each with its own grade mix "
                            "(default 1: grades uniform, as in Algorithm 10); writes topics.tsv")
    synth.add_argument("--topic-concentration", type=float, default=1.0, metavar="A",
                       help="each topic's grade mix ~ Dirichlet(A, ..., A) (default 1; small: "
                            "topics of mostly one grade)")
    synth.set_defaults(func=_synth)
