"""The sampling pages: a sampling (its rounds, Horvitz–Thompson estimates and stopping check),
the form that starts one and the button that draws a round.

The page reads through the same service functions as GET /samplings/{s}; the forms validate
with the API's request models and report the API's errors.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from pydantic import ValidationError

from app.api.deps import SessionDep
from app.auth.deps import require_scope
from app.collections.deps import CollectionDep
from app.collections.tables import Collection
from app.core.errors import Conflict
from app.sampling import estimates as sampling_estimates
from app.sampling import rounds as sampling_rounds
from app.sampling import service as sampling_service
from app.sampling.deps import InputsDep, SamplingDep, get_next_inputs
from app.sampling.schemas import RoundRequest, SamplingCreate, StoppingTarget, StopRule
from app.ui import charts
from app.ui.forms import (
    FormIdempotencyDep,
    Refusal,
    Submission,
    answer_form,
    form_body,
    refusal,
)
from app.ui.messages import message_location, plural
from app.ui.pages.collections import collection_with, form_error
from app.ui.pages.fields import CheckedForm, invalid_fields, whole_number, words
from app.ui.pages.render import Measure, figures, render
from models.sampling.stopping import TARGET_RECALL

router = APIRouter(tags=["dashboard"], include_in_schema=False)


@router.post("/ui/collections/{c}/samplings", response_class=HTMLResponse,
             dependencies=[require_scope("admin"), CheckedForm])
async def start_sampling(request: Request, session: SessionDep, idempotency: FormIdempotencyDep,
                         collection: CollectionDep) -> Response:
    """The API's POST /collections/{c}/samplings, from a form (one sampling per form key)."""
    form = await request.form()

    async def prepare() -> Submission:
        try:
            spec = SamplingCreate(
                runs=words(form.get("runs")) or None,
                budget_per_round=whole_number(form, "budget_per_round", None),
                seed=whole_number(form, "seed", 0), strategy=str(form.get("strategy") or "active"),
                method=str(form.get("method") or "mv"), depth=whole_number(form, "depth", None))
        except ValidationError as exc:
            raise invalid_fields(exc) from None

        def work() -> str:
            sampling = sampling_service.create_sampling(session, collection=collection,
                                                        spec=spec)
            return collection_with(
                collection, f"sampling #{sampling.id} ({sampling.strategy}) over a pool of "
                            f"{plural(sampling.pool_size, 'pair')} created: draw its first "
                            f"round on its page")

        return form_body(form), work

    return await answer_form(request, session, idempotency, prepare, lambda exc: form_error(
        request, session, collection, exc, "sampling", form))


def _sampling_context(session: Any, sampling: Any, measure: str | None,
                      target_recall: float = TARGET_RECALL,
                      inputs: Any = None) -> dict[str, Any]:
    """``inputs``: the application's NextInputs (what the estimates are computed from, kept)."""
    collection = session.get(Collection, sampling.collection_id)
    rounds = sampling_rounds.list_rounds(session, sampling=sampling, with_pairs=False,
                                          inputs=inputs)
    try:
        estimates = sampling_estimates.estimates(session, sampling=sampling,
                                               target_recall=target_recall, inputs=inputs)
        stale = None
    except Conflict as exc:  # a run replaced or deleted since: the page without estimates
        if exc.code != "runs_changed":
            raise
        stale = exc.body()
        estimates = {"judged": sum(r["labelled"] for r in rounds), "results": [],
                     "stopping": {"topics": [], "overall": None}}
    overall = [r for r in estimates["results"] if r["topic"] == "all"]
    measures = list(dict.fromkeys(r["measure"] for r in overall if r["run"] is not None))
    if measure not in measures:
        measure = "AP" if "AP" in measures else (measures[0] if measures else None)
    rows = [{**r, "label": r["run"]} for r in overall if r["measure"] == measure]
    runs = list(dict.fromkeys(r["run"] for r in overall if r["run"] is not None))
    table = {run: {r["measure"]: r for r in overall if r["run"] == run} for run in runs}
    relevant = next((r for r in overall if r["measure"] == "n_relevant"), None)
    per_topic = [{**r, "label": r["topic"]} for r in estimates["results"]
                 if r["topic"] != "all" and r["measure"] == "n_relevant"]
    return {
        "sampling": sampling_service.sampling_public(session, sampling),
        "collection": collection, "rounds": rounds, "estimates": estimates, "stale": stale,
        "measure": measure, "measures": measures, "table": table, "n_relevant": relevant,
        # the topics furthest from the target first
        "stopping": {**estimates["stopping"], "topics": sorted(
            estimates["stopping"]["topics"],
            key=lambda c: (c["estimated_recall"] is not None, c["estimated_recall"] or 0.0,
                           c["topic"]))},
        "title": f"Sampling #{sampling.id}",
        "figures": figures(
            estimates=charts.intervals(rows, title=f"{measure}: estimate over topics, 95 % "
                                                   "interval", x="run", y=str(measure)),
            relevant=charts.intervals(per_topic, title="Relevant documents per topic "
                                                       "(estimate, 95 % interval)",
                                      x="topic", y="relevant documents"),
            rounds=charts.bars([r["number"] for r in rounds], [r["drawn"] for r in rounds],
                               title="Pairs per round", x="round", y="pairs",
                               color="#5aa469"),
        ),
    }


def sampling_page_context(session: Any, sampling: Any, inputs: Any) -> dict[str, Any]:
    """A sampling's page as the dashboard prefill builds it: what the page recomputes is kept in
    ``inputs`` (the application's NextInputs), so the person's first request finds it."""
    return _sampling_context(session, sampling, None, TARGET_RECALL, inputs)


@router.get("/ui/samplings/{s}", response_class=HTMLResponse,
            dependencies=[require_scope("read")])
def sampling_page(request: Request, session: SessionDep, sampling: SamplingDep,
                  target: Annotated[StoppingTarget, Query()], inputs: InputsDep,
                  measure: Measure = None,
                  stop: StopRule | None = None) -> HTMLResponse:
    """``target_recall`` sets the stopping check's target; ``stop`` (and the target) fill the
    draw form, so that the page after a draw offers the same rule again."""
    return render(request, "sampling.html", {
        **_sampling_context(session, sampling, measure, target.target_recall, inputs),
        "draw": {"stop": stop or "", "target_recall": target.target_recall}})


@router.get("/ui/samplings/{s}/rounds", response_class=RedirectResponse,
            dependencies=[require_scope("read")])
def rounds_address(sampling: SamplingDep) -> RedirectResponse:
    """The draw form's address opened again (the address bar after a refused draw, a reload):
    the sampling's page, where the form is."""
    return RedirectResponse(f"/ui/samplings/{sampling.id}", status_code=303)


@router.post("/ui/samplings/{s}/rounds", response_class=HTMLResponse,
             dependencies=[require_scope("admin"), CheckedForm])
async def draw_round(request: Request, session: SessionDep, idempotency: FormIdempotencyDep,
                     sampling: SamplingDep) -> Response:
    """The API's POST /samplings/{s}/rounds, from the sampling page's button (one round per
    form key)."""
    form = await request.form()
    # What the form sent, shown again in the form when the draw is refused.
    draw: dict[str, Any] = {"stop": str(form.get("stop") or ""),
                            "target_recall": str(form.get("target_recall") or "").strip(),
                            "force": form.get("force") in ("on", "true", "1")}
    target_recall = TARGET_RECALL  # the stopping check's, until the form's holds

    async def prepare() -> Submission:
        nonlocal target_recall
        try:
            params = RoundRequest(force=draw["force"],
                                  stop=draw["stop"] or None,
                                  target_recall=draw["target_recall"] or target_recall)
        except ValidationError as exc:
            raise invalid_fields(exc) from None
        target_recall = params.target_recall
        sampling_id = sampling.id

        def work() -> str:
            drawn = sampling_rounds.draw_round(session, sampling=sampling, force=params.force,
                                                stop_rule=params.stop,
                                                target_recall=params.target_recall)
            skipped = len(drawn["stopped"] or [])
            message = (f"round {drawn['number']}: {plural(drawn['drawn'], 'pair')} to judge"
                       + (f"; {plural(skipped, 'topic')} at a recall of "
                          f"{drawn['target_recall']} ({drawn['stop_rule']}) skipped"
                          if skipped else "")
                       + (" (short: the pool ran out)" if drawn["short"] and not skipped
                          else ""))
            query = ({"stop": params.stop, "target_recall": str(params.target_recall)}
                     if params.stop else {})
            return message_location(f"/ui/samplings/{sampling_id}", message, query=query)

        return form_body(form), work

    def refused(exc: Refusal) -> HTMLResponse:
        session.rollback()
        error = refusal(exc)
        context = _sampling_context(session, sampling, None, target_recall,
                                    get_next_inputs(request))
        return render(request, "sampling.html", {**context, "draw": draw, "error": error.body()},
                      status_code=error.status_code)

    return await answer_form(request, session, idempotency, prepare, refused)
