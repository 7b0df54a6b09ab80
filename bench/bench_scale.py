"""Fit time and peak memory of DS, MACE and IBCC at 10,000,000 judgments.

    python bench/bench_scale.py            # 2,000,000 tasks x 5, 100,000 annotators
    python bench/bench_scale.py --tasks 200000 --annotators 10000   # a tenth: a busy machine
    python bench/bench_scale.py cli        # the same judgments through `crowdqrels aggregate`
    python bench/bench_scale.py service --postgres URL [--tasks N --annotators M]
    python bench/bench_scale.py service --postgres URL --upload-only --rounds 2 \\
        --tree main=/work/main --tree branch=.     # uploads alternating, CPU per side

``cli`` (``cli_main`` below) writes the judgments as a TSV file (topic, doc, annotator, label;
kept in --dir for the next run) and, per method, runs the whole command under /usr/bin/time
(wall seconds and peak RSS of ``crowdqrels aggregate FILE --method M --quiet --output Q``), then
the same stages in a process that times them one by one (read: file to AnnotationData; fit;
write: the qrels), with the peak RSS after each.

``service`` measures the service at that size instead (``service_stages``): a judgment file of
tasks x redundancy lines uploaded through the API (a uvicorn process) into PostgreSQL, end to
end; then a DS fit job's stages in a fresh process (load the snapshot, fit, store the results),
each with its seconds and peak resident memory (the peak reset before each stage).

The judgments are generated as long-format integer arrays (no strings, no file, no database):
every task has a true binary label and ``--redundancy`` distinct annotators, each right with its
own probability (uniform in [0.55, 0.95]). Every method runs in its own subprocess with its
defaults and a fixed seed: the fit is timed, and the process's peak resident set size (which
includes the ~0.3 GB of judgment arrays every method holds) is read after it. Prints a markdown
table. A script, never part of the test run.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

METHODS = ("ds", "mace", "ibcc")


def generate(n_tasks: int, n_annotators: int, redundancy: int, seed: int
             ) -> dict[str, np.ndarray]:
    """Long-format judgments: ``redundancy`` distinct annotators per task (a random offset plus
    multiples of a stride), labels right with each annotator's own accuracy."""
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, 2, n_tasks)
    accuracy = rng.uniform(0.55, 0.95, n_annotators)
    stride = max(n_annotators // redundancy, 1)
    task = np.repeat(np.arange(n_tasks, dtype=np.int64), redundancy)
    offset = np.repeat(rng.integers(0, n_annotators, n_tasks), redundancy)
    annotator = (offset + np.tile(np.arange(redundancy), n_tasks) * stride) % n_annotators
    right = rng.random(task.shape[0]) < accuracy[annotator]
    label = np.where(right, truth[task], 1 - truth[task]).astype(np.int64)
    return {"task": task, "annotator": annotator.astype(np.int64), "label": label,
            "truth": truth.astype(np.int64)}


def run_method(method: str, path: Path) -> dict[str, float]:
    """In a fresh process: load the arrays, fit ``method`` once; seconds, peak RSS, accuracy."""
    from models.bcc import IBCC
    from models.data import AnnotationData
    from models.dawid_skene import DawidSkene
    from models.mace import MACE

    arrays = np.load(path)
    n_tasks, n_annotators = arrays["truth"].shape[0], int(arrays["annotator"].max()) + 1
    data = AnnotationData(
        task=arrays["task"], annotator=arrays["annotator"], label=arrays["label"],
        topic_ids=np.zeros(n_tasks, dtype="U1"), doc_ids=np.zeros(n_tasks, dtype="U1"),
        annotator_ids=np.zeros(n_annotators, dtype="U1"), classes=np.array([0, 1]))
    loaded = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # KiB -> GiB
    model = {"ds": lambda: DawidSkene(), "mace": lambda: MACE(random_state=0),
             "ibcc": lambda: IBCC()}[method]()
    start, cpu = time.perf_counter(), time.process_time()
    model.fit(data)
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    accuracy = float(np.mean(np.asarray(model.labels_) == arrays["truth"]))
    return {"seconds": seconds, "cpu_seconds": cpu, "peak_gib": peak, "loaded_gib": loaded,
            "accuracy": accuracy}


def write_judgment_file(arrays: dict[str, np.ndarray], path: Path, docs_per_topic: int = 50
                        ) -> None:
    """The judgments as a TSV file in task order: topic (``docs_per_topic`` tasks each), doc
    ``d<task>``, annotator ``w<j>``, label."""
    task, annotator, label = arrays["task"], arrays["annotator"], arrays["label"]
    step = 1_000_000
    with path.open("w") as out:
        out.write("topic\tdoc\tannotator\tlabel\n")
        for s in range(0, task.shape[0], step):
            t = task[s:s + step]
            out.writelines(
                f"{topic}\td{doc}\tw{j}\t{y}\n" for topic, doc, j, y in zip(
                    (t // docs_per_topic + 1).tolist(), t.tolist(),
                    annotator[s:s + step].tolist(), label[s:s + step].tolist(), strict=True))


def cli_stages(method: str, path: Path, truth_path: Path, output: Path) -> dict[str, float]:
    """``crowdqrels aggregate PATH --method METHOD --quiet --output OUTPUT``'s stages, as
    ``app.cli.aggregate`` runs them, each timed: read (file to AnnotationData), fit, write (the
    qrels); peak RSS (GiB) after each; accuracy against the generated truth."""
    from app.cli import build_parser
    from app.cli.aggregate import _outputs
    from app.cli.loading import load_judgment_file
    from app.cli.outputs import write_outputs
    from models.pipeline import FitSpec, fit

    def peak() -> float:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20

    args = build_parser().parse_args(["aggregate", str(path), "--method", method, "--quiet",
                                      "--output", str(output)])
    row: dict[str, float] = {}
    start, cpu = time.perf_counter(), time.process_time()
    data, _ = load_judgment_file(args, quiet=True, want_rows=False)
    row["read_s"], row["read_cpu_s"] = time.perf_counter() - start, time.process_time() - cpu
    row["read_peak_gib"] = peak()
    start, cpu = time.perf_counter(), time.process_time()
    spec = FitSpec(method, {}, None, relevant_from=args.relevant_from, graded=False)
    fitted = fit(spec, data, model=spec.build())
    row["fit_s"], row["fit_cpu_s"] = time.perf_counter() - start, time.process_time() - cpu
    row["fit_peak_gib"] = peak()
    start, cpu = time.perf_counter(), time.process_time()
    write_outputs(_outputs(args, fitted, fitted.published))
    row["write_s"], row["write_cpu_s"] = time.perf_counter() - start, time.process_time() - cpu
    row["write_peak_gib"] = peak()
    truth = np.load(truth_path)
    task_of = np.char.lstrip(data.doc_ids.astype(str), "d").astype(np.int64)
    row["accuracy"] = float(np.mean(np.asarray(fitted.labels) == truth[task_of]))
    return row


def cli_main(argv: list[str]) -> None:
    """The ``cli`` subcommand: the whole command under /usr/bin/time, then its stages."""
    parser = argparse.ArgumentParser(prog="bench_scale.py cli")
    parser.add_argument("--tasks", type=int, default=2_000_000)
    parser.add_argument("--annotators", type=int, default=100_000)
    parser.add_argument("--redundancy", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--methods", nargs="*", default=list(METHODS), choices=METHODS)
    parser.add_argument("--dir", default=tempfile.gettempdir(),
                        help="where the judgment file is written (and found on the next run)")
    parser.add_argument("--no-stages", action="store_true", help="the whole command only")
    parser.add_argument("--stage-method", choices=METHODS, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    name = f"scale-{args.tasks}x{args.redundancy}-{args.annotators}-{args.seed}"
    path = Path(args.dir) / f"{name}.tsv"
    truth_path = Path(args.dir) / f"{name}.truth.npy"
    if args.stage_method:
        print(json.dumps(cli_stages(args.stage_method, path, truth_path,
                                    Path(args.dir) / f"{name}.{args.stage_method}.stages.qrels")))
        return
    if not path.exists() or not truth_path.exists():
        start = time.perf_counter()
        arrays = generate(args.tasks, args.annotators, args.redundancy, args.seed)
        write_judgment_file(arrays, path)
        np.save(truth_path, arrays["truth"])
        print(f"wrote {path} ({path.stat().st_size / 2**20:.0f} MiB) in "
              f"{time.perf_counter() - start:.1f} s", file=sys.stderr)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    rows: dict[str, dict[str, float]] = {}
    load_before = os.getloadavg()[0]
    for method in args.methods:
        output = Path(args.dir) / f"{name}.{method}.qrels"
        proc = subprocess.run(
            ["/usr/bin/time", "-f", "%e %U %S %M", sys.executable, "-m", "app.cli", "aggregate",
             str(path), "--method", method, "--quiet", "--output", str(output)],
            capture_output=True, text=True, env=env, check=True)
        wall, user, system, rss_kib = proc.stderr.strip().splitlines()[-1].split()
        row = {"command_s": float(wall), "command_cpu_s": float(user) + float(system),
               "command_peak_gib": int(rss_kib) / 2**20}
        if not args.no_stages:
            proc = subprocess.run([sys.executable, __file__, "cli", *argv, "--stage-method",
                                   method], capture_output=True, text=True, env=env, check=True)
            row.update(json.loads(proc.stdout.strip().splitlines()[-1]))
        rows[method] = row
        print(f"  {method}: {row}", file=sys.stderr)
    n = args.tasks * args.redundancy
    print(f"{n:,} judgments ({args.tasks:,} tasks x {args.redundancy}, {args.annotators:,} "
          f"annotators) in {path.name} ({path.stat().st_size / 2**20:.0f} MiB); "
          f"{os.cpu_count()} CPUs, 1-minute load average {load_before:.1f} before, "
          f"{os.getloadavg()[0]:.1f} after.\n")
    print("Seconds are wall (CPU) seconds: on a shared machine the CPU seconds say what the "
          "command costs, the wall seconds what it took beside the others.\n")
    print("| method (defaults) | command s | command peak RSS GiB | read s | fit s | write s "
          "| peak RSS after read / fit / write GiB | accuracy |")
    print("|---|---:|---:|---:|---:|---:|---|---:|")
    for method, row in rows.items():
        stages = ("| – | – | – | – | – |" if args.no_stages else
                  f"| {row['read_s']:.2f} ({row['read_cpu_s']:.2f}) "
                  f"| {row['fit_s']:.2f} ({row['fit_cpu_s']:.2f}) "
                  f"| {row['write_s']:.2f} ({row['write_cpu_s']:.2f}) | "
                  f"{row['read_peak_gib']:.2f} / {row['fit_peak_gib']:.2f} / "
                  f"{row['write_peak_gib']:.2f} | {row['accuracy']:.4f} |")
        print(f"| {method} | {row['command_s']:.2f} ({row['command_cpu_s']:.2f}) | "
              f"{row['command_peak_gib']:.2f} {stages}")


def write_shuffled_file(path: Path, arrays: dict[str, np.ndarray], *,
                        tasks_per_topic: int = 2000) -> int:
    """The judgments as a TSV file (topic, doc, annotator, label), in random order, as a crowd
    platform exports them (``service``); returns the number of lines."""
    order = np.random.default_rng(1).permutation(arrays["task"].shape[0])
    with path.open("w") as out:
        out.write("topic\tdoc\tannotator\tlabel\n")
        for start in range(0, order.shape[0], 1_000_000):
            at = order[start:start + 1_000_000]
            task = arrays["task"][at]
            out.write("".join(
                f"t{t}\td{d}\tw{a}\t{y}\n" for t, d, a, y in zip(
                    (task // tasks_per_topic).tolist(), task.tolist(),
                    arrays["annotator"][at].tolist(), arrays["label"][at].tolist(),
                    strict=True)))
    return int(order.shape[0])


def _peak_reset() -> None:
    """Start a new peak: the kernel's high-water mark of this process' RSS (VmHWM)."""
    Path("/proc/self/clear_refs").write_text("5")


def _rss_gib() -> tuple[float, float]:
    fields = dict(line.split(":", 1) for line in Path("/proc/self/status").read_text()
                  .splitlines() if ":" in line)
    return (int(fields["VmRSS"].split()[0]) / 2**20, int(fields["VmHWM"].split()[0]) / 2**20)


def job_stages(database_url: str, collection_name: str) -> dict[str, dict[str, float]]:
    """In this (fresh) process: a DS fit job's stages as ``app.aggregations.job`` runs them,
    each timed with its peak RSS."""
    from sqlalchemy import create_engine, select, text
    from sqlalchemy.orm import Session

    from app.aggregations.gold import fit_record
    from app.aggregations.results import store_results
    from app.aggregations.snapshot import KeptColumns, load_snapshot
    from app.aggregations.tables import Aggregation
    from app.collections.tables import Collection
    from app.judgments.columns import current_watermark
    from models.pipeline import FitSpec, fit

    stages: dict[str, dict[str, float]] = {}

    def measure(name: str, work: Any) -> Any:
        _peak_reset()
        server = _cpu_seconds([backend])
        start, cpu = time.perf_counter(), time.process_time()
        out = work()
        seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
        rss, peak = _rss_gib()
        # CPU seconds of this process and of its PostgreSQL backend (/proc/PID/stat)
        stages[name] = {"seconds": seconds, "cpu_s": cpu,
                        "pg_cpu_s": _cpu_seconds([backend]) - server,
                        "peak_gib": peak, "rss_after_gib": rss}
        print(f"  {name}: {stages[name]}", file=sys.stderr, flush=True)
        return out

    with Session(create_engine(database_url)) as session:
        backend = session.execute(text("SELECT pg_backend_pid()")).scalar_one()
        collection = session.scalars(select(Collection).where(
            Collection.name == collection_name)).one()
        aggregation = Aggregation(collection_id=collection.id, method="ds", params={}, seed=0,
                                  watermark=current_watermark(session,
                                                              collection_id=collection.id),
                                  status="running")
        session.add(aggregation)
        session.commit()
        snapshot = measure("load", lambda: load_snapshot(
            session, collection=collection, watermark=aggregation.watermark, graded=False,
            kept=KeptColumns(max_collections=0)))
        spec = FitSpec("ds", {}, 0, relevant_from=collection.relevant_from, graded=False)
        fitted = measure("fit", lambda: fit(spec, snapshot.data))
        scores = fitted.score(None, own_labels=False)
        gold = fit_record(collection=collection, gold=snapshot.gold,
                          fit_tasks=snapshot.task_ids, judged_tasks=snapshot.judged_tasks,
                          n_scored=0)
        measure("store", lambda: store_results(session, aggregation=aggregation,
                                               snapshot=snapshot, fitted=fitted,
                                               scores=scores, gold_record=gold))
    return stages


def _cpu_seconds(pids: list[int]) -> float:
    """user + system CPU seconds of processes (``/proc/PID/stat``; those gone count 0)."""
    total = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])
    return total / os.sysconf("SC_CLK_TCK")


def _process_tree(pid: int) -> list[int]:
    """pid and its descendants (a server that forks workers)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError):
                continue
            children.setdefault(ppid, []).append(int(entry.name))
    tree, todo = [], [pid]
    while todo:
        tree.append(todo.pop())
        todo += children.get(tree[-1], [])
    return tree


def _backends(url: str) -> list[int]:
    """The PostgreSQL client backends connected to url's database, other than this query's."""
    import psycopg
    from sqlalchemy.engine import make_url

    parsed = make_url(url)
    with psycopg.connect(parsed.set(drivername="postgresql").render_as_string(
            hide_password=False)) as connection:
        return [pid for (pid,) in connection.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = current_database() "
            "AND backend_type = 'client backend' AND pid <> pg_backend_pid()")]


def upload_once(url: str, root: Path, path: Path, n: int) -> dict[str, float]:
    """One upload of the file through the API of the checkout at ``root`` into a fresh
    database: seconds (HTTP upload → rows committed), CPU seconds of the API's processes and of
    its PostgreSQL backends (``/proc/PID/stat``, sampled before and after; a backend that
    connects during the upload counts from its start), the API's peak RSS."""
    import httpx
    from _server import reset_postgres, rss_mib, running_api

    size = path.stat().st_size
    reset_postgres(url)
    with running_api(url, root, CROWDQRELS_MAX_BODY_BYTES=str(2 * size)) as (
            base, process), httpx.Client(base_url=base, timeout=7200) as client:
        client.post("/api/v1/collections", json={
            "name": "scale", "labels": [0, 1], "relevant_from": 1, "ignore": []
        }).raise_for_status()
        api_before = _cpu_seconds(_process_tree(process.pid))
        backends_before = {pid: _cpu_seconds([pid]) for pid in _backends(url)}
        load = os.getloadavg()[0]
        start = time.perf_counter()
        with path.open("rb") as body:
            response = client.post(
                "/api/v1/collections/scale/judgments/file", content=body,
                headers={"content-type": "text/tab-separated-values",
                         "content-length": str(size)})
        seconds = time.perf_counter() - start
        response.raise_for_status()
        assert response.json()["judgments"] == n, response.text
        api_cpu = _cpu_seconds(_process_tree(process.pid)) - api_before
        pg_cpu = sum(_cpu_seconds([pid]) - backends_before.get(pid, 0.0)
                     for pid in _backends(url))
        _, api_peak = rss_mib(process.pid)
    return {"seconds": seconds, "api_cpu": api_cpu, "pg_cpu": pg_cpu, "api_peak": api_peak,
            "load_before": load, "load_after": os.getloadavg()[0]}


def service_stages(args: argparse.Namespace) -> None:
    """Ingest a generated file through the API into PostgreSQL, then a fit job's stages
    (``--upload-only``: not). ``--tree NAME=PATH`` (repeatable): upload through each checkout's
    API in turn, ``--rounds`` times, alternating (a peer in the same run)."""
    trees = [tuple(t.split("=", 1)) for t in args.tree] or [("this", str(ROOT))]
    arrays = generate(args.tasks, args.annotators, args.redundancy, args.seed)
    load_before = os.getloadavg()
    rows: list[tuple[str, int, dict[str, float]]] = []
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "judgments.tsv"
        n = write_shuffled_file(path, arrays)
        del arrays
        size = path.stat().st_size
        for round_ in range(args.rounds):
            for name, root in trees:
                row = upload_once(args.postgres, Path(root), path, n)
                rows.append((name, round_ + 1, row))
                # printed at once: the API may take long to stop after a large upload
                print(f"{name} round {round_ + 1}: {n:,} judgments in {row['seconds']:.1f} s "
                      f"({n / row['seconds']:,.0f}/s), API CPU {row['api_cpu']:.1f} s, "
                      f"PostgreSQL CPU {row['pg_cpu']:.1f} s, API peak "
                      f"{row['api_peak']:,.0f} MiB, load {row['load_before']:.1f} → "
                      f"{row['load_after']:.1f}", file=sys.stderr, flush=True)
    print(f"{n:,} judgments ({args.tasks:,} tasks x {args.redundancy}, {args.annotators:,} "
          f"annotators; {size / 2**20:,.0f} MiB of TSV); {os.cpu_count()} CPUs, load average "
          f"(1 min) {load_before[0]:.1f} before.\n")
    print("| tree | round | upload → committed s | judgments/s | API CPU s | PostgreSQL CPU s "
          "| API peak RSS MiB | load (1 min) |")
    print("|---|---:|---:|---:|---:|---:|---:|---|")
    for name, round_, row in rows:
        print(f"| {name} | {round_} | {row['seconds']:.1f} | {n / row['seconds']:,.0f} | "
              f"{row['api_cpu']:.1f} | {row['pg_cpu']:.1f} | {row['api_peak']:,.0f} | "
              f"{row['load_before']:.1f} → {row['load_after']:.1f} |")
    if args.upload_only:
        return
    proc = subprocess.run([sys.executable, __file__, "--job-stages", args.postgres],
                          capture_output=True, text=True)
    if proc.returncode:
        sys.exit(proc.stderr)
    stages = json.loads(proc.stdout.strip().splitlines()[-1])
    print(f"\nThe fit job's stages on the last upload's collection (load average "
          f"{os.getloadavg()[0]:.1f} at the end):\n")
    print("| stage | seconds | judgments/s | CPU s | PostgreSQL CPU s | peak RSS |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, row in stages.items():
        print(f"| fit job: {name} | {row['seconds']:.1f} | {n / row['seconds']:,.0f} | "
              f"{row['cpu_s']:.1f} | {row['pg_cpu_s']:.1f} | {row['peak_gib']:.2f} GiB |")


def main() -> None:
    if sys.argv[1:2] == ["cli"]:
        cli_main(sys.argv[2:])
        return
    if sys.argv[1:2] == ["service"]:
        parser = argparse.ArgumentParser(description=service_stages.__doc__)
        parser.add_argument("service")
        parser.add_argument("--postgres", required=True, help="a database this script drops")
        parser.add_argument("--tasks", type=int, default=2_000_000)
        parser.add_argument("--annotators", type=int, default=100_000)
        parser.add_argument("--redundancy", type=int, default=5)
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--tree", action="append", default=[], metavar="NAME=PATH",
                            help="a checkout whose API uploads (repeatable; default: this one)")
        parser.add_argument("--rounds", type=int, default=1)
        parser.add_argument("--upload-only", action="store_true",
                            help="skip the fit job's stages after the upload")
        service_stages(parser.parse_args())
        return
    if sys.argv[1:2] == ["--job-stages"]:
        print(json.dumps(job_stages(sys.argv[2], "scale")))
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=2_000_000)
    parser.add_argument("--annotators", type=int, default=100_000)
    parser.add_argument("--redundancy", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--methods", nargs="*", default=list(METHODS), choices=METHODS)
    parser.add_argument("--method", choices=METHODS, help=argparse.SUPPRESS)  # subprocess mode
    parser.add_argument("--data", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.method:
        print(json.dumps(run_method(args.method, Path(args.data))))
        return
    start = time.perf_counter()
    arrays = generate(args.tasks, args.annotators, args.redundancy, args.seed)
    generated = time.perf_counter() - start
    n = arrays["task"].shape[0]
    rows = {}
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "data.npz"
        np.savez(path, **arrays)
        del arrays
        for method in args.methods:
            proc = subprocess.run([sys.executable, __file__, "--method", method, "--data",
                                   str(path)], capture_output=True, text=True, check=True)
            rows[method] = json.loads(proc.stdout.strip().splitlines()[-1])
            print(f"  {method}: {rows[method]}", file=sys.stderr)
    print(f"{n:,} judgments ({args.tasks:,} tasks x {args.redundancy}, {args.annotators:,} "
          f"annotators), generated in {generated:.1f} s; {os.cpu_count()} CPUs, 1-minute load "
          f"average {load_before:.1f} before, {os.getloadavg()[0]:.1f} after.\n")
    print("| method (defaults) | fit s (CPU s) | peak RSS GiB | RSS after loading GiB | "
          "accuracy |")
    print("|---|---:|---:|---:|---:|")
    for method, row in rows.items():
        print(f"| {method} | {row['seconds']:.2f} ({row['cpu_seconds']:.2f}) | "
              f"{row['peak_gib']:.2f} | "
              f"{row['loaded_gib']:.2f} | {row['accuracy']:.4f} |")


if __name__ == "__main__":
    main()
