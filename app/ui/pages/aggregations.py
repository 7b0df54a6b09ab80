"""A fit's pages and forms: start a fit, cancel it, its results page (annotators, task
uncertainty, charts) and a task's page.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from pydantic import ValidationError
from starlette.concurrency import run_in_threadpool

from app.aggregations import annotator_results, task_results
from app.aggregations import service as aggregations_service
from app.aggregations.deps import AggregationDep, get_listing_cache
from app.aggregations.gold import check_fits
from app.aggregations.schemas import AggregationCreate, ParamsNotJson, parse_params, public
from app.aggregations.warm import refits_warm
from app.api.deps import RunnerDep, SessionDep, id_path
from app.auth.deps import PrincipalDep, require_scope
from app.auth.principal import OPEN
from app.collections.deps import CollectionDep
from app.collections.tables import Collection
from app.core.errors import InvalidInput
from app.ui import charts
from app.ui.forms import (
    FormDep,
    FormIdempotencyDep,
    Submission,
    answer_form,
    form_body,
    refusal,
)
from app.ui.pages.collections import collection_path, collection_with, done, form_error
from app.ui.pages.fields import CheckedForm, invalid_fields, whole_number
from app.ui.pages.render import figures, render
from app.ui.prefill import (
    page_key,
)

router = APIRouter(tags=["dashboard"], include_in_schema=False)


@router.post("/ui/collections/{c}/aggregations", response_class=HTMLResponse,
             dependencies=[require_scope("admin"), CheckedForm])
async def start_fit(request: Request, session: SessionDep, runner: RunnerDep,
                    principal: PrincipalDep, idempotency: FormIdempotencyDep,
                    collection: CollectionDep) -> Response:
    """The API's POST /collections/{c}/aggregations, from a form (one fit per form key)."""
    form = await request.form()

    async def prepare() -> Submission:
        try:
            params = parse_params(str(form.get("params") or ""))
        except ParamsNotJson as exc:
            raise InvalidInput(f"parameters: {exc}", code="invalid_body", line=exc.line) from None
        try:
            spec = AggregationCreate(method=str(form.get("method") or ""), params=params,
                                     graded=form.get("graded") in ("on", "true", "1"),
                                     seed=whole_number(form, "seed", None),
                                     warm_start=whole_number(form, "warm_start", None))
        except ValidationError as exc:
            raise invalid_fields(exc) from None

        def work() -> str:
            aggregation = aggregations_service.create_aggregation(
                session, runner=runner, collection=collection, spec=spec)
            aggregations_service.fit_started(session, principal, collection, aggregation)
            warm = "" if spec.warm_start is None else f", starting from fit #{spec.warm_start}"
            return collection_with(collection,
                                   f"fit #{aggregation.id} ({aggregation.method}) queued{warm}")

        return form_body(form), work

    return await answer_form(request, session, idempotency, prepare, lambda exc: form_error(
        request, session, collection, exc, "fit", form))



@router.get("/ui/aggregations/{a}/cancel", response_class=RedirectResponse,
            dependencies=[require_scope("read")])
def cancel_address(session: SessionDep, aggregation: AggregationDep) -> RedirectResponse:
    """The cancel form's address opened again: the collection's page, where the form is."""
    collection = session.get(Collection, aggregation.collection_id)
    assert collection is not None
    return RedirectResponse(collection_path(collection), status_code=303)



@router.post("/ui/aggregations/{a}/cancel", response_class=HTMLResponse,
             dependencies=[require_scope("admin"), CheckedForm])
async def cancel_fit(request: Request, session: SessionDep, runner: RunnerDep, form: FormDep,
                     principal: PrincipalDep, idempotency: FormIdempotencyDep,
                     aggregation: AggregationDep) -> Response:
    """The API's DELETE /aggregations/{a}, from a form (a repeat says "cancelled" again)."""
    collection = await run_in_threadpool(session.get, Collection, aggregation.collection_id)
    assert collection is not None
    aggregation_id = aggregation.id

    async def prepare() -> Submission:
        def work() -> str:
            cancelled = aggregations_service.cancel_aggregation(session, runner=runner,
                                                                aggregation=aggregation)
            aggregations_service.fit_cancelled(session, principal, cancelled)
            return collection_with(collection, f"fit #{aggregation_id} cancelled")

        return form_body(form), work

    return await answer_form(request, session, idempotency, prepare, lambda exc: done(
        request, collection, f"fit #{aggregation_id}: {refusal(exc).detail}", "error"))



@router.get("/ui/aggregations/{a}", response_class=HTMLResponse,
            dependencies=[require_scope("read")])
def aggregation_page(request: Request, session: SessionDep, principal: PrincipalDep,
                     aggregation: AggregationDep) -> HTMLResponse:
    collection = session.get(Collection, aggregation.collection_id)
    assert collection is not None
    cache = get_listing_cache(request)
    # The gold can change under a succeeded fit: its status is read per request, never memoised.
    statuses = check_fits(session, collection=collection, fits=[aggregation], cache=cache)
    context: dict[str, Any] = {"aggregation": public(aggregation, statuses.get(aggregation.id)),
                               "collection": collection,
                               "title": f"Fit #{aggregation.id} ({aggregation.method})",
                               "figures": "{}", "uncertain": [],
                               # the loop of re-judging: refit on the judgments since, warm
                               # (never offered where the API would refuse it)
                               "warm_startable": refits_warm(aggregation.method,
                                                             aggregation.params or {})}
    if aggregation.status == "succeeded":
        # A succeeded fit never changes: its charts and tables are built once per process.
        context.update(cache.memo(page_key(aggregation.id), lambda: results_context(
            session, cache, principal, aggregation)))
    return render(request, "aggregation.html", context)


def fit_page(session: Any, cache: Any, aggregation: Any) -> dict[str, Any]:
    """The page context of a succeeded fit as the dashboard prefill builds it (every principal
    who may open the page sees the same rows: the fit's collection is checked per request)."""
    return results_context(session, cache, OPEN, aggregation)


def results_context(session: Any, cache: Any, principal: Any,
                     aggregation: Any) -> dict[str, Any]:
    listing = annotator_results.annotator_page(
        session, cache=cache, aggregation_id=aggregation.id, visible=principal.can_see,
        sort="-competence", min_judgments=0, q=None, limit=10**9, offset=0)
    summary = task_results.task_summary(session, aggregation=aggregation)
    uncertain, _ = task_results.task_results(
        session, aggregation=aggregation, topic=None, sort="-uncertainty", limit=20, offset=0)
    rows = listing.data
    return {
        "n_annotators": listing.count, "n_tasks": summary["n_tasks"], "uncertain": uncertain,
        # ordinal fits report each annotator's spread (noise in grade units) in the last column
        "spread": any((r.get("extra") or {}).get("spread") is not None for r in rows[:1]),
        # columns the method fills (majority vote, MACE, DS: no bias, no noise variance)
        "has_bias": any(r.get("bias") is not None for r in rows),
        "has_last": any(r.get("noise_variance") is not None
                        or (r.get("extra") or {}).get("spread") is not None for r in rows),
        "figures": figures(
            competence=charts.histogram([r["competence"] for r in rows],
                                        title="Competence", x="competence"),
            scatter=charts.competence_scatter(rows),
            uncertainty=charts.histogram(summary["uncertainty"], title="Task uncertainty",
                                         x="entropy of the posterior (nats)", color="#d9822b"),
            difficulty=charts.histogram(summary["difficulty"], title="Task difficulty",
                                        x="difficulty", color="#8e5ea2"),
            p_relevant=charts.histogram(summary["p_relevant"], title="P(relevant)",
                                        x="P(relevant)", color="#5aa469"),
            per_topic=charts.per_topic(summary["per_topic"]),
            reliability=charts.reliability_diagram(
                (aggregation.evaluation or {}).get("reliability"),
                graded=(aggregation.evaluation or {}).get("kappa") is not None),
        ),
    }



@router.get("/ui/aggregations/{a}/tasks/{task}", response_class=HTMLResponse,
            dependencies=[require_scope("read")])
def task_page(request: Request, session: SessionDep, aggregation: AggregationDep,
              task: Annotated[int, id_path("task")]) -> HTMLResponse:
    detail = task_results.task_detail(session, aggregation=aggregation, task_id=task)
    collection = session.get(Collection, aggregation.collection_id)
    result = detail["result"] or {}
    classes = detail["classes"]
    labels = [j["label"] for j in detail["judgments"]]
    return render(request, "task.html", {
        "aggregation": public(aggregation), "collection": collection, "task": detail,
        "title": f"Task {detail['topic']} / {detail['doc']}",
        "figures": figures(
            posterior=charts.bars(classes, [round(p, 4) for p in result.get("proba") or []],
                                  title="Posterior over labels", x="label", y="probability"),
            votes=charts.bars(sorted(set(labels)),
                              [labels.count(v) for v in sorted(set(labels))],
                              title="Judgments per label", x="label", y="judgments",
                              color="#5aa469"),
        )})
