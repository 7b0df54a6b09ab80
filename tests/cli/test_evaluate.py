"""`crowdqrels evaluate` without a server: fixed qrels, formats, errors, unknown topics."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from app.cli import main as cli

QRELS = "q1 0 a 1\nq1 0 b 0\nq1 0 c 1\nq2 0 a 0\nq2 0 d 2\n"
RUN = ("q1 Q0 b 1 3.0 sys\nq1 Q0 a 2 2.0 sys\nq1 Q0 x 3 1.0 sys\n"
       "q2 Q0 d 1 5.0 sys\nq9 Q0 a 1 1.0 sys\n")


@pytest.fixture
def files(tmp_path: Path) -> dict[str, str]:
    (tmp_path / "q.qrels").write_text(QRELS)
    (tmp_path / "sys.run").write_text(RUN)
    other = RUN.replace("sys", "other").replace("q2 Q0 d 1 5.0", "q2 Q0 d 9 0.5")
    (tmp_path / "other.run").write_text(other + "q2 Q0 a 2 1.0 other\n")
    return {k: str(tmp_path / v) for k, v in (("qrels", "q.qrels"), ("sys", "sys.run"),
                                               ("other", "other.run"))}


def test_fixed_qrels_json_and_trec(files: dict[str, str], tmp_path: Path,
                                   capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out.json"
    assert cli(["evaluate", "--qrels", files["qrels"], "--runs", files["sys"], files["other"],
                "--measures", "P@2", "RR", "--samples", "20", "--output", str(out),
                "--quiet"]) == 0
    assert "run sys: 1 topic(s) without judgments" in capsys.readouterr().err
    result = json.loads(out.read_text())
    rows = {(r["run"], r["measure"], r["topic"]): r for r in result["results"]}
    assert rows[("sys", "P@2", "q1")]["value"] == 0.5  # b (non-rel), a (rel)
    assert rows[("sys", "RR", "q1")]["value"] == 0.5
    assert rows[("sys", "RR", "q2")]["value"] == 1.0
    assert rows[("sys", "RR", "all")]["value"] == 0.75
    assert rows[("sys", "RR", "all")]["std"] == 0.0
    assert result["unjudged_topics"] == {"sys": 1, "other": 1}
    assert {p["a"] for p in result["pairs"]} == {"sys", "other"}

    assert cli(["evaluate", "--qrels", files["qrels"], "--runs", files["sys"], "--measures",
                "RR", "--format", "trec", "--quiet"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines == ["sys\tRR\tq1\t0.5000", "sys\tRR\tq2\t1.0000", "sys\tRR\tall\t0.7500"]


def test_errors(files: dict[str, str], tmp_path: Path,
                capsys: pytest.CaptureFixture[str]) -> None:
    assert cli(["evaluate", "--qrels", files["qrels"], "--runs", files["sys"], "--measures",
                "P@10", "MAP", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "unknown measure 'MAP'" in err and "P@k" in err
    dup = tmp_path / "dup.run"
    dup.write_text("q1 Q0 a 1 2 x\nq1 Q0 a 2 1 x\n")
    assert cli(["evaluate", "--qrels", files["qrels"], "--runs", str(dup), "--quiet"]) == 2
    assert "line 2" in capsys.readouterr().err


def test_a_tasks_file_splits_lines_only_at_line_ends() -> None:
    """A tasks TSV (``aggregate --tasks``) whose doc id holds U+2028 or a form feed keeps one
    row per line, as every other file does (str.splitlines split them); empty is empty."""
    from app.evaluations.inputs import posterior_from_tasks
    from app.formats.errors import FileFormatError

    text = "topic\tdoc\tp_0\tp_1\r\nq1\td\u20281\t0.2\t0.8\r\nq1\td\x0c2\t0.9\t0.1\r\n"
    posterior, gold = posterior_from_tasks(text)
    assert gold == {}
    assert posterior.docs.tolist() == ["d\u20281", "d\x0c2"] and posterior.n_tasks == 2
    with pytest.raises(FileFormatError) as empty:
        posterior_from_tasks("")
    assert empty.value.code == "empty_file"


def test_ppi_on_fixed_qrels_corrected_by_a_human_sample(tmp_path: Path) -> None:
    """An LLM judge's qrels on every pair plus human labels on a sample (issue #38): the
    prediction is the score on the LLM's qrels, the rectifier the change each human label makes.
    One topic, LLM d1..d4 = 1, 0, 1, 0; humans d1 = 0, d2 = 1 (n = 2 of N = 4); P@2 of d1, d2,
    d3, d4: 0.5 on the LLM's qrels, d = (−.5, +.5), estimate .5 + (4/2)·0 = .5, s² = .5,
    se = 4 √(.5 · .5 / 2) = 1.41: the interval is the whole range [0, 1]."""
    (tmp_path / "llm.qrels").write_text("q 0 d1 1\nq 0 d2 0\nq 0 d3 1\nq 0 d4 0\n")
    (tmp_path / "human.qrels").write_text("q 0 d1 0\nq 0 d2 1\n")
    (tmp_path / "r.run").write_text("".join(f"q Q0 d{i} {i} {9 - i} r\n" for i in range(1, 5)))
    out = tmp_path / "out.json"
    assert cli(["evaluate", "--qrels", str(tmp_path / "llm.qrels"), "--gold",
                str(tmp_path / "human.qrels"), "--runs", str(tmp_path / "r.run"), "--measures",
                "P@2", "--interval", "ppi", "--output", str(out), "--quiet"]) == 0
    rows = {r["topic"]: r for r in json.loads(out.read_text())["results"]}
    assert rows["all"]["value"] == 0.5 and rows["all"]["interval_kind"] == "ppi"
    assert rows["all"]["estimate"] == pytest.approx(0.5)
    assert (rows["all"]["low"], rows["all"]["high"]) == (0.0, 1.0)
    assert rows["q"]["interval_kind"] == "posterior" and rows["q"]["low"] == 0.5


def test_joint_file_errors(files: dict[str, str], tmp_path: Path,
                           capsys: pytest.CaptureFixture[str]) -> None:
    """`aggregate --joint` only for binary GP methods (checked before reading anything);
    `evaluate --joint` refuses fixed --qrels' graded posterior and a file that is not one."""
    judgments = tmp_path / "j.tsv"
    judgments.write_text("topic\tdoc\tannotator\tlabel\nq1\ta\tw1\t1\n")
    assert cli(["aggregate", str(judgments), "--method", "ds", "--joint",
                str(tmp_path / "j.npz"), "--quiet"]) == 2
    assert "no joint posterior" in capsys.readouterr().err
    assert not (tmp_path / "j.npz").exists()
    assert cli(["evaluate", "--qrels", files["qrels"], "--joint", files["qrels"], "--runs",
                files["sys"], "--quiet"]) == 2  # graded fixed qrels: 3 classes
    assert "binary posteriors only" in capsys.readouterr().err
    tasks = tmp_path / "t.tsv"
    tasks.write_text("topic\tdoc\tp_0\tp_1\nq1\ta\t0.3\t0.7\nq1\tb\t0.6\t0.4\n")
    assert cli(["evaluate", "--tasks", str(tasks), "--joint", files["qrels"], "--runs",
                files["sys"], "--quiet"]) == 2
    assert "not a joint posterior" in capsys.readouterr().err


def test_method_choices_are_the_methods_with_parameter_draws() -> None:
    """``evaluate --method`` names its choices without importing a model; they are the methods
    whose fits have annotator parameters to draw (``METHOD_FAMILY``)."""
    import argparse

    from app.cli import build_parser
    from models.evaluation.parameters import METHOD_FAMILY

    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    evaluate = sub.choices["evaluate"]
    method = next(a for a in evaluate._actions if a.dest == "method")
    assert sorted(method.choices) == sorted(METHOD_FAMILY)


def test_fit_params_must_be_a_json_object() -> None:
    """``--params`` beside ``--method``: a JSON object, else a usage error (exit code 2)."""
    from app.cli.errors import UsageError
    from app.cli.evaluate import _fit_params

    assert _fit_params('{"class_prior": "learned"}') == {"class_prior": "learned"}
    assert _fit_params(None) == {}
    for text, message in (("[1]", "JSON object"), ("{", "not JSON")):
        with pytest.raises(UsageError, match=message):
            _fit_params(text)
