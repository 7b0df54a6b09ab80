"""crowdqrels simulate: curve.tsv (first row the starting share, last all judgments), summary
and plot; the same output for the same seeds."""

from __future__ import annotations

import csv

from app.cli import main as cli


def read_curve(path):
    with path.open() as f:
        return list(csv.DictReader(f, delimiter="\t"))


def test_simulate_writes_the_curve_and_a_plot(tmp_path) -> None:
    data = tmp_path / "synth"
    assert cli(["synth", str(data), "--tasks", "120", "--annotators", "12", "--redundancy", "4",
                "--seed", "5"]) == 0
    out = tmp_path / "sim"
    args = ["simulate", str(data / "judgments.tsv"), "--gold", str(data / "gold.qrels"),
            "--method", "ds", "--strategies", "uncertainty", "random", "--seeds", "2",
            "--batch", "50", "--output", str(out), "--quiet"]
    assert cli(args) == 0
    rows = read_curve(out / "curve.tsv")
    assert {"strategy", "seed", "judgments", "accuracy"} <= set(rows[0])
    for strategy in ("uncertainty", "random"):
        for seed in ("0", "1"):
            curve = [r for r in rows if r["strategy"] == strategy and r["seed"] == seed]
            assert int(curve[0]["judgments"]) == 120  # one judgment per task to start
            assert int(curve[-1]["judgments"]) == 480 and float(curve[-1]["share"]) == 1.0
            assert all(0.0 <= float(r["accuracy"]) <= 1.0 for r in curve)
    assert (out / "summary.tsv").exists()
    assert (out / "curve.png").exists() or (out / "curve.svg").exists()

    again = tmp_path / "again"
    assert cli([*args[:-3], "--output", str(again), "--quiet"]) == 0

    def stable(r):
        return {k: v for k, v in r.items() if k != "fit_seconds"}

    assert [stable(r) for r in read_curve(again / "curve.tsv")] == [stable(r) for r in rows]


def test_simulate_with_runs_records_the_error_of_map(tmp_path) -> None:
    data = tmp_path / "synth"
    assert cli(["synth", str(data), "--tasks", "80", "--annotators", "10", "--redundancy", "3",
                "--seed", "2"]) == 0
    rows = read_curve_rows(data / "judgments.tsv")
    topic = rows[0][0]
    docs = sorted({r[1] for r in rows})
    runs = tmp_path / "runs.txt"
    runs.write_text("".join(f"{topic} Q0 {d} {i} {100 - i} {name}\n"
                            for name, ranked in (("fwd", docs), ("rev", docs[::-1]))
                            for i, d in enumerate(ranked[:30], start=1)))
    out = tmp_path / "sim"
    assert cli(["simulate", str(data / "judgments.tsv"), "--gold", str(data / "gold.qrels"),
                "--method", "mv", "--strategies", "uncertainty", "--seeds", "1", "--batch", "40",
                "--runs", str(runs), "--output", str(out), "--quiet"]) == 0
    curve = read_curve(out / "curve.tsv")
    assert all(float(r["map_rmse"]) >= 0 for r in curve)
    assert float(curve[-1]["map_rmse"]) == 0.0  # all judgments: the reference itself


def read_curve_rows(path):
    with path.open() as f:
        next(f)
        return [line.rstrip("\n").split("\t") for line in f]


def test_simulate_refuses_a_file_without_gold(tmp_path) -> None:
    path = tmp_path / "j.tsv"
    path.write_text("topic\tdoc\tannotator\tlabel\nt\td1\tw1\t1\nt\td2\tw1\t0\n")
    assert cli(["simulate", str(path), "--method", "mv", "--output", str(tmp_path / "o"),
                "--quiet"]) == 2


def test_simulate_takes_any_method_and_its_params(tmp_path, capsys) -> None:
    # A method without a warm start refits from scratch; its params reach every fit and the
    # target (the same method fitted on all judgments).
    data = tmp_path / "synth"
    assert cli(["synth", str(data), "--tasks", "80", "--annotators", "10", "--redundancy", "3",
                "--seed", "2"]) == 0
    out = tmp_path / "sim"
    base = ["simulate", str(data / "judgments.tsv"), "--gold", str(data / "gold.qrels"),
            "--strategies", "uncertainty", "--seeds", "1", "--batch", "60", "--quiet"]
    assert cli([*base, "--method", "ibcc", "--params", '{"prior": "empirical"}',
                "--output", str(out)]) == 0
    curve = read_curve(out / "curve.tsv")
    assert int(curve[-1]["judgments"]) == 240
    capsys.readouterr()
    for params, says in [('{"prior": "nope"}', "prior"), ("[1]", "JSON object"),
                         ("{", "Expecting"), ('{"use_gold": true}', "in-sample"),
                         ('{"use_gold": true, "calibrate_folds": 3}', "in-sample")]:
        assert cli([*base, "--method", "ibcc", "--params", params,
                    "--output", str(tmp_path / "bad")]) == 2
        assert says in capsys.readouterr().err
    assert not (tmp_path / "bad").exists()
