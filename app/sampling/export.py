"""A sampling's rounds as a file for a crowd platform (GET /samplings/{s}/rounds?format=tsv)."""

from __future__ import annotations

import csv
import io
from typing import Any

ROUND_TSV_COLUMNS = ("round", "topic", "doc", "inclusion", "selection", "source_run", "judged")


def rounds_tsv(rounds: list[dict[str, Any]]) -> str:
    """The rounds' pairs, one per line, for a crowd platform: the round, the pair, its
    inclusion probability and selection probability, the run it was drawn from and whether it
    is judged yet (1/0)."""
    out = io.StringIO()
    writer = csv.writer(out, delimiter="\t", lineterminator="\n")
    writer.writerow(ROUND_TSV_COLUMNS)
    for r in rounds:
        for p in r["pairs"]:
            writer.writerow((r["number"], p["topic"], p["doc"], f"{p['inclusion']:.6g}",
                             f"{p['selection']:.6g}", p["source_run"] or "",
                             int(p["judged"])))
    return out.getvalue()
