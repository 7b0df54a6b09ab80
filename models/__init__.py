"""The statistical models: pure maths on numpy (TensorFlow/GPflow for the GP methods, imported
only when one is built); never imports ``app``.

The public contract is ``__all__``: the data (``AnnotationData``), the aggregator contract
(``Aggregator``, ``AggregationResult``, ``p_relevant``), the registry of methods
(``make_aggregator``, ``validate_params``, ``METHOD_PATHS``, its errors) and the one fit pipeline
(``FitSpec``, ``fit``, ``Fitted``, ``Scores``). The names are loaded on first use, so ``import
models`` stays cheap. Subpackages (``models.evaluation``, ``models.sampling``,
``models.features``, ``models.gp``) have their own ``__all__``; a name starting with ``_`` is
private to its module.
"""

from __future__ import annotations

import importlib
from typing import Any

_WHERE = {
    "AnnotationData": "models.data",
    "UNKNOWN": "models.data",
    "Aggregator": "models.base",
    "AggregationResult": "models.base",
    "ProgressCallback": "models.base",
    "p_relevant": "models.base",
    "METHOD_PATHS": "models.registry",
    "InvalidParams": "models.registry",
    "UnknownMethod": "models.registry",
    "get_method": "models.registry",
    "make_aggregator": "models.registry",
    "validate_params": "models.registry",
    "FitSpec": "models.pipeline",
    "Fitted": "models.pipeline",
    "Scores": "models.pipeline",
    "fit": "models.pipeline",
}

__all__ = sorted(_WHERE)


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module 'models' has no attribute {name!r}")
    return getattr(importlib.import_module(_WHERE[name]), name)
