"""``crowdqrels synth``: write an Algorithm-10 synthetic data set."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from app.cli.errors import UsageError
from app.cli.options import MAX_SEED, int_at_least, seed_arg
from app.cli.outputs import check_output_dir

NOISE_CHOICES = ("0-2", "2-4", "4-8", "8-12")  # models.synthetic.NOISE_LEVELS, without numpy


def _synth(args: argparse.Namespace) -> int:
    if args.grades < 2 or args.bias_sd < 0:
        raise UsageError("--grades must be at least 2 and --bias-sd >= 0")
    if args.redundancy > args.annotators:
        raise UsageError(f"--redundancy {args.redundancy} is more than --annotators "
                         f"{args.annotators}: each task is judged by that many different "
                         "annotators")
    if args.topics > args.tasks:
        raise UsageError(f"--topics {args.topics} is more than --tasks {args.tasks}")
    if not args.topic_concentration > 0:
        raise UsageError("--topic-concentration must be above 0")
    if args.judges is not None and not 0 <= args.judge_correlation < 1:
        raise UsageError("--judge-correlation must be in [0, 1)")
    mixed = args.crowd > 0 or args.experts > 0
    if mixed and args.judges is None:
        raise UsageError("--crowd and --experts join an LLM panel: give --judges K too")
    if args.crowd and args.crowd_redundancy > args.crowd:
        raise UsageError(f"--crowd-redundancy {args.crowd_redundancy} is more than --crowd "
                         f"{args.crowd}: each task is judged by that many different workers")
    if not 0 <= args.expert_share <= 1:
        raise UsageError("--expert-share must be in [0, 1]")
    check_output_dir(args.outdir, "OUTDIR")
    from models.synthetic import NOISE_LEVELS, generate, judges_dataset, mixed_dataset

    if args.seed is None:
        import numpy as np

        args.seed = int(np.random.SeedSequence().entropy % (MAX_SEED + 1))
        print(f"seed {args.seed} (none given; --seed {args.seed} repeats this data set)",
              file=sys.stderr)
    if mixed:  # the panel, a sparse crowd and a few experts on the same tasks
        data = mixed_dataset(args.tasks, args.judges, grades=max(args.grades, 2),
                             judge_correlation=args.judge_correlation, leniency=args.leniency,
                             crowd_workers=args.crowd, crowd_redundancy=args.crowd_redundancy,
                             crowd_noise=NOISE_LEVELS[args.noise], experts=args.experts,
                             expert_share=args.expert_share, random_state=args.seed)
        for name, path in data.write(Path(args.outdir)).items():
            print(f"{name}\t{path}")
        return 0
    if args.judges is not None:  # dense, correlated, lenient LLM-like judges
        data = judges_dataset(args.tasks, args.judges, grades=max(args.grades, 2),
                              judge_correlation=args.judge_correlation,
                              leniency=args.leniency, random_state=args.seed)
        for name, path in data.write(Path(args.outdir)).items():
            print(f"{name}\t{path}")
        return 0
    data = generate(args.tasks, args.annotators, noise_level=NOISE_LEVELS[args.noise],
                    redundancy=args.redundancy, grades=args.grades, bias_sd=args.bias_sd,
                    topics=args.topics, topic_concentration=args.topic_concentration,
                    random_state=args.seed)
    paths = data.write(Path(args.outdir))
    for name, path in paths.items():
        print(f"{name}\t{path}")
    return 0


def add_command(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    synth = subparsers.add_parser(
        "synth", help="write a synthetic data set (thesis Algorithm 10)",
        description="Write judgments.tsv, features.tsv, gold.qrels, annotators.tsv, tasks.tsv.",
    )
    synth.add_argument("outdir", metavar="OUTDIR", help="output directory (created if needed)")
    synth.add_argument("--tasks", type=int_at_least(1), default=1000,
                       help="number of tasks (default 1000)")
    synth.add_argument("--annotators", type=int_at_least(1), default=50,
                       help="number of annotators (default 50)")
    synth.add_argument("--noise", choices=NOISE_CHOICES, default="0-2",
                       help="annotator noise variance range (default 0-2)")
    synth.add_argument("--redundancy", type=int_at_least(1), default=5,
                       help="judgments per task, each by a different annotator (default 5; at "
                            "most --annotators)")
    synth.add_argument("--seed", type=seed_arg,
                       help="0 to 2**32 - 1 (default: a fresh one, printed on stderr)")
    synth.add_argument("--grades", type=int, default=2,
                       help="number of grades K (default 2: binary Algorithm 10); labels 0..K-1")
    synth.add_argument("--bias-sd", type=float, default=0.0,
                       help="standard deviation of planted annotator biases (default 0: none)")
    synth.add_argument("--topics", type=int_at_least(1), default=1,
                       help="split the tasks into this many topics, each with its own grade mix "
                            "(default 1: grades uniform, as in Algorithm 10); writes topics.tsv")
    synth.add_argument("--topic-concentration", type=float, default=1.0, metavar="A",
                       help="each topic's grade mix ~ Dirichlet(A, ..., A) (default 1; small: "
                            "topics of mostly one grade)")
    synth.add_argument("--judges", type=int_at_least(1), metavar="K",
                       help="instead: K LLM-like judges who grade every task, share errors and a "
                            "leniency (models.synthetic.judges_dataset; use with --grades 4)")
    synth.add_argument("--judge-correlation", type=float, default=0.6, metavar="R",
                       help="with --judges: share of a judge's error shared with the others "
                            "(half by all, half by its family; default 0.6)")
    synth.add_argument("--leniency", type=float, default=0.5, metavar="B",
                       help="with --judges: shared bias in grades (> 0 lenient; default 0.5)")
    synth.add_argument("--crowd", type=int_at_least(0), default=0, metavar="N",
                       help="with --judges: mixed data, N crowd workers beside the panel "
                            "(Algorithm 10 on the grades, --noise their noise range, drawn by a "
                            "power law; models.synthetic.mixed_dataset; default 0: none). "
                            "annotators.tsv then has a kind column (llm, crowd, expert)")
    synth.add_argument("--crowd-redundancy", type=int_at_least(1), default=3, metavar="R",
                       help="with --crowd: crowd judgments per task, by distinct workers "
                            "(default 3)")
    synth.add_argument("--experts", type=int_at_least(0), default=0, metavar="E",
                       help="with --judges: mixed data, E expert assessors (high accuracy, no "
                            "bias), one on each task of a random --expert-share (default 0)")
    synth.add_argument("--expert-share", type=float, default=0.1, metavar="F",
                       help="with --experts: share of the tasks an expert grades (default 0.1)")
    synth.set_defaults(func=_synth)
