"""Structured logs: one JSON object a line, with the request's or the job's id on every line
logged while it runs.

``REQUEST_ID`` and ``JOB_ID`` are context variables: the request middleware (app.api.observe)
sets the first for the request's task, the job lifecycle (app.jobs.lifecycle) the second for
the job's body, and ``JsonFormatter`` adds whichever is set to each record. ``crowdqrels serve``
hands ``uvicorn_log_config()`` to uvicorn (every API process applies it); a job's process and a
Celery worker call ``use_json_logs()``.
"""

from __future__ import annotations

import json
import logging
import sys
from contextvars import ContextVar
from datetime import UTC, datetime
from typing import Any

REQUEST_ID: ContextVar[str | None] = ContextVar("crowdqrels_request_id", default=None)
JOB_ID: ContextVar[str | None] = ContextVar("crowdqrels_job_id", default=None)
REQUEST_LOGGER = "crowdqrels.request"
# What a record carries beyond the standard attributes: logged as fields of their own.
_STANDARD = frozenset(logging.LogRecord("", 0, "", 0, "", (), None).__dict__) | {
    "message", "asctime", "color_message"}  # uvicorn's coloured copy of the message


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        request_id, job_id = REQUEST_ID.get(), JOB_ID.get()
        if request_id is not None:
            line["request_id"] = request_id
        if job_id is not None:
            line["job"] = job_id
        for name, value in record.__dict__.items():
            if name not in _STANDARD and not name.startswith("_") and name not in line:
                line[name] = value
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return json.dumps(line, default=str)


def uvicorn_log_config(level: str) -> dict[str, Any]:
    """uvicorn's logging, as JSON lines on standard error: its own messages (start, stop,
    errors) and ours, each request's line included (uvicorn's plain access log is off)."""
    handler = {"class": "logging.StreamHandler", "formatter": "json", "stream": "ext://sys.stderr"}
    numeric = logging.getLevelName(level.upper()) if level != "trace" else "DEBUG"
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {"json": {"()": JsonFormatter}},
        "handlers": {"default": handler},
        "loggers": {
            "uvicorn": {"handlers": ["default"], "level": numeric, "propagate": False},
            "uvicorn.error": {"level": numeric},
            "app": {"handlers": ["default"], "level": numeric, "propagate": False},
            "crowdqrels": {"handlers": ["default"], "level": numeric, "propagate": False},
        },
    }


def use_json_logs(level: int = logging.INFO) -> None:
    """JSON lines on standard error for this process's root logger (a job's process, a
    worker): replaces the handlers it had."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
