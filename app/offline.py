"""The offline commands: ``crowdqrels aggregate`` (fit a model on a judgment file, no server) and
``crowdqrels synth`` (write an Algorithm-10 synthetic data set).

``load_annotation_data`` is the one "file -> AnnotationData" path; the service can reuse it.
Heavy imports (numpy, the models, tqdm) happen inside the commands, so ``--help`` stays fast.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

    from app.formats.errors import FileFormatError
    from app.formats.judgments_file import JudgmentRows
    from models.base import Aggregator
    from models.data import AnnotationData
    from models.evaluation import Evaluation

METHODS = ("mv", "mace", "ds", "magp", "gpmv", "lk", "ibcc", "ebcc", "ordinal-ds", "ordinal-gp")
# The GP methods that read two classes only (models.registry.GP_METHODS less the ordinal one):
# refused with --graded before TensorFlow is imported.
BINARY_ONLY_METHODS = frozenset({"magp", "gpmv", "lk"})
DEFAULT_IGNORE = (-2,)
NOISE_CHOICES = ("0-2", "2-4", "4-8", "8-12")  # models.synthetic.NOISE_LEVELS, without numpy
MAX_SEED = 2**32 - 1  # app.core.integers.MAX_SEED (numpy's seeds), without importing pydantic


# -- options, errors and outputs shared by the offline commands ----------------------------------
class UsageError(Exception):
    """A bad option or input: ``crowdqrels`` prints ``crowdqrels COMMAND: error: …`` and exits
    2. Commands raise it before writing anything."""


def seed_arg(text: str) -> int:
    """``--seed``: one rule for every command, a whole number from 0 to 2**32 - 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a whole number, got {text!r}") from None
    if not 0 <= value <= MAX_SEED:
        raise argparse.ArgumentTypeError(f"must be from 0 to 2**32 - 1, got {value}")
    return value


def int_at_least(low: int) -> Callable[[str], int]:
    """An argparse type: a whole number >= ``low``."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be a whole number, got {text!r}") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"must be at least {low}, got {value}")
        return value
    return parse


def share_arg(*, zero: bool) -> Callable[[str], float]:
    """An argparse type: a share of the judgments, in (0, 1] (``zero``: [0, 1])."""
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be a number, got {text!r}") from None
        if not (0.0 <= value <= 1.0 if zero else 0.0 < value <= 1.0):
            bounds = "from 0 to 1" if zero else "above 0 and at most 1"
            raise argparse.ArgumentTypeError(f"must be {bounds}, got {text}")
        return value
    return parse


def file_error(exc: FileFormatError, path: str | None = None) -> str:
    """A file error as one line: the file's name, then the line number once."""
    detail = exc.detail
    if exc.line and not detail.startswith(f"line {exc.line}"):
        detail = f"line {exc.line}: {detail}"
    return f"{path}: {detail}" if path else detail


def read_input(path: str, option: str | None = None) -> bytes:
    """An input file's bytes (``-``: standard input); UsageError naming the option if unreadable."""
    if path == "-":
        return sys.stdin.buffer.read()
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        what = f"{option} {path}" if option else path
        raise UsageError(f"{what}: {exc.strerror or exc}") from None


def check_outputs(outputs: dict[str, str | None], *, stdout: bool = False) -> None:
    """Refuse, before any work, an output path that cannot be written: a directory, a missing
    or read-only directory, the same file for two options, ``-`` (standard output) where
    ``stdout`` is false or twice."""
    seen: dict[str, str] = {}
    for option, value in outputs.items():
        if value is None:
            continue
        if value == "-":
            if not stdout:
                raise UsageError(f"{option}: '-' (standard output) is not allowed here")
            key = "-"
        else:
            path = Path(value)
            if path.is_dir():
                raise UsageError(f"{option} {value}: is a directory")
            parent = path.parent
            if not parent.is_dir():
                raise UsageError(f"{option} {value}: directory {str(parent)!r} does not exist")
            if path.exists() and not path.is_file():  # /dev/stdout, a FIFO: written in place
                if not os.access(path, os.W_OK):
                    raise UsageError(f"{option} {value}: not writable")
            elif not os.access(parent, os.W_OK | os.X_OK):
                raise UsageError(f"{option} {value}: directory {str(parent)!r} is not writable")
            key = str(path.resolve())
        if key in seen:
            raise UsageError(f"{seen[key]} and {option} name the same file {value!r}")
        seen[key] = option


def write_outputs(files: list[tuple[str, str]]) -> None:
    """Write (path, text) pairs all or nothing: each into a temporary file in its directory,
    then all renamed over their targets (``-``: standard output, last; a path that is not a
    regular file, such as /dev/stdout, written in place)."""
    staged: list[tuple[str, Path]] = []
    direct: list[tuple[str, str]] = []
    try:
        for target, text in files:
            path = Path(target)
            if target == "-" or (path.exists() and not path.is_file()):
                direct.append((target, text))
                continue
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
            staged.append((tmp, path))
            with os.fdopen(fd, "w") as f:
                f.write(text)
            os.chmod(tmp, path.stat().st_mode & 0o7777 if path.exists() else _default_mode())
        for tmp, path in staged:
            os.replace(tmp, path)
    except BaseException:
        for tmp, _ in staged:
            Path(tmp).unlink(missing_ok=True)
        raise
    for target, text in direct:
        if target == "-":
            sys.stdout.write(text)
            sys.stdout.flush()
        else:
            with open(target, "w") as f:
                f.write(text)


def _default_mode() -> int:
    """The mode a plain open(path, "w") would give a new file (0o666 less the umask)."""
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def quiet_tensorflow(method: str | None = None) -> None:
    """--quiet: silence TensorFlow's start-up and log lines (before it is imported). Its
    start-up lines (oneDNN, CUDA drivers) come from C++ logging that ignores
    TF_CPP_MIN_LOG_LEVEL and writes to file descriptor 2 itself: for a ``method`` that uses
    TensorFlow it is imported here, with that descriptor sent to /dev/null for the import."""
    os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
    import logging

    logging.getLogger("tensorflow").setLevel(logging.ERROR)
    from models.registry import GP_METHODS

    if method in GP_METHODS and "tensorflow" not in sys.modules:
        sys.stderr.flush()
        saved, devnull = os.dup(2), os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(devnull, 2)
            import tensorflow  # noqa: F401  (its start-up lines go to /dev/null)
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            os.close(devnull)


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


def check_scale(rows: JudgmentRows, *, labels: Iterable[int] | None, ignore: Iterable[int],
                path: str, gold_qrels: bytes | None = None, gold_path: str | None = None
                ) -> list[str]:
    """Labels and gold against the scale. With ``labels`` (the collection's scale, as the API's
    ``labels``): UsageError naming the file and line of the first label, or gold value >= 0,
    that is neither on it nor in ``ignore``. Without: warnings naming the values that look out
    of place (negative and not ignored, or past a gap above the lowest run of labels: 7 next to
    0, 1, 2; gold values no judgment uses). A negative gold value means "no gold" (RF10's -1)."""
    ignored = set(ignore)
    qrels_gold = _qrels_values(gold_qrels) if gold_qrels is not None else []
    golds = [(line, g) for line, g in zip(rows.lines, rows.golds or (), strict=False)
             if g is not None and g >= 0 and g not in ignored]
    if labels is not None:
        allowed = set(labels) | ignored
        scale = " ".join(str(v) for v in sorted(set(labels)))
        for line, value in zip(rows.lines, rows.labels, strict=True):
            if value not in allowed:
                raise UsageError(f"{path}: line {line}: label {value} is not on the scale "
                                 f"(--labels {scale}) nor an --ignore value")
        for where, gpath, items in (("gold", path, golds), ("relevance", gold_path, qrels_gold)):
            for line, value in items:
                if value >= 0 and value not in allowed:
                    raise UsageError(f"{gpath}: line {line}: {where} {value} is not on the "
                                     f"scale (--labels {scale})")
        return []
    seen: dict[int, tuple[int, int]] = {}  # value -> (count, first line)
    for line, value in zip(rows.lines, rows.labels, strict=True):
        if value not in ignored:
            count, first = seen.get(value, (0, line))
            seen[value] = (count + 1, first)
    values = sorted(seen)
    run: set[int] = set()
    non_negative = [v for v in values if v >= 0]
    if non_negative:
        v = non_negative[0]
        while v in seen:
            run.add(v)
            v += 1
    warnings = []
    odd = [v for v in values if v not in run]
    if odd and run:
        listed = ", ".join(f"{v} ({seen[v][0]} judgment(s), first on line {seen[v][1]})"
                           for v in odd)
        warnings.append(f"{path}: label value(s) {listed} look out of place next to "
                        f"{min(run)}..{max(run)}; pass the scale (--labels) to refuse them, "
                        "or --ignore them")
    for where, gpath, items in (("gold", path, golds), ("relevance", gold_path, qrels_gold)):
        stray = sorted({v for _, v in items if v >= 0 and v not in run and v not in ignored})
        if stray and run:
            firsts = ", ".join(f"{v} (first on line {next(n for n, g in items if g == v)})"
                               for v in stray)
            warnings.append(f"{gpath}: {where} value(s) {firsts} not among the labels "
                            f"{min(run)}..{max(run)}; pass the scale (--labels) to refuse them")
    return warnings


def _qrels_values(raw: bytes) -> list[tuple[int, int]]:
    """(line, relevance) of a TREC qrels text, for messages only (``parse_qrels`` reads it)."""
    out = []
    for n, line in enumerate(raw.decode("utf-8", "replace").splitlines(), start=1):
        fields = line.split()
        if len(fields) >= 4:
            try:
                out.append((n, int(fields[3])))
            except ValueError:
                continue
    return out


def load_judgment_file(args: argparse.Namespace, *, graded: bool = False,
                       features: str | None = None, quiet: bool = False
                       ) -> tuple[AnnotationData, JudgmentRows]:
    """``args.input`` (with ``--labels``, ``--ignore``, ``--relevant-from``, ``--gold``) as
    AnnotationData and its parsed rows; UsageError on an unreadable or bad file, a label or gold
    off the scale; warnings (values out of place) and, unless ``quiet``, the loader's notes on
    standard error."""
    from app.formats.errors import FileFormatError
    from app.formats.judgments_file import parse_judgments

    labels = getattr(args, "labels", None)
    ignore = tuple(getattr(args, "ignore", DEFAULT_IGNORE))
    gold_path = getattr(args, "gold", None)
    if labels is not None:
        scale = sorted(set(labels) - set(ignore))
        if len(scale) < 2:
            raise UsageError("--labels needs at least two values that are not --ignore values")
        if not scale[0] < args.relevant_from <= scale[-1]:
            raise UsageError(f"--relevant-from {args.relevant_from} must be above the lowest "
                             f"label and at most the highest (--labels "
                             f"{' '.join(map(str, scale))})")
    raw = read_input(args.input)
    gold = read_input(gold_path, "--gold") if gold_path else None
    feature_bytes = read_input(features, "--features") if features else None
    current = args.input
    try:
        rows = parse_judgments(raw)
        if rows.ignored_columns and not quiet:
            print(f"note: {args.input}: columns not read: {', '.join(rows.ignored_columns)}",
                  file=sys.stderr)
        for warning in check_scale(rows, labels=labels, ignore=ignore, path=args.input,
                                   gold_qrels=gold, gold_path=gold_path):
            print(f"warning: {warning}", file=sys.stderr)
        if graded and labels is None and len({v for v in rows.labels if v not in ignore}) < 2:
            raise UsageError("graded labels need at least two label values: pass the scale "
                             "with --labels (e.g. --labels 0 1 2)")
        current = gold_path
        data = load_annotation_data(rows, relevant_from=args.relevant_from, graded=graded,
                                    ignore=ignore, scale=labels, gold_qrels=gold)
        current = features
        if feature_bytes is not None:
            from app.formats.features_file import parse_features

            feature_rows = parse_features(feature_bytes)
            data = data.with_features(feature_rows.vectors, dim=feature_rows.dim)
    except FileFormatError as exc:
        raise UsageError(file_error(exc, current)) from None
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    for note in () if quiet else data.notes:
        print(f"note: {note}", file=sys.stderr)
    return data, rows


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


def _tsv_text(header: list[str], rows: Iterable[list[str]]) -> str:
    return "".join("\t".join(row) + "\n" for row in (header, *rows))


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
    """Every option and output path is checked before the file is read; the outputs are written
    (atomically) only once the fit and the held-out scores have succeeded."""
    if args.quiet:
        quiet_tensorflow(args.method)
    try:
        params = parse_params(args.params)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
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
                   "--tasks": args.tasks}, stdout=True)
    if bool(args.topics) != bool(args.documents):
        raise UsageError("--topics and --documents go together (lexical features need both)")
    from models.registry import InvalidParams, UnknownMethod, validate_params

    try:
        validate_params(args.method, params)
    except (UnknownMethod, InvalidParams) as exc:
        raise UsageError(str(exc)) from None
    except ImportError as exc:
        raise UsageError(f"method {args.method!r} is not available: {exc}") from None

    import numpy as np

    from app.formats.qrels import format_qrels
    from models.registry import GP_METHODS

    data, _ = load_judgment_file(args, graded=args.graded, features=args.features,
                                 quiet=args.quiet)
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

    params = with_kernel_params(args.method, params, groups)
    split = args.relevant_from if args.graded else None  # where --calibrate splits the grades
    try:
        model = build_aggregator(args.method, params, args.seed, relevant_from=split)
    except (UnknownMethod, InvalidParams) as exc:
        raise UsageError(str(exc)) from None
    except ImportError as exc:
        raise UsageError(f"method {args.method!r} is not available: {exc}") from None

    # The report goes to standard error when the qrels go to standard output.
    report = sys.stderr if "-" in (args.output, args.annotators, args.tasks) else sys.stdout
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

    outputs: list[tuple[str, str]] = []
    if args.output:
        qrels_labels = labels
        if args.grade == "expected" and args.graded:
            from models.ordinal_ds import expected_grade_index

            qrels_labels = expected_grade_index(result.proba, data.classes)
        values = data.classes[qrels_labels]
        outputs.append((args.output, format_qrels(
            (str(data.topic_ids[i]), str(data.doc_ids[i]), int(values[i]))
            for i in np.flatnonzero(emit)
        )))
    if args.annotators:
        header, rows = _annotator_table(data, result.annotator_columns)
        outputs.append((args.annotators, _tsv_text(header, rows)))
    from models.evaluation import relevant_index

    relevant = relevant_index(data.classes, args.relevant_from, graded=args.graded)
    if args.tasks:
        p_relevant = result.proba[:, relevant:].sum(axis=1)  # P(label >= relevant_from)
        header, rows = _task_table(data, result.proba, labels, p_relevant, result.task_columns)
        outputs.append((args.tasks, _tsv_text(header, rows)))

    lines = [f"method {args.method}: {data.n_tasks} tasks, {data.n_annotators} annotators, "
             f"{data.n_judgments} judgments, classes {data.classes.tolist()}"]
    used_seed = params.get("random_state", getattr(model, "random_state", None))
    if args.seed is None and isinstance(used_seed, int):
        lines.append(f"seed {used_seed} (the method's random_state; --seed to choose one)")
    if "fallback" in result.info:
        lines.append(f"fallback: {result.info['fallback']}")
    scored_labels, scored_proba = labels, result.proba
    if args.folds is not None:
        from models.evaluation.heldout import held_out_seed, heldout_predictions

        fold_seed = held_out_seed(args.seed, params)
        held = heldout_predictions(
            lambda: build_aggregator(args.method, params, args.seed, relevant_from=split), data,
            args.folds, random_state=fold_seed, full_model=model)
        scored_labels, scored_proba = held.labels, held.proba
        clamp = "gold clamped" if params.get("use_gold") else "gold not used in fitting"
        lines.append(f"held-out evaluation: {args.folds} folds over the gold tasks ({clamp}); "
                     "each gold task scored by a fit that did not see its label"
                     + ("" if args.seed is not None else f" (folds seed {fold_seed})"))
    elif params.get("use_gold") and data.gold is not None:
        print("warning: gold clamped and scored on the same tasks (in-sample, inflated); "
              "use --folds K for a held-out score", file=sys.stderr)
    if data.gold is not None:
        gold = np.where(emit, data.gold, -1)  # the tasks that got a qrels line
        evaluation = score_labels(scored_labels, scored_proba, gold, relevant=relevant,
                                  classes=data.classes)
        if evaluation is None:
            lines.append("no task with a gold label: nothing to evaluate")
        else:
            lines.append(f"gold tasks {evaluation.n_gold}")
            lines.append(f"accuracy {evaluation.accuracy:.4f}")
            if data.is_binary:
                lines.append(f"precision {evaluation.precision:.4f}")
                lines.append(f"recall {evaluation.recall:.4f}")
                lines.append(f"f1 {evaluation.f1:.4f}")
            lines.append(f"log_loss {evaluation.log_loss:.4f}")
            if evaluation.kappa is not None:
                lines.append(f"mae {evaluation.mae:.4f}")
                lines.append(f"kappa {evaluation.kappa:.4f}")
                lines.append(f"binary_accuracy {evaluation.binary_accuracy:.4f} "
                             f"(P(label >= {args.relevant_from}) >= 0.5)")
    write_outputs(outputs)  # only now: everything above succeeded
    print("\n".join(lines), file=report)
    return 0


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
                              embeddings=args.embeddings)
    for note in features.notes:
        print(f"note: {note}", file=sys.stderr)
    return data.with_features(features.as_dict(), dim=features.dim), features.groups


def _synth(args: argparse.Namespace) -> int:
    if args.grades < 2 or args.bias_sd < 0:
        raise UsageError("--grades must be at least 2 and --bias-sd >= 0")
    if args.redundancy > args.annotators:
        raise UsageError(f"--redundancy {args.redundancy} is more than --annotators "
                         f"{args.annotators}: each task is judged by that many different "
                         "annotators")
    if args.topics > args.tasks:
        raise UsageError(f"--topics {args.topics} is more than --tasks {args.tasks}")
    if not args.topic_concentration > 0:
        raise UsageError("--topic-concentration must be above 0")
    check_output_dir(args.outdir, "OUTDIR")
    from models.synthetic import NOISE_LEVELS, generate

    if args.seed is None:
        import numpy as np

        args.seed = int(np.random.SeedSequence().entropy % (MAX_SEED + 1))
        print(f"seed {args.seed} (none given; --seed {args.seed} repeats this data set)",
              file=sys.stderr)
    data = generate(args.tasks, args.annotators, noise_level=NOISE_LEVELS[args.noise],
                    redundancy=args.redundancy, grades=args.grades, bias_sd=args.bias_sd,
                    topics=args.topics, topic_concentration=args.topic_concentration,
                    random_state=args.seed)
    paths = data.write(Path(args.outdir))
    for name, path in paths.items():
        print(f"{name}\t{path}")
    return 0


def check_output_dir(value: str, option: str) -> None:
    """An output directory: an existing directory we may write in, or a new one whose nearest
    existing ancestor is a writable directory (created only once the work has succeeded)."""
    path = Path(value)
    if path.exists() and not path.is_dir():
        raise UsageError(f"{option} {value}: exists and is not a directory")
    probe = path
    while not probe.exists():
        probe = probe.parent
    if not probe.is_dir():
        raise UsageError(f"{option} {value}: {str(probe)!r} is not a directory")
    if not os.access(probe, os.W_OK | os.X_OK):
        raise UsageError(f"{option} {value}: {str(probe)!r} is not writable")


def add_scale_options(parser: argparse.ArgumentParser, *, ignore_help: str = "") -> None:
    """--labels (the scale) and --ignore, as the API's collection ``labels`` and ``ignore``."""
    parser.add_argument("--labels", type=int, nargs="+", metavar="V",
                        help="the label scale, e.g. --labels 0 1 2 (the API's collection "
                             "labels): a label or gold value off it (and not --ignore) is refused "
                             "with its line; default: any, with a warning for values that look "
                             "out of place")
    parser.add_argument("--ignore", type=int, nargs="*", default=list(DEFAULT_IGNORE),
                        metavar="V",
                        help="label values meaning 'could not judge' (default -2)" + ignore_help)


def add_offline_commands(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    aggregate = subparsers.add_parser(
        "aggregate", help="fit an aggregation model on a judgment file, without a server",
        description="Fit an aggregation model on a judgment file (TSV/CSV with a header; the TREC "
                    "RF10 and crowd-kit column names are accepted) and write qrels and tables.",
    )
    aggregate.add_argument("input", help="judgment file (- for standard input)")
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
    aggregate.add_argument("--output", help="write the aggregated qrels (TREC) here (- for "
                                            "standard output; the report then goes to stderr)")
    aggregate.add_argument("--annotators", help="write the per-annotator TSV here")
    aggregate.add_argument("--tasks", help="write the per-task TSV here")
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
                                "out (Platt scaling; calibrate_folds=K, implies --clamp-gold); "
                                "with --folds the calibration is refitted per fold")
    aggregate.set_defaults(func=_aggregate)

    synth = subparsers.add_parser(
        "synth", help="write a synthetic data set (thesis Algorithm 10)",
        description="Write judgments.tsv, features.tsv, gold.qrels, annotators.tsv, tasks.tsv.",
    )
    synth.add_argument("outdir", metavar="OUTDIR", help="output directory (created if needed)")
    synth.add_argument("--tasks", type=int_at_least(1), default=1000,
                       help="number of tasks (default 1000)")
    synth.add_argument("--annotators", type=int_at_least(1), default=50,
                       help="number of annotators (default 50)")
    synth.add_argument("--noise", choices=NOISE_CHOICES, default="0-2",
                       help="annotator noise variance range (default 0-2)")
    synth.add_argument("--redundancy", type=int_at_least(1), default=5,
                       help="judgments per task, each by a different annotator (default 5; at "
                            "most --annotators)")
    synth.add_argument("--seed", type=seed_arg,
                       help="0 to 2**32 - 1 (default: a fresh one, printed on stderr)")
    synth.add_argument("--grades", type=int, default=2,
                       help="number of grades K (default 2: binary Algorithm 10); labels 0..K-1")
    synth.add_argument("--bias-sd", type=float, default=0.0,
                       help="standard deviation of planted annotator biases (default 0: none)")
    synth.add_argument("--topics", type=int_at_least(1), default=1,
                       help="split the tasks into this many topics, each with its own grade mix "
                            "(default 1: grades uniform, as in Algorithm 10); writes topics.tsv")
    synth.add_argument("--topic-concentration", type=float, default=1.0, metavar="A",
                       help="each topic's grade mix ~ Dirichlet(A, ..., A) (default 1; small: "
                            "topics of mostly one grade)")
    synth.set_defaults(func=_synth)
