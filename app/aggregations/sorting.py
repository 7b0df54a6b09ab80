"""A listing's ``sort`` parameter: a column name, prefixed '-' for descending, checked against
the columns the listing offers (422 ``invalid_sort`` for any other)."""

from __future__ import annotations

from typing import Any

from app.core.errors import InvalidInput


def sort_column(sort: str, columns: dict[str, Any]) -> tuple[Any, bool]:
    """The column ``sort`` names and whether it sorts descending; invalid_sort for an unknown
    column."""
    descending = sort.startswith("-")
    name = sort[1:] if sort[:1] in ("-", "+") else sort  # one sign at most: "--x" is no column
    column = columns.get(name)
    if column is None:
        raise InvalidInput(f"unknown sort {sort!r}; valid: {', '.join(sorted(columns))} "
                           "(prefix '-' for descending)", code="invalid_sort",
                           valid=sorted(columns))
    return column, descending


def sort_order(sort: str, columns: dict[str, Any], tiebreak: Any) -> list[Any]:
    """The ORDER BY of ``sort`` (nulls last), then ``tiebreak``."""
    column, descending = sort_column(sort, columns)
    ordered = column.desc() if descending else column.asc()
    return [ordered.nulls_last(), tiebreak]


def sort_key(sort: str, columns: dict[str, Any]) -> str:
    """``sort`` normalised ("+x" -> "x"); invalid_sort for an unknown column."""
    sort_column(sort, columns)
    name = sort[1:] if sort[:1] in ("-", "+") else sort
    return f"-{name}" if sort.startswith("-") else name
