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
