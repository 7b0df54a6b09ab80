"""Offline CLI usage errors: options, input files and output paths are checked before any work
(exit 2, one ``crowdqrels COMMAND: error: ...`` line, nothing written), outputs are written only
once everything succeeded, and labels and gold are checked against ``--labels``."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.cli import main

JUDGMENTS = ("topic\tdoc\tannotator\tlabel\tgold\n"
             "t\td1\ta\t0\t0\n" "t\td1\tb\t0\t0\n" "t\td2\ta\t1\t1\n" "t\td2\tb\t2\t1\n"
             "t\td3\ta\t2\t-1\n" "t\td3\tb\t1\t-1\n")


@pytest.fixture
def judgments(tmp_path: Path) -> Path:
    path = tmp_path / "j.tsv"
    path.write_text(JUDGMENTS)
    return path


def _usage(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    """Run argv, expect exit 2 (returned, or argparse's SystemExit); the error text."""
    try:
        code = main(argv)
    except SystemExit as exc:
        code = exc.code
    assert code == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert "error:" in err
    return err


def test_folds_beyond_the_gold_tasks_write_nothing(judgments: Path, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    outs = [tmp_path / n for n in ("f.qrels", "f.tasks", "f.ann")]
    err = _usage(["aggregate", str(judgments), "--method", "ds", "--folds", "100",
                  "--clamp-gold", "--output", str(outs[0]), "--tasks", str(outs[1]),
                  "--annotators", str(outs[2]), "--quiet"], capsys)
    assert "--folds 100" in err
    assert not any(p.exists() for p in outs)


@pytest.mark.parametrize("bad", ["missing", "directory"])
def test_an_unwritable_output_is_refused_before_the_fit(judgments: Path, tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str],
                                                        bad: str) -> None:
    target = str(tmp_path / "nope" / "t.tsv") if bad == "missing" else str(tmp_path)
    qrels = tmp_path / "f.qrels"
    err = _usage(["aggregate", str(judgments), "--method", "mv", "--output", str(qrels),
                  "--tasks", target], capsys)
    assert "--tasks" in err
    assert not qrels.exists()


@pytest.mark.parametrize("argv", [
    ["aggregate", "J", "--method", "ds", "--seed", "-1"],
    ["aggregate", "J", "--method", "ds", "--folds", "2", "--seed", "-1"],
    ["next", "J", "--method", "ds", "--seed", "-1"],
    ["synth", "OUT", "--seed", "-1"],
    ["evaluate", "--qrels", "J", "--runs", "J", "--seed", "-1"],
    ["next", "J", "--method", "ds", "--annotators", "-1"],
    ["synth", "OUT", "--annotators", "0"],
    ["synth", "OUT", "--redundancy", "0"],
    ["synth", "OUT", "--annotators", "3", "--redundancy", "5"],
    ["synth", "J"],  # an existing file, not a directory
    ["synth", "OUT", "--crowd", "10"],  # a crowd beside no panel
    ["synth", "OUT", "--judges", "4", "--crowd", "2", "--crowd-redundancy", "3"],
    ["synth", "OUT", "--judges", "4", "--experts", "2", "--expert-share", "1.5"],
    ["aggregate", "J", "--method", "lk", "--graded"],
    ["aggregate", "J", "--method", "magp", "--graded"],
    ["next", "J", "--method", "lk", "--graded"],
])
def test_usage_errors_exit_2_without_a_traceback(argv: list[str], judgments: Path,
                                                 tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    argv = [str(judgments) if a == "J" else str(tmp_path / "out") if a == "OUT" else a
            for a in argv]
    _usage(argv, capsys)
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(("argv", "option"), [
    # simulate has --seeds K (seeds 0..K-1), no --seed: "--seed 3000000000", the option of the
    # other commands, was read as --seeds and started three billion replays (--seed 0 here:
    # refused before the fix too, as "--seeds" below 1, so the test fails rather than hangs)
    (["simulate", "J", "--method", "mv", "--seed", "0", "--output", "OUT"], "--seed"),
    (["aggregate", "J", "--method", "mv", "--out", "OUT"], "--out"),
    (["keys", "create", "--name", "k", "--scope", "read", "--coll", "c"], "--coll"),
])
def test_options_are_not_abbreviated(argv: list[str], option: str, judgments: Path,
                                     tmp_path: Path,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    argv = [str(judgments) if a == "J" else str(tmp_path / "out") if a == "OUT" else a
            for a in argv]
    assert f"unrecognized arguments: {option}" in _usage(argv, capsys)
    assert not (tmp_path / "out").exists()


def test_synth_tasks_0_does_not_blame_topics(tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    err = _usage(["synth", str(tmp_path / "out"), "--tasks", "0"], capsys)
    last = err.strip().splitlines()[-1]
    assert "--tasks" in last and "--topics" not in last


def test_labels_off_the_scale_are_refused_with_their_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "j.tsv"
    path.write_text(JUDGMENTS.replace("t\td3\ta\t2\t-1", "t\td3\ta\t7\t-1"))
    err = _usage(["aggregate", str(path), "--method", "mv", "--graded", "--labels", "0", "1",
                  "2"], capsys)
    assert "line 6" in err and "label 7" in err
    path.write_text(JUDGMENTS.replace("t\td2\ta\t1\t1", "t\td2\ta\t1\t9")
                    .replace("t\td2\tb\t2\t1", "t\td2\tb\t2\t9"))
    err = _usage(["aggregate", str(path), "--method", "mv", "--labels", "0", "1", "2"], capsys)
    assert "line 4" in err and "gold 9" in err


def test_labels_out_of_place_are_named_without_a_scale(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "j.tsv"
    path.write_text(JUDGMENTS.replace("t\td3\ta\t2\t-1", "t\td3\ta\t7\t-1"))
    assert main(["aggregate", str(path), "--method", "mv", "--quiet"]) == 0
    err = capsys.readouterr().err
    assert "warning:" in err and "7" in err and "line 6" in err and "--labels" in err
    assert main(["aggregate", str(path), "--method", "mv", "--quiet",
                 "--labels", "0", "1", "2", "7"]) == 0
    assert "warning" not in capsys.readouterr().err


def test_a_bad_row_names_its_line_once(tmp_path: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "j.tsv"
    path.write_text(JUDGMENTS.replace("t\td3\ta\t2\t-1", "t\td3\ta\tabc\t-1"))
    err = _usage(["aggregate", str(path), "--method", "mv"], capsys)
    assert err.count("line 6") == 1
    assert str(path) in err


def test_qrels_on_standard_output_report_on_standard_error(
        judgments: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["aggregate", str(judgments), "--method", "mv", "--output", "-",
                 "--quiet"]) == 0
    captured = capsys.readouterr()
    assert captured.out.splitlines()[0].split() == ["t", "0", "d1", "0"]
    assert "accuracy" in captured.err and "accuracy" not in captured.out


@pytest.mark.parametrize("row", ["q\ta\t0.5\t-0.5\t1.5\t", "q\ta\t0.5\tnan\t0.5\t",
                                 "q\ta\t0.5\t0.2\t0.3\t"])
def test_evaluate_refuses_invalid_probabilities(row: str, tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    tasks, run = tmp_path / "t.tsv", tmp_path / "r.run"
    tasks.write_text("topic\tdoc\tp_relevant\tp_0\tp_1\tgold\nq\tb\t0.5\t0.5\t0.5\t\n"
                     + row + "\n")
    run.write_text("q Q0 a 1 1.0 s\n")
    err = _usage(["evaluate", "--tasks", str(tasks), "--runs", str(run), "--quiet"], capsys)
    assert "crowdqrels evaluate: error:" in err and "line 3" in err


def test_evaluate_names_the_bad_run_file(tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    qrels, good, bad = tmp_path / "q.qrels", tmp_path / "good.run", tmp_path / "bad.run"
    qrels.write_text("q 0 a 1\n")
    good.write_text("q Q0 a 1 1.0 s\n")
    bad.write_text("q Q0 a x 1.0 t\n")
    err = _usage(["evaluate", "--qrels", str(qrels), "--runs", str(good), str(bad)], capsys)
    assert "bad.run" in err and "good.run" not in err


@pytest.mark.parametrize("options", [["--seeds", "0"], ["--seeds", "-1"], ["--start", "1.5"],
                                     ["--start", "-0.2"], ["--start", "0"], ["--batch", "0"],
                                     ["--batch", "-5"], ["--batch-share", "0"],
                                     ["--batch-share", "2"],
                                     ["--batch", "5", "--batch-share", "0.1"]])
def test_simulate_refuses_bad_options_and_creates_no_directory(
        options: list[str], judgments: Path, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "sim"
    _usage(["simulate", str(judgments), "--method", "mv", "--output", str(out), *options],
           capsys)
    assert not out.exists()


def test_simulate_errors_carry_the_prefix(judgments: Path, tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    err = _usage(["simulate", str(judgments), "--method", "ds", "--params", "{",
                  "--output", str(tmp_path / "sim")], capsys)
    assert err.startswith("crowdqrels simulate: error:")
    assert not (tmp_path / "sim").exists()


def test_next_has_quiet_and_checks_its_output(judgments: Path, tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["next", str(judgments), "--method", "mv", "--quiet", "-n", "2"]) == 0
    assert capsys.readouterr().out.startswith("rank\t")
    err = _usage(["next", str(judgments), "--method", "mv",
                  "--output", str(tmp_path / "no" / "x")], capsys)
    assert "--output" in err


def test_write_outputs_is_all_or_nothing(tmp_path: Path) -> None:
    from app.cli.outputs import write_outputs

    kept = tmp_path / "kept.txt"
    kept.write_text("old\n")
    with pytest.raises(OSError):
        write_outputs([(str(kept), "new\n"), (str(tmp_path / "no" / "x"), "y\n")])
    assert kept.read_text() == "old\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kept.txt"]


def test_interrupt_prints_one_line(monkeypatch: pytest.MonkeyPatch, judgments: Path,
                                   capsys: pytest.CaptureFixture[str]) -> None:
    import app.cli.loading

    def interrupted(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    # both ways a file becomes AnnotationData: parsed rows, or columns (app.cli.columns)
    monkeypatch.setattr(app.cli.loading, "load_annotation_data", interrupted)
    monkeypatch.setattr(app.cli.loading, "_columns_data", interrupted)
    assert main(["aggregate", str(judgments), "--method", "mv"]) == 130
    err = capsys.readouterr().err
    assert "Traceback" not in err and "interrupted" in err


def test_an_unknown_option_is_refused_by_its_command(judgments: Path, tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """`crowdqrels simulate FILE ... --graded` (simulate has no --graded) answered
    "crowdqrels: error: unrecognized arguments" under the usage of the whole CLI (its list of
    commands), not "crowdqrels simulate: error:" under simulate's own usage."""
    err = _usage(["simulate", str(judgments), "--method", "ds", "--output",
                  str(tmp_path / "out"), "--graded"], capsys)
    assert err.strip().splitlines()[-1] == ("crowdqrels simulate: error: unrecognized "
                                            "arguments: --graded")
    assert "usage: crowdqrels simulate" in err
    assert not (tmp_path / "out").exists()
