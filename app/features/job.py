"""The body of a feature-build job: the collection's tasks, texts and runs -> task features."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.collections.tables import Collection
from app.corpus.service import load_runs
from app.features.service import replace_features
from app.features.tables import FeatureBuild
from app.jobs.lifecycle import JobContext, run_tracked
from app.judgments.tables import Document, Task, Topic


def run_feature_build(database_url: str, build_id: int) -> str:
    return run_tracked(database_url, FeatureBuild, build_id, _build,
                       first_message="reading texts and runs")


def _build(context: JobContext) -> dict[str, Any]:
    collection = context.session.get(Collection, context.job.collection_id)
    assert collection is not None
    # context.progress stops the build (JobCancelled) once it has been cancelled; the features
    # stay uncommitted until run_tracked commits them with 'succeeded', so a build cancelled
    # at any point stores none.
    return build_and_store(context.session, collection, dict(context.job.params),
                           context.timings, context.progress, commit=False)


# What a feature build uses when nobody chose: the router's defaults (BM25 k1, b; LM mu).
DEFAULT_BUILD = {"semantic": False, "k1": 0.9, "b": 0.4, "mu": 1000.0, "rank_transform": "normal"}


def buildable_inputs(session: Session, collection: Collection) -> dict[str, bool]:
    """{"lexical": texts of topics and documents exist, "ranking": runs exist}."""
    from app.corpus.service import list_runs, text_counts

    texts = text_counts(session, collection=collection)
    return {"lexical": texts["topics_with_text"] > 0 and texts["documents_with_text"] > 0,
            "ranking": bool(list_runs(session, collection=collection))}


def build_and_store(session: Session, collection: Collection, params: dict[str, Any],
                    timings: dict[str, float],
                    progress: Callable[[float, str], None], *,
                    commit: bool = True) -> dict[str, Any]:
    """Build the collection's task features from its texts and runs and store them (the body of
    a feature-build job, also run by a GP fit that finds texts or runs but no features);
    ``commit=False``: stored in the session's open transaction, for the caller to commit."""
    start = time.perf_counter()
    tasks = session.execute(
        select(Topic.external_id, Document.external_id)
        .join(Task, Task.topic_id == Topic.id)
        .join(Document, Document.id == Task.document_id)
        .where(Task.collection_id == collection.id).order_by(Task.id)
    ).all()
    if not tasks:
        raise ValueError("the collection has no tasks")
    topic_texts = dict(session.execute(select(Topic.external_id, Topic.text).where(
        Topic.collection_id == collection.id, Topic.text.is_not(None))).all())
    doc_texts = dict(session.execute(select(Document.external_id, Document.text).where(
        Document.collection_id == collection.id, Document.text.is_not(None))).all())
    runs = load_runs(session, collection_id=collection.id) if params["ranking"] else {}
    use_texts = params["lexical"]  # semantic features need them too (checked on request)
    if use_texts and (not topic_texts or not doc_texts):
        raise ValueError("lexical and semantic features need topic and document texts: "
                         "PUT .../topics and .../documents first")
    if params["ranking"] and not runs:
        raise ValueError("ranking features need runs: PUT .../runs/{name} first")
    timings["load_s"] = time.perf_counter() - start
    progress(0.1, "inputs read")

    from models.features import build_features

    stages: dict[str, float] = {}
    features = build_features(
        [(t, d) for t, d in tasks],
        topic_texts=topic_texts if use_texts else None,
        doc_texts=doc_texts if use_texts else None,
        runs=runs or None, embeddings=params["semantic"],
        k1=params["k1"], b=params["b"], mu=params["mu"], timings=stages,
        # builds queued before the option existed had log rank and reciprocal rank
        rank_transform=params.get("rank_transform", "log_rr"),
    )
    timings.update({f"build_{k}": v for k, v in stages.items()})
    progress(0.9, "storing features")
    start = time.perf_counter()
    replace_features(session, collection=collection, names=features.names,
                     vectors=features.as_dict(), source="built", groups=features.groups,
                     commit=commit)
    timings["store_s"] = time.perf_counter() - start
    return {"report": {"tasks": len(tasks), "names": features.names, "groups": features.groups,
                       "notes": list(features.notes), "constant": list(features.constant)}}
