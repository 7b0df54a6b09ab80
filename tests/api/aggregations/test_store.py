"""What a fit stores: ``store_results`` formats the per-task and per-annotator rows from columns
(``bulk_insert_columns``: a text COPY on PostgreSQL); every row, read back as stored (JSON as
its text), is the one the row-at-a-time code before it stored (kept here as the reference)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from sqlalchemy import Text, cast, select

from tests.api.aggregations.test_snapshot import _rows
from tests.api.helpers import API, create_collection

# Edge values for the result columns: not finite (stored NULL), -0.0, the smallest subnormal,
# shortest reprs with exponents, integers as floats
EDGE = [math.nan, math.inf, -math.inf, -0.0, 5e-324, 1e-300, 1.5e-7, 1e-5, 1e16, 1e22,
        0.1, 1 / 3, 123456789012345.0, -2.5]


def _float(value: Any) -> float | None:
    number = float(value)
    return number if math.isfinite(number) else None


def _old_rows(session: Any, aggregation: Any, snapshot: Any, fitted: Any) -> None:
    """The rows as ``store_results`` wrote them before the columns (branch store10m): a dict
    per row through ``bulk_insert`` (``json.dumps`` and psycopg's ``write_row`` per row)."""
    from app.aggregations.results import ANNOTATOR_COLUMNS, TASK_COLUMNS
    from app.aggregations.tables import AggregationAnnotator, AggregationTask
    from app.core.db import bulk_insert
    from models.data import UNKNOWN

    data, result = snapshot.data, fitted.result
    proba = np.asarray(result.proba, dtype=float)
    labels = data.classes[fitted.labels]
    with np.errstate(divide="ignore", invalid="ignore"):
        entropy = -np.sum(np.where(proba > 0, proba * np.log(proba), 0.0), axis=1)
    task_extra = {k: v for k, v in result.task_columns.items()
                  if k not in TASK_COLUMNS and k != "p_relevant"}
    columns = {name: result.task_columns.get(name) for name in TASK_COLUMNS}
    extras = {k: np.asarray(v) for k, v in task_extra.items()}
    rows = []
    for i, (task_id, label, p_rel, p_row, h) in enumerate(zip(
            snapshot.task_ids.tolist(), labels.tolist(), np.asarray(fitted.p_relevant).tolist(),
            proba.tolist(), entropy.tolist(), strict=True)):
        row: dict[str, Any] = {"aggregation_id": aggregation.id, "task_id": task_id,
                               "label": label, "p_relevant": p_rel, "proba": p_row,
                               "uncertainty": h}
        for name, column in columns.items():
            row[name] = None if column is None else _float(column[i])
        row["extra"] = {k: _float(v[i]) for k, v in extras.items()} or None
        rows.append(row)
    bulk_insert(session, AggregationTask.__table__, rows)

    rel = fitted.relevant
    per_annotator = data.judgments_per_annotator()
    n_gold, agree = data.gold_agreement()
    gold_j = data.gold[data.task] if data.gold is not None else np.full(data.n_judgments, UNKNOWN)
    has_gold = gold_j != UNKNOWN
    annotator_extra = {k: v for k, v in result.annotator_columns.items()
                       if k not in ANNOTATOR_COLUMNS}
    if aggregation.graded and has_gold.any():
        agree_rel = np.bincount(data.annotator[has_gold], weights=(
            (data.label[has_gold] >= rel) == (gold_j[has_gold] >= rel)).astype(float),
            minlength=data.n_annotators)
        annotator_extra["gold_relevance_accuracy"] = np.where(
            n_gold > 0, agree_rel / np.maximum(n_gold, 1), np.nan)
    rows = []
    for j in range(data.n_annotators):
        row = {"aggregation_id": aggregation.id,
               "annotator_id": int(snapshot.annotator_ids[j]),
               "n_judgments": int(per_annotator[j]), "n_gold": int(n_gold[j]),
               "gold_accuracy": float(agree[j] / n_gold[j]) if n_gold[j] else None}
        for name in ANNOTATOR_COLUMNS:
            column = result.annotator_columns.get(name)
            row[name] = None if column is None else _float(column[j])
        row["extra"] = {k: _float(v[j]) for k, v in annotator_extra.items()} or None
        rows.append(row)
    bulk_insert(session, AggregationAnnotator.__table__, rows)
    session.commit()


def _stored(session: Any, table: Any, key: Any, aggregation_id: int) -> list[tuple[Any, ...]]:
    """Every row of one aggregation in ``table``, by ``key``, its JSON columns as stored text."""
    from sqlalchemy import JSON

    columns = [cast(c, Text) if isinstance(c.type, JSON) else c
               for c in table.columns if c.name != "aggregation_id"]
    return [tuple(row) for row in session.execute(
        select(*columns).where(table.c.aggregation_id == aggregation_id).order_by(key))]


@pytest.mark.parametrize("graded", [False, True])
@pytest.mark.parametrize("edges", [False, True])
def test_stored_rows_are_the_row_at_a_time_rows(client, database_url, monkeypatch,
                                                graded, edges) -> None:
    """A fit (DS, with gold; binary and graded) stored by ``store_results`` and by the old
    row-at-a-time code: the same task and annotator rows, every column, the JSON texts
    included; with ``edges`` its columns carry NaN, ±inf, -0.0, subnormal and large numbers,
    an extra column whose name needs JSON escaping, and the rows are written in blocks of 7."""
    from app.aggregations.results import store_results
    from app.aggregations.snapshot import load_snapshot
    from app.aggregations.tables import Aggregation, AggregationAnnotator, AggregationTask
    from app.collections.tables import Collection
    from app.core import db
    from app.core.db import get_sessionmaker
    from app.judgments.columns import KeptColumns, current_watermark
    from models.pipeline import FitSpec, fit

    create_collection(client, name="store")
    rng = np.random.default_rng(5)
    response = client.post(f"{API}/collections/store/judgments",
                           json={"judgments": _rows(rng, 400, "s") + [  # no gold judged
                               {"topic": "t2", "doc": "d11", "annotator": "lonely", "label": 1}]})
    assert response.status_code == 201, response.text
    assert client.put(f"{API}/collections/store/gold?mode=merge",
                      content="t2 0 d1 2\nT1 0 d3 1\né 0 d4 0\nt10 0 d5 -2\n",
                      headers={"content-type": "text/plain"}).status_code == 200
    if edges:
        monkeypatch.setattr(db, "COPY_BLOCK", 7)
    with get_sessionmaker(database_url)() as session:
        collection = session.scalars(select(Collection).where(Collection.name == "store")).one()
        watermark = current_watermark(session, collection_id=collection.id)
        snapshot = load_snapshot(session, collection=collection, watermark=watermark,
                                 graded=graded, kept=KeptColumns(max_collections=0))
        fitted = fit(FitSpec("ds", {}, 0, relevant_from=collection.relevant_from,
                             graded=graded), snapshot.data)
        result = fitted.result
        n_tasks, n_annotators = snapshot.data.n_tasks, snapshot.data.n_annotators
        if edges:
            result.task_columns["difficulty"] = np.resize(np.array(EDGE), n_tasks)
            result.task_columns["bias"] = np.resize(np.array(EDGE[::-1]), n_tasks)
            result.task_columns['odd "name" \\ é\t{x}'] = np.resize(np.array(EDGE[3:]), n_tasks)
            result.task_columns["count"] = np.arange(n_tasks)  # integers, stored as floats
            result.annotator_columns["noise_variance"] = np.resize(np.array(EDGE), n_annotators)
            result.annotator_columns["x"] = np.resize(np.array(EDGE[1:]), n_annotators)
        aggregations = []
        for _ in range(2):
            aggregation = Aggregation(collection_id=collection.id, method="ds", params={},
                                      seed=0, watermark=watermark, status="running",
                                      graded=graded)
            session.add(aggregation)
            session.commit()
            aggregations.append(aggregation)
        new, old = aggregations
        store_results(session, aggregation=new, snapshot=snapshot, fitted=fitted,
                      scores=fitted.score(None, own_labels=False))
        _old_rows(session, old, snapshot, fitted)

        for table, key in ((AggregationTask.__table__, AggregationTask.task_id),
                           (AggregationAnnotator.__table__, AggregationAnnotator.annotator_id)):
            stored_new = _stored(session, table, key, new.id)
            stored_old = _stored(session, table, key, old.id)
            assert len(stored_new) == (n_tasks if table is AggregationTask.__table__
                                       else n_annotators)
            assert stored_new == stored_old, table.name
            if table is AggregationTask.__table__:
                assert [row[0] for row in stored_new] == sorted(snapshot.task_ids.tolist())
        tasks = _stored(session, AggregationTask.__table__, AggregationTask.task_id, new.id)
        annotators = _stored(session, AggregationAnnotator.__table__,
                             AggregationAnnotator.annotator_id, new.id)
    # the cases are there: gold agreement known and not, NULLs where a number was not finite,
    # -0.0 kept, the escaped name in the JSON text
    gold_accuracy = [row[6] for row in annotators]
    assert None in gold_accuracy and any(g is not None for g in gold_accuracy)
    if edges:
        difficulty = [row[7] for row in tasks]
        assert None in difficulty and 5e-324 in difficulty and 1e22 in difficulty
        if database_url.startswith("postgresql"):  # SQLite may keep a whole REAL as 0
            assert any(d == 0 and math.copysign(1, d) < 0 for d in difficulty
                       if d is not None)
        assert all('"odd \\"name\\" \\\\ \\u00e9\\t{x}": ' in row[-1] for row in tasks)
    if graded:
        assert any("gold_relevance_accuracy" in (row[-1] or "") for row in annotators)
