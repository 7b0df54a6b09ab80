"""Every parameter of every method declares its type and, if numeric, its range (models.params);
the registry refuses anything else before a fit is queued."""

from __future__ import annotations

import math

import pytest

from models.registry import METHOD_PATHS, InvalidParams, get_method, validate_params


@pytest.mark.parametrize("method", sorted(METHOD_PATHS))
def test_every_numeric_parameter_has_a_range_holding_its_default(method: str) -> None:
    for name, spec in get_method(method).params.items():
        numeric = bool({int, float} & set(spec.types))
        assert numeric == (spec.range is not None), f"{method}.{name}: range {spec.range}"
        if spec.default is not None:
            assert spec.check(spec.default) is None, f"{method}.{name}"
        if spec.range is not None:
            assert math.isfinite(spec.range.low) and math.isfinite(spec.range.high)
    validate_params(method, {})


@pytest.mark.parametrize("method", sorted(METHOD_PATHS))
def test_non_finite_and_out_of_range_values_name_the_parameter(method: str) -> None:
    for name, spec in get_method(method).params.items():
        if spec.range is None:
            continue
        for value in (math.nan, math.inf, -math.inf):
            with pytest.raises(InvalidParams, match="finite") as nan:
                validate_params(method, {name: value})
            assert nan.value.param == name
        with pytest.raises(InvalidParams, match=f"parameter {name!r} must satisfy") as big:
            validate_params(method, {name: spec.range.high * 10 + 10})
        assert big.value.param == name
        assert spec.range.describe(name) in str(big.value)
        with pytest.raises(InvalidParams, match="must be of type"):
            validate_params(method, {name: "1"})


@pytest.mark.parametrize("method", sorted(METHOD_PATHS))
def test_choices_are_literals_checked_by_the_registry_and_the_constructor(method: str) -> None:
    """A string with a fixed set of values is a Literal: the registry refuses another value
    naming the parameter, and the constructor (``models.params.validated``) refuses it with
    the same message when called directly; so does an out-of-range number."""
    cls = get_method(method).cls
    assert hasattr(cls.__init__, "__wrapped__"), f"{method}: constructor not @validated"
    specs = get_method(method).params
    own = {name: spec for name, spec in specs.items() if name not in ("calibrate_folds",
                                                                     "calibration")}
    for name, spec in own.items():
        if spec.choices:
            assert spec.default in spec.choices and spec.types == (str,)
            with pytest.raises(InvalidParams, match=f"parameter {name!r} must be ") as bad:
                validate_params(method, {name: "no-such-choice"})
            assert bad.value.param == name
            with pytest.raises(ValueError, match=f"parameter {name!r} must be "):
                cls(**{name: "no-such-choice"})
        elif spec.range is not None:
            with pytest.raises(ValueError, match=f"parameter {name!r} must satisfy"):
                cls(**{name: spec.range.high * 10 + 10})
