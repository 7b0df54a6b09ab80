from __future__ import annotations

import sys

from fastapi import APIRouter
from sqlalchemy import text

from app.api.deps import SessionDep

router = APIRouter(tags=["health"])


@router.get("/healthz")
def healthz(session: SessionDep) -> dict[str, object]:
    session.execute(text("SELECT 1"))
    # Fits run in worker processes; the API process must stay free of TensorFlow.
    return {"status": "ok", "database": "ok", "tensorflow_loaded": "tensorflow" in sys.modules}
