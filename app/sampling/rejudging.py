"""GET /aggregations/{a}/next: the tasks whose next crowd label helps most, from a fitted
aggregation's stored posterior, each with the annotators not yet asked, best first."""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from typing import Any

import numpy as np
from sqlalchemy.orm import Session

from app.aggregations.tables import Aggregation
from app.collections.tables import Collection
from app.core.errors import Conflict
from app.sampling.inputs import NextInputs
from models.sampling.rejudge import NextPlan, plan_next


def next_tasks(session: Session, *, aggregation: Aggregation, n: int, strategy: str,
               max_judgments: int | None = None, n_annotators: int = 10,
               seed: int | None = None, inputs: NextInputs | None = None,
               min_annotator_judgments: int = 0,
               per_annotator: int | None = None,
               keep_could_not_judge: bool = False) -> dict[str, Any]:
    """The ``n`` tasks to judge next (only tasks with fewer than ``max_judgments`` judgments when
    given), each with the annotators not yet asked who have given at least
    ``min_annotator_judgments`` labels, and the one it goes to (at most ``per_annotator`` tasks
    each when given). Answers "could not judge" (the collection's ignore values) count towards
    ``max_judgments``; tasks mostly marked so are left out unless ``keep_could_not_judge``
    (``models.sampling.rejudge.plan_next``). Judgments and annotators are the collection's current
    ones (including those that arrived after the fit); an annotator's competence is the fit's
    (``competence`` column) or, for models without one, their expected agreement with the
    fitted posterior. ``inputs``: the application's cache of what this reads (none: everything
    is read)."""
    if aggregation.status != "succeeded":
        raise Conflict(f"aggregation {aggregation.id} is {aggregation.status}: the next tasks "
                       "come from a succeeded fit", code="aggregation_not_ready",
                       status=aggregation.status)
    collection = session.get(Collection, aggregation.collection_id)
    assert collection is not None
    inputs = inputs if inputs is not None else NextInputs(max_fits=0, max_collections=0)
    fit = inputs.posterior(session, aggregation)
    if not fit.task_ids.shape[0]:
        return {"aggregation_id": aggregation.id, "strategy": strategy, "data": [], "count": 0}
    judgments = inputs.judgments(session, collection)
    task_ids, proba = fit.task_ids, fit.proba
    annotator_ids = np.array(sorted(judgments.annotators), dtype=np.int64)
    # the fitted tasks' judgments, annotators as indices, labels as class indices (−1: an
    # ignored value or one outside the fit's classes: asked, but no label)
    by_id = np.argsort(task_ids)
    found = np.searchsorted(task_ids, judgments.task_id, sorter=by_id)
    found = np.minimum(found, task_ids.shape[0] - 1)
    fitted = task_ids[by_id[found]] == judgments.task_id
    position = by_id[found[fitted]]
    raw = judgments.label[fitted]
    classes = np.array(aggregation.classes or range(proba.shape[1]), dtype=np.int64)
    values = raw if aggregation.graded else (raw >= collection.relevant_from).astype(np.int64)
    label = np.searchsorted(classes, values)
    label = np.where((label < classes.shape[0])
                     & (classes[np.minimum(label, classes.shape[0] - 1)] == values), label, -1)
    could_not_judge = np.isin(raw, list(collection.ignore or []))
    label[could_not_judge] = -1

    competence = np.array([np.nan if fit.competence.get(int(a)) is None
                           else fit.competence[int(a)] for a in annotator_ids])
    external = np.array([judgments.annotators[int(a)] for a in annotator_ids])
    plan = plan_next(proba, task=position,
                     annotator=np.searchsorted(annotator_ids, judgments.annotator_id[fitted]),
                     label=label, competence=competence, annotator_names=external, n=n,
                     strategy=strategy, max_judgments=max_judgments,
                     n_annotators=n_annotators, random_state=seed,
                     min_annotator_judgments=min_annotator_judgments,
                     per_annotator=per_annotator, could_not_judge=could_not_judge,
                     keep_could_not_judge=keep_could_not_judge)
    data = plan_rows(plan, proba=proba, topics=fit.topics, docs=fit.docs, labels=fit.labels,
                     p_relevant=fit.p_relevant, annotator_names=external, task_ids=task_ids)
    return {"aggregation_id": aggregation.id, "strategy": strategy, "data": data,
            "count": len(data)}


def plan_rows(plan: NextPlan, *, proba: np.ndarray, topics: Sequence[str], docs: Sequence[str],
              labels: Sequence[int], p_relevant: Sequence[float], annotator_names: np.ndarray,
              task_ids: np.ndarray | None = None) -> list[dict[str, Any]]:
    """The chosen tasks as the API's rows (service and CLI alike); ``task_ids``: the database's
    ids (the service), none for a file (the CLI)."""
    data = []
    for rank, i in enumerate(plan.order.tolist()):
        row: dict[str, Any] = {} if task_ids is None else {"task_id": int(task_ids[i])}
        row.update({
            "topic": str(topics[i]), "doc": str(docs[i]), "label": int(labels[i]),
            "p_relevant": float(p_relevant[i]), "proba": [float(p) for p in proba[i]],
            "uncertainty": float(plan.uncertainty[rank]),
            "expected_gain": float(plan.expected_gain[rank]),
            "p_label_change": float(plan.p_label_change[rank]),
            "expected_change": float(plan.expected_change[rank]),
            "n_judgments": int(plan.n_judgments[rank]),
            "could_not_judge": int(plan.could_not_judge[rank]),
            "annotators": [{"annotator": str(annotator_names[a]),
                            "competence": float(plan.competence[a]),
                            "n_judgments": int(plan.annotator_judgments[a])}
                           for a in plan.annotators[rank].tolist()],
            "assigned": (None if plan.assigned[rank] < 0
                         else str(annotator_names[plan.assigned[rank]])),
        })
        data.append(row)
    return data


TSV_COLUMNS = ("rank", "topic", "doc", "n_judgments", "uncertainty", "p_label_change",
               "expected_change", "annotators", "assigned")


def _listed(annotator: str) -> str:
    """An annotator id in the TSV's comma-separated list: "%" and "," percent-encoded (an id
    may hold a comma), so the list splits at commas and each part decodes with
    ``urllib.parse.unquote``; ids without either character are written as they are."""
    return annotator.replace("%", "%25").replace(",", "%2C")


def _score(x: float) -> str:
    return f"{x + 0.0:.6g}"  # + 0.0: a score of -0.0 is written 0


def next_tasks_tsv(result: dict[str, Any]) -> str:
    """``next_tasks`` as a tab-separated list to hand to a crowd platform: one task per line,
    best first, its scores, the annotators to ask (comma-separated, best first; ``_listed``)
    and the one it goes to (empty: nobody; written as it is)."""
    out = io.StringIO()
    writer = csv.writer(out, delimiter="\t", lineterminator="\n")
    writer.writerow(TSV_COLUMNS)
    for rank, t in enumerate(result["data"], start=1):
        writer.writerow((rank, t["topic"], t["doc"], t["n_judgments"],
                         _score(t["uncertainty"]), _score(t["p_label_change"]),
                         _score(t["expected_change"]),
                         ",".join(_listed(a["annotator"]) for a in t["annotators"]),
                         t["assigned"] or ""))
    return out.getvalue()
