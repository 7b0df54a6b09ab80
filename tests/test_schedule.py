"""The suite's schedule (tests/conftest.py): the costliest files first, by tests/file_costs.tsv."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from tests import conftest


def test_the_costs_name_test_files_that_exist() -> None:
    """A renamed or deleted file left in the costs only loses its place in the order; the file
    is kept honest here (rewrite it with ``bench/suite_cpu.py DIR --write-costs``)."""
    costs = conftest._file_costs()
    assert len(costs) > 20
    missing = [name for name in costs if not (conftest.ROOT / name).is_file()]
    assert not missing, missing
    assert all(seconds >= 1.0 for seconds in costs.values())


def test_costlier_files_come_first_and_a_file_keeps_its_order(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(conftest, "_file_costs", lambda: {"b.py": 5.0, "c.py": 9.0})
    ids = ["a.py::one", "b.py::one", "a.py::two", "c.py::one", "b.py::two", "d.py::one",
           "c.py::two[x]"]
    items = [SimpleNamespace(nodeid=i) for i in ids]
    conftest.pytest_collection_modifyitems(None, items)  # type: ignore[arg-type]
    assert [i.nodeid for i in items] == [
        "c.py::one", "c.py::two[x]", "b.py::one", "b.py::two",
        "a.py::one", "a.py::two", "d.py::one"]  # unlisted: in collection order, after
