"""Warm starts: a fit that starts from an earlier fit of the same collection and method, its
parameters rebuilt from what that fit stored (``store_results``: per-annotator columns and
``info``), then ``fit(data, init=...)`` (``models.warm``).

Which methods can: the model class says (``MethodSpec.warm_startable``: its ``fit`` takes
``init`` and ``from_result`` rebuilds one); the service hard-codes none.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.aggregations.schemas import AggregationCreate
from app.aggregations.tables import Aggregation, AggregationAnnotator
from app.collections.tables import Collection
from app.core.errors import Conflict, InvalidInput
from app.judgments.tables import Annotator
from models.registry import METHOD_PATHS, get_method
from models.warm import WarmStartUnavailable, accepts_init


def warm_startable_methods() -> list[str]:
    return sorted(m for m in METHOD_PATHS if get_method(m).warm_startable)


def refits_warm(method: str, params: dict[str, Any]) -> bool:
    """Whether a fit of ``method`` with ``params`` may start from an earlier fit (the first two
    checks of ``check_warm_start``): its model refits from an ``init``, not wrapped in a
    calibration (``calibrate_folds``). A fit page offers its warm refit only then."""
    spec = get_method(method)
    return spec.warm_startable and accepts_init(spec.build(params))


def check_warm_start(session: Session, *, collection: Collection, spec: AggregationCreate,
                     params: dict[str, Any]) -> Aggregation:
    """The fit ``spec.warm_start`` names, if a fit of ``spec`` may start from it: a method whose
    model refits from an ``init`` (and not wrapped in a calibration, ``calibrate_folds``), a
    succeeded fit of the same collection, method and scale (graded or binary) whose stored
    result holds every parameter the start needs. Raises InvalidInput (422) or Conflict (409,
    a fit not succeeded yet) with a stable code otherwise."""
    assert spec.warm_start is not None
    method = get_method(spec.method)
    if not method.warm_startable:
        raise InvalidInput(f"method {spec.method!r} cannot start from an earlier fit; "
                           f"warm_start is for {', '.join(warm_startable_methods())}",
                           code="warm_start_unsupported", valid=warm_startable_methods())
    if not accepts_init(method.build(params)):
        raise InvalidInput("a fit calibrated on held-out gold (calibrate_folds) cannot start "
                           "from an earlier fit: each fold is a refit from scratch",
                           code="warm_start_unsupported", param="calibrate_folds")
    previous = session.get(Aggregation, spec.warm_start)
    if previous is None or previous.collection_id != collection.id:
        # Another collection's fit is not found either: collections are isolated.
        raise InvalidInput(f"warm_start: no aggregation {spec.warm_start} in collection "
                           f"{collection.name!r}", code="warm_start_not_found")
    if previous.method != spec.method:
        raise InvalidInput(f"warm_start: aggregation {previous.id} is a fit of method "
                           f"{previous.method!r}, not {spec.method!r}",
                           code="warm_start_method_mismatch", method=previous.method)
    if previous.graded != spec.graded:
        scale = "graded" if previous.graded else "binary"
        raise InvalidInput(f"warm_start: aggregation {previous.id} was fitted on {scale} "
                           f"labels; this fit asks for graded={str(spec.graded).lower()}",
                           code="warm_start_scale_mismatch", graded=previous.graded)
    if previous.status != "succeeded":
        raise Conflict(f"warm_start: aggregation {previous.id} is {previous.status}: a warm "
                       "start needs a succeeded fit", code="warm_start_not_succeeded",
                       status=previous.status)
    try:
        load_init(session, previous=previous)
    except WarmStartUnavailable as exc:
        raise InvalidInput(f"warm_start: aggregation {previous.id} cannot be started from "
                           f"({exc}); fit it again cold, then start from that fit",
                           code="warm_start_unavailable") from None
    return previous


def load_init(session: Session, *, previous: Aggregation) -> Any:
    """``previous``'s fitted parameters as the ``init`` of its model's ``fit``, rebuilt by the
    model class from the stored result (``from_result``): its per-annotator columns (competence
    and ``extra``) by annotator id, its ``info`` and ``cold_checked_at``. WarmStartUnavailable
    when something it needs was not stored."""
    if previous.classes is None or previous.n_judgments is None:
        raise WarmStartUnavailable("the fit stored no classes")
    rows = session.execute(
        select(Annotator.external_id, AggregationAnnotator.competence, AggregationAnnotator.extra)
        .join(Annotator, Annotator.id == AggregationAnnotator.annotator_id)
        .where(AggregationAnnotator.aggregation_id == previous.id)).all()
    # The data's own annotator order (sorted ids): a new annotator's start is the mean of these
    # rows, summed in the order an offline fit's init would sum them.
    rows.sort(key=lambda r: r[0])
    columns: dict[str, list[float | None]] = {"competence": [r[1] for r in rows]}
    for name in sorted({k for r in rows for k in (r[2] or {})}):
        columns[name] = [(r[2] or {}).get(name) for r in rows]
    info = previous.info or {}
    checked_at = info.get("cold_checked_at")
    if checked_at is None:
        if previous.warm_start_id is not None:
            raise WarmStartUnavailable("the fit did not record when it was last checked "
                                       "against a cold fit")
        # Fits stored before fits recorded it were cold fits (the service had no warm start
        # then), and a cold fit is checked at its own judgments.
        checked_at = previous.n_judgments
    return get_method(previous.method).cls.from_result(  # type: ignore[attr-defined]
        classes=list(previous.classes), annotator_ids=[r[0] for r in rows],
        annotator_columns=columns, info=info, cold_checked_at=int(checked_at))
