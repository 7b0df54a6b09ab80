"""Input files into AnnotationData: ``load_annotation_data`` is the one "file -> AnnotationData"
path (the service and the bench scripts reuse it); ``load_judgment_file`` adds the commands'
options, checks and notes."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Literal, overload

from app.cli.errors import UsageError
from app.cli.options import DEFAULT_IGNORE

if TYPE_CHECKING:
    import numpy as np

    from app.cli.columns import JudgmentColumns
    from app.formats.errors import FileFormatError
    from app.formats.judgments_file import JudgmentRows
    from models.data import AnnotationData


def read_input(path: str, option: str | None = None) -> bytes:
    """An input file's bytes (``-``: standard input); UsageError naming the option if unreadable."""
    if path == "-":
        return sys.stdin.buffer.read()
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        what = f"{option} {path}" if option else path
        raise UsageError(f"{what}: {exc.strerror or exc}") from None


def file_error(exc: FileFormatError, path: str | None = None) -> str:
    """A file error as one line: the file's name, then the line number once."""
    detail = exc.detail
    if exc.line and not detail.startswith(f"line {exc.line}"):
        detail = f"line {exc.line}: {detail}"
    return f"{path}: {detail}" if path else detail


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
        data = _with_qrels_gold(data, gold_qrels, graded=graded, relevant_from=relevant_from,
                                ignore=ignore)
    if features is not None:
        feature_rows = parse_features(features)
        data = data.with_features(feature_rows.vectors, dim=feature_rows.dim)
    return data


def _with_qrels_gold(data: AnnotationData, gold_qrels: bytes | str, *, graded: bool,
                     relevant_from: int, ignore: tuple[int, ...]) -> AnnotationData:
    """``data`` with the gold of a TREC qrels text (values in ``ignore`` or negative: none;
    binarised with ``relevant_from`` unless ``graded``)."""
    from app.formats.qrels import parse_qrels

    qrels = parse_qrels(gold_qrels)
    known = {key: value for key, value in qrels.items() if value >= 0 and value not in ignore}
    if not graded:
        known = {key: int(value >= relevant_from) for key, value in known.items()}
    return data.with_gold(known)


def _columns_data(columns: JudgmentColumns, *, relevant_from: int, graded: bool,
                  ignore: tuple[int, ...], scale: Iterable[int] | None,
                  gold_qrels: bytes | None) -> AnnotationData:
    """``load_annotation_data`` for a file read column-wise: the same AnnotationData, built from
    integer codes (``AnnotationData.from_codes``) instead of one string per judgment. A task's
    gold is its last row's gold value that is >= 0 and not ignored, as ``from_rows`` keeps."""
    import numpy as np

    from models.data import UNKNOWN, AnnotationData

    task_gold = None
    if columns.gold is not None and gold_qrels is None:
        known = columns.gold >= 0
        if ignore:
            known &= ~np.isin(columns.gold, list(ignore))
        task_gold = np.full(columns.task_topics.shape[0], UNKNOWN, dtype=np.int64)
        task_gold[columns.task[known]] = columns.gold[known]  # the last row's value wins
    data = AnnotationData.from_codes(
        columns.task, columns.annotator, columns.labels, task_topics=columns.task_topics,
        task_docs=columns.task_docs, annotator_names=columns.annotator_names,
        task_gold=task_gold, ignore=ignore, relevant_from=None if graded else relevant_from,
        scale=scale if graded else None)
    if gold_qrels is not None:
        data = _with_qrels_gold(data, gold_qrels, graded=graded, relevant_from=relevant_from,
                                ignore=ignore)
    return data


def check_scale(rows: JudgmentRows, *, labels: Iterable[int] | None, ignore: Iterable[int],
                path: str, gold_qrels: bytes | None = None, gold_path: str | None = None
                ) -> list[str]:
    """Labels and gold against the scale. With ``labels`` (the collection's scale, as the API's
    ``labels``): UsageError naming the file and line of the first label, or gold value >= 0,
    that is neither on it nor in ``ignore``. Without: warnings naming the values that look out
    of place (negative and not ignored, or past a gap above the lowest run of labels: 7 next to
    0, 1, 2; gold values no judgment uses). A negative gold value means "no gold" (RF10's -1)."""
    seen: dict[int, tuple[int, int]] = {}  # value -> (count, first line)
    for line, value in zip(rows.lines, rows.labels, strict=True):
        count, first = seen.get(value, (0, line))
        seen[value] = (count + 1, first)
    gold_first: dict[int, int] = {}
    for line, g in zip(rows.lines, rows.golds or (), strict=False):
        if g is not None and g >= 0:
            gold_first.setdefault(g, line)
    return _check_scale(seen, gold_first, labels=labels, ignore=ignore, path=path,
                        gold_qrels=gold_qrels, gold_path=gold_path)


def _check_scale(seen: dict[int, tuple[int, int]], gold_first: dict[int, int], *,
                 labels: Iterable[int] | None, ignore: Iterable[int], path: str,
                 gold_qrels: bytes | None, gold_path: str | None) -> list[str]:
    """``check_scale`` on the file's summary: (count, first line) of each label value, the first
    line of each gold value >= 0."""
    ignored = set(ignore)
    qrels_gold = _qrels_values(gold_qrels) if gold_qrels is not None else []
    golds = sorted((line, g) for g, line in gold_first.items() if g not in ignored)
    if labels is not None:
        allowed = set(labels) | ignored
        scale = " ".join(str(v) for v in sorted(set(labels)))
        off = sorted((first, value) for value, (_, first) in seen.items() if value not in allowed)
        if off:
            line, value = off[0]
            raise UsageError(f"{path}: line {line}: label {value} is not on the scale "
                             f"(--labels {scale}) nor an --ignore value")
        for where, gpath, items in (("gold", path, golds), ("relevance", gold_path, qrels_gold)):
            for line, value in items:
                if value >= 0 and value not in allowed:
                    raise UsageError(f"{gpath}: line {line}: {where} {value} is not on the "
                                     f"scale (--labels {scale})")
        return []
    seen = {value: entry for value, entry in seen.items() if value not in ignored}
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


def _column_summary(columns: JudgmentColumns) -> tuple[dict[int, tuple[int, int]],
                                                        dict[int, int]]:
    """``_check_scale``'s summary of a file read column-wise (``app.cli.columns``)."""
    import numpy as np

    values, first, counts = _first_and_count(columns.labels)
    seen = {int(v): (int(c), columns.line(int(f)))
            for v, f, c in zip(values, first, counts, strict=True)}
    gold_first: dict[int, int] = {}
    if columns.gold is not None:
        known = np.flatnonzero(columns.gold >= 0)
        values, first, _ = _first_and_count(columns.gold[known])
        gold_first = {int(v): columns.line(int(known[f])) for v, f in zip(values, first,
                                                                         strict=True)}
    return seen, gold_first


def _first_and_count(values: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``np.unique(values, return_index=True, return_counts=True)``: for the few distinct
    labels of a scale, counted (``np.bincount``) and each one's first row found by one pass
    (10,000,000 labels: no sort of them); np.unique's own way otherwise."""
    import numpy as np

    if values.shape[0] == 0:
        return np.unique(values, return_index=True, return_counts=True)
    low, high = int(values.min()), int(values.max())
    if high - low > 64:
        return np.unique(values, return_index=True, return_counts=True)
    counts = np.bincount(values - low, minlength=high - low + 1)
    present = np.flatnonzero(counts)
    first = np.array([int(np.argmax(values == low + v)) for v in present], dtype=np.intp)
    return present + low, first, counts[present]


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


@overload
def load_judgment_file(args: argparse.Namespace, *, graded: bool = ...,
                       features: str | None = ..., quiet: bool = ...,
                       want_rows: Literal[True] = ...) -> tuple[AnnotationData, JudgmentRows]: ...


@overload
def load_judgment_file(args: argparse.Namespace, *, graded: bool = ...,
                       features: str | None = ..., quiet: bool = ...,
                       want_rows: bool) -> tuple[AnnotationData, JudgmentRows | None]: ...


def load_judgment_file(args: argparse.Namespace, *, graded: bool = False,
                       features: str | None = None, quiet: bool = False,
                       want_rows: bool = True) -> tuple[AnnotationData, JudgmentRows | None]:
    """``args.input`` (with ``--labels``, ``--ignore``, ``--relevant-from``, ``--gold``) as
    AnnotationData and its parsed rows; UsageError on an unreadable or bad file, a label or gold
    off the scale; warnings (values out of place) and, unless ``quiet``, the loader's notes on
    standard error. A caller that does not use the rows (``want_rows=False``) gets None for them
    when the file could be read column-wise (``app.cli.columns``: a plain file of 10 million
    lines in seconds), with the same data, notes and warnings."""
    from app.cli.columns import read_columns
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
    raw = read_input(args.input) if args.input is not None else None
    judges = [(name, path, read_input(path, "--judge"))
              for name, path in getattr(args, "judge", None) or ()]
    gold = read_input(gold_path, "--gold") if gold_path else None
    feature_bytes = read_input(features, "--features") if features else None
    current = args.input
    try:
        columns = (read_columns(raw) if raw is not None and not judges and not want_rows
                   else None)
        rows = None
        if columns is None:
            rows = parse_judgments(raw) if raw is not None else None
            if judges:  # --judge NAME=QRELS: each judge's qrels lines, after the file's rows
                from app.judges.cli import rows_with_judges

                rows = rows_with_judges(rows, judges, labels=labels, ignore=ignore)
        ignored_columns = rows.ignored_columns if columns is None else columns.ignored_columns
        if ignored_columns and not quiet:
            print(f"note: {args.input}: columns not read: {', '.join(ignored_columns)}",
                  file=sys.stderr)
        if columns is None:
            warnings = check_scale(rows, labels=labels, ignore=ignore,
                                   path=args.input or "--judge",
                                   gold_qrels=gold, gold_path=gold_path)
            values = set(rows.labels)
        else:
            seen, gold_first = _column_summary(columns)
            warnings = _check_scale(seen, gold_first, labels=labels, ignore=ignore,
                                    path=args.input, gold_qrels=gold, gold_path=gold_path)
            values = set(seen)
        for warning in warnings:
            print(f"warning: {warning}", file=sys.stderr)
        if graded and labels is None and len(values - set(ignore)) < 2:
            raise UsageError("graded labels need at least two label values: pass the scale "
                             "with --labels (e.g. --labels 0 1 2)")
        current = gold_path
        if columns is None:
            data = load_annotation_data(rows, relevant_from=args.relevant_from, graded=graded,
                                        ignore=ignore, scale=labels, gold_qrels=gold)
        else:
            data = _columns_data(columns, relevant_from=args.relevant_from, graded=graded,
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
