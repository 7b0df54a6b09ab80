"""argparse types and options shared by the commands: seeds, bounded integers, shares, the
label scale, ``--params``."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from typing import Any

DEFAULT_IGNORE = (-2,)

MAX_SEED = 2**32 - 1  # app.core.integers.MAX_SEED (numpy's seeds), without importing pydantic


def seed_arg(text: str) -> int:
    """``--seed``: one rule for every command, a whole number from 0 to 2**32 - 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a whole number, got {text!r}") from None
    if not 0 <= value <= MAX_SEED:
        raise argparse.ArgumentTypeError(f"must be from 0 to 2**32 - 1, got {value}")
    return value


def int_at_least(low: int) -> Callable[[str], int]:
    """An argparse type: a whole number >= ``low``."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be a whole number, got {text!r}") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"must be at least {low}, got {value}")
        return value
    return parse


def share_arg(*, zero: bool) -> Callable[[str], float]:
    """An argparse type: a share of the judgments, in (0, 1] (``zero``: [0, 1])."""
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be a number, got {text!r}") from None
        if not (0.0 <= value <= 1.0 if zero else 0.0 < value <= 1.0):
            bounds = "from 0 to 1" if zero else "above 0 and at most 1"
            raise argparse.ArgumentTypeError(f"must be {bounds}, got {text}")
        return value
    return parse


def add_scale_options(parser: argparse.ArgumentParser, *, ignore_help: str = "") -> None:
    """--labels (the scale) and --ignore, as the API's collection ``labels`` and ``ignore``."""
    parser.add_argument("--labels", type=int, nargs="+", metavar="V",
                        help="the label scale, e.g. --labels 0 1 2 (the API's collection "
                             "labels): a label or gold value off it (and not --ignore) is refused "
                             "with its line; default: any, with a warning for values that look "
                             "out of place")
    parser.add_argument("--ignore", type=int, nargs="*", default=list(DEFAULT_IGNORE),
                        metavar="V",
                        help="label values meaning 'could not judge' (default -2)" + ignore_help)

def judge_spec(text: str) -> tuple[str, str]:
    """``--judge NAME=QRELS``: the judge's name (an annotator id) and its qrels file's path."""
    from app.formats.ids import BadId, clean_ids

    name, sep, path = text.partition("=")
    if not sep or not name.strip() or not path:
        raise argparse.ArgumentTypeError(f"expected NAME=QRELS, got {text!r}")
    try:
        return clean_ids([name], kind="annotator")[0], path
    except BadId as bad:
        raise argparse.ArgumentTypeError(f"judge name {name!r} {bad.reason}") from None


def add_judge_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--judge", type=judge_spec, action="append", default=[],
                        metavar="NAME=QRELS",
                        help="a judge's TREC qrels (topic 0 doc grade), e.g. an LLM judge's: "
                             "each line a judgment by annotator NAME (repeatable; NAME must not "
                             "be an annotator of INPUT)")


def parse_params(text: str | None) -> dict[str, Any]:
    """A command's ``--params``: a JSON object (none: {}); ValueError saying what is wrong."""
    try:
        params = json.loads(text) if text else {}
    except json.JSONDecodeError as exc:
        raise ValueError(f"--params is not valid JSON: {exc}") from exc
    if not isinstance(params, dict):
        raise ValueError("--params must be a JSON object")
    return params
