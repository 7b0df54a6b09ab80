"""The annotator-parameter draws of a fit for an evaluation job: its judgments (the snapshot it
read, up to its watermark) and its stored posterior and parameters, turned into
``models.evaluation.parameters.AnnotatorDraws`` (numpy only: no model is imported or refitted;
which evaluations make them: ``service.resolve_draws``)."""

from __future__ import annotations

import numpy as np
from sqlalchemy import select
from sqlalchemy.orm import Session

from app.aggregations.tables import Aggregation, AggregationAnnotator, AggregationTask
from app.collections.tables import Collection
from app.judgments.columns import annotation_data, read_judgments, task_names
from models.dependence import tempering
from models.evaluation.parameters import (
    AnnotatorDraws,
    RowPrior,
    draw_parameters,
    parameter_family,
)
from models.evaluation.uncertainty import Posterior
from models.tempering import plugin_posterior


def fit_parameter_draws(session: Session, *, collection: Collection, aggregation: Aggregation,
                        posterior: Posterior, samples: int, seed: int) -> AnnotatorDraws:
    """``samples`` draws of the annotators' parameters of ``aggregation`` from their posterior,
    aligned with the rows of ``posterior`` (its qrels). The judgments are those the fit read
    (up to its watermark, binary or graded as it was), as class indices of its classes; the
    soft counts use the stored posterior of every task the fit scored (MACE's unselected
    tasks too); a tempered fit's τ_i (``info["dependence_rho"]``) weighs its tasks' judgments.
    ValueError when the stored result lacks what the draws need."""
    family = parameter_family(aggregation.method)
    if family is None:
        raise ValueError(f"method {aggregation.method!r} has no annotator parameters to draw")
    columns = read_judgments(session, collection, upto=aggregation.watermark)
    names = task_names(session, collection_id=collection.id)
    data, task_ids, annotator_ids = annotation_data(columns, names, collection=collection,
                                                    graded=aggregation.graded)
    classes = np.asarray(aggregation.classes or [0, 1], dtype=np.int64)
    # The data's classes as the fit's class indices (the same scale unless the scale changed)
    at = np.searchsorted(classes, data.classes)
    known = (at < len(classes)) & (classes[np.minimum(at, len(classes) - 1)] == data.classes)
    usable = known[data.label]
    label = at[data.label][usable]
    task, annotator = data.task[usable], data.annotator[usable]

    stored = dict(session.execute(
        select(AggregationTask.task_id, AggregationTask.proba)
        .where(AggregationTask.aggregation_id == aggregation.id)).all())
    proba = np.full((data.n_tasks, len(classes)), 1.0 / len(classes))
    scored = np.zeros(data.n_tasks, dtype=bool)
    for i, ident in enumerate(task_ids.tolist()):
        row = stored.get(ident)
        if row is not None and len(row) == len(classes):
            proba[i], scored[i] = row, True
    # the draws tilt the fit's own posterior, not its gold-free read-out (models.tempering)
    proba = plugin_posterior(proba, data.task, data.n_tasks, aggregation.info)
    keep = scored[task]  # judgments of tasks the fit did not score inform nothing
    task, annotator, label = task[keep], annotator[keep], label[keep]

    rho = (aggregation.info or {}).get("dependence_rho")
    weight = (None if rho is None
              else tempering(data.task, data.n_tasks, float(rho))[data.task][usable][keep])
    competence = spam = None
    class_prior = True
    if family == "mace":
        competence, spam = _mace_parameters(session, aggregation, annotator_ids, classes)
        # the prior the fit used ("auto" chose one: info says which)
        used = (aggregation.info or {}).get("class_prior",
                                            (aggregation.params or {}).get("class_prior"))
        class_prior = used == "learned"
    draws = draw_parameters(family, proba, task, annotator, label, samples=samples, seed=seed,
                            competence=competence, spam=spam, class_prior=class_prior,
                            weight=weight,
                            # the fit's own prior on a confusion row (its info: the one "auto"
                            # chose)
                            row_prior=RowPrior.of_fit(aggregation.method, aggregation.params,
                                                      aggregation.info))
    row_of = {key: r for r, key in enumerate(zip(posterior.topics.tolist(),
                                                  posterior.docs.tolist(), strict=True))}
    rows = np.array([row_of.get(key, -1) for key in zip(data.topic_ids.tolist(),
                                                       data.doc_ids.tolist(), strict=True)],
                    dtype=np.int64)
    return draws.restrict(rows)


def _mace_parameters(session: Session, aggregation: Aggregation, annotator_ids: np.ndarray,
                     classes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """MACE's stored θ_j (``competence``) and ξ_j (``spam_p_<label>``), in the data's
    annotator order."""
    stored = {ident: (competence, extra or {}) for ident, competence, extra in session.execute(
        select(AggregationAnnotator.annotator_id, AggregationAnnotator.competence,
               AggregationAnnotator.extra)
        .where(AggregationAnnotator.aggregation_id == aggregation.id)).all()}
    competence = np.empty(len(annotator_ids))
    spam = np.empty((len(annotator_ids), len(classes)))
    for j, ident in enumerate(annotator_ids.tolist()):
        theta, extra = stored.get(ident, (None, {}))
        xi = [extra.get(f"spam_p_{int(v)}") for v in classes]
        if theta is None or any(x is None for x in xi):
            raise ValueError(f"fit #{aggregation.id} stored no MACE parameters (competence, "
                             "spam_p_<label>) for one of its annotators: fit again, or ask "
                             'for "draws": "labels"')
        competence[j], spam[j] = theta, xi
    return competence, spam
