"""The dashboard's judges page: ``/ui/collections/{c}/judges`` (judging the judges), from the
service the API's ``GET /collections/{c}/judge-agreement`` answers with."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse

from app.aggregations.service import aggregation_not_found, get_aggregation
from app.api.deps import SessionDep
from app.auth.deps import require_scope
from app.collections.deps import CollectionDep
from app.judges import agreement
from app.judges import service as judges_service
from app.ui import charts
from app.ui.pages.render import figures, render

router = APIRouter(tags=["dashboard"], include_in_schema=False)


@router.get("/ui/collections/{c}/judges", response_class=HTMLResponse,
            dependencies=[require_scope("read")])
def judges_page(request: Request, session: SessionDep, collection: CollectionDep,
                aggregation: Annotated[int | None, Query(ge=1, le=2**63 - 1)] = None,
                min_tasks: Annotated[int, Query(ge=1, le=1_000_000)] = 20) -> HTMLResponse:
    """The judges, a leaderboard (each judge and annotator with ``min_tasks`` tasks against the
    gold and a fit), Krippendorff's α and a judge × judge agreement heatmap."""
    fit = None
    if aggregation is not None:
        fit = get_aggregation(session, aggregation_id=aggregation)
        if fit.collection_id != collection.id:
            raise aggregation_not_found(aggregation)
    report = agreement.judge_agreement(session, collection=collection, aggregation=fit,
                                       min_tasks=min_tasks)
    judges = judges_service.list_judges(session, collection=collection)
    pair = report["pairwise"]
    return render(request, "judges.html", {
        "collection": collection, "report": report, "judges": judges, "fit": fit,
        "min_tasks": min_tasks, "title": f"{collection.name}: judges",
        "figures": figures(
            pairwise=charts.heatmap(pair["names"], pair["names"], pair["quadratic_kappa"],
                                    title="Agreement of every two judges (quadratic κ on "
                                          "the pairs both labelled)", x="judge", y="judge"),
            leaderboard=charts.judge_leaderboard(report["raters"]),
        )})
