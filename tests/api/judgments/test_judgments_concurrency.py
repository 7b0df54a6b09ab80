"""Two uploads at once that create the same tasks (and topics, annotators): each new row is
counted by exactly one of them, and the gold of the later upload is on every task.

On SQLite the SELECT of the missing rows runs before the write transaction starts, so both
uploads found the same tasks missing; the loser's ``INSERT ... ON CONFLICT DO NOTHING`` inserted
nothing, yet it counted every task as new and left its gold unset. A barrier on the first INSERT
of each upload makes that interleaving certain: both have read before either writes. (On
PostgreSQL the collection lock serialises the two; the barrier then times out and the second
upload waits for the first.)
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from contextlib import suppress

import pytest
from sqlalchemy import event, func, select

from app.collections.tables import Collection
from app.core.db import get_engine, get_sessionmaker
from app.corpus.service import set_texts
from app.formats.judgments_file import parse_judgments
from app.judgments import service
from app.judgments.tables import Annotator, Task, Topic

N_TOPICS, N_DOCS = 5, 40


def _file(gold: int, annotator: str) -> bytes:
    lines = ["topic\tdoc\tannotator\tlabel\tgold"]
    lines += [f"t{t}\td{d}\t{annotator}\t1\t{gold}" for t in range(N_TOPICS) for d in range(N_DOCS)]
    return ("\n".join(lines) + "\n").encode()


@pytest.mark.parametrize("new", ["tasks", "everything"])
def test_concurrent_uploads_of_the_same_new_tasks(database_url: str, new: str) -> None:
    make_session = get_sessionmaker(database_url)
    with make_session() as session:
        collection = Collection(name="c", labels=[0, 1, 2], relevant_from=1, ignore=[])
        session.add(collection)
        session.commit()
        cid = collection.id
        if new == "tasks":  # topics, documents and the annotator exist: tasks are the race
            set_texts(session, collection=collection, kind="topics",
                      texts={f"t{t}": "" for t in range(N_TOPICS)})
            set_texts(session, collection=collection, kind="documents",
                      texts={f"d{d}": "" for d in range(N_DOCS)})
            service.ingest(session, collection=collection, source="json",
                           rows=parse_judgments(b"topic\tdoc\tannotator\tlabel\nx\ty\tw\t0\n"))

    barrier = threading.Barrier(2)
    waited: set[int] = set()

    def first_insert_waits(conn, cursor, statement, parameters, context, executemany):  # noqa: ANN001
        if statement.lstrip().upper().startswith("INSERT") and \
                threading.get_ident() not in waited:
            waited.add(threading.get_ident())
            # PostgreSQL: the other upload waits on the collection lock, the barrier breaks.
            with suppress(threading.BrokenBarrierError):
                barrier.wait(timeout=1)

    def upload(gold: int) -> service.IngestReport:
        with make_session() as session:
            collection = session.get(Collection, cid)
            return service.ingest(session, collection=collection, source="file",
                                  rows=parse_judgments(_file(gold, "w")))

    engine = get_engine(database_url)
    event.listen(engine, "before_cursor_execute", first_insert_waits)
    try:
        with ThreadPoolExecutor(2) as pool:
            reports = list(pool.map(upload, [1, 2]))
    finally:
        event.remove(engine, "before_cursor_execute", first_insert_waits)

    n_tasks = N_TOPICS * N_DOCS
    assert sum(r.new_tasks for r in reports) == n_tasks, reports
    if new == "everything":
        assert sum(r.new_topics for r in reports) == N_TOPICS, reports
        assert sum(r.new_documents for r in reports) == N_DOCS, reports
        assert sum(r.new_annotators for r in reports) == 1, reports
    later = max(zip((r.batch_id for r in reports), (1, 2), strict=True))[1]
    with make_session() as session:
        golds = session.scalars(select(Task.gold).join(Topic, Topic.id == Task.topic_id)
                                .where(Task.collection_id == cid, Topic.external_id != "x"))
        assert sorted(golds) == [later] * n_tasks
        assert session.scalar(select(func.count()).select_from(Annotator)
                              .where(Annotator.collection_id == cid)) == 1
