"""The collections' pages: the home page (the caller's collections, the new-collection form) and
a collection's page (its counts and charts, its fits, evaluations and samplings, and the forms
that start them), with where a collection's forms go when done or refused.
"""

from __future__ import annotations

import functools
import json
from typing import Any
from urllib.parse import quote

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from pydantic import ValidationError

from app.aggregations import service as aggregations_service
from app.aggregations.deps import get_listing_cache
from app.aggregations.gold import check_fits
from app.aggregations.schemas import public
from app.api.deps import SessionDep
from app.auth.deps import PrincipalDep, require_scope
from app.auth.ui import HOME  # the dashboard's home, where signing in lands
from app.collections import service as collections_service
from app.collections.deps import CREATE as CREATE_COLLECTION
from app.collections.deps import CollectionDep
from app.collections.schemas import CollectionCreate
from app.collections.tables import Collection
from app.corpus import service as corpus_service
from app.evaluations import service as evaluations_service
from app.evaluations.schemas import EvaluationCreate
from app.evaluations.schemas import public as evaluation_public
from app.sampling import service as sampling_service
from app.ui import charts
from app.ui.forms import (
    FormDep,
    FormIdempotencyDep,
    Refusal,
    Submission,
    answer_form,
    form_body,
    refusal,
)
from app.ui.messages import Kind, message_location, signed_location
from app.ui.pages.fields import CheckedForm, invalid_fields, scale_values, whole_number
from app.ui.pages.render import figures, render
from app.ui.prefill import (
    FITS_PER_COLLECTION_PAGE,
    SAMPLINGS_PER_COLLECTION_PAGE,
    prefill_of,
)
from models.registry import METHOD_PATHS, get_method

router = APIRouter(tags=["dashboard"], include_in_schema=False)
HOME_LIMIT = 200  # collections on the home page (each row counts its judgments)


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
    warmer = prefill_of(request.app.state)
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
    statuses = check_fits(session, collection=collection, fits=fits,
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
            collections_service.collection_created(session, principal, collection)
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
