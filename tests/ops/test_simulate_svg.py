"""`simulate`'s plot without matplotlib: axes with ticks and labels, a legend that does not
overlap itself (issue 35, item 6)."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

from app.cli.simulate import _nice_ticks, _write_svg


def test_the_svg_fallback_has_axes_ticks_and_a_legend(tmp_path: Path) -> None:
    shares = [0.1, 0.4, 0.7, 1.0]
    curves = {"uncertainty": (shares, [[0.80, 0.84, 0.86, 0.88], [0.81, 0.85, 0.87, 0.88]]),
              "expected-change": (shares, [[0.79, 0.83, 0.86, 0.88], [0.80, 0.84, 0.87, 0.88]]),
              "random": (shares, [[0.78, 0.80, 0.84, 0.88], [0.79, 0.82, 0.85, 0.88]])}
    path = _write_svg(curves, tmp_path / "curve.svg", target=0.88)
    root = ET.fromstring(path.read_text())
    texts = [(t.text or "", float(t.get("y", "0"))) for t in root.iter(
        "{http://www.w3.org/2000/svg}text")]
    words = [t for t, _ in texts]
    assert "share of judgments revealed" in words and "accuracy against gold" in words
    assert {"0", "0.2", "0.4", "0.6", "0.8", "1"} <= set(words)  # x ticks
    y_ticks = [t for t in words if re.fullmatch(r"0\.\d+", t) and len(t) > 3]
    assert len(y_ticks) >= 3  # y ticks across the accuracies
    legend = [(t, y) for t, y in texts if t in curves or t == "all judgments (cold)"]
    ys = sorted(y for _, y in legend)
    assert len(legend) == 4 and all(b - a >= 14 for a, b in zip(ys, ys[1:], strict=False))


def test_nice_ticks() -> None:
    assert _nice_ticks(0.0, 1.0) == [0.0, 0.2, 0.4, 0.6, 0.8, 1.0]
    assert _nice_ticks(0.775, 0.885) == [0.78, 0.8, 0.82, 0.84, 0.86, 0.88]
