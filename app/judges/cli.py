"""Judge files on the command line, without a server: ``--judge NAME=QRELS`` (``crowdqrels
aggregate``, ``crowdqrels agreement``) and the agreement report of an offline data set.

A judge file is TREC qrels (``topic 0 doc grade``) whose lines become judgments by annotator
NAME, appended after the judgment file's rows (if any). Errors are ValueError with the file and
line named; the command turns them into its usage error.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from app.formats.errors import FileFormatError
from app.formats.judgments_file import JudgmentRows
from app.formats.qrels import parse_qrels_with_lines
from models.agreement import Labels, report, run_rankings
from models.data import UNKNOWN, AnnotationData


def judge_rows(files: Sequence[tuple[str, str, bytes]], *,
               allowed: set[int] | None = None) -> JudgmentRows:
    """The judgments of judge files ``(name, path, content)``, one row per qrels line; with
    ``allowed`` (the scale and ignore values) a grade off it is refused with its line."""
    topics: list[str] = []
    docs: list[str] = []
    annotators: list[str] = []
    labels: list[int] = []
    lines: list[int] = []
    names = [name for name, _, _ in files]
    if len(set(names)) < len(names):
        raise ValueError(f"--judge: a judge named twice: {', '.join(sorted(names))}")
    for name, path, content in files:
        try:
            qrels, where = parse_qrels_with_lines(content)
        except FileFormatError as exc:
            at = f" line {exc.line}" if exc.line else ""
            raise ValueError(f"{path}{at}: {exc.detail}") from None
        for (topic, doc), grade in qrels.items():
            if allowed is not None and grade not in allowed:
                raise ValueError(f"{path} line {where[(topic, doc)]}: grade {grade} is off the "
                                 f"scale {sorted(allowed)}")
            topics.append(topic)
            docs.append(doc)
            annotators.append(name)
            labels.append(grade)
            lines.append(where[(topic, doc)])
    return JudgmentRows(topics=topics, docs=docs, annotators=annotators, labels=labels,
                        golds=None, lines=lines)


def with_judges(rows: JudgmentRows | None, judges: JudgmentRows) -> JudgmentRows:
    """The judgment file's rows followed by the judges'; a judge's name must not be an
    annotator of the file (as the API refuses a name of another kind)."""
    if rows is None:
        return judges
    clash = sorted(set(judges.annotators) & set(rows.annotators))
    if clash:
        raise ValueError(f"--judge {clash[0]}: already an annotator of the judgment file")
    golds = None if rows.golds is None else [*rows.golds, *([None] * len(judges))]
    return JudgmentRows(topics=[*rows.topics, *judges.topics], docs=[*rows.docs, *judges.docs],
                        annotators=[*rows.annotators, *judges.annotators],
                        labels=[*rows.labels, *judges.labels], golds=golds,
                        lines=[*rows.lines, *judges.lines],
                        ignored_columns=rows.ignored_columns)


def rows_with_judges(rows: JudgmentRows | None, judges: Sequence[tuple[str, str, bytes]], *,
                     labels: Sequence[int] | None, ignore: Sequence[int]) -> JudgmentRows:
    """``with_judges`` of the judge files, their grades checked against ``labels`` (and the
    ignore values) when the scale is given."""
    allowed = None if labels is None else {*labels, *ignore}
    return with_judges(rows, judge_rows(judges, allowed=allowed))


def offline_report(data: AnnotationData, *, judges: Sequence[str], fit_labels: np.ndarray | None,
                   runs: Mapping[str, Mapping[str, Sequence[str]]] | None, measure: str,
                   relevant_from: int, min_tasks: int) -> dict[str, Any]:
    """``models.agreement.report`` of graded AnnotationData (its latest label per task and
    annotator), against its gold and ``fit_labels`` (class indices per task), with run rankings
    on each judge's qrels when ``runs`` are given: what the API's route answers for a
    collection."""
    names = [str(a) for a in data.annotator_ids]
    values = data.classes[data.label]
    gold = None
    if data.gold is not None and (data.gold != UNKNOWN).any():
        known = np.flatnonzero(data.gold != UNKNOWN)
        gold = Labels(known, data.classes[data.gold[known]])
    fit = None if fit_labels is None else Labels(np.arange(data.n_tasks),
                                                 data.classes[fit_labels])
    judged = set(judges)
    out = report(data.task, data.annotator, values, names=names,
                 kinds=["llm" if n in judged else "crowd" for n in names],
                 judges=[n in judged for n in names], scale=data.classes.tolist(), gold=gold,
                 aggregate=fit, relevant_from=relevant_from, min_tasks=min_tasks)
    out["rankings"] = None
    if runs and judged and (gold is not None or fit is not None):
        pair = list(zip(data.topic_ids.tolist(), data.doc_ids.tolist(), strict=True))

        def qrels(labels: Labels) -> dict[tuple[str, str], int]:
            return {pair[t]: int(g) for t, g in zip(labels.task.tolist(), labels.label.tolist(),
                                                    strict=True)}

        mine = {}
        for i, name in enumerate(names):
            if name in judged:
                rows = data.annotator == i
                mine[name] = qrels(Labels(data.task[rows], values[rows]))
        references = {}
        if fit is not None:
            references["aggregate"] = qrels(fit)
        if gold is not None:
            references["gold"] = qrels(gold)
        out["rankings"] = run_rankings(mine, references, runs, measure=measure,
                                       relevant_from=relevant_from)
    return out


TSV_COLUMNS = ["name", "kind", "tasks", "gold_n", "gold_exact", "gold_kappa",
               "gold_quadratic_kappa", "leniency", "fit_exact", "fit_quadratic_kappa"]


def report_tsv(found: Mapping[str, Any]) -> str:
    """The leaderboard as TSV, one rater a line, best first."""

    def cell(value: Any) -> str:
        return "" if value is None else (f"{value:.6g}" if isinstance(value, float) else str(value))

    out = ["\t".join(TSV_COLUMNS)]
    for r in found["raters"]:
        g, f = r["vs_gold"] or {}, r["vs_aggregate"] or {}
        out.append("\t".join(cell(v) for v in (
            r["name"], r["kind"], r["tasks"], g.get("n"), g.get("exact"), g.get("kappa"),
            g.get("quadratic_kappa"), g.get("leniency"), f.get("exact"),
            f.get("quadratic_kappa"))))
    return "\n".join(out) + "\n"
