"""Thin view helpers: Plotly figure specs (plain dicts, rendered in the browser by plotly.js).

No plotly Python import: the figures are JSON the page hands to ``Plotly.newPlot``. Histograms
are binned here (numpy), so a page over 20,000 tasks ships a few dozen bars, not 20,000 values.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

LAYOUT: dict[str, Any] = {"margin": {"l": 55, "r": 15, "t": 35, "b": 45}, "height": 300,
                           "font": {"family": "system-ui, sans-serif", "size": 12},
                           "bargap": 0.05}
# Plotly never wraps a title: one wider than the chart is cut at both ends. A phone's chart is
# about 340 px wide, some 45 characters of the 14 px title; lines are kept a little shorter.
TITLE_CHARS = 40
# A legend under the plot: at the foot of the figure, where Plotly gives it a margin of its own
# (at a share of the plot's height below it, a tall axis, e.g. rotated topic ids, ran into it).
LEGEND_BELOW: dict[str, Any] = {"orientation": "h", "yref": "container", "y": 0,
                                "yanchor": "bottom"}
TITLE_LINE_PX = 21


def wrap_title(title: str, width: int = TITLE_CHARS) -> list[str]:
    """``title`` in lines of at most ``width`` characters, broken between words (a longer word
    keeps a line of its own)."""
    lines: list[str] = []
    for word in title.split():
        if lines and len(lines[-1]) + 1 + len(word) <= width:
            lines[-1] += " " + word
        else:
            lines.append(word)
    return lines or [""]


def _layout(title: str, x: str, y: str, **extra: Any) -> dict[str, Any]:
    """Every axis grows its margin to fit its tick labels (long run names, topic ids, a right
    axis): Plotly's fixed margins otherwise cut them off. A long title wraps, and the top margin
    grows by a line for each line it adds."""
    lines = wrap_title(title)
    margin = {**LAYOUT["margin"], "t": LAYOUT["margin"]["t"] + TITLE_LINE_PX * (len(lines) - 1)}
    layout = {**LAYOUT, "margin": margin,
              "title": {"text": "<br>".join(lines), "font": {"size": 14}},
              "xaxis": {"title": {"text": x}}, "yaxis": {"title": {"text": y}}, **extra}
    # The first line 17 px below the top (Plotly's own place for one line); Plotly's default
    # spot for a title of several lines runs its last line into the plot.
    layout["title"].update(yref="container", y=round(1 - 17 / layout["height"], 4),
                           yanchor="middle")
    for name, axis in layout.items():
        if name.startswith(("xaxis", "yaxis")):
            layout[name] = {"automargin": True, **axis}
    return layout


def count_axis(title: str, largest: float) -> dict[str, Any]:
    """A y axis of counts: whole-number ticks (Plotly draws 0.5 steps for counts up to 4)."""
    axis: dict[str, Any] = {"title": {"text": title}, "rangemode": "tozero", "tickformat": ",d"}
    if largest <= 10:
        axis["dtick"] = 1
    return axis


def _finite(values: list[float | None]) -> np.ndarray:
    array = np.asarray([v for v in values if v is not None], dtype=float)
    return array[np.isfinite(array)]


def histogram(values: list[float | None], *, title: str, x: str, bins: int = 30,
              color: str = "#3b6ea8") -> dict[str, Any] | None:
    array = _finite(values)
    if array.size == 0:
        return None
    low, high = float(array.min()), float(array.max())
    if low == high:
        low, high = low - 0.5, high + 0.5
    counts, edges = np.histogram(array, bins=bins, range=(low, high))
    centres = (edges[:-1] + edges[1:]) / 2
    return {"data": [{"type": "bar", "x": [round(float(c), 6) for c in centres],
                      "y": [int(c) for c in counts], "width": float(edges[1] - edges[0]),
                      "marker": {"color": color}, "name": x}],
            "layout": _layout(title, x, "count", yaxis=count_axis("count", int(counts.max())))}


INTEGER_BARS = 40  # up to this many judgments: one bar per count; above: doubling bins


def integer_histogram(histogram_: dict[int, int], *, title: str, x: str,
                      color: str = "#3b6ea8") -> dict[str, Any] | None:
    """Counts per whole number. A heavy tail (an annotator with 6,000 judgments beside hundreds
    with a few) gets bins that double, 1, 2–3, 4–7, 8–15, …: on a linear axis the tail squeezes
    every bar that matters into the first pixels."""
    if not histogram_:
        return None
    keys = sorted(histogram_)
    if keys[-1] <= INTEGER_BARS or keys[0] < 0:
        return {"data": [{"type": "bar", "x": keys, "y": [histogram_[k] for k in keys],
                          "marker": {"color": color}}],
                "layout": _layout(title, x, "count",
                                  xaxis={"title": {"text": x}, "tickformat": ",d",
                                         **({"dtick": 1} if keys[-1] - keys[0] <= 10 else {})},
                                  yaxis=count_axis("count", max(histogram_.values())))}
    first = 1 if keys[0] >= 1 else 0  # 0 keeps a bin of its own
    edges = ([0] if first == 0 else []) + [2 ** b for b in range(keys[-1].bit_length() + 1)]
    labels, counts = [], []
    for low, high in zip(edges, edges[1:], strict=False):
        labels.append(str(low) if high - low == 1 else f"{low}–{high - 1}")
        counts.append(sum(n for k, n in histogram_.items() if low <= k < high))
    while counts and counts[-1] == 0:  # no empty bins past the largest
        labels.pop(), counts.pop()
    return {"data": [{"type": "bar", "x": labels, "y": counts, "marker": {"color": color}}],
            "layout": _layout(title, f"{x} (bins double)", "count",
                              xaxis={"title": {"text": f"{x} (bins double)"},
                                     "type": "category", "tickangle": -35},
                              yaxis=count_axis("count", max(counts)))}


VALUE_LABELS = 12  # up to this many bars, each prints its value


def bars(labels: list[Any], values: list[float | int], *, title: str, x: str, y: str,
         color: str = "#3b6ea8") -> dict[str, Any] | None:
    """Bars per category; None (the page says there is nothing to draw) when every value is 0.
    Whole-number values get a count axis. A few bars print their values, so a bar too short to
    see beside a tall one (a round of 200 pairs beside round 0's 6,528) still says what it is."""
    if not labels or not any(values):
        return None
    counts = all(isinstance(v, int) for v in values)
    trace: dict[str, Any] = {"type": "bar", "x": [str(v) for v in labels], "y": values,
                             "marker": {"color": color}}
    if len(values) <= VALUE_LABELS:
        trace.update(text=[f"{v:,}" if counts else f"{v:.3f}" for v in values],
                     textposition="outside", cliponaxis=False, textangle=0,
                     hoverinfo="x+y")
    top = max(values) * 1.15  # room above the tallest bar for its value
    yaxis = count_axis(y, max(values)) if counts else {"title": {"text": y}}
    return {"data": [trace],
            "layout": _layout(title, x, y, xaxis={"title": {"text": x}, "type": "category"},
                              yaxis={**yaxis, "range": [0, top]})}


def _r(value: float | None, digits: int = 4) -> float | None:
    if value is None or not math.isfinite(value):
        return None
    return round(float(value), digits)


def competence_scatter(rows: list[dict[str, Any]]) -> dict[str, Any] | None:
    """Competence against the number of judgments (log x), coloured by gold accuracy."""
    points = [r for r in rows if r["competence"] is not None and r["n_judgments"] > 0]
    if not points:
        return None
    has_gold = any(r["gold_accuracy"] is not None for r in points)
    marker: dict[str, Any] = {"size": 6, "opacity": 0.75, "color": "#3b6ea8"}
    if has_gold:
        # No gold judgments: just below the scale (the darkest colour).
        gold = np.array([-0.05 if r["gold_accuracy"] is None else r["gold_accuracy"]
                         for r in points], dtype=float)
        marker = {"size": 6, "opacity": 0.8, "color": np.round(gold, 4).tolist(),
                  "colorscale": "Viridis", "cmin": 0, "cmax": 1, "showscale": True,
                  "colorbar": {"title": {"text": "gold acc."}}}
    competence = np.round(np.array([r["competence"] for r in points], dtype=float), 4)
    return {"data": [{"type": "scatter", "mode": "markers",
                      "x": [r["n_judgments"] for r in points], "y": competence.tolist(),
                      "text": [r["annotator"] for r in points],
                      "hovertemplate": "%{text}<br>%{x} judgments<br>competence %{y}"
                                       "<extra></extra>",
                      "marker": marker}],
            "layout": _layout("Competence vs judgments" + (" (colour: gold accuracy)"
                                                           if has_gold else ""),
                              "judgments (log scale)", "competence",
                              xaxis={"title": {"text": "judgments (log scale)"}, "type": "log"})}


def per_topic(rows: list[dict[str, Any]]) -> dict[str, Any] | None:
    if not rows:
        return None
    topics = [r["topic"] for r in rows]
    return {"data": [
        {"type": "bar", "x": topics, "y": [_r(r["share_relevant"]) for r in rows],
         "name": "share relevant", "marker": {"color": "#3b6ea8"}},
        {"type": "scatter", "mode": "lines+markers", "x": topics,
         "y": [_r(r["mean_uncertainty"]) for r in rows], "name": "mean uncertainty",
         "yaxis": "y2", "marker": {"color": "#d9822b"}},
    ], "layout": _layout("Per topic", "topic", "share relevant",
                         xaxis={"title": {"text": "topic"}, "type": "category"},
                         yaxis={"title": {"text": "share relevant"}, "range": [0, 1]},
                         yaxis2={"title": {"text": "mean uncertainty (nats)"},
                                 "overlaying": "y", "side": "right"},
                         legend=LEGEND_BELOW)}


def heatmap(labels_x: list[Any], labels_y: list[Any], z: list[list[float | int | None]], *,
            title: str, x: str, y: str, zmax: float | None = None) -> dict[str, Any] | None:
    """Cells coloured on a 0..``zmax`` scale, or without ``zmax`` over the values' own range
    (agreements of 0.63 to 1.00 on a 0–1 scale all looked alike); each prints its value."""
    if not labels_x or not labels_y:
        return None
    text = [["" if v is None else (f"{v:.3f}" if isinstance(v, float) else str(v)) for v in row]
            for row in z]
    trace: dict[str, Any] = {"type": "heatmap", "x": [str(v) for v in labels_x],
                             "y": [str(v) for v in labels_y], "z": z, "text": text,
                             "texttemplate": "%{text}", "colorscale": "Blues",
                             "reversescale": True,  # Plotly's Blues runs dark to light
                             "hovertemplate": f"{y} %{{y}}, {x} %{{x}}: %{{text}}<extra></extra>"}
    if zmax is not None:
        trace.update(zmin=0, zmax=zmax)
    else:
        trace.update(_printed_range(z))
    # rows of at least ~24 px: ten fits in 300 px left cells too small for their values
    height = max(LAYOUT["height"], 150 + 26 * len(labels_y))
    return {"data": [trace],
            "layout": _layout(title, x, y, height=height,
                              xaxis={"title": {"text": x}, "type": "category"},
                              yaxis={"title": {"text": y}, "type": "category",
                                     "autorange": "reversed"})}


def _printed_range(z: list[list[float | int | None]]) -> dict[str, float]:
    """The colour scale over the values as printed (3 decimals), where that differs from their
    own range: agreements of .9996 and 1 both read 1.000, and a scale from .9996 to 1 made one
    pale and the other dark. Values that all print alike get one colour (the scale's top)."""
    values = [v for row in z for v in row if v is not None]
    if not values or not any(isinstance(v, float) for v in values):
        return {}
    low, high = round(min(values), 3), round(max(values), 3)
    if low == high:
        return {"zmin": low - 1, "zmax": high}
    if (low, high) != (min(values), max(values)):
        return {"zmin": low, "zmax": high}
    return {}


def metrics_bars(rows: list[dict[str, Any]]) -> dict[str, Any] | None:
    if not rows:
        return None
    names = [f"#{r['aggregation_id']} {r['method']}" for r in rows]

    def binary_accuracy(r: dict[str, Any]) -> Any:  # a graded fit's binary view
        return r.get("binary_accuracy") if r.get("kappa") is not None else r.get("accuracy")

    colours = {"binary accuracy": "#3b6ea8", "precision": "#5aa469", "recall": "#d9822b",
               "F1": "#8e5ea2", "κ (graded)": "#c23b3b"}
    values = {"binary accuracy": binary_accuracy, "precision": lambda r: r.get("precision"),
              "recall": lambda r: r.get("recall"), "F1": lambda r: r.get("f1"),
              "κ (graded)": lambda r: r.get("kappa")}
    data = [{"type": "bar", "name": metric, "x": names,
             "y": [_r(values[metric](r)) for r in rows], "marker": {"color": colour}}
            for metric, colour in colours.items()
            if metric != "κ (graded)" or any(r.get("kappa") is not None for r in rows)]
    return {"data": data, "layout": _layout("Evaluation against gold", "fit", "score",
                                            barmode="group",
                                            yaxis={"title": {"text": "score"}, "range": [0, 1]},
                                            xaxis={"title": {"text": "fit"}, "type": "category"})}


HISTORY_ROW_PX = 110  # the height of each measure's panel on the annotator's chart


def history_lines(rows: list[dict[str, Any]]) -> dict[str, Any] | None:
    """An annotator's measures across fits: one panel per measure, stacked over the fits (a
    shared x axis), each with its own y axis: competence (0–1) and a bias (any real number) on
    one axis hid each other. Points only: the fits are different methods, not a series."""
    if not rows:
        return None
    names = [f"#{r['aggregation_id']} {r['method']}{' graded' if r.get('graded') else ''}"
             for r in rows]
    # gold accuracy on relevance for every fit (comparable), on the exact grade for graded ones
    series = {"competence": lambda r: r.get("competence"),
              "gold accuracy (relevance)": lambda r: r.get("gold_relevance_accuracy"),
              "gold accuracy (grade)": lambda r: r.get("gold_accuracy") if r.get("graded")
              else None,
              "bias": lambda r: r.get("bias"), "noise variance": lambda r: r.get("noise_variance"),
              "spread": lambda r: r.get("spread")}
    colours = ["#3b6ea8", "#5aa469", "#2f7d3b", "#c23b3b", "#d9822b", "#8e5ea2"]
    shown = [(name, value, colour) for (name, value), colour
             in zip(series.items(), colours, strict=True)
             if any(value(r) is not None for r in rows)]
    if not shown:
        return None
    n = len(shown)
    gap = 0.35 / n  # between panels, in the plot area's height
    height = n * HISTORY_ROW_PX + 110
    data: list[dict[str, Any]] = []
    axes: dict[str, Any] = {}
    annotations = []
    for k, (name, value, colour) in enumerate(shown):
        top = 1 - k / n
        bottom = top - 1 / n + gap
        axis = "y" if k == 0 else f"y{k + 1}"
        data.append({"type": "scatter", "mode": "markers", "name": name, "x": names,
                     "y": [_r(value(r)) for r in rows], "xaxis": "x", "yaxis": axis,
                     "marker": {"color": colour, "size": 9},
                     "hovertemplate": f"%{{x}}<br>{name} %{{y}}<extra></extra>"})
        scale = {"range": [-0.05, 1.05]} if name in ("competence", "gold accuracy (relevance)",
                                                        "gold accuracy (grade)") else {}
        axes["yaxis" if k == 0 else f"yaxis{k + 1}"] = {
            "domain": [bottom, top], "anchor": "x", "nticks": 4, "zeroline": True, **scale}
        annotations.append({"text": f"<b>{name}</b>", "xref": "paper", "yref": "paper",
                            "x": 0, "y": top, "xanchor": "left", "yanchor": "bottom",
                            "showarrow": False, "font": {"size": 12}})
    return {"data": data,
            "layout": _layout("Across fits", "fit", "", height=height, showlegend=False,
                              margin={**LAYOUT["margin"], "t": 55},
                              annotations=annotations,
                              xaxis={"title": {"text": "fit"}, "type": "category",
                                     "anchor": "y" if n == 1 else f"y{n}"}, **axes)}


def intervals(rows: list[dict[str, Any]], *, title: str, x: str, y: str) -> dict[str, Any] | None:
    """One point per row (``label``) at ``value`` (the score on the most probable qrels, or the
    estimate) and, where the row has them, the estimate (``estimate``: the posterior mean or
    the prediction-powered one; else ``mean``) with its 95 % interval (``low``..``high``) as an
    error bar."""
    rows = [r for r in rows if _r(r.get("value")) is not None]
    if not rows:
        return None
    labels = [str(r["label"]) for r in rows]
    data: list[dict[str, Any]] = []
    spread = [r for r in rows if _r(r.get("low")) is not None and _r(r.get("high")) is not None]
    if spread:
        centre = [float(next(r[k] for k in ("estimate", "mean", "value")
                             if _r(r.get(k)) is not None)) for r in spread]
        high = [float(r["high"]) - c for r, c in zip(spread, centre, strict=True)]
        low = [c - float(r["low"]) for r, c in zip(spread, centre, strict=True)]
        kind = "prediction-powered" if spread[0].get("interval_kind") == "ppi" else "posterior"
        data.append({"type": "scatter", "mode": "markers",
                     "name": f"estimate, 95 % interval ({kind})",
                     "x": [str(r["label"]) for r in spread], "y": [_r(c) for c in centre],
                     "error_y": {"type": "data", "symmetric": False,
                                 "array": [_r(v) for v in high],
                                 "arrayminus": [_r(v) for v in low], "color": "#3b6ea8"},
                     "marker": {"color": "#3b6ea8", "size": 7}})
    data.append({"type": "scatter", "mode": "markers", "name": "point estimate",
                 "x": labels, "y": [_r(r["value"]) for r in rows],
                 "marker": {"color": "#d9822b", "symbol": "diamond", "size": 8}})
    return {"data": data,
            "layout": _layout(title, x, y, xaxis={"title": {"text": x}, "type": "category"},
                              legend=LEGEND_BELOW)}


def judge_leaderboard(rows: list[dict[str, Any]]) -> dict[str, Any] | None:
    """Quadratic κ of each judge (or annotator) against the gold and the aggregate, in the
    leaderboard's order (``app.judges.agreement``)."""
    names = [r["name"] for r in rows]
    data = []
    for side, label, colour in (("vs_gold", "against gold", "#3b6ea8"),
                                ("vs_aggregate", "against the aggregate", "#d9822b")):
        values = [_r((r[side] or {}).get("quadratic_kappa")) for r in rows]
        if any(v is not None for v in values):
            data.append({"type": "bar", "name": label, "x": names, "y": values,
                         "marker": {"color": colour}})
    if not data:
        return None
    return {"data": data, "layout": _layout(
        "Quadratic κ per judge", "judge", "quadratic κ", barmode="group", legend=LEGEND_BELOW,
        xaxis={"title": {"text": "judge"}, "type": "category"})}


def reliability_diagram(bins: dict[str, Any] | None, *, graded: bool = False
                        ) -> dict[str, Any] | None:
    """A fit's reliability diagram (``models.evaluation.reliability``): per bin of the predicted
    probability, the share of gold tasks where the event holds against the bin's mean prediction,
    sized by the bin's tasks, beside the diagonal of perfect calibration."""
    if not bins or not any(bins.get("count") or []):
        return None
    used = [i for i, c in enumerate(bins["count"]) if c]
    event = "top grade right" if graded else "relevant"
    points = {"type": "scatter", "mode": "lines+markers", "name": "this fit",
              "x": [_r(bins["mean_p"][i]) for i in used], "y": [_r(bins["share"][i]) for i in used],
              "text": [str(bins["count"][i]) for i in used],
              "marker": {"size": [6 + 14 * (bins["count"][i] / max(bins["count"])) ** 0.5
                                  for i in used], "color": "#3b6ea8"},
              "hovertemplate": f"mean P %{{x}}, share {event} %{{y}}, %{{text}} tasks"
                               "<extra></extra>"}
    diagonal = {"type": "scatter", "mode": "lines", "name": "calibrated", "x": [0, 1],
                "y": [0, 1], "line": {"dash": "dot", "color": "#888"}, "hoverinfo": "skip"}
    x = "P(top grade)" if graded else "P(relevant)"
    return {"data": [diagonal, points],
            "layout": _layout("Reliability against gold", f"mean {x} in the bin",
                              f"share {event}", xaxis={"title": {"text": f"mean {x} in the bin"},
                                                       "range": [0, 1]},
                              yaxis={"title": {"text": f"share {event}"}, "range": [0, 1]})}
