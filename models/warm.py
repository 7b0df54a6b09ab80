"""When a warm-started refit (``fit(data, init=previous)``) is also checked against a cold fit.

A warm start follows the local optimum it starts from as judgments arrive. DS and MACE have many
optima of nearly equal likelihood (binary DS: the labels of a group of tasks that share few
annotators with the rest flip together with their annotators' confusion rows), and a path of
small batches can end on one that a cold fit on the same judgments beats by several nats (RF10,
topics < 20030, rounds of one judgment: DS −4019.2 warm against −4010.2 cold, whole topics
flipped; EM run on from the warm end for 5,000 iterations does not leave it). A warm path cannot
see that by itself, so every fit records how many judgments it had when it was last compared
with a cold fit (a cold fit counts), and a warm refit runs the cold fit as well once the
judgments have grown by ``COLD_CHECK_GROWTH`` of that count, keeping the higher objective. With a
geometric schedule the cold fits of a whole loop cost about (1 + g) / g cold fits on the final
data (11 for g = 0.1), whatever the batch size, and a warm path drifts over at most a share g
of the judgments unchecked.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np

if TYPE_CHECKING:
    from models.base import ProgressCallback
    from models.data import AnnotationData

COLD_CHECK_GROWTH = 0.1


def cold_check_due(init: object, n_judgments: int, check: bool | None) -> bool:
    """Whether a warm refit on ``n_judgments`` judgments from ``init`` also runs a cold fit:
    ``check`` when given (True: always, False: never), else once the judgments have grown by
    ``COLD_CHECK_GROWTH`` since ``init``'s last check (always for a model without the record)."""
    if check is not None:
        return check
    last = int(getattr(init, "cold_checked_at_", 0))
    return n_judgments >= (1.0 + COLD_CHECK_GROWTH) * last if last > 0 else True


class WarmStartUnavailable(ValueError):
    """A fitted model's stored result lacks a parameter its warm start needs (e.g. a result
    stored before that parameter was kept)."""


@runtime_checkable
class WarmStartable(Protocol):
    """A model that can refit warm: its ``fit`` takes ``init`` (an earlier fit of its class) and
    ``check`` (``cold_check_due``), and its class rebuilds an ``init`` from a stored result."""

    def fit(self, data: AnnotationData, progress: ProgressCallback = ..., *,
            init: Any = None, check: bool | None = None) -> Any: ...

    @classmethod
    def from_result(cls, *, classes: Sequence[int], annotator_ids: Sequence[str],
                    annotator_columns: Mapping[str, Sequence[float | None]],
                    info: Mapping[str, Any], cold_checked_at: int) -> Any: ...


def accepts_init(model: object) -> bool:
    """Whether ``model`` (a class or an instance) is ``WarmStartable``."""
    if isinstance(model, type):
        return issubclass(model, WarmStartable)
    return isinstance(model, WarmStartable)


def result_column(columns: Mapping[str, Sequence[float | None]], name: str,
                  n: int) -> np.ndarray:
    """The per-annotator column ``name`` of a stored result as floats, every value finite;
    WarmStartUnavailable when it is missing, short or holds a null (a non-finite value)."""
    values = columns.get(name)
    if values is None or len(values) != n or any(v is None for v in values):
        raise WarmStartUnavailable(f"the stored result has no complete annotator column "
                                   f"{name!r}")
    array = np.asarray(values, dtype=np.float64)
    if not np.isfinite(array).all():
        raise WarmStartUnavailable(f"the stored annotator column {name!r} is not finite")
    return array


def warm_record(model: object) -> dict[str, object]:
    """What a fit says about its start, for ``result().info``: ``start`` ("cold" or "warm", the
    fit kept), ``cold_checked`` (a warm refit that also ran the cold fit) and
    ``cold_checked_at`` (judgments at the last comparison with a cold fit; a cold fit counts)."""
    return {"start": getattr(model, "start_", "cold"),
            "cold_checked": bool(getattr(model, "cold_checked_", False)),
            "cold_checked_at": int(getattr(model, "cold_checked_at_", 0))}
