"""Which gold a fit was scored against, and whether that is still the collection's gold.

A fit's evaluation (and each annotator's ``gold_accuracy``) is computed once, when the fit runs,
against the gold labels of that moment. The fit records which gold that was (``fit_record``,
stored as ``info["gold"]``): how many gold tasks it scored and why the others were left out, and a
SHA-256 digest of the gold labels of its tasks. On read, ``check_fits`` compares the record with
the gold as it is now:

- unchanged: the stored evaluation is the current gold's (``current`` true);
- changed, and the fit never used the gold (no ``use_gold``, or nothing to clamp): its stored
  posteriors are re-scored against the current gold (``current_evaluation``), exactly what a
  fresh evaluation of the same fit would give;
- changed, and the fit clamped the gold: not re-scorable. Its labels on the gold tasks are the
  earlier gold and its held-out folds were drawn over it; scoring them against another gold
  would rank a fit by labels it was given. Refit to compare.

Fits stored before the record existed are checked by re-scoring when they never used the gold
(the stored evaluation equals the re-scored one exactly when the gold of their tasks still gives
the same figures); a clamped one cannot be checked (``current`` null).

Gold, here, is a label on the collection's scale; a could-not-judge value (e.g. -2) is gold that
is never scored.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike
from sqlalchemy import select
from sqlalchemy.orm import Session

from app.aggregations.tables import Aggregation, AggregationTask
from app.collections.tables import Collection
from app.judgments.tables import Task
from models.evaluation import evaluate, relevant_index

# Stored evaluations and re-scored ones are the same sums taken in another order.
SAME_SCORE_TOL = 1e-9


def collection_gold(session: Session, *, collection_id: int) -> dict[int, int]:
    """task id -> gold value for every task of the collection that has one (could-not-judge
    values included): one read, so a fit's data and its record see the same gold."""
    return dict(session.execute(select(Task.id, Task.gold).where(  # type: ignore[arg-type]
        Task.collection_id == collection_id, Task.gold.is_not(None))).all())


def digest(pairs: Iterable[tuple[int, int]]) -> str:
    """SHA-256 over the (task id, gold) pairs in task order: equal iff the gold is equal."""
    h = hashlib.sha256()
    for task_id, gold in sorted(pairs):
        h.update(f"{task_id}:{gold}\n".encode())
    return h.hexdigest()


def fit_record(*, collection: Collection, gold: dict[int, int], fit_tasks: ArrayLike,
               judged_tasks: ArrayLike, n_scored: int) -> dict[str, Any]:
    """What a fit stores about its gold (``info["gold"]``).

    ``gold``: the collection's gold as the fit read it (``collection_gold``); ``fit_tasks``: the
    tasks the fit labelled (those with a usable judgment up to its watermark); ``judged_tasks``:
    every task with a judgment up to the watermark, "could not judge" ones included;
    ``n_scored``: the gold tasks its evaluation scored (the evaluation's ``n_gold``)."""
    scale, ignore = set(collection.labels), set(collection.ignore)
    labelled = {t: g for t, g in gold.items() if g in scale}
    # membership by numpy: a large fit labels millions of tasks, and sets of them cost GiBs
    ids = np.fromiter(labelled, dtype=np.int64, count=len(labelled))
    fitted = np.isin(ids, np.asarray(fit_tasks, dtype=np.int64))
    judged = np.isin(ids[~fitted], np.asarray(judged_tasks, dtype=np.int64))
    in_fit = set(ids[fitted].tolist())
    return {
        "labelled": len(labelled),
        "scored": int(n_scored),
        "left_out": {"not_judged": int((~judged).sum()),
                     "only_could_not_judge": int(judged.sum())},
        "could_not_judge": sum(1 for g in gold.values() if g in ignore),
        "digest": digest((t, g) for t, g in labelled.items() if t in in_fit),
        "collection_digest": digest(labelled.items()),
    }


def uses_gold(aggregation: Aggregation) -> bool:
    """Whether the fit saw gold labels: it clamped them (``use_gold``) and had some to clamp."""
    if not (aggregation.params or {}).get("use_gold"):
        return False
    record = (aggregation.info or {}).get("gold")
    n_gold = record["scored"] if record else (aggregation.evaluation or {}).get("n_gold", 0)
    return bool(n_gold)


@dataclass(frozen=True)
class GoldStatus:
    """A succeeded fit against the current gold (``FitGold`` in the API)."""

    current: bool | None
    rescorable: bool
    current_evaluation: dict[str, Any] | None
    note: str


def check_fits(session: Session, *, collection: Collection, fits: Sequence[Aggregation],
               cache: Any = None) -> dict[int, GoldStatus]:
    """The gold status of every succeeded fit in ``fits`` (others are left out).

    One read of the collection's gold; a fit whose record matches it needs nothing more. A fit
    whose collection's gold changed since is checked against the gold of its own tasks (and
    re-scored if it changed): with ``cache`` (``memo(key, compute)``, the app's ListingCache)
    that work is done once per set of fits and state of the gold."""
    done = [a for a in fits if a.status == "succeeded"]
    if not done:
        return {}
    scale = set(collection.labels)
    labelled = {t: g for t, g in collection_gold(session, collection_id=collection.id).items()
                if g in scale}
    now = digest(labelled.items())
    out: dict[int, GoldStatus] = {}
    deeper = []
    for a in done:
        record = (a.info or {}).get("gold")
        if record and record.get("collection_digest") == now:
            out[a.id] = GoldStatus(True, not uses_gold(a), None, CURRENT)
        else:
            deeper.append(a)
    if not deeper:
        return out

    def compute() -> dict[int, GoldStatus]:
        return {a.id: _check_fit(session, collection=collection, aggregation=a)
                for a in deeper}

    if cache is None:
        return {**out, **compute()}
    key = ("gold_status", collection.id, now,
           tuple((a.id, a.finished_at.isoformat() if a.finished_at else None) for a in deeper))
    return {**out, **cache.memo(key, compute)}


CURRENT = "scored against the current gold"


def _check_fit(session: Session, *, collection: Collection,
               aggregation: Aggregation) -> GoldStatus:
    rows = session.execute(
        select(AggregationTask.task_id, Task.gold, AggregationTask.proba)
        .join(Task, Task.id == AggregationTask.task_id)
        .where(AggregationTask.aggregation_id == aggregation.id,
               Task.gold.in_(list(collection.labels)))).all()
    record = (aggregation.info or {}).get("gold")
    rescorable = not uses_gold(aggregation)
    if record is not None and digest((t, g) for t, g, _ in rows) == record["digest"]:
        return GoldStatus(True, rescorable, None, CURRENT)
    rescored = rescore(rows, aggregation=aggregation, collection=collection) \
        if rescorable else None
    if record is None:  # stored before fits recorded their gold
        if not rescorable:
            return GoldStatus(None, False, None,
                              "fitted with the gold clamped before fits recorded their gold: "
                              "whether that gold is the current one is unknown; refit to "
                              "compare against the current gold")
        if same_scores(aggregation.evaluation, rescored):
            return GoldStatus(True, True, None, CURRENT + " (checked by re-scoring)")
    if not rescorable:
        return GoldStatus(False, False, None,
                          "the gold of this fit's tasks has changed since it was scored, and the "
                          "fit clamped the earlier gold (use_gold): it cannot be re-scored "
                          "honestly; refit to compare against the current gold")
    return GoldStatus(False, True, rescored,
                      "the gold of this fit's tasks has changed since it was scored; "
                      + ("current_evaluation re-scores its stored posteriors against the "
                         "current gold" if rescored is not None else
                         "none of its tasks has a gold label now"))


def rescore(rows: Sequence[Any], *, aggregation: Aggregation,
            collection: Collection) -> dict[str, Any] | None:
    """The fit's stored posteriors scored against ``rows`` (task id, gold value on the scale,
    proba) as ``results.store_results`` scores them: the most probable class against the gold's
    class (binary fits: gold >= relevant_from; graded fits: the grade). None without gold."""
    if not rows:
        return None
    classes = np.asarray(aggregation.classes or [0, 1], dtype=np.int64)
    graded = bool(aggregation.graded)
    gold = np.array([g for _, g, _ in rows], dtype=np.int64)
    proba = np.array([p for *_, p in rows], dtype=np.float64).reshape(len(rows), len(classes))
    target = (np.searchsorted(classes, gold) if graded
              else (gold >= collection.relevant_from).astype(np.int64))
    scores = evaluate(proba, target, classes=classes, relevant_index=relevant_index(
        classes, collection.relevant_from, graded=graded))
    return None if scores is None else {**scores.as_dict(), "held_out": False}


def same_scores(stored: dict[str, Any] | None, rescored: dict[str, Any] | None) -> bool:
    """The same evaluation up to the order of the sums."""
    if stored is None or rescored is None:
        return stored is None and rescored is None
    if stored.get("n_gold") != rescored.get("n_gold"):
        return False
    for name, value in rescored.items():
        if isinstance(value, float):
            other = stored.get(name)
            if not isinstance(other, int | float) or not math.isclose(
                    value, other, rel_tol=SAME_SCORE_TOL, abs_tol=SAME_SCORE_TOL):
                return False
    return True


def fit_gold(aggregation: Aggregation, status: GoldStatus | None) -> dict[str, Any] | None:
    """The API's ``gold`` of a fit (``FitGold``): its record and ``status``; None unless the
    fit succeeded and was checked."""
    if status is None or aggregation.status != "succeeded":
        return None
    record = (aggregation.info or {}).get("gold") or {}
    scored = record.get("scored", (aggregation.evaluation or {}).get("n_gold"))
    return {
        "labelled": record.get("labelled"), "scored": scored, "left_out": record.get("left_out"),
        "could_not_judge": record.get("could_not_judge"), "digest": record.get("digest"),
        "current": status.current, "rescorable": status.rescorable,
        "current_evaluation": status.current_evaluation, "note": status.note,
    }
