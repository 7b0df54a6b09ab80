"""The body of a fit job, the same for every runner: read the snapshot, fit, store the results.

Runs in a worker process (a child of the API, or a Celery worker): it is the only place of the
service that imports the models, and so TensorFlow for the GP methods.
"""

from __future__ import annotations

import time
from typing import Any

from app.aggregations.results import store_results
from app.aggregations.snapshot import load_snapshot
from app.aggregations.tables import Aggregation
from app.collections.tables import Collection
from app.jobs.lifecycle import JobCancelled, JobContext, run_tracked


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

    context.progress(0.0, "fitting")
    start = time.perf_counter()
    from models.features.build import with_kernel_params
    from models.registry import make_aggregator

    params = with_kernel_params(aggregation.method, aggregation.params, snapshot.feature_groups)
    model = make_aggregator(aggregation.method, params)
    model.fit(snapshot.data, context.progress)
    result = model.result(snapshot.data)
    timings["fit_s"] = time.perf_counter() - start

    if context.cancelled():
        raise JobCancelled
    start = time.perf_counter()
    store_results(session, aggregation=aggregation, snapshot=snapshot, result=result,
                  model=model, relevant_from=collection.relevant_from)
    timings["store_s"] = time.perf_counter() - start
    return {}
