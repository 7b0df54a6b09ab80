"""The columns every job row shares (a fit, a feature build, an evaluation, a sampling round).

Domain tables inherit them: ``class Aggregation(JobColumns, Base)``. The runners and the job
lifecycle (``app.jobs.lifecycle``) read and write only these columns, so they work for any kind.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, DateTime, Float, String, Text, func
from sqlalchemy.orm import Mapped, mapped_column

from app.core.db import BigId, utc_now

STATUSES = ("queued", "running", "succeeded", "failed", "cancelled")
FINISHED = frozenset({"succeeded", "failed", "cancelled"})
ACTIVE = ("queued", "running")


class JobColumns:
    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    status: Mapped[str] = mapped_column(String(20), default="queued")
    progress: Mapped[float] = mapped_column(Float, default=0.0)
    progress_message: Mapped[str | None] = mapped_column(String(500))
    job_id: Mapped[str | None] = mapped_column(String(200))  # the runner's own id (Celery's)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utc_now,
                                                 server_default=func.now())
    started_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    finished_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    # Written by the running job; a running row whose heartbeat is stale lost its process.
    heartbeat_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    timings: Mapped[dict[str, Any] | None] = mapped_column(JSON)  # seconds per stage
    error: Mapped[str | None] = mapped_column(Text)
