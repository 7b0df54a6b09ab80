"""The README's walk-through runs as written, in order, against a live server on a fresh
database: every ```sh block after a ``<!-- walkthrough -->`` line, each under ``set -euo
pipefail``, from a directory holding ``.venv/bin/crowdqrels`` (this interpreter's), with the
README's ``localhost:8000`` pointed at the test's server (started as
tests/jobs/test_serve_workers.py does)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.jobs.test_process_isolation import ROOT
from tests.ops.test_metrics_served import served

MARK = "<!-- walkthrough -->"


def walkthrough_blocks(readme: str) -> list[str]:
    return re.findall(re.escape(MARK) + r"\s*```sh\n(.*?)```", readme, flags=re.DOTALL)


def test_the_walkthrough_is_found() -> None:
    blocks = walkthrough_blocks((ROOT / "README.md").read_text())
    assert len(blocks) == 5 and "crowdqrels example example" in blocks[0]


@pytest.mark.slow
def test_the_readme_walkthrough_runs_as_written(tmp_path: Path) -> None:
    bin_dir = tmp_path / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    (bin_dir / "crowdqrels").symlink_to(Path(sys.executable).parent / "crowdqrels")
    env = {"CROWDQRELS_DATABASE_URL": f"sqlite:///{tmp_path / 'walk.db'}"}
    with served(env) as client:
        port = client.base_url.port
        for number, block in enumerate(walkthrough_blocks((ROOT / "README.md").read_text())):
            script = "set -euo pipefail\n" + block.replace("localhost:8000", f"localhost:{port}")
            done = subprocess.run(["timeout", "240", "bash", "-c", script], cwd=tmp_path,
                                  env={**os.environ, **env}, capture_output=True, text=True)
            assert done.returncode == 0, (
                f"README walk-through block {number + 1} failed ({done.returncode}):\n"
                f"{done.stderr[-2000:]}\n{done.stdout[-2000:]}")
