"""The ranges and choices the methods' parameters may take, declared in the constructors'
signatures, and the one validator that reads them.

A constructor declares each parameter's type, default and range or choices on one line, e.g.
``n_iter: Iterations = 50``, ``tol: Annotated[float, Range(0.0, 1.0, high_open=True)] = 1e-4``
or ``variant: Literal["em", "vb"] = "vb"``. ``signature_specs`` reads them
(``typing.get_type_hints(..., include_extras=True)``) as ``ParamSpec``s: ``models.registry``
refuses a request's value of the wrong type, outside its range or choices before a fit is queued
(``ParamSpec.check``), and a constructor decorated with ``validated`` refuses the same values
when it is called directly (``ParamSpec.check_argument``, ValueError): one declaration, one check.

The ranges follow a few principles, so that every legitimate fit fits inside them while none can
run for ever, exhaust memory or underflow to NaN:

- iteration counts up to 100,000 (the defaults are 50 to 500; EM converges in far fewer) and
  restarts up to 1,000: a fit stays finite however large the collection;
- tolerances in [0, 1): a relative or per-judgment change; 0 runs every iteration;
- prior strengths, pseudo-counts, standard deviations and variances in [1e-6, 1e6]: away from
  denormal numbers (a prior of 1e-320 underflows the posterior to NaN) and from values that
  would drown any crowd's data; additive smoothing may also be 0;
- sizes that cost memory or time polynomially (quadrature points, subtypes, inducing points,
  the tasks of a full GP) have caps far above their defaults, at what one machine handles.
"""

from __future__ import annotations

import functools
import inspect
import math
import numbers
import types
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, Literal, TypeVar, Union


@dataclass(frozen=True)
class Range:
    """A closed (or, with ``low_open`` / ``high_open``, open) interval of allowed numbers."""

    low: float
    high: float
    low_open: bool = False
    high_open: bool = False

    def __contains__(self, value: object) -> bool:
        if not isinstance(value, int | float) or isinstance(value, bool):
            return False
        if isinstance(value, float) and not math.isfinite(value):
            return False
        above = value > self.low if self.low_open else value >= self.low
        below = value < self.high if self.high_open else value <= self.high
        return above and below

    def describe(self, name: str) -> str:
        """E.g. ``0 <= n_iter <= 100000`` or ``0 <= tol < 1``."""
        return (f"{_number(self.low)} {'<' if self.low_open else '<='} {name} "
                f"{'<' if self.high_open else '<='} {_number(self.high)}")


def _number(x: float) -> str:
    if isinstance(x, float) and x.is_integer() and abs(x) < 1e7:
        return str(int(x))
    return f"{x:g}" if isinstance(x, float) else str(x)



@dataclass(frozen=True)
class ParamSpec:
    """One parameter as its constructor declares it: default, JSON types, allowed range or
    choices."""

    name: str
    default: Any
    types: tuple[type, ...]  # of the value: bool, int, float, str (int accepted for float)
    optional: bool  # None allowed
    range: Range | None = None
    choices: tuple[Any, ...] = ()  # a Literal's values; () for any value of the type

    @property
    def type_name(self) -> str:
        text = " or ".join(t.__name__ for t in self.types)
        return f"{text} or None" if self.optional else text

    def describe(self) -> str:
        """E.g. ``n_iter (integer, 0 <= n_iter <= 100000, default 50)``."""
        bound = f", {self.range.describe(self.name)}" if self.range is not None else ""
        return f"{self.name} ({self.type_name}{bound}, default {self.default!r})"

    def check(self, value: Any) -> str | None:
        """None if ``value`` (from JSON) is allowed, else why not."""
        if value is None:
            return self._null()
        bad = _non_finite(value)
        if bad is not None:
            return f"parameter {self.name!r} must be a finite number, got {bad}"
        if isinstance(value, bool):
            ok = bool in self.types
        elif isinstance(value, int):
            ok = int in self.types or float in self.types
        else:
            ok = type(value) in self.types
        if not ok:
            return self._wrong_type(value)
        return self._outside(value)

    def check_argument(self, value: Any) -> str | None:
        """As ``check``, for an argument given in Python: a numeric parameter takes any real
        number (numpy's too); the range and the choices are the same."""
        if value is None:
            return self._null()
        if self.range is not None and not isinstance(value, numbers.Real):
            return self._wrong_type(value)
        return self._outside(value)

    def _null(self) -> str | None:
        return None if self.optional else (f"parameter {self.name!r} must be of type "
                                           f"{self.type_name}, not null")

    def _wrong_type(self, value: Any) -> str:
        shown = repr(value) if len(repr(value)) <= 60 else f"a {type(value).__name__}"
        return f"parameter {self.name!r} must be of type {self.type_name}, got {shown}"

    def _outside(self, value: Any) -> str | None:
        if self.range is not None and float(value) not in self.range:
            return (f"parameter {self.name!r} must satisfy {self.range.describe(self.name)}, "
                    f"got {value!r}")
        if self.choices and value not in self.choices:
            *first, last = (repr(c) for c in self.choices)
            alternatives = f"{', '.join(first)} or {last}" if first else last
            return f"parameter {self.name!r} must be {alternatives}, got {value!r}"
        return None


def _non_finite(value: Any) -> str | None:
    """The first NaN or infinity anywhere in ``value`` (JSON may carry them), as text."""
    if isinstance(value, float) and not math.isfinite(value):
        return repr(value)
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, list | tuple):
        for item in value:
            bad = _non_finite(item)
            if bad is not None:
                return bad
    return None


def param_spec(name: str, hint: Any, default: Any) -> ParamSpec:
    """A ParamSpec from a constructor annotation: ``int``, ``float | None``, a ``Literal`` of
    choices, or either wrapped in ``Annotated[..., Range(...)]``."""
    bound = None
    if typing.get_origin(hint) is typing.Annotated:
        hint, *extras = typing.get_args(hint)
        bound = next((e for e in extras if isinstance(e, Range)), None)
    members = typing.get_args(hint) if typing.get_origin(hint) in (Union, types.UnionType) \
        else (hint,)
    choices = tuple(c for m in members if typing.get_origin(m) is Literal
                    for c in typing.get_args(m))
    members = (*members, *(type(c) for c in choices))
    optional = type(None) in members
    kinds = tuple(dict.fromkeys(t for t in members if t in (bool, int, float, str)))
    if not kinds:
        raise TypeError(f"parameter {name!r}: undeclared or unsupported type {hint!r}")
    return ParamSpec(name, default, kinds, optional, bound, choices)


@functools.cache
def signature_specs(function: Callable[..., Any]) -> dict[str, ParamSpec]:
    """Every keyword parameter of ``function`` (a constructor; ``validated`` or not) with its
    declared type, default, range and choices; TypeError for one declared otherwise."""
    function = inspect.unwrap(function)
    signature = inspect.signature(function)
    hints = typing.get_type_hints(function, include_extras=True)
    return {name: param_spec(name, hints.get(name), p.default)
            for name, p in signature.parameters.items()
            if name != "self" and p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)}


Init = TypeVar("Init", bound=Callable[..., None])


def validated(init: Init) -> Init:
    """A constructor that checks its arguments against its signature's declarations
    (``signature_specs``) before it runs: ValueError naming the first one refused."""
    signature = inspect.signature(init)

    @functools.wraps(init)
    def checked(*args: Any, **kwargs: Any) -> None:
        specs = signature_specs(init)
        for name, value in signature.bind(*args, **kwargs).arguments.items():
            problem = specs[name].check_argument(value) if name in specs else None
            if problem is not None:
                raise ValueError(problem)
        init(*args, **kwargs)

    return checked  # type: ignore[return-value]

MAX_ITERATIONS = 100_000
MAX_RESTARTS = 1_000
MIN_PRIOR, MAX_PRIOR = 1e-6, 1e6

# EM / variational iterations; 0 leaves the model at its start (e.g. majority vote for DS)
Iterations = Annotated[int, Range(0, MAX_ITERATIONS)]
# methods whose loop needs at least one iteration
Iterations1 = Annotated[int, Range(1, MAX_ITERATIONS)]
# inner loops of one outer iteration (E-step sweeps, M-step optimiser steps)
InnerIterations = Annotated[int, Range(0, 1_000)]
InnerIterations1 = Annotated[int, Range(1, 1_000)]
Restarts = Annotated[int, Range(1, MAX_RESTARTS)]
# stop once an iteration changes the objective by less than this (0: run every iteration)
Tolerance = Annotated[float, Range(0.0, 1.0, high_open=True)]
# Dirichlet / Beta / Gamma pseudo-counts, prior standard deviations and variances: > 0
Prior = Annotated[float, Range(MIN_PRIOR, MAX_PRIOR)]
# the same where 0 means "none" (additive smoothing, an optional prior or noise)
PriorOrZero = Annotated[float, Range(0.0, MAX_PRIOR)]
# a probability strictly between 0 and 1
OpenProbability = Annotated[float, Range(0.0, 1.0, low_open=True, high_open=True)]
# a damped update's step: above 0, at most 1 (a full step)
StepRate = Annotated[float, Range(0.0, 1.0, low_open=True)]
# the seed of numpy's generators
Seed = Annotated[int | None, Range(0, 2**32 - 1)]
# Gauss–Hermite points per judgment: the defaults use 12-20; beyond ~200 the rule gains nothing
QuadraturePoints = Annotated[int, Range(1, 200)]
# inducing points of a sparse GP: O(M^3) per step
InducingPoints = Annotated[int, Range(1, 5_000)]
# the map a fit calibrated on held-out gold fits (models.calibration): chosen by held-out log loss
# ("auto"), logistic, beta (a smooth monotone map), or isotonic (a monotone step function)
Calibration = Literal["auto", "platt", "beta", "isotonic"]
# task folds of the gold-free tempering of a posterior (models.tempering): 0 off, else at least 2
TemperFolds = Annotated[int, Range(0, 20)]
# the largest collection fitted with a full GP (an n x n kernel matrix: 10,000 tasks = 800 MB)
FullGPTasks = Annotated[int, Range(0, 10_000)]
# tasks sampled per M step (more than a collection has is harmless)
MStepTasks = Annotated[int, Range(1, 10_000_000)]
