"""``crowdqrels simulate``: replay a judgment file with known gold to compare re-judging
strategies; writes DIR/curve.tsv, DIR/summary.tsv and a plot (DIR/curve.png with matplotlib,
else DIR/curve.svg)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from models.sampling.simulate import CurvePoint

CURVE_COLUMNS = ["strategy", "seed", "round", "judgments", "share", "accuracy", "skipped",
                 "fit_seconds", "map_rmse"]


def _simulate(args: argparse.Namespace) -> int:
    """Options, input files and the output directory are checked first; DIR is created and
    written only once every curve has been computed."""
    from app.cli.aggregate import build_aggregator
    from app.cli.console import quiet_tensorflow
    from app.cli.errors import UsageError
    from app.cli.loading import load_judgment_file
    from app.cli.options import parse_params
    from app.cli.outputs import check_output_dir, write_outputs
    from models.registry import InvalidParams, validate_params

    if args.quiet:
        quiet_tensorflow(args.method)
    try:
        params = validate_params(args.method, parse_params(args.params))
        if params.get("use_gold"):
            raise ValueError("the simulator scores every fit against the gold, so a fit may not "
                             "clamp it (use_gold, calibrate_folds): it would be scored in-sample")
    except (ValueError, InvalidParams) as exc:
        raise UsageError(str(exc)) from None
    check_output_dir(args.output, "--output")

    from models.sampling.simulate import simulate

    data, _ = load_judgment_file(args, quiet=args.quiet)
    if data.gold is None or not (data.gold >= 0).any():
        raise UsageError(f"{args.input}: no gold labels to score against (--gold or a gold "
                         "column)")
    runs = _read_runs(args.runs) if args.runs else None
    batch = args.batch or max(1, int(round(args.batch_share * data.n_judgments)))
    out = Path(args.output)

    def report(point: CurvePoint) -> None:
        if not args.quiet:
            print(f"{point.strategy}\tseed {point.seed}\t{point.share:.3f}\t"
                  f"accuracy {point.accuracy:.4f}\t{point.seconds:.2f}s", file=sys.stderr)

    try:
        points = simulate(data, make=lambda seed: build_aggregator(args.method, params, seed),
                          strategies=args.strategies, seeds=range(args.seeds), batch=batch,
                          start_share=args.start or 0.0, warm=not args.cold,
                          max_judgments=args.max_judgments, runs=runs, on_point=report)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    curve = _curve_lines(points)
    # The target: the accuracy of the model fitted cold on all judgments.
    full = build_aggregator(args.method, params, 0).fit(data)
    from models.sampling.simulate import accuracy_against_gold

    target = accuracy_against_gold(full.labels_, data.gold)  # type: ignore[arg-type]
    summary_lines = _summary_lines(points, target, data.gold, quiet=args.quiet)
    out.mkdir(parents=True, exist_ok=True)  # only now: every curve has been computed
    write_outputs([(str(out / "curve.tsv"), "".join(curve)),
                   (str(out / "summary.tsv"), "".join(summary_lines))])
    plot = write_plot(points, out, target)
    print(f"curve\t{out / 'curve.tsv'}")
    print(f"summary\t{out / 'summary.tsv'}")
    print(f"plot\t{plot}")
    return 0


def _read_runs(paths: list[str]) -> dict[str, Any]:
    """--runs: each file's rankings by run name (UsageError naming the file and line)."""
    from app.cli.errors import UsageError
    from app.cli.loading import file_error, read_input
    from app.formats.errors import FileFormatError
    from app.formats.runs import merge_runs, parse_runs

    def parsed(path: str):  # type: ignore[no-untyped-def]
        try:
            return parse_runs(read_input(path, "--runs"))
        except FileFormatError as exc:  # which run file, with its line
            raise UsageError(file_error(exc, path)) from None

    return {name: run.rankings for name, run in merge_runs(parsed(p) for p in paths).items()}


def _curve_lines(points: list[CurvePoint]) -> list[str]:
    """curve.tsv: one line per point of every curve."""
    curve = ["\t".join(CURVE_COLUMNS) + "\n"]
    for p in points:
        curve.append(f"{p.strategy}\t{p.seed}\t{p.round}\t{p.judgments}\t{p.share:.6f}\t"
                     f"{p.accuracy:.6f}\t{p.skipped}\t{p.seconds:.4f}\t"
                     f"{'' if p.map_rmse != p.map_rmse else f'{p.map_rmse:.6f}'}\n")
    return curve


def _summary_lines(points: list[CurvePoint], target: float, gold: Any, *,
                   quiet: bool) -> list[str]:
    """summary.tsv: per strategy, the shares at which the target accuracy is reached, exactly
    and within one standard error (printed too unless ``quiet``)."""
    import numpy as np

    # Also within one binomial standard error of the target (the noise of an accuracy measured
    # on this many gold tasks).
    n_gold = int((gold != -1).sum())  # type: ignore[union-attr]
    se = float(np.sqrt(target * (1 - target) / max(n_gold, 1)))
    exact, near = summary(points, target), summary(points, target - se)
    summary_lines = ["strategy\ttarget_accuracy\tmean_share_to_target\tshares_to_target\t"
                     "standard_error\tmean_share_within_1se\tshares_within_1se\n"]
    for strategy in exact:
        cells = []
        for shares in (exact[strategy], near[strategy]):
            known = [s for s in shares if s is not None]
            mean = f"{np.mean(known):.4f}" if len(known) == len(shares) else ""
            listed = ",".join("" if s is None else f"{s:.4f}" for s in shares)
            cells.append(f"{mean}\t{listed}")
        summary_lines.append(f"{strategy}\t{target:.6f}\t{cells[0]}\t{se:.6f}\t{cells[1]}\n")
        if not quiet:
            first, second = (c.split("\t")[0] or "-" for c in cells)
            print(f"{strategy}: target {target:.4f} reached at share {first}, within one "
                  f"standard error at {second}", file=sys.stderr)
    return summary_lines


def summary(points: list[CurvePoint], target: float) -> dict[str, list[float | None]]:
    """Per strategy, per seed: the first share of judgments whose accuracy reaches ``target``."""
    out: dict[str, dict[int, float | None]] = {}
    for p in points:
        seeds = out.setdefault(p.strategy, {})
        if seeds.get(p.seed) is None:
            seeds[p.seed] = p.share if p.accuracy >= target - 1e-12 else None
    return {s: [seeds[k] for k in sorted(seeds)] for s, seeds in out.items()}


def _curves(points: list[CurvePoint]) -> dict[str, tuple[list[float], list[list[float]]]]:
    """Per strategy: the shares (from the first seed) and the accuracies per seed."""
    by: dict[str, dict[int, list[CurvePoint]]] = {}
    for p in points:
        by.setdefault(p.strategy, {}).setdefault(p.seed, []).append(p)
    out = {}
    for strategy, seeds in by.items():
        n = min(len(v) for v in seeds.values())
        first = next(iter(seeds.values()))
        out[strategy] = ([p.share for p in first[:n]],
                         [[p.accuracy for p in v[:n]] for v in seeds.values()])
    return out


def write_plot(points: list[CurvePoint], out: Path, target: float) -> Path:
    """Accuracy against the share of judgments: the mean over seeds per strategy, with a band
    from the lowest to the highest seed."""
    import numpy as np

    curves = _curves(points)
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return _write_svg(curves, out / "curve.svg", target)
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for strategy, (shares, acc) in curves.items():
        values = np.array(acc)
        line, = ax.plot(shares, values.mean(axis=0), label=strategy)
        ax.fill_between(shares, values.min(axis=0), values.max(axis=0), alpha=0.2,
                        color=line.get_color())
    ax.axhline(target, color="grey", linestyle="--", linewidth=1, label="all judgments (cold)")
    ax.set_xlabel("share of judgments revealed")
    ax.set_ylabel("accuracy against gold")
    ax.legend()
    fig.tight_layout()
    path = out / "curve.png"
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


SVG_W, SVG_H = 760, 420
SVG_MARGIN = {"l": 64, "r": 170, "t": 20, "b": 56}  # the legend sits in the right margin


def _nice_ticks(lo: float, hi: float, count: int = 5) -> list[float]:
    """About ``count`` round values (steps of 1, 2 or 5 times a power of ten) across [lo, hi]."""
    import math

    raw = (hi - lo) / max(count, 1) or 1.0
    power = 10 ** math.floor(math.log10(raw))
    step = min((k * power for k in (1, 2, 5, 10)), key=lambda c: abs(math.log(c / raw)))
    first = math.ceil(lo / step - 1e-9) * step
    return [round(first + i * step, 10) for i in range(int((hi - first) / step + 1e-9) + 1)]


def _svg_axes(lo: float, hi: float, xy: Any) -> list[str]:
    """The frame, ticks with their labels, and the axis titles (the fallback plot had none)."""
    import numpy as np

    m, w, h = SVG_MARGIN, SVG_W, SVG_H
    left, right, bottom = m["l"], w - m["r"], h - m["b"]
    parts = [f'<line x1="{left}" y1="{bottom}" x2="{right}" y2="{bottom}" stroke="#333"/>',
             f'<line x1="{left}" y1="{m["t"]}" x2="{left}" y2="{bottom}" stroke="#333"/>']
    for share in _nice_ticks(0.0, 1.0):
        x = xy(share, lo)[0]
        parts.append(f'<line x1="{x:.1f}" y1="{bottom}" x2="{x:.1f}" y2="{bottom + 5}" '
                     'stroke="#333"/>')
        parts.append(f'<text x="{x:.1f}" y="{bottom + 18}" text-anchor="middle">{share:g}</text>')
    digits = max(0, -int(np.floor(np.log10((hi - lo) / 5 or 1.0))))
    for acc in _nice_ticks(lo, hi):
        y = xy(0.0, acc)[1]
        parts.append(f'<line x1="{left - 5}" y1="{y:.1f}" x2="{right}" y2="{y:.1f}" '
                     'stroke="#ddd"/>')
        parts.append(f'<text x="{left - 8}" y="{y + 4:.1f}" text-anchor="end">'
                     f'{acc:.{digits}f}</text>')
    parts.append(f'<text x="{(left + right) / 2:.0f}" y="{h - 12}" text-anchor="middle">'
                 'share of judgments revealed</text>')
    parts.append(f'<text transform="translate(16,{(m["t"] + bottom) / 2:.0f}) rotate(-90)" '
                 'text-anchor="middle">accuracy against gold</text>')
    return parts


def _write_svg(curves: dict[str, tuple[list[float], list[list[float]]]], path: Path,
               target: float) -> Path:
    """The plot without matplotlib: axes with ticks, each strategy's mean line and its band
    over the seeds, the cold fit's accuracy dashed, and a legend beside the plot."""
    import numpy as np

    all_acc = np.concatenate([np.ravel(a) for _, a in curves.values()] + [np.array([target])])
    lo, hi = float(all_acc.min()), float(all_acc.max())
    pad = (hi - lo) * 0.05 or 0.01
    lo, hi = lo - pad, hi + pad
    m = SVG_MARGIN

    def xy(share: float, acc: float) -> tuple[float, float]:
        return (m["l"] + share * (SVG_W - m["l"] - m["r"]),
                SVG_H - m["b"] - (acc - lo) / (hi - lo) * (SVG_H - m["t"] - m["b"]))

    def points(pairs: Any) -> str:
        return " ".join("{:.1f},{:.1f}".format(*xy(s, a)) for s, a in pairs)

    colours = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd"]
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{SVG_W}" height="{SVG_H}" '
             'font-family="sans-serif" font-size="12">', *_svg_axes(lo, hi, xy)]
    legend_x = SVG_W - m["r"] + 16
    for i, (strategy, (shares, acc)) in enumerate(curves.items()):
        values, colour = np.array(acc), colours[i % len(colours)]
        band = points(zip(shares, values.max(axis=0), strict=True)) + " " + points(
            zip(shares[::-1], values.min(axis=0)[::-1], strict=True))
        parts.append(f'<polygon points="{band}" fill="{colour}" opacity="0.2"/>')
        parts.append(f'<polyline points="{points(zip(shares, values.mean(axis=0), strict=True))}"'
                     f' fill="none" stroke="{colour}" stroke-width="1.5"/>')
        y = m["t"] + 10 + 20 * i
        parts.append(f'<line x1="{legend_x}" y1="{y}" x2="{legend_x + 20}" y2="{y}" '
                     f'stroke="{colour}" stroke-width="2"/>')
        parts.append(f'<text x="{legend_x + 26}" y="{y + 4}">{strategy}</text>')
    (x0, ty), (x1, _) = xy(0.0, target), xy(1.0, target)
    parts.append(f'<line x1="{x0:.1f}" y1="{ty:.1f}" x2="{x1:.1f}" y2="{ty:.1f}" stroke="grey" '
                 'stroke-dasharray="5,4"/>')
    y = m["t"] + 10 + 20 * len(curves)
    parts.append(f'<line x1="{legend_x}" y1="{y}" x2="{legend_x + 20}" y2="{y}" stroke="grey" '
                 'stroke-dasharray="5,4"/>')
    parts.append(f'<text x="{legend_x + 26}" y="{y + 4}">all judgments (cold)</text></svg>')
    path.write_text("\n".join(parts))
    return path


def add_command(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    from app.cli.options import add_scale_options, int_at_least, share_arg

    simulate = subparsers.add_parser(
        "simulate", help="replay a judgment file with gold to compare re-judging strategies",
        description="Reveal one judgment per task (or --start of them), then in rounds reveal "
                    "the judgments each strategy asks for, refit (warm) and record the accuracy "
                    "against gold. Writes DIR/curve.tsv, DIR/summary.tsv and a plot.",
    )
    simulate.add_argument("input", help="judgment file with gold (TSV/CSV, as for aggregate)")
    from models.registry import METHOD_PATHS
    from models.sampling.rejudge import REJUDGE_STRATEGIES

    simulate.add_argument("--method", required=True, choices=sorted(METHOD_PATHS),
                          help="the refit model; ds and mace refit warm (from the previous "
                               "round's fit), the others from scratch")
    simulate.add_argument("--params", help="the model's parameters as a JSON object (as for "
                                           "aggregate)")
    simulate.add_argument("--strategies", nargs="+", choices=REJUDGE_STRATEGIES,
                          default=["uncertainty", "random"],
                          help="default: uncertainty random")
    simulate.add_argument("--seeds", type=int_at_least(1), default=3, metavar="K",
                          help="number of seeds, 0..K-1 (default 3)")
    simulate.add_argument("--output", required=True, metavar="DIR",
                          help="output directory (created once the curves are computed)")
    simulate.add_argument("--gold", help="expert qrels (TREC); default: the file's gold column")
    simulate.add_argument("--start", type=share_arg(zero=False), metavar="SHARE",
                          help="starting share of judgments, above 0 and at most 1 (default: "
                               "one judgment per task; a share below that starts there)")
    rounds = simulate.add_mutually_exclusive_group()
    rounds.add_argument("--batch", type=int_at_least(1), metavar="N",
                        help="judgments per round")
    rounds.add_argument("--batch-share", type=share_arg(zero=False), default=0.025,
                        metavar="SHARE",
                        help="judgments per round as a share of all, above 0 and at most 1 "
                             "(default 0.025)")
    simulate.add_argument("--runs", nargs="+", metavar="RUN",
                          help="TREC run files: each point also gets map_rmse, the RMSE of the "
                               "runs' MAP against their MAP with all judgments")
    simulate.add_argument("--relevant-from", type=int, default=1)
    simulate.add_argument("--cold", action="store_true", help="refit from scratch every round")
    simulate.add_argument("--max-judgments", type=int_at_least(1), metavar="K",
                          help="as /next?max_judgments=K: only tasks with fewer than K revealed "
                               "judgments are asked for (until every task has K)")
    add_scale_options(simulate)
    simulate.add_argument("--quiet", action="store_true",
                          help="no progress lines, no TensorFlow log lines")
    simulate.set_defaults(func=_simulate)
