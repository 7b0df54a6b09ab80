"""The import architecture (pyproject.toml, [tool.importlinter]): models/ never imports app/, the
plumbing imports no domain, no module imports one that imports it back (imports inside functions
count), the dashboard imports no API router, and nothing the API process loads reaches
TensorFlow."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_import_contracts_are_kept() -> None:
    lint = Path(sys.executable).with_name("lint-imports")
    done = subprocess.run([str(lint), "--no-cache", "--no-logo"], cwd=ROOT, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    analysed = re.search(r"Analyzed (\d+) files", done.stdout)
    assert analysed is not None and int(analysed.group(1)) > 150, done.stdout  # app/ and models/
    assert re.search(r"Contracts: 5 kept, 0 broken", done.stdout), done.stdout
