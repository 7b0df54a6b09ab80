"""TensorFlow's native start-up lines (absl, oneDNN, CUDA) are silenced unless --verbose."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.jobs.test_process_isolation import ROOT

USE_TF = "import tensorflow as tf; print(float(tf.constant(1.0) + 1))"
NATIVE = ("absl::InitializeLog", "I0000", "E0000", "W0000", "oneDNN", "cuInit")


def _stderr(code: str) -> str:
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                          env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)}, timeout=300)
    assert done.returncode == 0, done.stderr
    return done.stderr


@pytest.mark.slow
def test_tensorflow_starts_quietly() -> None:
    loud = _stderr(USE_TF)
    if not any(mark in loud for mark in NATIVE):
        pytest.skip("this machine's TensorFlow prints no start-up lines")
    quiet = _stderr("from app.core.quiet import quiet_tensorflow; "
                    f"quiet_tensorflow(import_now=True); {USE_TF}")
    assert not [mark for mark in NATIVE if mark in quiet], quiet


@pytest.mark.parametrize(("argv", "expected"), [
    (["aggregate", "j.tsv", "--method", "gpmv"], {"import_now": True}),
    (["aggregate", "j.tsv", "--method", "ds"], {"import_now": False}),
    (["serve"], {"import_now": False}),
    (["aggregate", "j.tsv", "--method", "gpmv", "--verbose"], None),
])
def test_every_command_is_quiet_unless_verbose(monkeypatch, argv, expected) -> None:
    import app.core.quiet
    from app import cli

    calls: list[dict[str, bool]] = []
    monkeypatch.setattr(app.core.quiet, "quiet_tensorflow", lambda **kw: calls.append(kw))
    monkeypatch.setenv("CROWDQRELS_VERBOSE", "false")  # put back after the test
    args = cli.build_parser().parse_args(argv)
    cli._quiet_unless_verbose(args)
    assert calls == ([] if expected is None else [expected])
    assert (os.environ["CROWDQRELS_VERBOSE"] == "true") == (expected is None)
