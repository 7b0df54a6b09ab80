"""The sampling a request names, loaded once for the routers and the dashboard (404 when it does
not exist or the caller's key may not see its collection), and the application's NextInputs."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from app.api.deps import id_path
from app.auth.deps import load_or_404
from app.sampling import service
from app.sampling.inputs import NextInputs
from app.sampling.tables import Sampling

load_sampling = load_or_404(
    name="s", path=Annotated[int, id_path("sampling")],
    get=lambda session, s: service.get_sampling(session, sampling_id=s),
    not_found=service.sampling_not_found)


SamplingDep = Annotated[Sampling, Depends(load_sampling)]


def get_next_inputs(request: Request) -> NextInputs:
    """The application's cache of what /next and the samplings read (made by ``create_app``)."""
    return request.app.state.next_inputs  # type: ignore[no-any-return]


InputsDep = Annotated[NextInputs, Depends(get_next_inputs)]
