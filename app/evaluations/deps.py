"""The evaluation a request names, loaded once for the routers and the dashboard: 404 when it
does not exist or the caller's key may not see its collection."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends

from app.api.deps import SessionDep, id_path
from app.auth.deps import PrincipalDep
from app.evaluations import service
from app.evaluations.tables import Evaluation


def load_evaluation(session: SessionDep, principal: PrincipalDep,
                    e: Annotated[int, id_path("evaluation")]) -> Evaluation:
    evaluation = service.get_evaluation(session, evaluation_id=e)
    if not principal.can_see(evaluation.collection_id):
        raise service.evaluation_not_found(e)
    return evaluation


EvaluationDep = Annotated[Evaluation, Depends(load_evaluation)]
