"""The offline CLI, in-process: ``crowdqrels synth`` then ``crowdqrels aggregate`` on its files,
and ``aggregate`` on the real RF10 file."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from app.cli import main
from app.formats.qrels import parse_qrels


def _read_tsv(path: Path) -> list[dict[str, str]]:
    with path.open() as f:
        return list(csv.DictReader(f, delimiter="\t"))


def _metrics(out: str) -> dict[str, float]:
    metrics = {}
    for line in out.splitlines():
        name, _, value = line.partition(" ")
        if name in ("accuracy", "precision", "recall", "f1", "log_loss", "gold"):
            metrics[name] = float(value.split()[-1])
    return metrics


@pytest.fixture(scope="module")
def synth_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("synth")
    assert main(["synth", str(out), "--tasks", "300", "--annotators", "20", "--noise", "2-4",
                 "--redundancy", "5", "--seed", "3"]) == 0
    return out


def test_synth_writes_all_files(synth_dir: Path) -> None:
    for name in ("judgments.tsv", "features.tsv", "gold.qrels", "annotators.tsv", "tasks.tsv"):
        assert (synth_dir / name).stat().st_size > 0
    assert len(_read_tsv(synth_dir / "judgments.tsv")) == 1500
    assert len(parse_qrels((synth_dir / "gold.qrels").read_text())) == 300


@pytest.mark.parametrize("method", ["mv", "mace", "ds", "ibcc", "ebcc"])
def test_aggregate_synthetic(synth_dir: Path, tmp_path: Path, method: str,
                             capsys: pytest.CaptureFixture[str]) -> None:
    qrels, ann, tasks = tmp_path / "out.qrels", tmp_path / "ann.tsv", tmp_path / "tasks.tsv"
    code = main(["aggregate", str(synth_dir / "judgments.tsv"), "--method", method,
                 "--gold", str(synth_dir / "gold.qrels"), "--output", str(qrels),
                 "--annotators", str(ann), "--tasks", str(tasks), "--seed", "1"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    metrics = _metrics(captured.out)
    assert metrics["gold"] == 300
    assert 0.6 < metrics["accuracy"] <= 1.0
    assert {"precision", "recall", "f1"} <= set(metrics)

    lines = qrels.read_text().splitlines()
    assert len(lines) == 300
    assert lines == sorted(lines, key=lambda s: (s.split()[0], s.split()[2]))
    labels = parse_qrels(qrels.read_text())
    assert set(labels.values()) <= {0, 1}

    task_rows = _read_tsv(tasks)
    assert len(task_rows) == 300
    assert {"topic", "doc", "label", "p_relevant", "p_0", "p_1", "gold"} <= set(task_rows[0])
    for row in task_rows:
        assert 0.0 <= float(row["p_relevant"]) <= 1.0
        assert labels[(row["topic"], row["doc"])] == int(row["label"])
    # Accuracy printed = exact match of the qrels with gold.
    gold = parse_qrels((synth_dir / "gold.qrels").read_text())
    matches = sum(labels[key] == value for key, value in gold.items())
    assert metrics["accuracy"] == pytest.approx(matches / 300, abs=1e-4)

    ann_rows = _read_tsv(ann)
    assert len(ann_rows) == 20
    assert {"annotator", "competence", "n_judgments", "gold_agreement"} <= set(ann_rows[0])
    assert sum(int(float(r["n_judgments"])) for r in ann_rows) == 1500
    assert "█" in captured.err or "100%" in captured.err  # the progress bar


def test_aggregate_params_and_errors(synth_dir: Path, tmp_path: Path,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    judgments = str(synth_dir / "judgments.tsv")
    assert main(["aggregate", judgments, "--method", "mace", "--quiet",
                 "--params", '{"variant": "em", "n_restarts": 2, "threshold": 0.5}',
                 "--output", str(tmp_path / "half.qrels")]) == 0
    # MACE's threshold: only the selected (most confident) half is written.
    assert len((tmp_path / "half.qrels").read_text().splitlines()) in range(150, 170)
    assert main(["aggregate", judgments, "--method", "mace", "--params", "{bad"]) == 2
    assert main(["aggregate", judgments, "--method", "ds", "--params", '{"n_restart": 2}']) == 2
    assert "valid parameters" in capsys.readouterr().err
    # the API's refusals (models.registry): non-finite numbers, bounds, declared types
    for params, says in [('{"tol": NaN}', "parameter 'tol' must be a finite number"),
                         ('{"n_iter": 1180591620717411303424}', "0 <= n_iter <= 100000"),
                         ('{"strategy_prior": 1e-320}', "1e-06 <= strategy_prior <= 1000000"),
                         ('{"smoothing": "abc"}', "must be of type float or None")]:
        assert main(["aggregate", judgments, "--method", "mace", "--params", params]) == 2
        assert says in capsys.readouterr().err
    bad = tmp_path / "bad.tsv"
    bad.write_text("doc\tannotator\tlabel\nd1\tw1\tx\n")
    assert main(["aggregate", str(bad), "--method", "mv"]) == 2
    assert "line 2" in capsys.readouterr().err


def test_aggregate_graded(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "graded.csv"
    path.write_text("task,worker,label\n"
                    "a,w1,2\na,w2,2\na,w3,1\nb,w1,0\nb,w2,1\nb,w3,0\nc,w1,1\nc,w2,1\n")
    qrels = tmp_path / "g.qrels"
    assert main(["aggregate", str(path), "--method", "mv", "--graded", "--quiet",
                 "--output", str(qrels)]) == 0
    assert parse_qrels(qrels.read_text()) == {("0", "a"): 2, ("0", "b"): 0, ("0", "c"): 1}
    assert "classes [0, 1, 2]" in capsys.readouterr().out


def test_aggregate_rf10(rf10_path: Path, tmp_path: Path,
                        capsys: pytest.CaptureFixture[str]) -> None:
    qrels = tmp_path / "rf10.qrels"
    assert main(["aggregate", str(rf10_path), "--method", "ds", "--quiet", "--output", str(qrels),
                 "--tasks", str(tmp_path / "t.tsv")]) == 0
    metrics = _metrics(capsys.readouterr().out)
    assert metrics["gold"] == 3275
    assert metrics["accuracy"] >= 0.686
    assert len(qrels.read_text().splitlines()) == len(_read_tsv(tmp_path / "t.tsv"))


@pytest.mark.slow
def test_aggregate_rf10_mace(rf10_path: Path, tmp_path: Path,
                             capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["aggregate", str(rf10_path), "--method", "mace", "--seed", "0",
                 "--output", str(tmp_path / "rf10.qrels"),
                 "--annotators", str(tmp_path / "a.tsv")]) == 0
    metrics = _metrics(capsys.readouterr().out)
    assert metrics["gold"] == 3275
    assert metrics["accuracy"] >= 0.69


def test_aggregate_builds_features_from_texts_and_runs(tmp_path, capsys) -> None:
    """--topics/--documents/--runs build the service's features; the GP then uses them."""
    from tests.api.corpus.test_corpus import DOCS, RUN_A, RUN_B, TOPICS

    judgments = tmp_path / "j.tsv"
    judgments.write_text("topic\tdoc\tannotator\tlabel\n" + "".join(
        f"{t}\t{d}\t{a}\t{y}\n" for t, d, a, y in [
            ("t1", "d1", "a", 1), ("t1", "d2", "a", 0), ("t1", "d4", "b", 0),
            ("t2", "d3", "a", 1), ("t2", "d2", "b", 0), ("t2", "d4", "b", 1)]))
    (tmp_path / "topics.tsv").write_text(TOPICS)
    (tmp_path / "docs.tsv").write_text("".join(f"{k}\t{v}\n" for k, v in DOCS.items()))
    (tmp_path / "a.run").write_text(RUN_A)
    (tmp_path / "b.run").write_text(RUN_B)
    out = tmp_path / "out.qrels"
    code = main(["aggregate", str(judgments), "--method", "magp", "--topics",
                 str(tmp_path / "topics.tsv"), "--documents", str(tmp_path / "docs.tsv"),
                 "--runs", str(tmp_path / "a.run"), str(tmp_path / "b.run"), "--output",
                 str(out), "--seed", "0", "--quiet", "--params", '{"n_iter": 5}'])
    assert code == 0
    printed = capsys.readouterr().out
    assert "fallback" not in printed
    assert len(out.read_text().splitlines()) == 6

    missing_docs = main(["aggregate", str(judgments), "--method", "mv", "--topics",
                         str(tmp_path / "topics.tsv")])
    assert missing_docs == 2
    assert "--documents" in capsys.readouterr().err


def test_aggregate_rank_transform_reaches_the_features(tmp_path, capsys, monkeypatch) -> None:
    """--rank-transform chooses the ranking features' form (normal scores by default)."""
    import models.features
    from tests.api.corpus.test_corpus import RUN_A

    judgments = tmp_path / "j.tsv"
    judgments.write_text("topic\tdoc\tannotator\tlabel\nt1\td1\ta\t1\nt1\td2\ta\t0\n"
                         "t2\td3\tb\t1\n")
    (tmp_path / "a.run").write_text(RUN_A)
    built = []
    real = models.features.build_features

    def spy(*args, **kwargs):
        features = real(*args, **kwargs)
        built.append(features.names)
        return features

    monkeypatch.setattr(models.features, "build_features", spy)
    base = ["aggregate", str(judgments), "--method", "mv", "--runs", str(tmp_path / "a.run"),
            "--quiet"]
    assert main(base) == 0
    assert main([*base, "--rank-transform", "log_rr"]) == 0
    assert "run:runA:normal" in built[0] and "run:runA:log_rank" not in built[0]
    assert {"run:runA:log_rank", "run:runA:rr"} <= set(built[1])
    assert "run:runA:normal" not in built[1]
    capsys.readouterr()
    with pytest.raises(SystemExit):
        main([*base, "--rank-transform", "log"])
    assert "invalid choice" in capsys.readouterr().err


def test_aggregate_clamp_gold_with_folds(synth_dir: Path, capsys: pytest.CaptureFixture[str]
                                         ) -> None:
    """--clamp-gold alone scores in-sample (1.0 on gold, with a warning); with --folds every gold
    task is scored by a fit that did not see it."""
    args = ["aggregate", str(synth_dir / "judgments.tsv"), "--method", "ibcc", "--gold",
            str(synth_dir / "gold.qrels"), "--quiet", "--clamp-gold"]
    assert main(args) == 0
    out, err = capsys.readouterr()
    assert "accuracy 1.0000" in out and "in-sample" in err
    assert main([*args, "--folds", "3", "--seed", "0"]) == 0
    out, _ = capsys.readouterr()
    assert "held-out evaluation: 3 folds" in out
    accuracy = float(out.split("accuracy ")[1].split()[0])
    assert 0.6 < accuracy < 0.99
    assert main(["aggregate", str(synth_dir / "judgments.tsv"), "--method", "mv",
                 "--gold", str(synth_dir / "gold.qrels"), "--clamp-gold", "--quiet"]) == 2
    assert "cannot clamp" in capsys.readouterr().err


def test_quiet_gp_fit_prints_nothing_on_standard_error(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--quiet: TensorFlow's start-up lines (C++ logging straight to file descriptor 2) and the
    loader's notes stay off standard error; the qrels equal those of a run without it. The quiet
    run is a process of its own (TensorFlow's C++ lines go to the descriptor, around Python);
    the run without it, here, shows what --quiet silenced (TensorFlow is already loaded)."""
    import subprocess
    import sys

    judgments = tmp_path / "j.tsv"
    judgments.write_text("topic\tdoc\tannotator\tlabel\n" + "".join(
        f"t\td{i % 20}\tw{i % 5}\t{i % 2}\n" for i in range(60)))  # repeats: a loader note
    quiet = tmp_path / "quiet.qrels"
    done = subprocess.run(
        [sys.executable, "-m", "app.cli", "aggregate", str(judgments), "--method", "lk",
         "--seed", "0", "--output", str(quiet), "--quiet"],
        capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    loud = tmp_path / "loud.qrels"
    capsys.readouterr()
    assert main(["aggregate", str(judgments), "--method", "lk", "--seed", "0",
                 "--output", str(loud)]) == 0
    assert "note: kept the latest" in capsys.readouterr().err  # what --quiet silenced
    assert quiet.read_text() == loud.read_text()


def test_columns_not_read_are_noted(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A header column that names nothing the loader reads (a misspelt "topics") is noted on
    standard error, as the service's reply names it; --quiet silences the note."""
    judgments = tmp_path / "j.tsv"
    judgments.write_text("topics\tdoc\tannotator\tlabel\n7\td1\tw1\t1\n7\td2\tw2\t0\n")
    assert main(["aggregate", str(judgments), "--method", "mv"]) == 0
    assert f"note: {judgments}: columns not read: topics" in capsys.readouterr().err
    assert main(["aggregate", str(judgments), "--method", "mv", "--quiet"]) == 0
    assert "columns not read" not in capsys.readouterr().err


def test_synth_judges_writes_dense_graded_judgments(tmp_path: Path) -> None:
    out = tmp_path / "judges"
    assert main(["synth", str(out), "--tasks", "50", "--judges", "4", "--grades", "4",
                 "--judge-correlation", "0.5", "--leniency", "0.3", "--seed", "1"]) == 0
    rows = _read_tsv(out / "judgments.tsv")
    assert len(rows) == 200 and {r["annotator"] for r in rows} == {"a0", "a1", "a2", "a3"}
    assert {r["label"] for r in rows} <= {"0", "1", "2", "3"}
    assert main(["synth", str(tmp_path / "bad"), "--judges", "4",
                 "--judge-correlation", "1.5"]) == 2
