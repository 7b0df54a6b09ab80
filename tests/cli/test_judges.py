"""``crowdqrels aggregate --judge NAME=QRELS`` and ``crowdqrels agreement`` on files."""

from __future__ import annotations

import json

import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score

from app.cli import main

GOLD = [2, 0, 2, 1]
JUDGES = {"a": [2, 0, 3, 1], "b": [3, 1, 3, 2]}


def qrels(path, grades):  # type: ignore[no-untyped-def]
    path.write_text("".join(f"1 0 d{i + 1} {g}\n" for i, g in enumerate(grades)))
    return str(path)


@pytest.fixture
def files(tmp_path):  # type: ignore[no-untyped-def]
    out = {name: qrels(tmp_path / f"{name}.qrels", grades) for name, grades in JUDGES.items()}
    out["gold"] = qrels(tmp_path / "gold.qrels", GOLD)
    crowd = tmp_path / "crowd.tsv"
    crowd.write_text("topic\tdoc\tannotator\tlabel\n1\td1\tw1\t2\n1\td2\tw1\t0\n")
    out["crowd"] = str(crowd)
    return out


def test_aggregate_without_input_reads_the_judges(files, tmp_path, capsys) -> None:
    output = tmp_path / "out.qrels"
    assert main(["aggregate", "--judge", f"a={files['a']}", "--judge", f"b={files['b']}",
                 "--method", "mv", "--graded", "--quiet", "--output", str(output),
                 "--annotators", str(tmp_path / "ann.tsv")]) == 0
    assert len(output.read_text().splitlines()) == 4
    annotators = (tmp_path / "ann.tsv").read_text()
    assert "\na\t" in annotators and "\nb\t" in annotators


def test_aggregate_input_and_judges_together(files, tmp_path) -> None:
    assert main(["aggregate", files["crowd"], "--judge", f"a={files['a']}", "--method", "mv",
                 "--quiet", "--annotators", str(tmp_path / "ann.tsv")]) == 0
    names = [line.split("\t")[0] for line in
             (tmp_path / "ann.tsv").read_text().splitlines()[1:]]
    assert sorted(names) == ["a", "w1"]


@pytest.mark.parametrize(("argv", "message"), [
    (["aggregate", "--method", "mv"], "give a judgment file"),
    (["aggregate", "CROWD", "--judge", "w1=A", "--method", "mv"], "already an annotator"),
    (["aggregate", "--judge", "a=A", "--judge", "a=B", "--method", "mv"], "named twice"),
    (["aggregate", "--judge", "B", "--method", "mv"], "expected NAME=QRELS"),
    (["aggregate", "--judge", "b=B", "--labels", "0", "1", "2", "--method", "mv"],
     "line 1: grade 3 is off the scale"),
])
def test_bad_judge_options(files, capsys, argv, message) -> None:
    argv = [{"CROWD": files["crowd"]}.get(a, a).replace("=A", f"={files['a']}")
            .replace("=B", f"={files['b']}") for a in argv]
    if message == "expected NAME=QRELS":  # argparse refuses the option itself
        with pytest.raises(SystemExit) as exited:
            main(argv)
        assert exited.value.code == 2
    else:
        assert main(argv) == 2
    assert message in capsys.readouterr().err


def test_agreement_figures_against_scikit_learn(files, capsys) -> None:
    assert main(["agreement", "--judge", f"a={files['a']}", "--judge", f"b={files['b']}",
                 "--gold", files["gold"], "--method", "mv", "--quiet"]) == 0
    body = json.loads(capsys.readouterr().out)
    rows = {r["name"]: r for r in body["raters"]}
    b = rows["b"]["vs_gold"]
    assert b["exact"] == pytest.approx(np.mean(np.array(JUDGES["b"]) == np.array(GOLD)))
    assert b["quadratic_kappa"] == pytest.approx(cohen_kappa_score(
        JUDGES["b"], GOLD, labels=[0, 1, 2, 3], weights="quadratic"))
    assert b["leniency"] == pytest.approx(np.mean(JUDGES["b"]) - np.mean(GOLD))
    assert rows["a"]["vs_aggregate"]["n"] == 4
    assert [r["name"] for r in body["raters"]] == ["a", "b"]  # best first


def test_agreement_tsv_leaderboard(files, capsys) -> None:
    assert main(["agreement", files["crowd"], "--judge", f"a={files['a']}", "--gold",
                 files["gold"], "--min-tasks", "2", "--format", "tsv", "--quiet"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split("\t")[:3] == ["name", "kind", "tasks"]
    assert {line.split("\t")[0] for line in lines[1:]} == {"a", "w1"}
