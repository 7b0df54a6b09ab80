"""``crowdqrels synth --judges`` then ``aggregate --method judge-family --graded``: the method is
reachable by name from the CLI, and its annotators TSV says which family each judge is in."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from app.cli import main


def test_judge_family_from_the_cli_finds_the_three_families(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "synth"
    assert main(["synth", str(out), "--tasks", "400", "--judges", "9", "--grades", "4",
                 "--judge-correlation", "0.6", "--leniency", "0", "--seed", "2"]) == 0
    capsys.readouterr()
    annotators = tmp_path / "a.tsv"
    assert main(["aggregate", str(out / "judgments.tsv"), "--method", "judge-family",
                 "--graded", "--gold", str(out / "gold.qrels"), "--quiet",
                 "--annotators", str(annotators)]) == 0
    printed = dict(line.split(" ", 1) for line in capsys.readouterr().out.splitlines()
                   if line.split(" ")[0] in ("accuracy", "kappa"))
    assert float(printed["kappa"]) > 0.8
    with annotators.open() as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    assert len(rows) == 9
    # the generator puts judge j in family j mod 3, and names judges in order
    family = {r["annotator"]: float(r["family"]) for r in rows}
    names = sorted(family)
    groups = {}
    for index, name in enumerate(names):
        groups.setdefault(family[name], set()).add(index % 3)
    assert len(groups) == 3 and all(len(v) == 1 for v in groups.values())
    assert all(float(r["task_loading"]) >= 0 for r in rows)


def test_synth_mixed_writes_the_three_kinds(tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "mixed"
    assert main(["synth", str(out), "--tasks", "100", "--judges", "4", "--grades", "4",
                 "--crowd", "20", "--experts", "2", "--expert-share", "0.2",
                 "--seed", "3"]) == 0
    capsys.readouterr()
    with (out / "annotators.tsv").open() as f:
        kinds = [r["kind"] for r in csv.DictReader(f, delimiter="\t")]
    assert kinds == ["llm"] * 4 + ["crowd"] * 20 + ["expert"] * 2
    with (out / "judgments.tsv").open() as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    # 4 judges and 3 workers on every task, one expert on a fifth
    assert len(rows) == 100 * 4 + 100 * 3 + 20
    assert main(["aggregate", str(out / "judgments.tsv"), "--method", "mv", "--graded",
                 "--quiet"]) == 0
