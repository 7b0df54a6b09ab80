"""The body of an evaluation job: the qrels posterior and the runs -> scores with their draws."""

from __future__ import annotations

import time
from typing import Any

from app.collections.tables import Collection
from app.corpus.service import known_topics, load_runs
from app.evaluations.draws import fit_parameter_draws
from app.evaluations.service import (
    drawing_fit,
    encode_result,
    gold_posterior,
    joint_loadings,
    load_posterior,
    ppi_gold,
    source_refs,
)
from app.evaluations.tables import Evaluation
from app.jobs.lifecycle import JobContext, run_tracked


def run_evaluation(database_url: str, evaluation_id: int) -> str:
    return run_tracked(database_url, Evaluation, evaluation_id, _evaluate,
                       first_message="reading qrels and runs")


def _evaluate(context: JobContext) -> dict[str, Any]:
    from models.evaluation.measures import parse_measures
    from models.evaluation.scoring import evaluate_runs, report

    session, evaluation, timings = context.session, context.job, context.timings
    start = time.perf_counter()
    collection = session.get(Collection, evaluation.collection_id)
    assert collection is not None
    posterior = load_posterior(session, collection=collection, source=evaluation.source)
    stored = load_runs(session, collection_id=collection.id)
    missing = [r for r in evaluation.runs if r not in stored]
    if missing:
        raise ValueError(f"runs deleted since the evaluation was requested: {missing}")
    runs = {name: stored[name] for name in evaluation.runs}
    topics = known_topics(session, collection=collection)
    unknown = {name: sum(1 for t in run if t not in topics) for name, run in runs.items()}
    _, refs = source_refs(evaluation.source)
    gold = None if refs == ["gold"] else gold_posterior(session, collection=collection)
    measures = parse_measures(evaluation.measures)
    gold_class = (ppi_gold(session, collection=collection, posterior=posterior)
                  if evaluation.interval == "ppi" else None)
    joint = (joint_loadings(session, source=evaluation.source, posterior=posterior)
             if evaluation.draws == "parameters" else None)
    timings["load_s"] = time.perf_counter() - start

    parameters = None
    if (evaluation.draws == "parameters" and joint is None and evaluation.samples > 0
            and not posterior.deterministic):
        start = time.perf_counter()
        context.progress(0.0, "drawing the annotators' parameters")
        fit = drawing_fit(session, evaluation.source)
        if fit is None:
            raise ValueError("the qrels are no longer one fit with annotator parameters")
        parameters = fit_parameter_draws(session, collection=collection, aggregation=fit,
                                         posterior=posterior, samples=evaluation.samples,
                                         seed=evaluation.seed)
        timings["parameters_s"] = time.perf_counter() - start

    start = time.perf_counter()
    context.progress(0.0, "scoring")
    scores = evaluate_runs(posterior, runs, measures, samples=evaluation.samples,
                           seed=evaluation.seed,
                           progress=lambda f, m: context.progress(0.95 * f, m),
                           gold_class=gold_class, parameters=parameters, joint=joint)
    reference = (evaluate_runs(gold, runs, measures, samples=0) if gold is not None else None)
    result = report(scores, reference=reference)
    result["unknown_topics"] = {r: n for r, n in unknown.items() if n}
    timings["score_s"] = time.perf_counter() - start
    return {
        "payload": encode_result(result),
        "report": {"topics": result["topics"], "samples": result["samples"],
                   "qrels_topics": result["qrels_topics"], "run_topics": result["run_topics"],
                   "common_topics": result["common_topics"],
                   "unknown_topics": result["unknown_topics"],
                   "unjudged_topics": result["unjudged_topics"], "gold": reference is not None,
                   "interval": evaluation.interval,
                   "draws": result["draws"] if result["samples"] else None},
    }
