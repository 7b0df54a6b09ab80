"""The page of tasks to judge next after a fit (``GET /api/v1/aggregations/{a}/next``), a
page at a time, with the whole list as TSV or JSON.
"""

from __future__ import annotations

import secrets
from typing import Annotated, Any
from urllib.parse import urlencode

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse

from app.aggregations.router import (
    AggregationDep,
    public,
)
from app.api.deps import SessionDep
from app.auth.deps import require_scope
from app.collections.tables import Collection
from app.core.errors import DomainError, InvalidInput
from app.core.integers import MAX_SEED
from app.sampling.rejudging import next_tasks
from app.sampling.router import get_next_inputs
from app.ui.pages.fields import whole_number
from app.ui.pages.render import PAGE_SIZE, Page, render
from models.sampling.rejudge import STRATEGIES

router = APIRouter(tags=["dashboard"], include_in_schema=False)


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
