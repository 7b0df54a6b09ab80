"""Retrieval measures: their names, parameters and conventions.

Names follow ir_measures: ``P@10``, ``R@100``, ``nDCG@10``, ``nDCG``, ``AP``, ``Rprec``, ``Bpref``,
``RR`` (``models.evaluation.standard``); the recall-oriented measures of
``models.evaluation.recall`` are ``PRES@1000``, ``nP@95`` (with ``snP@95`` and ``TNR@95``) and
``LastRel``; the unjudged-document measures of ``models.evaluation.unjudged`` are ``unjudged@10``
and ``SimP@10``.

Conventions are trec_eval's (and so ir_measures' / pytrec_eval's): a ranking is ordered by score
descending, ties by document id descending (``app.formats.runs``); unjudged documents count as
non-relevant, except for bpref, which skips them; a label's value is its nDCG gain (clipped at
0); a topic without relevant documents scores 0. ``models.evaluation.scoring`` computes every
measure for all the draws of the qrels at once (compiled loops over a draws x judged-tasks label
matrix); this module is only names, so the API can validate a request without compiling anything.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

# Family -> (code used by the compiled kernel, pattern for messages, parameter kind,
# parameter optional, higher is better, depends on the labels).
_FAMILIES: dict[str, tuple[int, str, str | None, bool, bool, bool]] = {
    "P": (0, "P@k", "cutoff", False, True, True),
    "R": (1, "R@k", "cutoff", False, True, True),
    "nDCG": (2, "nDCG, nDCG@k", "cutoff", True, True, True),
    "AP": (3, "AP", None, False, True, True),
    "Rprec": (4, "Rprec", None, False, True, True),
    "Bpref": (5, "Bpref", None, False, True, True),
    "RR": (6, "RR", None, False, True, True),
    "PRES": (7, "PRES@N", "cutoff", False, True, True),
    "nP": (8, "nP@r (r % recall)", "percent", False, True, True),
    "snP": (9, "snP@r", "percent", False, True, True),
    "TNR": (10, "TNR@r", "percent", False, True, True),
    "LastRel": (11, "LastRel", None, False, False, True),
    "unjudged": (12, "unjudged@k", "cutoff", False, False, False),
    "SimP": (13, "SimP@k", "cutoff", False, True, True),
}
# Units of the families that have one (the others are shares or scores in [0, 1]): LastRel is
# a percentage of the topic's judged documents.
_UNITS = {"LastRel": "%"}
# One name pattern per entry (a family's message may list two and add a note in brackets).
VALID_MEASURES = tuple(name.split(" (")[0] for f in _FAMILIES.values()
                       for name in f[1].split(", "))
DEFAULT_MEASURES = ("P@10", "AP", "nDCG@10", "R@100", "Rprec", "Bpref", "RR", "PRES@1000",
                    "nP@95", "LastRel", "unjudged@10")

_NAME = re.compile(r"^([A-Za-z]+)(?:@(\d+)%?)?$")
# The largest cut-off, N or recall % a name may give: the compiled kernel reads parameters as
# 64-bit integers, so a larger one failed the job (OverflowError) or, beyond Python's 4,300
# digits, the request; no ranking is longer than this.
MAX_PARAM = 2**31 - 1


# How much of an unknown name an error repeats: enough to recognise it, not a 5,000-digit cut-off.
SHOWN_NAME = 60


class UnknownMeasure(ValueError):
    def __init__(self, name: str) -> None:
        shown = (name if len(name) <= SHOWN_NAME
                 else f"{name[:SHOWN_NAME]}… ({len(name):,} characters)")
        super().__init__(f"unknown measure {shown!r}; valid: {', '.join(VALID_MEASURES)}")
        self.name = name
        self.valid = list(VALID_MEASURES)


@dataclass(frozen=True)
class Measure:
    """A parsed measure name: ``family`` and its parameter (a cut-off, N_max or a recall %;
    0 for none)."""

    name: str
    family: str
    param: int
    higher_is_better: bool
    needs_qrels: bool  # False: the same on every draw (it only looks at which docs are judged)

    @property
    def code(self) -> int:
        return _FAMILIES[self.family][0]

    @property
    def unit(self) -> str | None:
        """What the value counts in when it is not a share or a score in [0, 1]."""
        return _UNITS.get(self.family)


def parse_measure(name: str) -> Measure:
    """``"P@10"`` -> Measure; UnknownMeasure (with the valid names) otherwise."""
    match = _NAME.match(name.strip())
    if match is None:
        raise UnknownMeasure(name)
    family_name, param_text = match.group(1), match.group(2)
    family = _FAMILIES.get(family_name)
    if family is None:
        raise UnknownMeasure(name)
    _, _, kind, optional, higher, needs_qrels = family
    if kind is None and param_text is not None:
        raise UnknownMeasure(name)
    if kind is not None and param_text is None and not optional:
        raise UnknownMeasure(name)
    if param_text is not None:
        param_text = param_text.lstrip("0") or "0"  # P@010 is P@10
        if len(param_text) > len(str(MAX_PARAM)):
            raise UnknownMeasure(name)  # before int(): a 5,000-digit number does not parse
    param = int(param_text) if param_text is not None else 0
    if param_text is not None and (param < 1 or param > MAX_PARAM
                                   or (kind == "percent" and param > 100)):
        raise UnknownMeasure(name)
    canonical = family_name if param_text is None else f"{family_name}@{param}"
    return Measure(canonical, family_name, param, higher, needs_qrels)


def parse_measures(names: Iterable[str]) -> list[Measure]:
    """Parsed, in the given order, without repeats."""
    out: dict[str, Measure] = {}
    for name in names:
        measure = parse_measure(name)
        out.setdefault(measure.name, measure)
    return list(out.values())
