"""The evaluation a request names, loaded once for the routers and the dashboard: 404 when it
does not exist or the caller's key may not see its collection."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends

from app.api.deps import id_path
from app.auth.deps import load_or_404
from app.evaluations import service
from app.evaluations.tables import Evaluation

load_evaluation = load_or_404(
    name="e", path=Annotated[int, id_path("evaluation")],
    get=lambda session, e: service.get_evaluation(session, evaluation_id=e),
    not_found=service.evaluation_not_found)


EvaluationDep = Annotated[Evaluation, Depends(load_evaluation)]
