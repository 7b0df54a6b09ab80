"""The ranges the methods' parameters may take, declared in the constructors' signatures.

A constructor declares each parameter's type, default and range on one line, e.g.
``n_iter: Iterations = 50`` or ``tol: Annotated[float, Range(0.0, 1.0, high_open=True)] = 1e-4``;
``models.registry`` reads them (``typing.get_type_hints(..., include_extras=True)``) and refuses a
value of the wrong type or outside its range before a fit is queued.

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

import math
from dataclasses import dataclass
from typing import Annotated


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
# the largest collection fitted with a full GP (an n x n kernel matrix: 10,000 tasks = 800 MB)
FullGPTasks = Annotated[int, Range(0, 10_000)]
# tasks sampled per M step (more than a collection has is harmless)
MStepTasks = Annotated[int, Range(1, 10_000_000)]
