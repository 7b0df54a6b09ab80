"""Aggregation methods by name, with their parameters validated against the constructors.

Classes are imported lazily by dotted path, so asking which methods and parameters exist never
imports TensorFlow (the API process validates requests with this module).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Annotated, Any

from models.base import Aggregator
from models.params import Calibration, ParamSpec, Range, param_spec, signature_specs

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
    "judge-family": "models.judge_family:JudgeFamily",
}
GP_METHODS = frozenset({"magp", "gpmv", "lk", "ordinal-gp"})
# Methods that read the labels as ordered grades (the class order is the scale's order).
ORDINAL_METHODS = frozenset({"ordinal-ds", "ordinal-gp", "judge-family"})
# The GP methods that read two classes only: graded labels are refused before TensorFlow loads.
BINARY_ONLY_METHODS = GP_METHODS - ORDINAL_METHODS


# Parameters of every method that clamps gold (``use_gold``) besides its constructor's:
# calibrate_folds k >= 2 recalibrates P(relevant) on k-fold held-out gold (models.calibration);
# each fold is a whole refit, so at most 100 of them; calibration: the map it fits.
GOLD_PARAM_SPECS: dict[str, ParamSpec] = {
    "calibrate_folds": param_spec("calibrate_folds", Annotated[int, Range(0, 100)], 0),
    "calibration": param_spec("calibration", Calibration, "auto"),
}
GOLD_PARAMS: dict[str, Any] = {k: v.default for k, v in GOLD_PARAM_SPECS.items()}


class UnknownMethod(ValueError):
    def __init__(self, method: str) -> None:
        self.method = method
        self.valid = sorted(METHOD_PATHS)
        super().__init__(f"unknown method {method!r}; valid methods: {', '.join(self.valid)}")


class InvalidParams(ValueError):
    """``valid``: every parameter's default; ``param``: the one refused, when one is."""

    def __init__(self, method: str, detail: str, valid: dict[str, Any], *,
                 param: str | None = None, specs: dict[str, ParamSpec] | None = None) -> None:
        self.method = method
        self.valid = valid
        self.param = param
        self.detail = detail
        names = ", ".join(specs[k].describe() if specs and k in specs else
                          f"{k} (default {v!r})" for k, v in valid.items())
        super().__init__(f"method {method!r}: {detail}; valid parameters: {names}")


@dataclass(frozen=True)
class MethodSpec:
    name: str
    cls: type[Aggregator]

    @property
    def defaults(self) -> dict[str, Any]:
        """Constructor keyword parameters and their defaults: the method's valid params."""
        return {name: spec.default for name, spec in self.params.items()}

    @property
    def params(self) -> dict[str, ParamSpec]:
        """Every valid parameter with its default, type and range, as the constructor's
        signature declares them (``models.params``)."""
        own = signature_specs(self.cls.__init__)
        return {**own, **GOLD_PARAM_SPECS} if "use_gold" in own else dict(own)

    @property
    def warm_startable(self) -> bool:
        """Whether a fit of this method can start from an earlier fit's stored result
        (``fit(data, init=cls.from_result(...))``, ``models.warm``)."""
        from models.warm import accepts_init

        return accepts_init(self.cls)

    def build(self, params: dict[str, Any], *, relevant_from: int | None = None) -> Aggregator:
        """The model with ``params`` (unchecked: see ``validate_params``); with
        ``calibrate_folds`` wrapped in ``GoldCalibrated`` (P(relevant) recalibrated on
        held-out gold at the grade ``relevant_from``; binary data: class 1), the model itself
        then untempered (``temper_folds`` 0 unless given)."""
        own = {k: v for k, v in params.items() if k not in GOLD_PARAMS}
        folds = int(params.get("calibrate_folds", 0))
        if not folds:
            return self.cls(**own)
        from models.calibration import GoldCalibrated

        if "temper_folds" in self.defaults and "temper_folds" not in own:
            # the gold-free tempering (models.tempering) is a power of the posterior: Platt's
            # slope on logit P does the same from gold, the isotonic map ignores it
            own["temper_folds"] = 0
        self.cls(**own)  # the constructor's own checks, before the wrapper defers it
        seed = own.get("random_state")
        return GoldCalibrated(lambda: self.cls(**own), n_folds=folds,
                              random_state=0 if seed is None else seed,
                              relevant_from=relevant_from,
                              calibration=params.get("calibration", "auto"))


def get_method(method: str) -> MethodSpec:
    path = METHOD_PATHS.get(method)
    if path is None:
        raise UnknownMethod(method)
    module_name, _, class_name = path.partition(":")
    return MethodSpec(method, getattr(importlib.import_module(module_name), class_name))


def validate_params(method: str, params: dict[str, Any]) -> dict[str, Any]:
    """Check names, JSON types and ranges of ``params`` against the method's constructor
    signature (``models.params``), then the values themselves by building it (its own checks).

    Every parameter has a declared type (bool, int, float, str, optionally None; an int is
    accepted for a float); numbers must be finite and within their declared range. Returns the
    params unchanged; InvalidParams names the parameter refused.
    """
    spec = get_method(method)
    specs = spec.params
    valid = {name: p.default for name, p in specs.items()}
    for name, value in params.items():
        if name not in specs:
            raise InvalidParams(method, f"unknown parameter {name!r}", valid, param=name,
                                specs=specs)
        problem = specs[name].check(value)
        if problem is not None:
            raise InvalidParams(method, problem, valid, param=name, specs=specs)
    # Values the constructor refuses (a negative tol, an unknown grouping, ...) are refused here
    # too, before a fit is queued, not when it runs. Constructors only store and check their
    # arguments (TensorFlow loads in fit()), so this is cheap and keeps TF out of the API.
    folds = params.get("calibrate_folds", 0)
    if folds and (folds < 2 or not params.get("use_gold")):
        raise InvalidParams(method, "calibrate_folds is 0 (off) or at least 2, and needs "
                            "use_gold: true (the calibration is fitted on held-out gold)", valid,
                            param="calibrate_folds", specs=specs)
    try:
        spec.build(params)
    except (TypeError, ValueError) as exc:
        raise InvalidParams(method, str(exc), valid, specs=specs) from exc
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
