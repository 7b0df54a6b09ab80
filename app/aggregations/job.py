"""The body of a fit job, the same for every runner: read the snapshot, fit, store the results.

Runs in a worker process (a child of the API, or a Celery worker): it is the only place of the
service that imports the models, and so TensorFlow for the GP methods.
"""

from __future__ import annotations

import time
from typing import Any

from app.aggregations.gold import fit_record
from app.aggregations.results import store_results
from app.aggregations.snapshot import load_snapshot
from app.aggregations.tables import Aggregation
from app.collections.tables import Collection
from app.core.config import get_settings
from app.core.quiet import quiet_tensorflow
from app.jobs.lifecycle import JobCancelled, JobContext, run_tracked

# Folds of the held-out evaluation of a fit that clamps gold (params use_gold).
HELD_OUT_FOLDS = 5


def run_fit(database_url: str, aggregation_id: int) -> str:
    """Fit one aggregation; return its final status. Never raises for a failed fit."""
    return run_tracked(database_url, Aggregation, aggregation_id, _fit,
                       first_message="reading judgments")


def _fit(context: JobContext) -> dict[str, Any]:
    session, aggregation, timings = context.session, context.job, context.timings
    start = time.perf_counter()
    collection = session.get(Collection, aggregation.collection_id)
    assert collection is not None
    snapshot = load_snapshot(session, collection=collection, watermark=aggregation.watermark,
                             graded=aggregation.graded)
    timings["load_s"] = time.perf_counter() - start
    built = _build_missing_features(context, collection, aggregation.method, snapshot)
    if built:
        snapshot = load_snapshot(session, collection=collection, watermark=aggregation.watermark,
                                 graded=aggregation.graded)

    context.progress(0.0, "fitting")
    start = time.perf_counter()
    from models.features.build import with_kernel_params
    from models.pipeline import FitSpec, fit
    from models.registry import GP_METHODS

    if not get_settings().verbose:  # TensorFlow's start-up lines read as errors (app.core.quiet)
        quiet_tensorflow(import_now=aggregation.method in GP_METHODS)

    # relevant_from also splits graded labels for a calibrated fit (calibrate_folds)
    spec = FitSpec(aggregation.method, with_kernel_params(
        aggregation.method, aggregation.params, snapshot.feature_groups), aggregation.seed,
        relevant_from=collection.relevant_from, graded=aggregation.graded)
    data, init, warm = snapshot.data, None, None
    if aggregation.warm_start_id is not None:
        rebuilt = time.perf_counter()
        init, warm = _warm_init(context, data)
        timings["warm_start_s"] = time.perf_counter() - rebuilt
    fitted = fit(spec, data, init=init, progress=context.progress)
    if built:
        fitted.result.info["features_built"] = True
    if warm is not None:
        fitted.result.info["warm_start"] = warm
    timings["fit_s"] = time.perf_counter() - start

    n_gold = 0 if data.gold is None else int((data.gold >= 0).sum())
    folds = None
    if spec.params.get("use_gold") and n_gold >= HELD_OUT_FOLDS:
        # Gold clamped in the fit: score each gold task by a fit that did not see its label.
        folds = HELD_OUT_FOLDS
        context.progress(0.99, f"held-out evaluation: {HELD_OUT_FOLDS} folds over the gold")
    start = time.perf_counter()
    scores = fitted.score(folds, own_labels=False)  # as gold.rescore scores a stored fit
    if folds is not None:
        timings["held_out_s"] = time.perf_counter() - start

    if context.cancelled():
        raise JobCancelled
    start = time.perf_counter()
    gold = fit_record(collection=collection, gold=snapshot.gold, fit_tasks=snapshot.task_ids,
                      judged_tasks=snapshot.judged_tasks, n_scored=n_gold)
    store_results(session, aggregation=aggregation, snapshot=snapshot, fitted=fitted,
                  scores=scores, gold_record=gold)
    timings["store_s"] = time.perf_counter() - start
    return {}


def _warm_init(context: JobContext, data: Any) -> tuple[Any, dict[str, Any]]:
    """The ``init`` of a warm-started fit, rebuilt from the stored result of the fit it
    starts from (``warm.load_init``), and what ``info.warm_start`` records of it: ``from`` (its
    id), ``from_n_judgments``, ``new_annotators`` (annotators it did not have: they start from
    the mean row)."""
    from app.aggregations.warm import load_init

    previous = context.session.get(Aggregation, context.job.warm_start_id)
    if previous is None or previous.status != "succeeded":
        raise ValueError(f"warm start: aggregation {context.job.warm_start_id} is gone or did "
                         "not succeed")
    if list(previous.classes or []) != data.classes.tolist():
        raise ValueError(f"warm start: aggregation {previous.id} has the classes "
                         f"{previous.classes}, this fit {data.classes.tolist()}")
    init = load_init(context.session, previous=previous)
    known = set(init.annotator_ids_.tolist())
    new = sum(1 for a in data.annotator_ids.tolist() if a not in known)
    return init, {"from": previous.id, "from_n_judgments": previous.n_judgments,
                  "new_annotators": new}


def _build_missing_features(context: JobContext, collection: Collection, method: str,
                            snapshot: object) -> bool:
    """A GP method on a collection without features but with texts or runs: build the features
    first (as POST .../features/build with its defaults would), so the GP does not silently fall
    back to LK. Collections with nothing to build from still fit LK (``info.fallback``)."""
    from app.features.job import DEFAULT_BUILD, build_and_store, buildable_inputs
    from models.registry import GP_METHODS

    if method not in GP_METHODS or method == "lk" or snapshot.data.features is not None:
        return False
    inputs = buildable_inputs(context.session, collection)
    if not any(inputs.values()):
        return False
    what = " and ".join(k for k, v in (("texts", inputs["lexical"]), ("runs", inputs["ranking"]))
                        if v)
    context.set(progress=0.0, progress_message=f"building features from the collection's {what} "
                "(none stored yet)")
    stages: dict[str, float] = {}
    build_and_store(context.session, collection, {**DEFAULT_BUILD, **inputs}, stages,
                    lambda f, msg: context.progress(0.0, f"building features: {msg}"))
    context.timings.update({f"features_{k}": v for k, v in stages.items()})
    return True
