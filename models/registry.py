"""Aggregation methods by name, with their parameters validated against the constructors.

Classes are imported lazily by dotted path, so asking which methods and parameters exist never
imports TensorFlow (the API process validates requests with this module).
"""

from __future__ import annotations

import importlib
import inspect
from dataclasses import dataclass
from typing import Any

from models.base import Aggregator

METHOD_PATHS: dict[str, str] = {
    "mv": "models.majority_vote:MajorityVote",
    "mace": "models.mace:MACE",
    "ds": "models.dawid_skene:DawidSkene",
    "magp": "models.gp.model:MAGP",
    "gpmv": "models.gp.model:GPMV",
    "lk": "models.gp.model:LK",
    "ibcc": "models.bcc:IBCC",
    "ebcc": "models.bcc:EBCC",
    "ordinal-ds": "models.ordinal_ds:OrdinalDawidSkene",
    "ordinal-gp": "models.gp.ordinal:OrdinalGP",
}
GP_METHODS = frozenset({"magp", "gpmv", "lk", "ordinal-gp"})
# Methods that read the labels as ordered grades (the class order is the scale's order).
ORDINAL_METHODS = frozenset({"ordinal-ds", "ordinal-gp"})
# Parameters of every method that clamps gold (``use_gold``) besides its constructor's:
# calibrate_folds k >= 2 recalibrates P(relevant) on k-fold held-out gold (models.calibration).
GOLD_PARAMS: dict[str, Any] = {"calibrate_folds": 0}


class UnknownMethod(ValueError):
    def __init__(self, method: str) -> None:
        self.method = method
        self.valid = sorted(METHOD_PATHS)
        super().__init__(f"unknown method {method!r}; valid methods: {', '.join(self.valid)}")


class InvalidParams(ValueError):
    def __init__(self, method: str, detail: str, valid: dict[str, Any]) -> None:
        self.method = method
        self.valid = valid
        names = ", ".join(f"{k} (default {v!r})" for k, v in valid.items())
        super().__init__(f"method {method!r}: {detail}; valid parameters: {names}")


@dataclass(frozen=True)
class MethodSpec:
    name: str
    cls: type[Aggregator]

    @property
    def defaults(self) -> dict[str, Any]:
        """Constructor keyword parameters and their defaults: the method's valid params."""
        signature = inspect.signature(self.cls.__init__)
        own = {
            name: p.default
            for name, p in signature.parameters.items()
            if name != "self" and p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)
        }
        return {**own, **GOLD_PARAMS} if "use_gold" in own else own

    def build(self, params: dict[str, Any], *, relevant_from: int | None = None) -> Aggregator:
        """The model with ``params`` (unchecked: see ``validate_params``); with
        ``calibrate_folds`` wrapped in ``GoldCalibrated`` (P(relevant) recalibrated on
        held-out gold at the grade ``relevant_from``; binary data: class 1)."""
        own = {k: v for k, v in params.items() if k not in GOLD_PARAMS}
        folds = int(params.get("calibrate_folds", 0))
        if not folds:
            return self.cls(**own)
        from models.calibration import GoldCalibrated

        self.cls(**own)  # the constructor's own checks, before the wrapper defers it
        seed = own.get("random_state")
        return GoldCalibrated(lambda: self.cls(**own), n_folds=folds,
                              random_state=0 if seed is None else seed,
                              relevant_from=relevant_from)


def get_method(method: str) -> MethodSpec:
    path = METHOD_PATHS.get(method)
    if path is None:
        raise UnknownMethod(method)
    module_name, _, class_name = path.partition(":")
    return MethodSpec(method, getattr(importlib.import_module(module_name), class_name))


def validate_params(method: str, params: dict[str, Any]) -> dict[str, Any]:
    """Check names and JSON types of ``params`` against the method's constructor, then the
    values themselves by building it (its own checks).

    A parameter whose default is a bool must be a bool, an int an int, a float a number, a str a
    str; a default of None accepts any JSON value. Returns the params unchanged.
    """
    spec = get_method(method)
    valid = spec.defaults
    for name, value in params.items():
        if name not in valid:
            raise InvalidParams(method, f"unknown parameter {name!r}", valid)
        default = valid[name]
        if name == "random_state" and value is not None and not (
                isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 2**32):
            raise InvalidParams(method, "random_state must be a whole number from 0 to 2**32 - 1",
                                valid)
        ok = True
        if isinstance(default, bool):
            ok = isinstance(value, bool)
        elif isinstance(default, int):
            ok = isinstance(value, int) and not isinstance(value, bool)
        elif isinstance(default, float):
            ok = isinstance(value, int | float) and not isinstance(value, bool)
        elif isinstance(default, str):
            ok = isinstance(value, str)
        if not ok:
            raise InvalidParams(
                method, f"parameter {name!r} must be of type {type(default).__name__}", valid
            )
    # Values the constructor refuses (a negative tol, an unknown grouping, ...) are refused here
    # too, before a fit is queued, not when it runs. Constructors only store and check their
    # arguments (TensorFlow loads in fit()), so this is cheap and keeps TF out of the API.
    folds = params.get("calibrate_folds", 0)
    if folds and (folds < 2 or not params.get("use_gold")):
        raise InvalidParams(method, "calibrate_folds is 0 (off) or at least 2, and needs "
                            "use_gold: true (the calibration is fitted on held-out gold)", valid)
    try:
        spec.build(params)
    except (TypeError, ValueError) as exc:
        raise InvalidParams(method, str(exc), valid) from exc
    return params


def with_seed(method: str, params: dict[str, Any], seed: int | None) -> dict[str, Any]:
    """``seed`` becomes ``random_state`` when the method has one and params do not set it."""
    params = dict(params)
    if seed is not None and "random_state" in get_method(method).defaults:
        params.setdefault("random_state", seed)
    return params


def make_aggregator(method: str, params: dict[str, Any] | None = None, *,
                    relevant_from: int | None = None) -> Aggregator:
    """The method built with ``params``; InvalidParams as ``validate_params``. ``relevant_from``
    (the collection's, for graded data) is where a calibrated fit splits the grades."""
    params = validate_params(method, dict(params or {}))
    return get_method(method).build(params, relevant_from=relevant_from)
