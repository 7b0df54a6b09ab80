"""What a fit reads: ``load_snapshot`` reads integer columns and names each task and annotator
once; a process that keeps them (a Celery worker fitting a collection again) reads only the
judgments that arrived since. Both give exactly the snapshot a fresh read gives."""

from __future__ import annotations

import numpy as np
from sqlalchemy import select

from tests.api.helpers import API, create_collection

FIELDS = ("task", "annotator", "label", "topic_ids", "doc_ids", "annotator_ids", "classes", "gold")


def _rows(rng: np.random.Generator, n: int, tag: str) -> list[dict]:
    """Judgments with repeats, "could not judge" values, ids whose code-point order differs
    from a locale's, and, per batch, new tasks and annotators."""
    topics, docs = ["t2", "t10", "T1", "é"], [f"d{i}" for i in range(12)] + [f"new-{tag}"]
    annotators = [f"w{i}" for i in range(6)] + ["W", f"late-{tag}"]
    return [{"topic": str(rng.choice(topics)), "doc": str(rng.choice(docs)),
             "annotator": str(rng.choice(annotators)),
             "label": int(rng.choice([0, 1, 2, -2], p=[0.4, 0.3, 0.2, 0.1]))}
            for _ in range(n)]


def test_snapshot_read_forward_equals_a_fresh_read(client, database_url) -> None:
    from app.aggregations.snapshot import load_snapshot
    from app.collections.tables import Collection
    from app.core.db import get_sessionmaker
    from app.judgments.columns import KeptColumns, current_watermark

    create_collection(client, name="snap")
    rng = np.random.default_rng(7)
    kept = KeptColumns(max_collections=2)
    watermarks = []
    with get_sessionmaker(database_url)() as session:
        for batch, gold in enumerate(("t2 0 d1 2\nT1 0 d3 -2\n", "é 0 d4 0\nt2 0 d1 1\n", "")):
            response = client.post(f"{API}/collections/snap/judgments",
                                   json={"judgments": _rows(rng, 150, str(batch))})
            assert response.status_code == 201, response.text
            if gold:  # gold changes between fits: every read takes the gold of its time
                assert client.put(f"{API}/collections/snap/gold?mode=merge", content=gold,
                                  headers={"content-type": "text/plain"}).status_code == 200
            session.rollback()  # a new transaction: it sees what was just posted
            collection = session.scalars(select(Collection).where(
                Collection.name == "snap")).one()
            watermarks.append(current_watermark(session, collection_id=collection.id))
            # the last read goes back to the first watermark: an earlier fit queued late
            for watermark in (watermarks[-1], watermarks[0]):
                for graded in (False, True):
                    forward = load_snapshot(session, collection=collection, graded=graded,
                                            watermark=watermark, kept=kept)
                    fresh = load_snapshot(session, collection=collection, graded=graded,
                                          watermark=watermark, kept=KeptColumns(0))
                    for name in FIELDS:
                        assert np.array_equal(getattr(forward.data, name),
                                              getattr(fresh.data, name)), name
                    assert forward.data.notes == fresh.data.notes
                    assert forward.task_ids.tolist() == fresh.task_ids.tolist()
                    assert forward.annotator_ids.tolist() == fresh.annotator_ids.tolist()
                    assert forward.gold == fresh.gold
                    assert np.array_equal(forward.judged_tasks, fresh.judged_tasks)
        # the kept columns moved forward and were not replaced by the earlier read
        assert kept.judgments(session, collection).watermark == watermarks[-1]
    assert fresh.data.gold is not None and (fresh.data.gold >= 0).sum() >= 1


def test_columns_read_packed_equal_the_rows(client, database_url, monkeypatch) -> None:
    """PostgreSQL reads the columns packed by the server, in parts (made tiny here): the same
    integers, in id order, as the rows a query returns, a withdrawal (NULL label) included."""
    from sqlalchemy import update

    from app.collections.tables import Collection
    from app.core.db import get_sessionmaker
    from app.judgments import columns
    from app.judgments.tables import Judgment

    monkeypatch.setattr(columns, "PACKED_ROWS", 7)
    create_collection(client, name="copy")
    rng = np.random.default_rng(3)
    response = client.post(f"{API}/collections/copy/judgments",
                           json={"judgments": _rows(rng, 300, "c")})
    assert response.status_code == 201, response.text
    with get_sessionmaker(database_url)() as session:
        collection = session.scalars(select(Collection).where(Collection.name == "copy")).one()
        first = session.scalar(select(Judgment.id).where(Judgment.collection_id == collection.id)
                               .order_by(Judgment.id).limit(1))
        session.execute(update(Judgment).where(Judgment.id == first + 5).values(label=None))
        expected = np.array(session.execute(
            select(Judgment.task_id, Judgment.annotator_id, Judgment.label)
            .where(Judgment.collection_id == collection.id, Judgment.id > first)
            .order_by(Judgment.id)).all(), dtype=object)
        task, annotator, label = columns._columns(session, collection.id, after=first,
                                                  upto=first + 10**6)
        assert task.dtype == annotator.dtype == label.dtype == np.int64
        assert task.tolist() == expected[:, 0].tolist()
        assert annotator.tolist() == expected[:, 1].tolist()
        assert label.tolist() == [columns.WITHDRAWN if y is None else y for y in expected[:, 2]]
        assert label.tolist().count(columns.WITHDRAWN) == 1
        empty = columns._columns(session, collection.id, after=first + 10**6, upto=first + 10**7)
        assert [c.shape for c in empty] == [(0,), (0,), (0,)]
        session.rollback()


def test_snapshot_names_every_task_by_its_stored_row(client, database_url, monkeypatch) -> None:
    """The snapshot's task ids (to write results back) and names are the stored rows' own:
    names read in parts (made tiny here), ids whose code-point order differs from a locale's,
    names with quotes, a backslash or non-ASCII, a long one, and a task dropped for having only
    "could not judge" judgments. The names read as a mapping agree."""
    from app.aggregations.snapshot import load_snapshot
    from app.collections.tables import Collection
    from app.core.db import get_sessionmaker
    from app.judgments import columns
    from app.judgments.tables import Document, Task, Topic

    monkeypatch.setattr(columns, "PACKED_ROWS", 7)
    monkeypatch.setattr(columns, "NAME_ROWS", 5)
    create_collection(client, name="names")
    rng = np.random.default_rng(11)
    rows = _rows(rng, 200, "n")
    odd = ["ü-日本", "d" * 300, "D", 'd,"q"', "d\\x00"]
    rows += [{"topic": "t10", "doc": doc, "annotator": "w1", "label": 1} for doc in odd]
    rows += [{"topic": "T1", "doc": "only-cannot", "annotator": "w2", "label": -2}]
    response = client.post(f"{API}/collections/names/judgments", json={"judgments": rows})
    assert response.status_code == 201, response.text
    with get_sessionmaker(database_url)() as session:
        collection = session.scalars(select(Collection).where(Collection.name == "names")).one()
        stored = {ident: (t, d) for ident, t, d in session.execute(
            select(Task.id, Topic.external_id, Document.external_id)
            .join(Topic, Topic.id == Task.topic_id)
            .join(Document, Document.id == Task.document_id)
            .where(Task.collection_id == collection.id))}
        names = columns.task_names(session, collection_id=collection.id)
        assert dict(names.items()) == stored
        assert len(names) == len(stored) and max(stored) in names and -1 not in names
        snapshot = load_snapshot(session, collection=collection,
                                 watermark=columns.current_watermark(
                                     session, collection_id=collection.id),
                                 graded=False, kept=columns.KeptColumns(max_collections=0))
    data = snapshot.data
    named = list(zip(data.topic_ids.tolist(), data.doc_ids.tolist(), strict=True))
    assert [stored[t] for t in snapshot.task_ids.tolist()] == named
    assert ("T1", "only-cannot") not in named and ("t10", "d\\x00") in named
    assert named == sorted(named)
    assert set(snapshot.judged_tasks.tolist()) == set(stored)
