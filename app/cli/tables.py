"""The per-annotator and per-task TSV tables of ``crowdqrels aggregate``."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

    from models.data import AnnotationData


def fmt(value: float) -> str:
    return "" if value != value else f"{value:.6g}"  # NaN -> empty cell


def tsv_text(header: list[str], rows: Iterable[list[str]]) -> str:
    return "".join("\t".join(row) + "\n" for row in (header, *rows))


def annotator_table(data: AnnotationData, columns: dict[str, np.ndarray]
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
        [str(data.annotator_ids[j]), *(fmt(float(columns[c][j])) for c in names)]
        for j in range(data.n_annotators)
    ]
    return ["annotator", *names], rows


def task_table(data: AnnotationData, proba: np.ndarray, labels: np.ndarray,
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
            fmt(float(p_relevant[i])), *(fmt(float(p)) for p in proba[i]), gold,
            *(fmt(float(columns[c][i])) for c in names),
        ])
    return header, rows
