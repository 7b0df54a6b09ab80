"""TREC run files: ``topic Q0 doc rank score tag``, whitespace-separated, one line per retrieved
document.

Each distinct ``tag`` is one run (a file normally holds one). Within a run the ranking of a topic is
ordered as trec_eval orders it: by ``score`` descending, ties broken by doc id descending (string
comparison, as trec_eval's ``strcmp``). The file's ``rank`` column must be an integer but does not
decide the order; it is kept for information only (``TrecRun.file_ranks``).

A parsed :class:`TrecRun` is a read-only mapping ``{topic: [doc, ...] best first}``, the form
``models.features.build_features(runs=...)`` takes, so ``parse_runs(raw)`` can be passed as is.

Lines end at \\n, \\r\\n or \\r, as in every file read here; fields are separated by ASCII
whitespace; a control character anywhere is refused; topic and document ids follow
``app.formats.ids`` as every id does (length, no whitespace such as U+00A0; a field is the id as
it is). Errors (:class:`FileFormatError`, ``line`` = 1-based line in the file): ``invalid_row``
for a line without exactly 6 fields, a control character, a bad id, a rank that is not a 64-bit
whole number (ASCII digits) or a score that is not a finite number, ``duplicate_row`` for a
second line for the same (topic, doc) in the same run, ``unknown_topic`` for a topic outside
``topics`` (when given), ``empty_file``; :func:`merge_runs` refuses a run name given twice
(``duplicate_run``).
"""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass, field

import numpy as np

from app.formats.errors import (
    FileFormatError,
    decode_text,
    iter_lines,
    refuse_control_characters,
)
from app.formats.ids import (
    INT64,
    MAX_ID_LENGTH,
    RESERVED_TOPIC,
    BadId,
    clean_ids,
    parse_integer,
    split_fields,
)


@dataclass(frozen=True)
class TrecRun(Mapping[str, list[str]]):
    """One run: per topic the documents best first, with their scores and the file's ranks
    (NumPy arrays aligned with the ranking)."""

    name: str
    rankings: dict[str, list[str]]
    scores: dict[str, np.ndarray] = field(repr=False)
    file_ranks: dict[str, np.ndarray] = field(repr=False)

    def __getitem__(self, topic: str) -> list[str]:
        return self.rankings[topic]

    def __iter__(self) -> Iterator[str]:
        return iter(self.rankings)

    def __len__(self) -> int:
        return len(self.rankings)

    def depth(self, topic: str) -> int:
        """How many documents the run retrieved for ``topic`` (0 if it did not answer it)."""
        return len(self.rankings.get(topic, ()))

    @property
    def max_depth(self) -> int:
        return max((len(r) for r in self.rankings.values()), default=0)


# Per run and topic while parsing: doc -> position, scores, file ranks (one entry per line).
_Entry = tuple[dict[str, int], list[float], list[int]]


def parse_runs(
    raw: bytes | str, *, topics: Collection[str] | None = None
) -> dict[str, TrecRun]:
    """{tag: run} for every run (tag) in the file; ``topics`` (optional) are the known topic ids.

    Lines are read one at a time and a run's topic and tag strings are stored once, so memory
    stays near the size of the result (about 0.2 KB per line) rather than of all the fields.
    """
    text = decode_text(raw)
    refuse_control_characters(text)
    runs: dict[str, dict[str, _Entry]] = {}
    for line_no, line in enumerate(iter_lines(text), start=1):
        parts = split_fields(line)
        if not parts:
            continue
        if len(parts) != 6:
            raise FileFormatError(
                f"line {line_no}: a run line has 6 fields (topic Q0 doc rank score tag), "
                f"found {len(parts)}", code="invalid_row", line=line_no,
            )
        topic, _, doc, rank_text, score_text, tag = parts
        rank = parse_integer(rank_text, INT64)
        if rank is None:
            raise FileFormatError(
                f"line {line_no}: rank must be a whole number between -2**63 and 2**63 - 1, "
                f"got {rank_text!r}", code="invalid_row", line=line_no, column="rank")
        try:
            score = float(score_text)
        except ValueError:
            score = math.nan
        if not math.isfinite(score):
            raise FileFormatError(
                f"line {line_no}: score must be a finite number, got {score_text!r}",
                code="invalid_row", line=line_no, column="score",
            )
        if topics is not None and topic not in topics:
            raise FileFormatError(f"line {line_no}: unknown topic {topic!r}",
                                  code="unknown_topic", line=line_no, column="topic")
        per_topic = runs.get(tag)
        if per_topic is None:
            per_topic = runs[tag] = {}
        entry = per_topic.get(topic)
        if entry is None:
            entry = per_topic[topic] = ({}, [], [])
        positions, scores, ranks = entry
        if doc in positions:
            first = _first_line(text, topic, doc, tag)
            raise FileFormatError(
                f"line {line_no}: run {tag!r} lists doc {doc!r} for topic {topic!r} twice "
                f"(first on line {first})", code="duplicate_row", line=line_no,
            )
        positions[doc] = len(scores)
        scores.append(score)
        ranks.append(rank)
    if not runs:
        raise FileFormatError("the run file is empty", code="empty_file")
    _check_ids(text, runs)
    return {tag: _run(tag, per_topic) for tag, per_topic in runs.items()}


def parse_run(
    raw: bytes | str, *, topics: Collection[str] | None = None, name: str | None = None
) -> TrecRun:
    """The one run of a file (a file with several tags is refused); ``name`` replaces the tag."""
    runs = parse_runs(raw, topics=topics)
    if len(runs) > 1:
        raise FileFormatError(
            f"the file holds {len(runs)} runs (tags {', '.join(sorted(runs))}); expected one",
            code="invalid_row",
        )
    run = next(iter(runs.values()))
    if name is None:
        return run
    return TrecRun(name, run.rankings, run.scores, run.file_ranks)


def merge_runs(parsed: Iterable[Mapping[str, TrecRun]]) -> dict[str, TrecRun]:
    """Runs from several files in one dict; a run name (tag) seen twice is refused."""
    out: dict[str, TrecRun] = {}
    for runs in parsed:
        for name, run in runs.items():
            if name in out:
                raise FileFormatError(f"run {name!r} is given twice", code="duplicate_run")
            out[name] = run
    return out


def _run(tag: str, per_topic: dict[str, _Entry]) -> TrecRun:
    rankings, scores, ranks = {}, {}, {}
    for topic, (positions, score_list, rank_list) in per_topic.items():
        docs = list(positions)  # in line order, aligned with the scores
        score = np.array(score_list, dtype=np.float64)
        # trec_eval: score descending, then doc id descending (lexsort: last key is primary).
        order = np.lexsort((np.array(docs), score))[::-1]
        rankings[topic] = [docs[i] for i in order]
        scores[topic] = score[order]
        ranks[topic] = np.array(rank_list, dtype=np.int64)[order]
    return TrecRun(tag, rankings, scores, ranks)


def _check_ids(text: str, runs: dict[str, dict[str, _Entry]]) -> None:
    """Refuse a topic or document id that breaks ``app.formats.ids``, naming the line where it
    first appears: checked once per distinct id over whole columns (C speed); the line is looked
    up only then."""
    if (text.isascii() and _within_length(runs)
            and not any(RESERVED_TOPIC in per_topic for per_topic in runs.values())):
        # ASCII whitespace separates the fields and control characters were refused: in an
        # ASCII file only the length rule and the reserved topic can fail, and those are
        # checked without copying ids.
        return
    topics = list({topic: None for per_topic in runs.values() for topic in per_topic})
    docs = list({doc: None for per_topic in runs.values() for positions, _, _ in
                 per_topic.values() for doc in positions})
    problems = []
    for position, kind, values in ((0, "topic", topics), (2, "doc", docs)):
        try:
            clean_ids(values, kind=kind, strip=False)
        except BadId as bad:
            value = values[bad.index]
            line = next(line_no for line_no, line in enumerate(iter_lines(text), start=1)
                        if (parts := split_fields(line)) and len(parts) == 6
                        and parts[position] == value)
            problems.append((line, kind, bad.reason))
    if problems:  # the first in the file
        line, kind, reason = min(problems)
        raise FileFormatError(f"line {line}: {kind} id {reason}", code="invalid_row", line=line,
                              column=kind)


def _within_length(runs: dict[str, dict[str, _Entry]]) -> bool:
    longest_topic = max((len(topic) for per_topic in runs.values() for topic in per_topic),
                        default=0)
    longest_doc = max((max(map(len, positions), default=0) for per_topic in runs.values()
                       for positions, _, _ in per_topic.values()), default=0)
    return longest_topic <= MAX_ID_LENGTH["topic"] and longest_doc <= MAX_ID_LENGTH["doc"]


def _first_line(text: str, topic: str, doc: str, tag: str) -> int | None:
    """Line of the first ``topic .. doc .. .. tag`` line (only called to report a duplicate)."""
    for line_no, line in enumerate(iter_lines(text), start=1):
        parts = split_fields(line)
        if len(parts) == 6 and parts[0] == topic and parts[2] == doc and parts[5] == tag:
            return line_no
    return None
