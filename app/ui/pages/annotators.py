"""A collection's annotator page (history, confusion against gold and a fit, judgments) and the
comparison of its fits.
"""

from __future__ import annotations

import math

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from app.aggregations import annotator_results
from app.aggregations import service as aggregations_service
from app.aggregations.agreement import agreement_matrix
from app.aggregations.comparison import comparison
from app.aggregations.deps import get_listing_cache
from app.api.deps import OptionalId, SessionDep
from app.auth.deps import require_scope
from app.collections.deps import CollectionDep
from app.judgments import service as judgments_service
from app.ui import charts
from app.ui.messages import plural
from app.ui.pages.render import PAGE_SIZE, Page, figures, render

router = APIRouter(tags=["dashboard"], include_in_schema=False)


@router.get("/ui/collections/{c}/annotators/{annotator:path}", response_class=HTMLResponse,
            dependencies=[require_scope("read")])
def annotator_page(request: Request, session: SessionDep, collection: CollectionDep,
                   annotator: str, aggregation: OptionalId = None,
                   page: Page = 1) -> HTMLResponse:
    history = annotator_results.annotator_history(session, collection=collection,
                                                  annotator=annotator)
    reference = aggregations_service.reference_aggregation(session, collection=collection,
                                                           aggregation_id=aggregation)
    confusion = annotator_results.annotator_confusion(
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
    rows = comparison(session, collection=collection, cache=cache)
    matrix = agreement_matrix(session, collection=collection, cache=cache)
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
