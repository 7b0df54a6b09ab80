"""`crowdqrels example DIR`: a deterministic, self-contained collection."""

from __future__ import annotations

from pathlib import Path

from app.cli import main


def _files(directory: Path) -> dict[str, bytes]:
    return {str(p.relative_to(directory)): p.read_bytes()
            for p in sorted(directory.rglob("*")) if p.is_file()}


def test_example_is_deterministic_and_complete(tmp_path: Path) -> None:
    assert main(["example", str(tmp_path / "a")]) == 0
    assert main(["example", str(tmp_path / "b")]) == 0
    assert main(["example", str(tmp_path / "c"), "--seed", "1"]) == 0
    a, b, c = (_files(tmp_path / x) for x in "abc")
    assert a == b and a != c
    assert set(a) == {"judgments.tsv", "gold.qrels", "topics.tsv", "docs.tsv", "llm.qrels",
                      "runs/run1.txt", "runs/run2.txt", "runs/run3.txt"}
    rows = [line.split("\t") for line in a["judgments.tsv"].decode().splitlines()]
    assert rows[0] == ["topic", "doc", "annotator", "label", "gold"]
    judged = {(r[0], r[1]) for r in rows[1:]}
    gold = {(r[0], r[1]): r[4] for r in rows[1:] if r[4]}
    qrels = {(t, d): g for t, _, d, g in (x.split() for x in a["gold.qrels"].decode().split("\n")
                                          if x)}
    assert qrels == gold and len(gold) > 20
    ranked = {(t, d) for t, _, d, *_ in (x.split() for x in a["runs/run1.txt"].decode().split(
        "\n") if x)}
    assert judged < ranked  # the runs rank unjudged documents too
    assert {d for _, d in ranked} == {line.split("\t")[0] for line in
                                      a["docs.tsv"].decode().splitlines()}
