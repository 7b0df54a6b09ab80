"""``crowdqrels precompile`` (run by the Makefile at install): every command it runs succeeds, and
afterwards each kernel module those commands use has its numba cache on disk."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.cli import main

ROOT = Path(__file__).resolve().parents[2]
# kernel modules every run of the precompile commands reaches (the scan, the counting passes, MV,
# one-hot DS / IBCC, EBCC, MACE and the draws of the evaluation)
KERNELS = ("app/cli/columns_kernels.py", "models/data_kernels.py",
           "models/majority_vote_kernels.py", "models/onehot_kernels.py",
           "models/bcc_kernels.py", "models/mace_kernels.py",
           "models/evaluation/_kernel.py")


def test_precompile_runs_every_command_and_leaves_the_kernels_cached(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["precompile"]) == 0
    assert "12 commands compiled their kernels" in capsys.readouterr().out
    for source in KERNELS:
        path = ROOT / source
        cached = list((path.parent / "__pycache__").glob(f"{path.stem}.*.nbi"))
        assert cached, f"no numba cache for {source}"


def test_a_failing_command_is_reported_with_its_exit_code(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from app.cli import precompile

    monkeypatch.setattr(precompile, "GRADED", ("no-such-method",))
    assert main(["precompile"]) == 2
    err = capsys.readouterr().err
    assert "`crowdqrels aggregate" in err and "failed (exit 2)" in err
