"""The offline CLI on graded data: ``synth --grades`` then ``aggregate --method ordinal-ds
--graded``: graded qrels, the graded and binary views of the tasks TSV, the graded scores."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest

from app.cli import main
from app.formats.qrels import parse_qrels


def _read_tsv(path: Path) -> list[dict[str, str]]:
    with path.open() as f:
        return list(csv.DictReader(f, delimiter="\t"))


def test_synth_grades_and_ordinal_ds(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "synth"
    assert main(["synth", str(out), "--tasks", "400", "--annotators", "20", "--grades", "4",
                 "--bias-sd", "0.6", "--seed", "5"]) == 0
    gold = parse_qrels((out / "gold.qrels").read_text())
    assert set(gold.values()) == {0, 1, 2, 3}
    planted = {r["annotator"]: float(r["bias"]) for r in _read_tsv(out / "annotators.tsv")}
    capsys.readouterr()

    qrels, tasks, annotators = tmp_path / "o.qrels", tmp_path / "t.tsv", tmp_path / "a.tsv"
    assert main(["aggregate", str(out / "judgments.tsv"), "--method", "ordinal-ds", "--graded",
                 "--gold", str(out / "gold.qrels"), "--relevant-from", "2", "--quiet",
                 "--output", str(qrels), "--tasks", str(tasks),
                 "--annotators", str(annotators)]) == 0
    printed = dict(line.split(" ", 1) for line in capsys.readouterr().out.splitlines()
                   if line.split(" ")[0] in ("accuracy", "mae", "kappa", "binary_accuracy"))
    assert float(printed["kappa"]) > 0.7
    assert float(printed["mae"]) < 0.5
    assert float(printed["binary_accuracy"].split()[0]) > 0.8

    rows = _read_tsv(tasks)
    assert set(parse_qrels(qrels.read_text()).values()) <= {0, 1, 2, 3}
    for r in rows:
        p = [float(r[f"p_{k}"]) for k in range(4)]
        # binary view = P(grade >= relevant_from)
        assert float(r["p_relevant"]) == pytest.approx(p[2] + p[3], abs=1e-5)
        assert float(r["expected_grade"]) == pytest.approx(
            sum(k * pk for k, pk in enumerate(p)), abs=1e-4)
    fitted = {r["annotator"]: float(r["bias"]) for r in _read_tsv(annotators)}
    # Annotators are drawn by a power law: compare those with enough judgments to be estimable
    # (planted on the generator's latent scale, 2 per grade; fitted in grade units).
    names = sorted(r["annotator"] for r in _read_tsv(annotators)
                   if float(r["n_judgments"]) >= 30)
    assert len(names) >= 8
    assert np.corrcoef([planted[a] for a in names], [fitted[a] for a in names])[0, 1] > 0.8
    assert all(float(r["spread"]) > 0 for r in _read_tsv(annotators))

    expected = tmp_path / "e.qrels"
    assert main(["aggregate", str(out / "judgments.tsv"), "--method", "ordinal-ds", "--graded",
                 "--grade", "expected", "--quiet", "--output", str(expected)]) == 0
    by_task = {(r["topic"], r["doc"]): float(r["expected_grade"]) for r in rows}
    for key, value in parse_qrels(expected.read_text()).items():
        assert abs(value - by_task[key]) <= 0.5 + 1e-9


def test_synth_topics_and_the_per_topic_prior(tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    # Topics whose grade mixes differ (mostly 0s in some, mostly 2s in others): the per-topic
    # class prior of ordinal-ds reads each topic's mix and calls more grades right than one prior
    # for the collection (seed 2: 0.746 against 0.638; see docs/models.md)
    out = tmp_path / "synth"
    assert main(["synth", str(out), "--tasks", "1200", "--annotators", "50", "--grades", "3",
                 "--noise", "4-8", "--topics", "12", "--topic-concentration", "0.5",
                 "--seed", "2"]) == 0
    assert "topics\t" in capsys.readouterr().out
    topics = _read_tsv(out / "topics.tsv")
    assert len(topics) == 12 and {r["tasks"] for r in topics} == {"100"}
    gold = parse_qrels((out / "gold.qrels").read_text())
    assert {topic for topic, _ in gold} == {f"t{g:02d}" for g in range(12)}  # sort as numbers

    def exact(params: str) -> float:
        assert main(["aggregate", str(out / "judgments.tsv"), "--method", "ordinal-ds", "--graded",
                     "--gold", str(out / "gold.qrels"), "--quiet", "--params", params]) == 0
        printed = dict(line.split(" ", 1) for line in capsys.readouterr().out.splitlines()
                       if line.startswith("accuracy "))
        return float(printed["accuracy"].split()[0])

    assert exact('{"class_prior_by": "topic"}') > exact('{"class_prior_by": "collection"}') + 0.03

    for bad in (["--topics", "0"], ["--topics", "5000"], ["--topic-concentration", "0"]):
        try:  # argparse's own range checks exit 2 too
            code = main(["synth", str(tmp_path / "bad"), "--tasks", "100", *bad])
        except SystemExit as exc:
            code = exc.code
        assert code == 2
        assert bad[0] in capsys.readouterr().err.strip().splitlines()[-1]
        assert not (tmp_path / "bad").exists()
