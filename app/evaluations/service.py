"""Evaluations: create (validated, queued), read, their results; the qrels posterior of an
aggregation, of gold, or of a union / intersection of them (shared by the job, the downloads and
the dashboard)."""

from __future__ import annotations

import gzip
import json
from typing import Any

import numpy as np
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from app.aggregations.gold import uses_gold
from app.aggregations.service import require_succeeded
from app.aggregations.tables import Aggregation, AggregationArtifact, AggregationTask
from app.collections.tables import Collection
from app.core.errors import Conflict, InvalidInput, NotFound
from app.corpus.tables import Run
from app.evaluations.schemas import EvaluationCreate
from app.evaluations.tables import Evaluation
from app.jobs.runner import JobRunner, submit_job
from app.judgments.tables import Document, Task, Topic
from models.evaluation import relevant_index
from models.evaluation.joint import KIND as JOINT_KIND
from models.evaluation.joint import JointLoadings
from models.evaluation.measures import UnknownMeasure, parse_measures
from models.evaluation.parameters import METHOD_FAMILY, parameter_family
from models.evaluation.ppi import PPINeedsGold, check_gold, gold_classes
from models.evaluation.uncertainty import Posterior, combine


# -- sources -----------------------------------------------------------------------------------
def source_refs(source: Any) -> tuple[str | None, list[Any]]:
    """(mode, [aggregation id | "gold"]); mode None for a single source."""
    if isinstance(source, dict):
        if len(source) != 1:
            raise InvalidInput('give one of "union" or "intersection"', code="invalid_source")
        mode, refs = next(iter(source.items()))
        if mode not in ("union", "intersection"):
            raise InvalidInput(f"unknown combination {mode!r}; valid: union, intersection",
                               code="invalid_source", valid=["union", "intersection"])
        if not isinstance(refs, list) or len(refs) < 2:
            raise InvalidInput(f"{mode} needs two or more sources", code="invalid_source")
        # The combination treats its sources as independent: a fit given twice would count
        # its P(relevant) twice (union 1 - (1 - p)^2: 0.6 -> 0.84), not once.
        repeated = sorted({str(r) for r in refs if refs.count(r) > 1})
        if repeated:
            raise InvalidInput(f"{mode} of the same source more than once "
                               f"({', '.join(repeated)}): give each source once",
                               code="invalid_source")
        return mode, list(refs)
    return None, [source]


def source_label(source: Any) -> str:
    """``3`` -> "fit #3", ``"gold"`` -> "gold", ``{"union": [3, "gold"]}`` -> "union of fit #3,
    gold" (how pages and messages name an evaluation's qrels)."""
    if isinstance(source, dict):
        (mode, refs), = source.items()
        return f"{mode} of " + ", ".join(source_label(r) for r in refs)
    return "gold" if source == "gold" else f"fit #{source}"


def check_source(session: Session, *, collection: Collection, source: Any) -> None:
    """404 for an aggregation of another collection, 409 for one that has not succeeded,
    422 for "gold" in a collection without gold labels."""
    _, refs = source_refs(source)
    for ref in refs:
        if ref == "gold":
            if not _has_gold(session, collection):
                raise InvalidInput(f"collection {collection.name!r} has no gold labels",
                                   code="no_gold")
            continue
        if isinstance(ref, bool) or not isinstance(ref, int):
            raise InvalidInput(f'a source is an aggregation id or "gold", got {ref!r}',
                               code="invalid_source")
        aggregation = session.get(Aggregation, ref)
        if aggregation is None or aggregation.collection_id != collection.id:
            raise NotFound(f"no aggregation {ref} in collection {collection.name!r}",
                           code="aggregation_not_found")
        require_succeeded(aggregation)


def _has_gold(session: Session, collection: Collection) -> bool:
    return session.scalar(select(func.count()).select_from(Task).where(
        Task.collection_id == collection.id, Task.gold.is_not(None))) != 0


def gold_posterior(session: Session, *, collection: Collection) -> Posterior | None:
    qrels = gold_labels(session, collection=collection)
    if not qrels:
        return None
    return Posterior.from_qrels(qrels, relevant_from=collection.relevant_from)


def gold_labels(session: Session, *, collection: Collection) -> dict[tuple[str, str], int]:
    """{(topic, doc): gold label} of the collection (labels it ignores left out)."""
    rows = session.execute(
        select(Topic.external_id, Document.external_id, Task.gold)
        .join(Topic, Topic.id == Task.topic_id).join(Document, Document.id == Task.document_id)
        .where(Task.collection_id == collection.id, Task.gold.is_not(None))
    ).all()
    ignore = set(collection.ignore or [])
    return {(t, d): int(g) for t, d, g in rows if g not in ignore}


def ppi_gold(session: Session, *, collection: Collection, posterior: Posterior) -> np.ndarray:
    """The gold class of each of the posterior's pairs (-1 without gold) for a prediction-
    powered interval; 422 ``ppi_needs_gold`` with the counts when they cannot carry one."""
    gold = gold_classes(posterior.classes, posterior.relevant_index, posterior.topics,
                        posterior.docs, gold_labels(session, collection=collection),
                        collection.relevant_from)
    try:
        check_gold(gold, posterior.relevant_index)
    except PPINeedsGold as exc:
        raise InvalidInput(str(exc), code="ppi_needs_gold", **exc.counts) from None
    return gold


def aggregation_posterior(session: Session, *, collection: Collection,
                          aggregation: Aggregation) -> Posterior:
    """The tasks of a succeeded aggregation (those it kept: MACE's threshold leaves some out,
    as its qrels download does) with their class probabilities."""
    require_succeeded(aggregation)
    rows = session.execute(
        select(Topic.external_id, Document.external_id, AggregationTask.proba,
               AggregationTask.extra)
        .join(Task, Task.id == AggregationTask.task_id)
        .join(Topic, Topic.id == Task.topic_id).join(Document, Document.id == Task.document_id)
        .where(AggregationTask.aggregation_id == aggregation.id)
    ).all()
    kept = [r for r in rows if (r[3] or {}).get("selected", 1.0) != 0.0]
    classes = np.array(aggregation.classes or [0, 1], dtype=np.int64)
    proba = np.array([r[2] for r in kept], dtype=np.float64).reshape(-1, len(classes))
    return Posterior(topics=np.array([r[0] for r in kept], dtype=object),
                     docs=np.array([r[1] for r in kept], dtype=object), proba=proba,
                     classes=classes,
                     relevant_index=relevant_index(classes, collection.relevant_from,
                                                   graded=aggregation.graded))


def load_posterior(session: Session, *, collection: Collection, source: Any) -> Posterior:
    check_source(session, collection=collection, source=source)
    mode, refs = source_refs(source)
    posteriors = []
    for ref in refs:
        if ref == "gold":
            gold = gold_posterior(session, collection=collection)
            assert gold is not None  # checked
            posteriors.append(gold)
        else:
            aggregation = session.get(Aggregation, ref)
            assert aggregation is not None
            posteriors.append(aggregation_posterior(session, collection=collection,
                                                    aggregation=aggregation))
    return posteriors[0] if mode is None else combine(posteriors, mode)


def joint_loadings(session: Session, *, source: Any,
                   posterior: Posterior) -> JointLoadings | None:
    """The joint posterior a binary GP fit stored (``models.evaluation.joint.JointLoadings``),
    so that the evaluation's draws move tasks sharing features together; None for any other
    source (gold, a combination, a fit without one: independent per-task draws)."""
    artifact = None if len(posterior.classes) != 2 else _joint_artifact(session, source)
    return None if artifact is None else JointLoadings.from_bytes(artifact.payload)


def _joint_artifact(session: Session, source: Any) -> AggregationArtifact | None:
    """The stored joint posterior of ``source`` when it is one fit that has one."""
    mode, refs = source_refs(source)
    if mode is not None or refs == ["gold"]:
        return None
    return session.get(AggregationArtifact, (refs[0], JOINT_KIND))


def posterior_rows(posterior: Posterior) -> list[dict[str, Any]]:
    """A posterior as the rows the aggregation qrels downloads take (topic, doc order)."""
    proba = posterior.proba
    labels = posterior.classes[posterior.most_probable()]
    p_rel = posterior.p_relevant()
    with np.errstate(divide="ignore", invalid="ignore"):
        entropy = -np.sum(np.where(proba > 0, proba * np.log(proba), 0.0), axis=1)
    rows = [{"topic": str(t), "doc": str(d), "label": int(lab), "p_relevant": float(p),
             "proba": [float(x) for x in row], "uncertainty": float(h), "extra": None}
            for t, d, lab, p, row, h in zip(posterior.topics, posterior.docs, labels, p_rel,
                                            proba, entropy, strict=True)]
    rows.sort(key=lambda r: (r["topic"], r["doc"]))
    return rows


def drawing_fit(session: Session, source: Any) -> Aggregation | None:
    """The fit whose annotator parameters the draws of ``source`` can draw: a single
    aggregation of a method with an annotator posterior (``METHOD_FAMILY``); None otherwise
    (gold, a union or intersection, majority vote, the GP methods)."""
    mode, refs = source_refs(source)
    if mode is not None or refs == ["gold"]:
        return None
    aggregation = session.get(Aggregation, refs[0])
    if aggregation is None or parameter_family(aggregation.method) is None:
        return None
    return aggregation


def has_joint_posterior(session: Session, source: Any) -> bool:
    """Whether ``source`` is one binary GP fit that stored its joint posterior of f."""
    return _joint_artifact(session, source) is not None


def resolve_draws(session: Session, *, source: Any, draws: str | None, samples: int) -> str:
    """"parameters" or "labels" for a request (``draws`` null: "parameters" where the source is
    a fit that has them and there are draws to make); 422 ``parameter_draws_unsupported`` for
    "parameters" asked of a source without model parameters to draw. "parameters" are the
    annotators' (a fit of ``METHOD_FAMILY``) or, for a binary GP fit, its latent function
    (the joint posterior the fit stored)."""
    fit = drawing_fit(session, source)
    if fit is None and has_joint_posterior(session, source):
        fit = source
    if draws is None:
        return "parameters" if fit is not None and samples > 0 else "labels"
    if draws == "parameters" and fit is None:
        methods = sorted(METHOD_FAMILY)
        raise InvalidInput("parameter draws need the qrels of one fit of "
                           f"{', '.join(methods)} (annotator parameters to draw) or of a "
                           "binary GP fit with a GP over the tasks; use "
                           '"draws": "labels"', code="parameter_draws_unsupported",
                           methods=methods)
    return draws


# -- evaluations -------------------------------------------------------------------------------
def create_evaluation(session: Session, *, runner: JobRunner, collection: Collection,
                      spec: EvaluationCreate) -> Evaluation:
    try:
        measures = [m.name for m in parse_measures(spec.measures)]
    except UnknownMeasure as exc:
        raise InvalidInput(str(exc), code="unknown_measure", valid=exc.valid) from None
    check_source(session, collection=collection, source=spec.aggregation)
    if spec.interval == "ppi":
        _check_fits_without_gold(session, spec.aggregation)
        ppi_gold(session, collection=collection,
                 posterior=load_posterior(session, collection=collection,
                                          source=spec.aggregation))
    stored = list(session.scalars(select(Run.name).where(Run.collection_id == collection.id)
                                  .order_by(Run.name)))
    if spec.runs is None:
        runs = stored
    else:
        missing = [r for r in spec.runs if r not in set(stored)]
        if missing:
            raise NotFound(f"no run {', '.join(map(repr, missing))} in collection "
                           f"{collection.name!r}", code="run_not_found", runs=missing)
        runs = list(dict.fromkeys(spec.runs))
    if not runs:
        raise InvalidInput(f"collection {collection.name!r} has no runs: PUT .../runs/{{name}} "
                           "first", code="no_runs")
    draws = resolve_draws(session, source=spec.aggregation, draws=spec.draws,
                          samples=spec.samples)
    evaluation = Evaluation(
        collection_id=collection.id, source=spec.aggregation, runs=runs, measures=measures,
        samples=spec.samples, seed=spec.seed, interval=spec.interval, draws=draws,
        status="queued", progress=0.0, progress_message="queued")
    submit_job(session, runner, "evaluation", evaluation)
    return evaluation


def _check_fits_without_gold(session: Session, source: Any) -> None:
    """A prediction-powered interval needs predictions of the gold pairs made without their
    labels: 422 ``ppi_gold_used_in_fit`` for a fit that clamped them (``use_gold``)."""
    for ref in source_refs(source)[1]:
        aggregation = session.get(Aggregation, ref) if ref != "gold" else None
        if aggregation is not None and uses_gold(aggregation):
            raise InvalidInput(f"fit #{ref} clamped the gold labels (use_gold): its predictions "
                               "of the gold pairs are the gold, so they cannot measure its "
                               "error; use a fit without use_gold", code="ppi_gold_used_in_fit")


def get_evaluation(session: Session, *, evaluation_id: int) -> Evaluation:
    evaluation = session.get(Evaluation, evaluation_id)
    if evaluation is None:
        raise evaluation_not_found(evaluation_id)
    return evaluation


def evaluation_not_found(evaluation_id: int) -> NotFound:
    return NotFound(f"no evaluation {evaluation_id}", code="evaluation_not_found")


def list_evaluations(session: Session, *, collection: Collection, limit: int | None = None,
                     offset: int = 0) -> list[Evaluation]:
    """Oldest first; ``limit`` / ``offset``: a page of them (``count_evaluations``: all)."""
    return list(session.scalars(select(Evaluation).where(
        Evaluation.collection_id == collection.id).order_by(Evaluation.id)
        .limit(limit).offset(offset)))


def count_evaluations(session: Session, *, collection: Collection) -> int:
    return session.scalar(select(func.count()).select_from(Evaluation).where(
        Evaluation.collection_id == collection.id)) or 0


def evaluation_result(evaluation: Evaluation) -> dict[str, Any]:
    """The full result (results per topic and "all", pairs, rankings) of a succeeded one."""
    if evaluation.status != "succeeded" or evaluation.payload is None:
        raise Conflict(f"evaluation {evaluation.id} is {evaluation.status}: results exist only "
                       "for a succeeded evaluation", code="evaluation_not_succeeded",
                       status=evaluation.status)
    result: dict[str, Any] = json.loads(gzip.decompress(evaluation.payload))
    return result


def summary(evaluation: Evaluation) -> dict[str, Any]:
    """Means over topics, pairs and rankings (what GET /evaluations/{e} and a dashboard show)."""
    if evaluation.status != "succeeded" or evaluation.payload is None:
        return {}
    result = evaluation_result(evaluation)
    return {"results": [r for r in result["results"] if r["topic"] == "all"],
            "pairs": result["pairs"], "rankings": result["rankings"]}


def encode_result(result: dict[str, Any]) -> bytes:
    return gzip.compress(json.dumps(result, separators=(",", ":")).encode(), compresslevel=5)
