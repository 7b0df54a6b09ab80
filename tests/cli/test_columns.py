"""The column-wise read of a judgment file (``app.cli.columns``) gives the AnnotationData of the
full parser, field for field; it leaves every file it does not read to the full parser, so an
unusual or bad file reads, or fails, as before."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from app.cli.columns import read_columns
from app.cli.loading import _columns_data, load_annotation_data
from models.data import AnnotationData


def _equal(a: AnnotationData, b: AnnotationData) -> None:
    for field in dataclasses.fields(a):
        x, y = getattr(a, field.name), getattr(b, field.name)
        if isinstance(x, np.ndarray) or isinstance(y, np.ndarray):
            assert x is not None and y is not None and np.array_equal(x, y), field.name
            assert x.dtype.kind == y.dtype.kind, field.name
        else:
            assert x == y, field.name


@pytest.fixture(params=[1, 2], ids=["one-scan", "two-halves"])
def parts(request: pytest.FixtureRequest) -> int:
    """Every equivalence is checked for the single scan and for the two halves scanned at once
    and merged (what a file of ``PARALLEL_BYTES`` or more gets on two cores)."""
    return request.param


def _both(raw: bytes, parts: int, *, graded: bool = False, ignore: tuple[int, ...] = (-2,)
          ) -> tuple[AnnotationData, AnnotationData]:
    columns = read_columns(raw, parts=parts)
    assert columns is not None
    fast = _columns_data(columns, relevant_from=1, graded=graded, ignore=ignore, scale=None,
                         gold_qrels=None)
    return fast, load_annotation_data(raw, graded=graded, ignore=ignore)


@pytest.mark.parametrize("graded", [False, True])
def test_rf10_reads_as_the_full_parser_reads_it(rf10_bytes: bytes, graded: bool,
                                                parts: int) -> None:
    fast, full = _both(rf10_bytes, parts, graded=graded)
    _equal(fast, full)
    assert fast.gold is not None and (fast.gold >= 0).sum() > 3000
    assert len(fast.notes) == 4  # dropped -2s, repeats, tasks and annotators: all said


def test_unsorted_rows_repeats_gold_and_ignored_values(parts: int) -> None:
    """Rows in no order, a task judged twice by one annotator (the later kept), gold on some
    rows only (a task's last known value), an ignored label, an extra column, CSV."""
    raw = (b"doc,worker,label,gold,comment\n"
           b"d2,w1,1,,x\n" b"d1,w2,0,1,\n" b"d2,w2,2,,\n" b"d1,w1,1,,\n" b"d2,w1,0,0,\n"
           b"d3,w3,-2,,\n" b"d1,w3,1,1,\n")
    fast, full = _both(raw, parts, graded=True)
    _equal(fast, full)
    columns = read_columns(raw, parts=parts)
    assert columns is not None and columns.ignored_columns == ("comment",)
    assert fast.topic_ids.tolist() == ["0", "0"]  # no topic column: the default topic
    assert any("latest" in note for note in fast.notes)


@pytest.mark.parametrize("raw", [
    b"topic\tdoc\tworker\tlabel\r\n1\td1\tw1\t1\r\n",  # \r\n line ends
    b"topic,doc,worker,label\n1,\"d,1\",w1,1\n",  # a quoted CSV field
    b"topic\tdoc\tworker\tlabel\n1\td1\tJohn Smith\t1\n",  # a space in an annotator's name
    b"topic\tdoc\tworker\tlabel\n1\td\xc3\xa91\tw1\t1\n",  # a non-ASCII id
    b"topic\tdoc\tworker\tlabel\n1\td1\tw1\t1\n\n1\td2\tw1\t0\n",  # a blank line
    b"topic\tdoc\tworker\tlabel\n1\td1\tw1\t+1\n",  # a label the fast scan does not parse
    b"topic\tdoc\tworker\tlabel\n1\td1\tw1\n",  # a short row
    b"topic\tdoc\tworker\tlabel\tgold\n1\td1\tw1\t1\t1\n1\td1\tw2\t1\t0\n",  # gold conflict
    b"topic\tdoc\tworker\tlabel\nall\td1\tw1\t1\n",  # the reserved topic
])
def test_files_it_does_not_read_are_left_to_the_full_parser(raw: bytes, parts: int) -> None:
    assert read_columns(raw, parts=parts) is None


def test_same_ids_in_other_topics_are_other_tasks(parts: int) -> None:
    """The task key is (topic, doc): a doc id under two topics is two tasks, and ids that share
    a hash bucket stay apart (byte comparison on every hit)."""
    lines = [f"{t}\td{d}\tw{(t * 7 + d) % 13}\t{(t + d) % 2}\n"
             for t in (2, 1, 3) for d in range(40)]
    raw = ("topic\tdoc\tworker\tlabel\n" + "".join(lines)).encode()
    fast, full = _both(raw, parts)
    _equal(fast, full)
    assert fast.n_tasks == 120


def test_aggregate_reads_a_plain_file_column_wise(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    """``crowdqrels aggregate`` on a file the fast scan reads and on the same judgments written
    so that only the full parser reads them (\\r\\n ends): the same qrels."""
    from app.cli import main

    rng = np.random.default_rng(0)
    rows = [f"{1 + i // 20}\td{i}\tw{rng.integers(0, 30)}\t{rng.integers(0, 2)}"
            for i in range(400) for _ in range(3)]
    plain, crlf = tmp_path / "plain.tsv", tmp_path / "crlf.tsv"
    plain.write_text("topic\tdoc\tworker\tlabel\n" + "\n".join(rows) + "\n")
    crlf.write_bytes(("topic\tdoc\tworker\tlabel\r\n" + "\r\n".join(rows) + "\r\n").encode())
    assert read_columns(plain.read_bytes()) is not None
    assert read_columns(crlf.read_bytes()) is None
    for path in (plain, crlf):
        assert main(["aggregate", str(path), "--method", "ds", "--quiet",
                     "--output", str(tmp_path / f"{path.stem}.qrels")]) == 0
    capsys.readouterr()
    assert (tmp_path / "plain.qrels").read_text() == (tmp_path / "crlf.qrels").read_text()


def test_edge_cases_read_as_the_full_parser_reads_them(parts: int) -> None:
    """The same judgments written plainly (read column-wise) and with quotes, blank lines and
    \\r\\n ends (read by the full parser): equal data, and the data the rules say: a repeated
    judgment's later label kept, an ignored label dropped with its task and annotator."""
    rows = [("t2", "d1", "w1", "1"), ("t1", "d2", "w2", "0"), ("t1", "d2", "w1", "1"),
            ("t2", "d1", "w1", "0"), ("t1", "d1", "w3", "1"), ("t1", "d2", "w2", "1"),
            ("t3", "d9", "w4", "-2"), ("t1", "d1", "w2", "0")]
    plain = "topic\tdoc\tworker\tlabel\n" + "".join("\t".join(r) + "\n" for r in rows)
    fancy = ('"topic","doc","worker","label"\r\n\r\n'
             + "".join(f'"{t}",{d},"{w}",{y}\r\n' + ("\r\n" if i % 3 == 0 else "")
                       for i, (t, d, w, y) in enumerate(rows)))
    assert read_columns(plain.encode()) is not None and read_columns(fancy.encode()) is None
    fast, full = _both(plain.encode(), parts)
    _equal(fast, full)
    _equal(fast, load_annotation_data(fancy.encode(), ignore=(-2,)))
    assert (fast.topic_ids.tolist(), fast.doc_ids.tolist()) == (["t1", "t1", "t2"],
                                                                ["d1", "d2", "d1"])
    assert fast.annotator_ids.tolist() == ["w1", "w2", "w3"]
    kept = sorted(zip(fast.task.tolist(), fast.annotator.tolist(), fast.label.tolist(),
                      strict=True))
    # (t1, d2, w2): 0 then 1, the later kept; (t2, d1, w1): 1 then 0
    assert kept == [(0, 1, 0), (0, 2, 1), (1, 0, 1), (1, 1, 1), (2, 0, 0)]
    assert fast.notes == ("dropped 1 'could not judge' judgments",
                          "kept the latest of repeated judgments: dropped 2",
                          "dropped 1 tasks without a usable judgment",
                          "dropped 1 annotators without a usable judgment")


def test_bad_rows_are_named_by_line_as_before(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    """A file the scan gives up on at a bad row fails with the full parser's message, which
    names the line."""
    from app.cli import main
    from app.cli.loading import file_error
    from app.formats.errors import FileFormatError
    from app.formats.judgments_file import parse_judgments

    path = tmp_path / "bad.tsv"
    path.write_bytes(b"topic\tdoc\tworker\tlabel\n1\td1\tw1\t1\n1\td2\tw1\t1\n1\td3\tw1\tyes\n")
    assert read_columns(path.read_bytes()) is None
    with pytest.raises(FileFormatError) as err:
        parse_judgments(path.read_bytes())
    assert err.value.line == 4
    assert main(["aggregate", str(path), "--method", "mv", "--quiet"]) == 2
    assert capsys.readouterr().err.strip() == ("crowdqrels aggregate: error: "
                                               + file_error(err.value, str(path)))


def test_short_and_long_ids_stay_apart(parts: int) -> None:
    """Ids of up to 7 bytes are compared as one packed integer, longer ones byte by byte: ids
    that are prefixes of each other, across that length, stay distinct ids."""
    names = ["w1", "w12", "w123456", "w1234567", "w12345678", "w123456789", "1w", "~~~~~~~"]
    lines = [f"{1 + i % 2}\t{names[(i + 3) % 8]}\t{names[i % 8]}\t{i % 2}\n" for i in range(64)]
    raw = ("topic\tdoc\tworker\tlabel\n" + "".join(lines)).encode()
    fast, full = _both(raw, parts)
    _equal(fast, full)
    assert sorted(fast.annotator_ids.tolist()) == sorted(names)
    assert sorted(fast.doc_ids.tolist()) == sorted(names)


def test_two_halves_give_the_codes_of_one_scan(parts: int) -> None:
    """Ids first seen in the second half, ids of the first half seen again in the second, a
    topic that spans the cut, tasks in no order: the two halves merged give every id the code
    (the order of first appearance) a single scan gives, row for row."""
    rng = np.random.default_rng(3)
    lines = [f"t{rng.integers(0, 5)}\td{rng.integers(0, 300)}\tw{rng.integers(0, 90)}"
             f"{'-long-name' if i % 7 == 0 else ''}\t{rng.integers(0, 3)}\t"
             f"{'' if i % 4 else 1}\n" for i in range(3000)]
    raw = ("topic\tdoc\tworker\tlabel\textra\n" + "".join(lines)).encode()
    one, other = read_columns(raw, parts=1), read_columns(raw, parts=parts)
    assert one is not None and other is not None
    for field in dataclasses.fields(one):
        x, y = getattr(one, field.name), getattr(other, field.name)
        assert (np.array_equal(x, y) if isinstance(x, np.ndarray) else x == y), field.name
    fast, full = _both(raw, parts, graded=True)
    _equal(fast, full)


def test_a_large_file_is_scanned_in_two_halves(monkeypatch: pytest.MonkeyPatch) -> None:
    """From ``PARALLEL_BYTES`` on, with two cores, the scan runs in two parts."""
    import app.cli.columns as columns
    import app.cli.columns_kernels as kernels

    seen: list[int] = []
    scan = kernels.scan
    monkeypatch.setattr(kernels, "scan",
                        lambda *a, parts=1: seen.append(parts) or scan(*a, parts=parts))
    monkeypatch.setattr(columns, "PARALLEL_BYTES", 64)
    monkeypatch.setattr(columns.os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    raw = b"topic\tdoc\tworker\tlabel\n" + b"".join(b"1\td%d\tw%d\t1\n" % (i, i % 3)
                                                      for i in range(20))
    small = b"topic\tdoc\tworker\tlabel\n1\td0\tw0\t1\n"  # below PARALLEL_BYTES
    assert read_columns(raw) is not None and read_columns(small) is not None
    monkeypatch.setattr(columns.os, "sched_getaffinity", lambda pid: {0}, raising=False)
    assert read_columns(raw) is not None
    assert seen == [2, 1, 1]
