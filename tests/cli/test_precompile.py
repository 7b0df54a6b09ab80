"""``crowdqrels precompile`` (run by the Makefile at install): in a numba cache of its own, it
leaves every kernel that a first command after an install needs compiled, so that command loads
them all from the cache and compiles none; a failing step is reported with its exit code."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from app.cli import main

# the first command after an install, in a fresh process: RF10-shaped DS through the CLI, then
# each compiled kernel module's dispatchers asked how often they loaded from the cache and how
# often they had to compile
FIRST_COMMAND = """
import json, sys, numba
from app.cli import main
assert main(sys.argv[1:]) == 0
import app.cli.columns_kernels, models.data_kernels, models.majority_vote_kernels
import models.onehot_kernels
hits = misses = 0
missed = []
for module in (app.cli.columns_kernels, models.data_kernels, models.majority_vote_kernels,
               models.onehot_kernels):
    for name, value in vars(module).items():
        if isinstance(value, numba.core.registry.CPUDispatcher):
            stats = value.stats
            hits += sum(stats.cache_hits.values())
            misses += sum(stats.cache_misses.values())
            missed += [name] * sum(stats.cache_misses.values())
print(json.dumps({"hits": hits, "misses": misses, "missed": missed}))
"""


def test_after_precompile_a_first_command_compiles_no_kernel(tmp_path: Path,
                                                             rf10_path: Path) -> None:
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "cache")}
    done = subprocess.run([sys.executable, "-m", "app.cli", "precompile"], env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert "12 commands compiled their kernels" in done.stdout
    assert list((tmp_path / "cache").rglob("*.nbi")), "precompile wrote no cache"
    first = subprocess.run(
        [sys.executable, "-c", FIRST_COMMAND, "aggregate", str(rf10_path), "--method", "ds",
         "--quiet", "--output", str(tmp_path / "q.txt")],
        env=env, capture_output=True, text=True, timeout=600)
    assert first.returncode == 0, first.stderr
    stats = json.loads(first.stdout.strip().splitlines()[-1])
    assert stats["hits"] > 0 and stats["misses"] == 0, stats


def test_a_failing_command_is_reported_with_its_exit_code(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from app.cli import precompile

    monkeypatch.setattr(precompile, "GRADED", ("no-such-method",))
    assert main(["precompile"]) == 2
    err = capsys.readouterr().err
    assert "`crowdqrels aggregate" in err and "failed (exit 2)" in err
