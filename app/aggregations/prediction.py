"""P(relevant) for tasks nobody judged, from a GP fit's exported predictor (numpy only, so the
API process never imports TensorFlow)."""

from __future__ import annotations

from typing import Any

import numpy as np
from sqlalchemy.orm import Session

from app.aggregations.service import require_succeeded
from app.aggregations.tables import Aggregation, AggregationArtifact
from app.core.errors import Conflict, InvalidInput


def predict_for(session: Session, *, aggregation: Aggregation,
                features: list[list[float]], topics: list[str] | None = None) -> dict[str, Any]:
    require_succeeded(aggregation)
    from models.gp.predictor import KIND

    artifact = session.get(AggregationArtifact, (aggregation.id, KIND))
    if artifact is None:
        fallback = (aggregation.info or {}).get("fallback")
        why = (f"it was fitted without features (fallback {fallback!r})" if fallback
               else f"method {aggregation.method!r} has no model over task features")
        raise Conflict(f"aggregation {aggregation.id} cannot predict: {why}; fit magp or gpmv "
                       "on a collection with features", code="cannot_predict")
    from models.gp.predictor import GPPredictor

    predictor = GPPredictor.from_bytes(artifact.payload)
    x = np.asarray(features, dtype=float)
    if x.ndim != 2 or x.shape[1] != predictor.input_dim:
        raise InvalidInput(
            f"each feature vector must have {predictor.input_dim} values",
            code="invalid_features")
    if not np.isfinite(x).all():
        raise InvalidInput("feature values must be finite numbers", code="invalid_features")
    if topics is not None and len(topics) != x.shape[0]:
        raise InvalidInput(f"give one topic per feature vector: {len(topics)} topics for "
                           f"{x.shape[0]} vectors", code="invalid_topics")
    mean, variance, p = predictor.predict(x, topics)  # a fit without offsets ignores them
    broken = ~(np.isfinite(mean) & np.isfinite(variance) & np.isfinite(p))
    if broken.any():  # e.g. values near 1e308: the kernel's squared distances overflow
        rows = np.flatnonzero(broken)
        raise InvalidInput(
            f"the fit cannot predict for {rows.size} of the vectors (first: index {rows[0]}): "
            "their values are too far from the features it was fitted on for a finite answer",
            code="invalid_features", index=int(rows[0]))
    known = predictor.topic_known(x.shape[0], topics)
    return {"p_relevant": p.tolist(), "posterior_mean": mean.tolist(),
            "posterior_variance": variance.tolist(),
            "topic_known": None if known is None else known.tolist()}
