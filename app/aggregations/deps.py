"""The fit a request names, loaded once for the routers and the dashboard: 404 when it does not
exist or the caller's key may not see its collection; and the application's listing cache."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from app.aggregations import service
from app.aggregations.listing import ListingCache
from app.aggregations.tables import Aggregation
from app.api.deps import id_path
from app.auth.deps import load_or_404

load_aggregation = load_or_404(
    name="a", path=Annotated[int, id_path("aggregation")],
    get=lambda session, a: service.get_aggregation(session, aggregation_id=a),
    not_found=service.aggregation_not_found)


AggregationDep = Annotated[Aggregation, Depends(load_aggregation)]


def get_listing_cache(request: Request) -> ListingCache:
    """The application's cache of succeeded fits' orderings (one per app, so per database;
    made by ``create_app``)."""
    return request.app.state.listing_cache  # type: ignore[no-any-return]
