"""Task feature vectors: stored per collection, replaced as a whole."""

from __future__ import annotations

from sqlalchemy import delete
from sqlalchemy.orm import Session

from app.collections.tables import Collection
from app.core.db import bulk_insert
from app.core.errors import Conflict, InvalidInput, NotFound
from app.features.tables import FeatureBuild, FeatureSet, TaskFeatures
from app.jobs.lifecycle import JobFinished, cancel_job
from app.jobs.runner import JobRunner, submit_job
from app.judgments.ids import ensure_task_keys
from app.judgments.tables import Document, Task, Topic

# Prefixes of feature names ("group:name") that select a kernel group; others are "user".
GROUP_ALIASES = {"lex": "lexical", "lexical": "lexical", "run": "ranking", "runs": "ranking",
                 "rank": "ranking", "ranking": "ranking", "sem": "semantic",
                 "semantic": "semantic", "embedding": "semantic"}


def feature_groups(names: list[str]) -> dict[str, list[int]]:
    """Column indices per group, from name prefixes such as ``lexical:bm25`` or ``run:x:rr``."""
    groups: dict[str, list[int]] = {}
    for index, name in enumerate(names):
        prefix = name.split(":", 1)[0].lower() if ":" in name else ""
        groups.setdefault(GROUP_ALIASES.get(prefix, "user"), []).append(index)
    return groups


def replace_features(
    session: Session, *, collection: Collection, names: list[str],
    vectors: dict[tuple[str, str], list[float]], source: str,
    groups: dict[str, list[int]] | None = None, commit: bool = True,
) -> dict[str, int]:
    """Store one vector per (topic, doc); tasks are created on first sight (for predictions).

    ``commit=False`` leaves the transaction open: a feature build commits the features with its
    'succeeded' status, or drops them when it was cancelled meanwhile (app.jobs.lifecycle)."""
    cid = collection.id
    keys = list(vectors)
    task_ids, created = ensure_task_keys(
        session, collection_id=cid, keys=keys, topics=Topic.__table__,
        documents=Document.__table__, tasks=Task.__table__)
    session.execute(delete(TaskFeatures).where(TaskFeatures.collection_id == cid))
    session.execute(delete(FeatureSet).where(FeatureSet.collection_id == cid))
    session.add(FeatureSet(collection_id=cid, names=names, source=source,
                           groups=groups if groups is not None else feature_groups(names)))
    rows = [{"task_id": t, "collection_id": cid, "vector": vectors[k]}
            for t, k in zip(task_ids, keys, strict=True)]
    bulk_insert(session, TaskFeatures.__table__, rows)
    if commit:
        session.commit()
    return {"tasks": len(rows), "dimensions": len(names), "new_tasks": len(created)}


def describe_features(session: Session, *, collection: Collection) -> dict[str, object] | None:
    feature_set = session.get(FeatureSet, collection.id)
    if feature_set is None:
        return None
    from sqlalchemy import func, select

    count = session.scalar(select(func.count()).select_from(TaskFeatures).where(
        TaskFeatures.collection_id == collection.id)) or 0
    return {"names": feature_set.names, "groups": feature_set.groups, "source": feature_set.source,
            "tasks": count, "updated_at": feature_set.updated_at}


def request_build(session: Session, *, runner: JobRunner, collection: Collection,
                  lexical: bool | None, ranking: bool | None, semantic: bool,
                  k1: float, b: float, mu: float, rank_transform: str = "normal"
                  ) -> FeatureBuild:
    """Queue a feature build; by default from whatever inputs the collection has."""
    from app.corpus.service import list_runs, text_counts

    texts = text_counts(session, collection=collection)
    have_texts = texts["topics_with_text"] > 0 and texts["documents_with_text"] > 0
    have_runs = bool(list_runs(session, collection=collection))
    lexical = have_texts if lexical is None else lexical
    ranking = have_runs if ranking is None else ranking
    if semantic and not lexical:
        raise InvalidInput("semantic features are built with the lexical ones: set lexical",
                           code="invalid_feature_request")
    if lexical and not have_texts:
        raise InvalidInput("lexical features need topic and document texts: PUT "
                           f"/collections/{collection.name}/topics and .../documents first",
                           code="missing_texts")
    if ranking and not have_runs:
        raise InvalidInput(f"ranking features need runs: PUT /collections/{collection.name}"
                           "/runs/{name} first", code="missing_runs")
    if not (lexical or ranking):
        raise InvalidInput("nothing to build: upload topic and document texts or runs first",
                           code="missing_inputs")
    if semantic:
        from models.features.embeddings import model_dir

        try:
            model_dir()
        except Exception as exc:  # the optional extra is missing
            raise InvalidInput(str(exc), code="embeddings_unavailable") from None
    build = FeatureBuild(
        collection_id=collection.id, status="queued", progress=0.0, progress_message="queued",
        params={"lexical": lexical, "ranking": ranking, "semantic": semantic, "k1": k1, "b": b,
                "mu": mu, "rank_transform": rank_transform},
    )
    submit_job(session, runner, "features", build)
    return build


def get_build(session: Session, *, build_id: int) -> FeatureBuild:
    build = session.get(FeatureBuild, build_id)
    if build is None:
        raise build_not_found(build_id)
    return build


def cancel_build(session: Session, *, runner: JobRunner, build: FeatureBuild) -> FeatureBuild:
    """Cancel a queued or running feature build as fits are cancelled (app.jobs.lifecycle's
    cancel_job): it ends 'cancelled' and stores no features; a finished one is a Conflict."""
    try:
        cancel_job(session, runner=runner, kind="features", job=build)
    except JobFinished as exc:
        raise Conflict(f"feature build {build.id} has already {exc.status}",
                       code="feature_build_finished", status=exc.status) from None
    return build


def build_not_found(build_id: int) -> NotFound:
    return NotFound(f"no feature build {build_id}", code="feature_build_not_found")
