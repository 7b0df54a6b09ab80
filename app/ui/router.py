"""The dashboard: server-rendered pages (Jinja2) over the same service functions as the JSON API.

Every page declares its scope and loads collection-owned rows through the API's load-or-404
dependencies, so the API's access rules apply. Forms carry the CSRF double-submit token and a
one-use key (app.ui.forms): a form sent twice is acted on once.
"""

from __future__ import annotations

import functools
import json
import math
import re
import secrets
from collections.abc import AsyncIterator
from typing import Annotated, Any
from urllib.parse import quote, urlencode

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from pydantic import ValidationError
from starlette.concurrency import run_in_threadpool

from app.aggregations import service as aggregations_service
from app.aggregations.router import (
    AggregationDep,
    fit_cancelled,
    fit_started,
    get_listing_cache,
    public,
)
from app.aggregations.schemas import AggregationCreate
from app.aggregations.warm import refits_warm
from app.api.deps import OptionalId, RunnerDep, SessionDep, id_path, judgments_arrived
from app.api.uploads import read_upload
from app.auth.csrf import FIELD, csrf_token, verify_csrf
from app.auth.deps import PrincipalDep, require_scope
from app.auth.principal import OPEN
from app.auth.ui import HOME  # the dashboard's home, where signing in lands
from app.collections import service as collections_service
from app.collections.deps import CollectionDep
from app.collections.router import CREATE as CREATE_COLLECTION
from app.collections.router import collection_created
from app.collections.schemas import CollectionCreate
from app.collections.tables import Collection
from app.core.errors import DomainError, InvalidInput
from app.core.integers import MAX_SEED
from app.corpus import service as corpus_service
from app.corpus.router import RUN_NAME_MAX_LENGTH, RUN_NAME_PATTERN
from app.evaluations import service as evaluations_service
from app.evaluations.router import public as evaluation_public
from app.evaluations.schemas import EvaluationCreate
from app.formats.judgments_file import parse_judgments
from app.formats.qrels import parse_qrels_with_lines
from app.judgments import service as judgments_service
from app.judgments.router import audited as judgments_audited
from app.judgments.router import gold_audited
from app.sampling import service as sampling_service
from app.sampling.rejudging import next_tasks
from app.sampling.router import get_next_inputs
from app.ui import charts
from app.ui.forms import (
    FORM_KEY,
    FormDep,
    FormIdempotencyDep,
    Refusal,
    Submission,
    answer_form,
    form_body,
    new_form_key,
    refusal,
)
from app.ui.messages import Kind, message_location, page_message, plural, signed_location
from app.ui.templating import header_context, templates
from app.ui.warm import (
    FITS_PER_COLLECTION_PAGE,
    SAMPLINGS_PER_COLLECTION_PAGE,
    page_key,
    warmer_of,
)
from models.registry import METHOD_PATHS, get_method
from models.sampling.rejudge import STRATEGIES

router = APIRouter(tags=["dashboard"], include_in_schema=False)
HOME_LIMIT = 200  # collections on the home page (each row counts its judgments)
PAGE_SIZE = 50
Page = Annotated[int, Query(ge=1, le=1_000_000)]


def render(request: Request, name: str, context: dict[str, Any], *,
           status_code: int = 200) -> HTMLResponse:
    """A page; every page carries the CSRF token for its forms (cookie set on first visit), and
    each form a new one-use key (``form_key()`` in the template, once per form); ``message``:
    the signed message in its address, if any (app.ui.messages)."""
    token = csrf_token(request)
    # Forms the signed-in key may not submit are left out (they would only answer 403).
    principal = getattr(request.state, "principal", None) or OPEN
    response = templates.TemplateResponse(
        request, name, {**context, "csrf_field": FIELD, "csrf": token,
                        "form_key_field": FORM_KEY, "form_key": new_form_key,
                        "can": principal.allows, "principal": principal,
                        "message": page_message(request), **header_context(request)},
        status_code=status_code)
    csrf_token(request, response)  # sets the cookie when the token is new
    return response


def figures(**specs: dict[str, Any] | None) -> str:
    """The page's charts as one JSON object for app.js ({} for the missing ones)."""
    return json.dumps({k: v for k, v in specs.items() if v is not None},
                      separators=(",", ":"), allow_nan=False).replace("</", "<\\/")


# --- collections -------------------------------------------------------------------------------

@router.get("/")
def home() -> RedirectResponse:
    """The site's root is the dashboard's home (signed in or not: the redirect needs no key)."""
    return RedirectResponse(HOME, status_code=307)


def _home_context(request: Request, session: Any, principal: Any) -> dict[str, Any]:
    """The collections the caller may see (the first HOME_LIMIT of them, by id), with counts."""
    rows, total = collections_service.list_collections(session, limit=HOME_LIMIT, offset=0,
                                                       only=principal.collections)
    cache = get_listing_cache(request)
    items = [{"collection": c, **collections_service.collection_overview(session, collection=c,
                                                                         cache=cache)}
             for c in rows]
    return {"items": items, "total": total, "title": "Collections"}


@router.get(HOME, response_class=HTMLResponse, dependencies=[require_scope("read")])
def collections_page(request: Request, session: SessionDep,
                     principal: PrincipalDep) -> HTMLResponse:
    return render(request, "collections.html", _home_context(request, session, principal))


@functools.cache
def methods() -> list[dict[str, Any]]:
    """Every method with its defaults, for the fit form (fixed for the life of the process)."""
    out = []
    for name in METHOD_PATHS:
        defaults = {k: v for k, v in get_method(name).defaults.items() if k != "random_state"}
        out.append({"name": name, "defaults": json.dumps(defaults, default=str, indent=1)})
    return out


def _collection_context(request: Request, session: Any,
                        collection: Collection) -> dict[str, Any]:
    stats = collections_service.collection_stats(session, collection=collection,
                                                 cache=get_listing_cache(request))
    fits, total = aggregations_service.list_aggregations(session, collection=collection,
                                                         limit=1000, offset=0)
    warmer = warmer_of(request.app.state)
    if warmer is not None:  # the fits a person is likely to open next
        done_ = [a.id for a in reversed(fits) if a.status == "succeeded"]
        for aggregation_id in done_[:FITS_PER_COLLECTION_PAGE]:
            warmer.aggregation(aggregation_id)
    follow_ups = _follow_ups(session, collection)
    if warmer is not None:  # and its latest samplings (their estimates take a second)
        for sampling in follow_ups["samplings"][:SAMPLINGS_PER_COLLECTION_PAGE]:
            warmer.sampling(sampling["id"])
    counts = stats.counts
    gold_share = counts.tasks_with_gold / counts.tasks if counts.tasks else None
    per_task = stats.judgments_per_task.histogram if stats.judgments_per_task else {}
    per_annotator = (stats.judgments_per_annotator.histogram
                     if stats.judgments_per_annotator else {})
    labels = stats.label_distribution
    gold = stats.gold
    # each succeeded fit against the current gold (checked once per state of the gold)
    statuses = aggregations_service.gold_statuses(session, collection=collection, fits=fits,
                                                  cache=get_listing_cache(request))
    return {
        "collection": collection, "stats": stats, "gold_share": gold_share,
        "fits": [public(a, statuses.get(a.id)) for a in reversed(fits)], "n_fits": total,
        "methods": methods(),
        "figures": figures(
            per_task=charts.integer_histogram(per_task, title="Judgments per task",
                                              x="judgments"),
            per_annotator=charts.integer_histogram(per_annotator,
                                                   title="Judgments per annotator",
                                                   x="judgments", color="#5aa469"),
            labels=charts.bars(list(labels), list(labels.values()), title="Label distribution",
                               x="label", y="judgments", color="#8e5ea2"),
            gold=charts.bars(["labelled", "could not judge", "without gold"],
                             [gold.labelled, gold.could_not_judge, gold.without_gold],
                             title="Gold coverage (tasks)", x="", y="tasks", color="#d9822b")
            if gold is not None else None,
        ),
        "title": collection.name,
        **follow_ups,
    }


def _follow_ups(session: Any, collection: Collection) -> dict[str, Any]:
    """The collection's evaluations and samplings, and what the forms that start them offer."""
    evaluations = evaluations_service.list_evaluations(session, collection=collection)
    samplings = sampling_service.list_samplings(session, collection=collection)
    default = EvaluationCreate.model_fields["measures"].get_default(call_default_factory=True)
    runs = corpus_service.list_runs(session, collection=collection)
    return {
        "evaluations": [{**evaluation_public(e).model_dump(),
                         "source": evaluations_service.source_label(e.source)}
                        for e in reversed(evaluations)],
        "samplings": list(reversed(samplings)),
        "runs": runs, "run_names": [r.name for r in runs],
        "default_measures": " ".join(default),
    }


@router.get("/ui/collections/{c}", response_class=HTMLResponse,
            dependencies=[require_scope("read")])
def collection_page(request: Request, session: SessionDep,
                    collection: CollectionDep) -> HTMLResponse:
    return render(request, "collection.html", _collection_context(request, session, collection))


async def checked_form(request: Request) -> AsyncIterator[None]:
    """verify_csrf for a form POST; the form's spooled files are closed when the request ends."""
    try:
        await verify_csrf(request)
        yield
    finally:
        await (await request.form()).close()


CheckedForm = Depends(checked_form)


def form_error(request: Request, session: Any, collection: Collection, exc: Refusal,
                form: str, sent: Any = None) -> HTMLResponse:
    """The collection page again, with the API's error (code, detail, line) above ``form`` and
    the form's fields as they were sent (``sent``: the submitted form; files are not kept)."""
    session.rollback()
    error = refusal(exc)
    kept = {k: v for k, v in (sent or {}).items() if isinstance(v, str)}
    return render(request, "collection.html",
                  {**_collection_context(request, session, collection), "error": error.body(),
                   "error_form": form, "sent": kept}, status_code=error.status_code)


def invalid_fields(exc: ValidationError) -> InvalidInput:
    """A form's fields failed the API's request model: the same message the API gives."""
    parts = [f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" if e["loc"] else e["msg"]
             for e in exc.errors()]  # a whole-model check (the scale) names no field
    return InvalidInput("; ".join(parts), code="invalid_body")


def whole_number(form: Any, name: str, default: int | None) -> int | None:
    """A form's number field: ``default`` when empty, 422 ``invalid_body`` when not a whole
    number (the request model then checks its range)."""
    text = str(form.get(name) or "").strip()
    if not text:
        return default
    if not re.fullmatch(r"-?[0-9]+", text):
        raise InvalidInput(f"{name} must be a whole number, not {text!r}", code="invalid_body")
    return int(text)


def could_not_judge(report: dict[str, Any]) -> str:
    """", N of them could not judge" for an upload that set gold to an ignore value, else ""."""
    n = report.get("gold_could_not_judge") or 0
    return f", {n:,} of them could not judge" if n else ""


def columns_not_read(report: dict[str, Any]) -> str:
    """"; columns not read: …" for a file whose header had columns no name matches, else ""."""
    names = report.get("ignored_columns") or []
    return f"; columns not read: {', '.join(names)}" if names else ""


def collection_path(collection: Collection) -> str:
    return f"/ui/collections/{quote(collection.name, safe='')}"


def collection_with(collection: Collection, message: str, kind: Kind = "ok") -> str:
    """The collection's page with ``message`` above it: where a form goes when it is done
    (unsigned: the form's answer signs it, app.ui.forms.submit_once)."""
    return message_location(collection_path(collection), message, kind=kind)


def done(request: Request, collection: Collection, message: str,
         kind: Kind = "ok") -> RedirectResponse:
    """303 to the collection's page with ``message``, signed for the browser of ``request``."""
    return RedirectResponse(signed_location(request, collection_with(collection, message, kind)),
                            status_code=303)


# The forms' addresses take POST only; opened with GET (the address bar after an error shown
# there, a reload, a bookmark) each answers 303 to the page the form is on, never a 405.
FORM_ADDRESSES = ("aggregations", "judgments", "gold", "runs", "evaluations", "samplings")


def form_address(collection: CollectionDep) -> RedirectResponse:
    """A collection form's address opened again: the collection's page."""
    return RedirectResponse(collection_path(collection), status_code=303)


for _form in FORM_ADDRESSES:
    router.add_api_route(f"/ui/collections/{{c}}/{_form}", form_address, methods=["GET"],
                         response_class=RedirectResponse, include_in_schema=False,
                         dependencies=[require_scope("read")])


@router.get("/ui/aggregations/{a}/cancel", response_class=RedirectResponse,
            dependencies=[require_scope("read")])
def cancel_address(session: SessionDep, aggregation: AggregationDep) -> RedirectResponse:
    """The cancel form's address opened again: the collection's page, where the form is."""
    collection = session.get(Collection, aggregation.collection_id)
    assert collection is not None
    return RedirectResponse(collection_path(collection), status_code=303)


@router.post("/ui/collections/{c}/judgments", response_class=HTMLResponse,
             dependencies=[require_scope("ingest"), CheckedForm])
async def upload_judgments(request: Request, session: SessionDep, principal: PrincipalDep,
                           idempotency: FormIdempotencyDep,
                           collection: CollectionDep) -> Response:
    """The API's POST /collections/{c}/judgments/file, from a form (stored once per form key)."""
    form = await request.form()

    async def prepare() -> Submission:
        upload = await read_upload(request, filename=None)
        if not upload.content:
            raise InvalidInput("choose a judgment file (TSV or CSV with a header)",
                               code="missing_file")
        rows = await run_in_threadpool(parse_judgments, upload.content)

        def work() -> str:
            report = judgments_audited(session, principal, collection, judgments_service.ingest(
                session, collection=collection, rows=rows, source="file",
                filename=upload.filename)).model_dump()
            return collection_with(
                collection, f"stored {plural(report['judgments'], 'judgment')} "
                            f"({plural(report['new_tasks'], 'new task')}, "
                            f"{plural(report['new_annotators'], 'new annotator')}, "
                            f"{plural(report['gold_labels'], 'gold label')}"
                            f"{could_not_judge(report)}) from {upload.filename or 'the file'}"
                            f"{columns_not_read(report)}")

        return form_body(form, upload), work

    answer = await answer_form(request, session, idempotency, prepare, lambda exc: form_error(
        request, session, collection, exc, "judgments"))
    if isinstance(answer, RedirectResponse):  # stored, now or by the form's first submit
        judgments_arrived(request, collection.id)
    return answer


@router.post("/ui/collections/{c}/gold", response_class=HTMLResponse,
             dependencies=[require_scope("admin"), CheckedForm])
async def upload_gold(request: Request, session: SessionDep, principal: PrincipalDep,
                      idempotency: FormIdempotencyDep, collection: CollectionDep) -> Response:
    """The API's PUT /collections/{c}/gold, from a form (mode replace or merge; once per form
    key)."""
    form = await request.form()
    mode = form.get("mode", "replace")

    async def prepare() -> Submission:
        if mode not in ("replace", "merge"):
            raise InvalidInput(f"mode must be replace or merge, not {mode!r}", code="invalid_body")
        upload = await read_upload(request, filename=None)
        if not upload.content:
            raise InvalidInput("choose a qrels file (topic 0 doc relevance)", code="missing_file")
        qrels, lines = await run_in_threadpool(parse_qrels_with_lines, upload.content)

        def work() -> str:
            report = judgments_service.set_gold(session, collection=collection, qrels=qrels,
                                                lines=lines, replace=mode == "replace")
            gold_audited(session, principal, collection, report, str(mode))
            cleared = (f"; {plural(report['cleared'], 'task')} no longer in the gold lost "
                       f"theirs" if report["cleared"] else "")
            return collection_with(collection,
                                   f"gold set for {plural(report['gold_labels'], 'task')}"
                                   f"{could_not_judge(report)} ({mode}; "
                                   f"{plural(report['new_tasks'], 'new task')}{cleared})")

        return form_body(form, upload), work

    return await answer_form(request, session, idempotency, prepare, lambda exc: form_error(
        request, session, collection, exc, "gold", form))


@router.post("/ui/collections/{c}/aggregations", response_class=HTMLResponse,
             dependencies=[require_scope("admin"), CheckedForm])
async def start_fit(request: Request, session: SessionDep, runner: RunnerDep,
                    principal: PrincipalDep, idempotency: FormIdempotencyDep,
                    collection: CollectionDep) -> Response:
    """The API's POST /collections/{c}/aggregations, from a form (one fit per form key)."""
    form = await request.form()

    async def prepare() -> Submission:
        params_text = str(form.get("params") or "").strip() or "{}"
        try:
            params = json.loads(params_text)
        except json.JSONDecodeError as exc:
            raise InvalidInput(f"parameters: not JSON ({exc.msg} at line {exc.lineno}, column "
                               f"{exc.colno})", code="invalid_body", line=exc.lineno) from None
        if not isinstance(params, dict):
            raise InvalidInput("parameters: a JSON object, e.g. {\"n_restarts\": 10}",
                               code="invalid_body")
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
            fit_started(session, principal, collection, aggregation)
            warm = "" if spec.warm_start is None else f", starting from fit #{spec.warm_start}"
            return collection_with(collection,
                                   f"fit #{aggregation.id} ({aggregation.method}) queued{warm}")

        return form_body(form), work

    return await answer_form(request, session, idempotency, prepare, lambda exc: form_error(
        request, session, collection, exc, "fit", form))


def scale_values(form: Any, name: str, default: list[int]) -> list[int]:
    """A form's list of scale values ("0 1 2", commas allowed): ``default`` when empty, 422
    ``invalid_body`` naming the field when a value is not a whole number."""
    text = str(form.get(name) or "").strip()
    if not text:
        return list(default)
    values = [v for v in re.split(r"[\s,]+", text) if v]
    for value in values:
        if not re.fullmatch(r"-?[0-9]+", value):
            raise InvalidInput(f"{name}: whole numbers separated by spaces, not {value!r}",
                               code="invalid_body")
    return [int(v) for v in values]


@router.get("/ui/collections", response_class=RedirectResponse,
            dependencies=[require_scope("read")])
def new_collection_address() -> RedirectResponse:
    """The new-collection form's address opened again: the home page, where the form is."""
    return RedirectResponse(HOME, status_code=303)


@router.post("/ui/collections", response_class=HTMLResponse,
             dependencies=[*CREATE_COLLECTION, CheckedForm])
async def create_collection(request: Request, session: SessionDep, principal: PrincipalDep,
                            form: FormDep, idempotency: FormIdempotencyDep) -> Response:
    """The API's POST /collections, from the home page's form (one collection per form key;
    audited as the API does); then the new collection's page."""
    fields = CollectionCreate.model_fields

    async def prepare() -> Submission:
        try:
            spec = CollectionCreate(
                name=str(form.get("name") or "").strip(),
                description=str(form.get("description") or "").strip() or None,
                labels=scale_values(form, "labels",
                                    fields["labels"].get_default(call_default_factory=True)),
                relevant_from=whole_number(form, "relevant_from",
                                           fields["relevant_from"].get_default()),
                ignore=scale_values(form, "ignore",
                                    fields["ignore"].get_default(call_default_factory=True)))
        except ValidationError as exc:
            raise invalid_fields(exc) from None

        def work() -> str:
            collection = collections_service.create_collection(session, spec=spec)
            collection_created(session, principal, collection)
            ignored = f", ignored {collection.ignore}" if collection.ignore else ""
            return collection_with(collection,
                                   f"collection {collection.name} created (scale "
                                   f"{collection.labels}, relevant from "
                                   f"{collection.relevant_from}{ignored})")

        return form_body(form), work

    def refused(exc: Refusal) -> HTMLResponse:
        session.rollback()
        error = refusal(exc)
        kept = {k: v for k, v in form.items() if isinstance(v, str)}
        return render(request, "collections.html",
                      {**_home_context(request, session, principal), "error": error.body(),
                       "error_form": "collection", "sent": kept}, status_code=error.status_code)

    return await answer_form(request, session, idempotency, prepare, refused)


@router.post("/ui/collections/{c}/runs", response_class=HTMLResponse,
             dependencies=[require_scope("ingest"), CheckedForm])
async def upload_run(request: Request, session: SessionDep, idempotency: FormIdempotencyDep,
                     collection: CollectionDep) -> Response:
    """The API's PUT /collections/{c}/runs/{name}, from a form (stored once per form key; a run
    of the same name is replaced, as by the API)."""
    form = await request.form()
    name = str(form.get("name") or "").strip()

    async def prepare() -> Submission:
        if not name or len(name) > RUN_NAME_MAX_LENGTH or not re.fullmatch(RUN_NAME_PATTERN,
                                                                           name):
            raise InvalidInput(f"name: letters, digits, '.', '_', '+', '-', starting with a "
                               f"letter or digit, at most {RUN_NAME_MAX_LENGTH} characters; "
                               f"not {name!r}", code="invalid_body")
        upload = await read_upload(request, filename=None)
        if not upload.content:
            raise InvalidInput("choose a run file (topic Q0 doc rank score tag)",
                               code="missing_file")

        def work() -> str:
            run, unknown = corpus_service.store_run(session, collection=collection, name=name,
                                                    raw=upload.content)
            missing = (f"; {plural(unknown, 'topic')} not in the collection (kept)"
                       if unknown else "")
            return collection_with(collection,
                                   f"run {run.name} stored: {plural(run.n_topics, 'topic')}, "
                                   f"{plural(run.n_lines, 'line')}{missing}")

        return form_body(form, upload), work

    return await answer_form(request, session, idempotency, prepare, lambda exc: form_error(
        request, session, collection, exc, "run", form))


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
            fit_cancelled(session, principal, cancelled)
            return collection_with(collection, f"fit #{aggregation_id} cancelled")

        return form_body(form), work

    return await answer_form(request, session, idempotency, prepare, lambda exc: done(
        request, collection, f"fit #{aggregation_id}: {refusal(exc).detail}", "error"))


# --- aggregations ------------------------------------------------------------------------------

@router.get("/ui/aggregations/{a}", response_class=HTMLResponse,
            dependencies=[require_scope("read")])
def aggregation_page(request: Request, session: SessionDep, principal: PrincipalDep,
                     aggregation: AggregationDep) -> HTMLResponse:
    collection = session.get(Collection, aggregation.collection_id)
    assert collection is not None
    cache = get_listing_cache(request)
    # The gold can change under a succeeded fit: its status is read per request, never memoised.
    statuses = aggregations_service.gold_statuses(session, collection=collection,
                                                  fits=[aggregation], cache=cache)
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
    """The page context of a succeeded fit as the dashboard warmer builds it (every principal
    who may open the page sees the same rows: the fit's collection is checked per request)."""
    return results_context(session, cache, OPEN, aggregation)


def results_context(session: Any, cache: Any, principal: Any,
                     aggregation: Any) -> dict[str, Any]:
    listing = aggregations_service.annotator_page(
        session, cache=cache, aggregation_id=aggregation.id, visible=principal.can_see,
        sort="-competence", min_judgments=0, q=None, limit=10**9, offset=0)
    summary = aggregations_service.task_summary(session, aggregation=aggregation)
    uncertain, _ = aggregations_service.task_results(
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
        ),
    }


NEXT_STRATEGIES = (("uncertainty", "uncertainty: highest posterior entropy"),
                   ("expected-change", "expected change: most likely to change its label"),
                   ("random", "random"))


@router.get("/ui/aggregations/{a}/next", response_class=HTMLResponse,
            dependencies=[require_scope("read")])
def next_page(request: Request, session: SessionDep, aggregation: AggregationDep,
              n: Annotated[int, Query(ge=1, le=10_000)] = 20,
              strategy: Annotated[str, Query()] = "uncertainty",
              max_judgments: Annotated[str, Query()] = "",
              min_annotator_judgments: Annotated[str, Query()] = "",
              per_annotator: Annotated[str, Query()] = "",
              seed: Annotated[int | None, Query(ge=0, le=MAX_SEED)] = None,
              page: Page = 1) -> HTMLResponse:
    """The tasks to judge next (``GET /api/v1/aggregations/{a}/next``) as a table of
    PAGE_SIZE rows a page, with the whole list as TSV or JSON for a crowd platform.

    A page is the list's rows ``(page - 1) * PAGE_SIZE`` on: the list's first ``k`` tasks
    (their order, scores, annotators and who each goes to) do not depend on how many follow, so
    a page asks for only as many as it shows, plus one to know whether another page follows.
    The random order gets a seed on its first page, which its other pages and its downloads
    keep."""
    collection = session.get(Collection, aggregation.collection_id)
    if strategy == "random" and seed is None:
        seed = secrets.randbelow(MAX_SEED + 1)
    query: dict[str, Any] = {"n": n, "strategy": strategy,
                             "max_judgments": max_judgments.strip() or None,
                             "min_annotator_judgments": min_annotator_judgments.strip() or None,
                             "per_annotator": per_annotator.strip() or None, "seed": seed}
    offset = (page - 1) * PAGE_SIZE
    context: dict[str, Any] = {"aggregation": public(aggregation), "collection": collection,
                               "title": f"Judge next: fit #{aggregation.id}",
                               "strategies": NEXT_STRATEGIES, "query": query, "tasks": [],
                               "page": page, "offset": offset, "page_size": PAGE_SIZE}
    try:
        # the API's codes for the same mistakes (an empty cap field means no cap)
        if strategy not in STRATEGIES:
            raise InvalidInput(f"strategy must be one of {', '.join(STRATEGIES)}, "
                               f"not {strategy!r}", code="invalid_body")
        query["max_judgments"] = whole_number(query, "max_judgments", None)
        if query["max_judgments"] is not None and query["max_judgments"] < 1:
            raise InvalidInput("max_judgments must be at least 1", code="invalid_body")
        query["min_annotator_judgments"] = whole_number(query, "min_annotator_judgments", None)
        if query["min_annotator_judgments"] is not None and query["min_annotator_judgments"] < 0:
            raise InvalidInput("min_annotator_judgments must be at least 0", code="invalid_body")
        query["per_annotator"] = whole_number(query, "per_annotator", None)
        if query["per_annotator"] is not None and not 1 <= query["per_annotator"] <= 10_000:
            raise InvalidInput("per_annotator must be from 1 to 10000", code="invalid_body")
        wanted = min(n, offset + PAGE_SIZE + 1)
        result = next_tasks(session, aggregation=aggregation, n=wanted, strategy=strategy,
                            max_judgments=query["max_judgments"], n_annotators=10, seed=seed,
                            inputs=get_next_inputs(request),
                            min_annotator_judgments=query["min_annotator_judgments"] or 0,
                            per_annotator=query["per_annotator"])
    except DomainError as exc:  # the API's error on the page (a fit not succeeded: 409)
        context["error"] = exc.body()
        status = exc.status_code
    else:
        rows = result["data"]
        context["tasks"] = rows[offset:offset + PAGE_SIZE]
        context["more"] = len(rows) > offset + PAGE_SIZE
        # the list's length, once known: all n asked for, or fewer (the tasks ran out)
        context["total"] = len(rows) if wanted == n or len(rows) < wanted else None
        status = 200
    shown = {k: v for k, v in query.items() if v is not None}
    context["api"] = f"/api/v1/aggregations/{aggregation.id}/next?" + urlencode(shown)
    context["page_query"] = shown  # what the pager's links keep
    return render(request, "next.html", context, status_code=status)


@router.get("/ui/aggregations/{a}/tasks/{task}", response_class=HTMLResponse,
            dependencies=[require_scope("read")])
def task_page(request: Request, session: SessionDep, aggregation: AggregationDep,
              task: Annotated[int, id_path("task")]) -> HTMLResponse:
    detail = aggregations_service.task_detail(session, aggregation=aggregation, task_id=task)
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


# --- annotators, comparison --------------------------------------------------------------------

@router.get("/ui/collections/{c}/annotators/{annotator:path}", response_class=HTMLResponse,
            dependencies=[require_scope("read")])
def annotator_page(request: Request, session: SessionDep, collection: CollectionDep,
                   annotator: str, aggregation: OptionalId = None,
                   page: Page = 1) -> HTMLResponse:
    history = aggregations_service.annotator_history(session, collection=collection,
                                                     annotator=annotator)
    reference = aggregations_service.reference_aggregation(session, collection=collection,
                                                           aggregation_id=aggregation)
    confusion = aggregations_service.annotator_confusion(
        session, collection=collection, annotator=annotator, aggregation=reference)
    judgments, total = judgments_service.list_judgments(
        session, collection=collection, topic=None, doc=None, annotator=annotator,
        limit=PAGE_SIZE, offset=(page - 1) * PAGE_SIZE)
    pages = max(1, math.ceil(total / PAGE_SIZE))
    gold, agg = confusion["vs_gold"], confusion["vs_aggregated"]
    return render(request, "annotator.html", {
        "collection": collection, "annotator": annotator, "history": history,
        "reference": reference, "judgments": judgments, "total": total, "page": page,
        "pages": pages, "confusion": confusion, "title": f"Annotator {annotator}",
        "figures": figures(
            history=charts.history_lines(history["data"]),
            vs_gold=charts.heatmap(gold["columns"], gold["labels"], gold["counts"],
                                   title=f"Against gold ({plural(gold['total'], 'judgment')})",
                                   x="gold label", y="their label") if gold["total"] else None,
            vs_aggregated=charts.heatmap(
                agg["columns"], agg["labels"], agg["counts"],
                title=f"Against fit #{confusion['aggregation_id']} "
                      f"({plural(agg['total'], 'judgment')})",
                x="aggregated label" if confusion["aggregation_graded"]
                or collection.labels == [0, 1] else "aggregated relevance (1: relevant)",
                y="their label") if agg["total"] else None,
        )})


@router.get("/ui/collections/{c}/comparison", response_class=HTMLResponse,
            dependencies=[require_scope("read")])
def comparison_page(request: Request, session: SessionDep,
                    collection: CollectionDep) -> HTMLResponse:
    cache = get_listing_cache(request)
    rows = aggregations_service.comparison(session, collection=collection, cache=cache)
    matrix = aggregations_service.agreement_matrix(session, collection=collection, cache=cache)
    methods = {r["aggregation_id"]: r["method"] for r in rows}
    names = [f"#{i} {methods.get(i, '')}" for i in matrix["aggregation_ids"]]
    return render(request, "comparison.html", {
        "collection": collection, "rows": rows, "matrix": matrix, "names": names,
        "title": f"{collection.name}: comparison of fits",
        "figures": figures(
            metrics=charts.metrics_bars(sorted(rows, key=lambda r: r["aggregation_id"])),
            agreement=charts.heatmap(names, names, matrix["agreement"],
                                     title="Agreement of the qrels (share of tasks with the "
                                           "same label; graded vs binary: relevance)",
                                     x="fit", y="fit"),
        )})

