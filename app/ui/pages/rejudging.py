"""The page of tasks to judge next after a fit (``GET /api/v1/aggregations/{a}/next``), a
page at a time, with the whole list as TSV or JSON.
"""

from __future__ import annotations

import secrets
from typing import Annotated, Any
from urllib.parse import urlencode

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse
from pydantic import ValidationError

from app.aggregations.deps import AggregationDep
from app.aggregations.schemas import public
from app.api.deps import SessionDep
from app.auth.deps import require_scope
from app.collections.tables import Collection
from app.core.errors import DomainError
from app.core.integers import MAX_SEED
from app.sampling.deps import get_next_inputs
from app.sampling.rejudging import next_tasks
from app.sampling.schemas import NextQuery
from app.ui.pages.fields import invalid_fields
from app.ui.pages.render import PAGE_SIZE, Page, render

router = APIRouter(tags=["dashboard"], include_in_schema=False)


NEXT_STRATEGIES = (("uncertainty", "uncertainty: highest posterior entropy"),
                   ("expected-change", "expected change: most likely to change its label"),
                   ("random", "random"))


@router.get("/ui/aggregations/{a}/next", response_class=HTMLResponse,
            dependencies=[require_scope("read")])
def next_page(request: Request, session: SessionDep, aggregation: AggregationDep,
              n: Annotated[str, Query()] = "20",
              strategy: Annotated[str, Query()] = "uncertainty",
              max_judgments: Annotated[str, Query()] = "",
              min_annotator_judgments: Annotated[str, Query()] = "",
              per_annotator: Annotated[str, Query()] = "",
              seed: Annotated[str, Query()] = "",
              page: Page = 1) -> HTMLResponse:
    """The tasks to judge next (``GET /api/v1/aggregations/{a}/next``) as a table of
    PAGE_SIZE rows a page, with the whole list as TSV or JSON for a crowd platform. The fields
    are read as the API reads its query (``NextQuery``; an empty field: the API's default, no
    cap), a refusal shown above the form with the API's message.

    A page is the list's rows ``(page - 1) * PAGE_SIZE`` on: the list's first ``k`` tasks
    (their order, scores, annotators and who each goes to) do not depend on how many follow, so
    a page asks for only as many as it shows, plus one to know whether another page follows.
    The random order gets a seed on its first page, which its other pages and its downloads
    keep."""
    collection = session.get(Collection, aggregation.collection_id)
    sent = {"n": n, "strategy": strategy, "max_judgments": max_judgments,
            "min_annotator_judgments": min_annotator_judgments,
            "per_annotator": per_annotator, "seed": seed}
    query: dict[str, Any] = {k: v.strip() or None for k, v in sent.items()}
    offset = (page - 1) * PAGE_SIZE
    context: dict[str, Any] = {"aggregation": public(aggregation), "collection": collection,
                               "title": f"Judge next: fit #{aggregation.id}",
                               "strategies": NEXT_STRATEGIES, "query": query, "tasks": [],
                               "page": page, "offset": offset, "page_size": PAGE_SIZE}
    try:
        fields = {k: v for k, v in query.items() if v is not None}
        fields.setdefault("n", 20)  # the page's default: 20 tasks
        try:
            params = NextQuery.model_validate(fields)
        except ValidationError as exc:
            raise invalid_fields(exc) from None
        if params.strategy == "random" and params.seed is None:
            params = params.model_copy(update={"seed": secrets.randbelow(MAX_SEED + 1)})
        # as read, in the form's order (an empty minimum stays out of the links)
        query = context["query"] = {k: getattr(params, k) for k in query}
        if "min_annotator_judgments" not in fields:
            query["min_annotator_judgments"] = None
        wanted = min(query["n"], offset + PAGE_SIZE + 1)
        result = next_tasks(session, aggregation=aggregation, n=wanted,
                            strategy=params.strategy, max_judgments=params.max_judgments,
                            n_annotators=params.annotators, seed=params.seed,
                            inputs=get_next_inputs(request),
                            min_annotator_judgments=params.min_annotator_judgments,
                            per_annotator=params.per_annotator,
                            keep_could_not_judge=params.keep_could_not_judge)
    except DomainError as exc:  # the API's error on the page (a fit not succeeded: 409)
        context["error"] = exc.body()
        status = exc.status_code
    else:
        rows = result["data"]
        context["tasks"] = rows[offset:offset + PAGE_SIZE]
        context["more"] = len(rows) > offset + PAGE_SIZE
        # the list's length, once known: all n asked for, or fewer (the tasks ran out)
        context["total"] = len(rows) if wanted == query["n"] or len(rows) < wanted else None
        status = 200
    shown = {k: v for k, v in query.items() if v is not None}
    context["api"] = f"/api/v1/aggregations/{aggregation.id}/next?" + urlencode(shown)
    context["page_query"] = shown  # what the pager's links keep
    return render(request, "next.html", context, status_code=status)
