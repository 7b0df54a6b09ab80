"""The evaluation pages: an evaluation of runs (intervals, P(a beats b), rankings, for one
measure at a time) and the form that starts one.

The page reads through the same service functions as GET /evaluations/{e}; the form validates
with the API's request model and reports the API's errors.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response
from pydantic import ValidationError

from app.api.deps import RunnerDep, SessionDep
from app.auth.deps import require_scope
from app.collections.deps import CollectionDep
from app.collections.tables import Collection
from app.evaluations import service as evaluations_service
from app.evaluations.deps import EvaluationDep
from app.evaluations.schemas import EvaluationCreate
from app.evaluations.schemas import public as evaluation_public
from app.ui import charts
from app.ui.forms import (
    FormIdempotencyDep,
    Submission,
    answer_form,
    form_body,
)
from app.ui.messages import plural
from app.ui.pages.collections import collection_with, form_error
from app.ui.pages.fields import CheckedForm, invalid_fields, whole_number, words
from app.ui.pages.render import Measure, figures, render
from models.evaluation.measures import UnknownMeasure, parse_measure

router = APIRouter(tags=["dashboard"], include_in_schema=False)


@router.post("/ui/collections/{c}/evaluations", response_class=HTMLResponse,
             dependencies=[require_scope("admin"), CheckedForm])
async def start_evaluation(request: Request, session: SessionDep, runner: RunnerDep,
                           idempotency: FormIdempotencyDep,
                           collection: CollectionDep) -> Response:
    """The API's POST /collections/{c}/evaluations, from a form (one job per form key). Gold
    qrels are fixed, so the form's number of draws is ignored for them (0: none drawn)."""
    form = await request.form()

    async def prepare() -> Submission:
        raw = str(form.get("source") or "").strip()
        source: Any = int(raw) if raw.isascii() and raw.isdigit() else raw
        samples = 0 if source == "gold" else whole_number(form, "samples", 1000)
        fields: dict[str, Any] = {
            "aggregation": source, "runs": words(form.get("runs")) or None,
            "samples": samples, "seed": whole_number(form, "seed", 0)}
        if str(form.get("interval") or "") == "ppi" and source != "gold":
            fields["interval"] = "ppi"
        if str(form.get("draws") or "") == "labels":  # empty: the API's default
            fields["draws"] = "labels"
        if words(form.get("measures")):  # empty: the API's default measures
            fields["measures"] = words(form.get("measures"))
        try:
            spec = EvaluationCreate(**fields)
        except ValidationError as exc:
            raise invalid_fields(exc) from None

        def work() -> str:
            evaluation = evaluations_service.create_evaluation(
                session, runner=runner, collection=collection, spec=spec)
            return collection_with(
                collection, f"evaluation #{evaluation.id} of "
                            f"{plural(len(evaluation.runs), 'run')} on "
                            f"{evaluations_service.source_label(evaluation.source)} queued")

        return form_body(form), work

    return await answer_form(request, session, idempotency, prepare, lambda exc: form_error(
        request, session, collection, exc, "evaluation", form))


# What the measures that are neither a share of relevant documents nor a score count.
_MEASURE_NOTES = {
    "LastRel": "the position of the last relevant document, in % of the topic's judged "
               "documents (100 when one is missing from the run)",
    "unjudged": "the share of the top {k} without a judgment",
}


def _direction(name: str) -> dict[str, Any]:
    """How a measure reads: its arrow, "higher/lower is better", its unit (or None) and a note
    for the measures that need one."""
    try:
        measure = parse_measure(name)
    except UnknownMeasure:  # stored names were validated; an old name reads as unknown
        return {"arrow": "", "says": "", "unit": None, "note": None}
    higher = measure.higher_is_better
    note = _MEASURE_NOTES.get(measure.family)
    return {"arrow": "↑" if higher else "↓", "unit": measure.unit,
            "says": "higher is better" if higher else "lower is better",
            "note": note.format(k=measure.param) if note else None}


def _draws(evaluation: Any) -> dict[str, Any]:
    """The draws an evaluation made (its report's ``samples``, once scored), not the number
    requested: fixed qrels (gold) and ``samples = 0`` make none, and then show no intervals."""
    requested = int(evaluation.samples)
    fixed = evaluation.source == "gold"
    report = evaluation.report or {}
    made = report.get("samples") if evaluation.status == "succeeded" else None
    if made is None:
        made = 0 if fixed else requested
        text = ("fixed qrels: no draws" if fixed
                else f"{requested:,} draws of the qrels requested")
    elif made:
        text = f"{made:,} draws of the qrels"
        if report.get("draws") == "joint-gp":
            text += (", drawn jointly from the GP fit's posterior (tasks that share features "
                     "move together)")
    elif requested:  # requested but none made: the qrels are certain (gold, or one-hot)
        fixed = True
        text = (f"fixed qrels: no draws ({requested:,} requested; every draw would be the "
                "same qrels)")
    else:
        text = "no draws of the qrels (0 requested): no intervals"
    # how the draws were made, as the report says once scored (else as requested):
    # "parameters": the annotators' parameters first (``models.evaluation.parameters``);
    # "joint-gp": one draw of a GP fit's latent function for all tasks; "labels": each task's
    # label independently
    kind = report.get("draws") or getattr(evaluation, "draws", None) or "labels"
    return {"made": int(made), "requested": requested, "fixed": fixed, "text": text,
            "kind": kind}


def _coverage(report: dict[str, Any], order: list[str]) -> dict[str, Any]:
    """Which topics each run's mean is over (the report's numbers), whether they are the
    same for every run, and which run the page may call best: the first in ``order`` (the
    API's ranking, best first) among runs over the same topics — all the runs when they
    answer the same topics, else those answering every topic of the qrels, else none."""
    run_topics: dict[str, int] | None = report.get("run_topics")
    unknown = report.get("unknown_topics") or {}
    unjudged = report.get("unjudged_topics") or {}
    if run_topics is None:  # scored before the report counted topics per run
        return {"known": False, "same": False, "runs": {}, "order": order, "best": None,
                "among": None, "partial": [], "qrels_topics": None}
    qrels_topics = int(report["qrels_topics"])
    common = int(report["common_topics"])
    runs = {run: {"topics": run_topics.get(run, 0),
                  "missing": qrels_topics - run_topics.get(run, 0),
                  "unknown": unknown.get(run, 0),
                  # topics of the run with no judgments in these qrels, known to the collection
                  "unjudged": unjudged.get(run, 0) - unknown.get(run, 0)} for run in order}
    same = all(c["topics"] == common for c in runs.values())
    full = [run for run in order if runs[run]["topics"] == qrels_topics]
    if same:
        best, among = (order[0] if order and common else None), None
        partial: list[str] = []
        ordered = order
    else:
        best, among = (full[0], len(full)) if full else (None, 0)
        partial = [run for run in order if runs[run]["topics"] != qrels_topics]
        ordered = full + partial
    return {"known": True, "same": same, "runs": runs, "order": ordered, "best": best,
            "among": among, "partial": partial, "qrels_topics": qrels_topics,
            "common_topics": common}


def _evaluation_context(evaluation: Any, measure: str | None) -> dict[str, Any]:
    """Charts and tables of a succeeded evaluation, for one selected measure: the API's numbers
    (``summary`` and ``report``), with what they are over and how they read."""
    summary = evaluations_service.summary(evaluation)
    results, pairs, rankings = summary["results"], summary["pairs"], summary["rankings"]
    report = evaluation.report or {}
    measures = [r["measure"] for r in rankings]
    if measure not in measures:
        measure = measures[0] if measures else None
    ranking = next((r for r in rankings if r["measure"] == measure), None)
    coverage = _coverage(report, ranking["runs"] if ranking else list(evaluation.runs))
    order = coverage["order"]
    draws = _draws(evaluation)
    has_draws = draws["made"] > 0
    directions = {m: _direction(m) for m in measures}
    direction = directions.get(str(measure), _direction(str(measure)))

    def label(run: str) -> str:  # a run over fewer topics says so on the charts
        c = coverage["runs"].get(run)
        if not coverage["known"] or coverage["same"] or c is None \
                or c["topics"] == coverage["qrels_topics"]:
            return run
        return f"{run} ({c['topics']} of {coverage['qrels_topics']} topics)"

    by_run = {r["run"]: r for r in results if r["measure"] == measure}
    rows = [{**by_run[run], "label": label(run)} for run in order if run in by_run]
    if not has_draws:  # fixed qrels: low = high = value is no interval; samples 0: none
        rows = [{**r, "mean": None, "low": None, "high": None} for r in rows]
    wins = {(p["a"], p["b"]): p["p_a_beats_b"] for p in pairs if p["measure"] == measure}
    matrix = [[None if a == b else wins.get((a, b)) for b in order] for a in order]
    table: dict[str, dict[str, Any]] = {}
    for r in results:
        table.setdefault(r["run"], {})[r["measure"]] = r
    kind = next((r.get("interval_kind") for r in rows), None) or "posterior"
    # the y axis says the direction and the unit: a short title, which wraps on a phone
    axis = ", ".join([str(measure)] + ([direction["unit"]] if direction["unit"] else []))
    if direction["arrow"]:
        axis += f" ({direction['arrow']} better)"
    intervals = charts.intervals(rows, title=f"{measure}: mean over topics", x="run", y=axis)
    # P(a beats b) is a share of draws: without draws there is none to show
    wins_chart = charts.heatmap([label(r) for r in order], [label(r) for r in order], matrix,
                                title=f"{measure}: P(row beats column)", x="run", y="run",
                                zmax=1.0) if len(order) > 1 and has_draws else None
    _fit_narrow(intervals, wins_chart)
    return {
        "measure": measure, "measures": measures, "ranking": ranking, "rankings": rankings,
        "rows": rows, "table": [(run, table.get(run, {})) for run in order],
        "has_draws": has_draws, "draws": draws, "coverage": coverage,
        "directions": directions, "direction": direction,
        "interval_kind": kind, "ppi": (report.get("interval") == "ppi"),
        "figures": figures(intervals=intervals, wins=wins_chart),
    }


def _fit_narrow(intervals: dict[str, Any] | None, wins: dict[str, Any] | None) -> None:
    """This page's charts in a narrow window (400 px): the interval chart's legend goes to the
    bottom of the figure, below the axis title and the run names (which Plotly turns when they
    crowd) instead of at a fixed fraction of the plot, where it ran into them; the heat map's
    colour bar is thinner, leaving the run names room."""
    if intervals is not None:
        intervals["layout"]["legend"] = {"orientation": "h", "yref": "container", "y": 0,
                                         "yanchor": "bottom", "x": 0, "xanchor": "left"}
    if wins is not None:
        wins["data"][0]["colorbar"] = {"thickness": 12}


@router.get("/ui/evaluations/{e}", response_class=HTMLResponse,
            dependencies=[require_scope("read")])
def evaluation_page(request: Request, session: SessionDep, evaluation: EvaluationDep,
                    measure: Measure = None) -> HTMLResponse:
    collection = session.get(Collection, evaluation.collection_id)
    context: dict[str, Any] = {
        "evaluation": evaluation_public(evaluation), "collection": collection,
        "source": evaluations_service.source_label(evaluation.source), "figures": "{}",
        "draws": _draws(evaluation), "title": f"Evaluation #{evaluation.id}"}
    if evaluation.status == "succeeded":
        context.update(_evaluation_context(evaluation, measure))
    return render(request, "evaluation.html", context)
