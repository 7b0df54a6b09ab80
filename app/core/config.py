"""The one reader of environment variables (prefix CROWDQRELS_)."""

from __future__ import annotations

from functools import lru_cache
from typing import Literal

from pydantic import AliasChoices, Field, ValidationError, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="CROWDQRELS_", env_file=".env", extra="ignore",
                                      populate_by_name=True)

    environment: Literal["development", "test", "production"] = "development"
    database_url: str = "sqlite:///./crowdqrels.db"
    # Fit jobs: "inline" runs each fit in a child process of the API; "celery" sends it to workers.
    jobs: Literal["inline", "celery"] = "inline"
    broker_url: str = "redis://127.0.0.1:6379/0"
    celery_queue: str = "celery"
    # Fits the in-process runner runs at once (each in its own process).
    max_parallel_fits: int = Field(default=1, ge=1)
    # The in-process runner forks each job's process from a starter process that has imported
    # every job's modules once (about 1 s of CPU, 110 MB): a job starts in milliseconds. Off (or
    # without os.fork): a fresh interpreter per job.
    job_starter: bool = True
    # GP fits fork from a second starter that has imported TensorFlow and GPflow as well (started
    # by the first GP fit; about 6 CPU s once and 0.7 GiB held): a GP job skips that import. Off:
    # GP jobs fork from the plain starter and import TensorFlow themselves.
    job_starter_tensorflow: bool = True
    # Largest request body accepted, in bytes (413 above it). RF10's 3.5 MB file fits easily.
    max_body_bytes: int = Field(default=256 * 1024 * 1024, gt=0)
    # Rows per bulk statement when ingesting.
    insert_chunk_rows: int = Field(default=20_000, gt=0)
    # Access control (app/auth): "required" (API keys) or "off" (everything open). Unset: off in
    # development and test, required in production. Production with auth off refuses to start;
    # so does `crowdqrels serve` on an address other than loopback.
    auth: Literal["required", "off"] | None = None
    # Verified keys are trusted for this long without hashing again (a revoke through the API
    # takes effect at once in that process; elsewhere within this bound).
    key_cache_s: float = Field(default=30.0, ge=0)
    # At start-up every route and the dashboard's caches of recent collections and fits are
    # built before the first request is served, for at most this long (then the rest goes on in
    # the background). 0: serve at once; routes are built as requests reach them, caches in the
    # background (short-lived processes such as the tests' applications).
    warm_startup_s: float = Field(default=10.0, ge=0)
    session_hours: float = Field(default=12.0, gt=0)  # dashboard sign-in lifetime
    idempotency_retention_h: float = Field(default=24.0, gt=0)
    # A running job writes heartbeat_at every job_heartbeat_s; one silent for job_stale_after_s
    # is marked failed (checked when fits are listed or started, and every job_check_s).
    job_heartbeat_s: float = Field(default=5.0, gt=0)
    job_stale_after_s: float = Field(default=60.0, gt=0)
    job_check_s: float = Field(default=15.0, gt=0)
    # Requests per minute per key (0: no limit); above it, 429 with Retry-After.
    rate_limit_per_minute: int = Field(default=0, ge=0)
    # GET /metrics (Prometheus): with auth required it needs an admin key, unless this is true.
    metrics_public: bool = False
    # Where the API processes, their job processes and Celery's pool processes write their
    # metrics' samples (prometheus-client's multiprocess mode; emptied at start). Unset:
    # `crowdqrels serve` and `crowdqrels worker` make a temporary one. Also read as
    # PROMETHEUS_MULTIPROC_DIR, which those commands set for their processes.
    metrics_dir: str | None = Field(default=None, validation_alias=AliasChoices(
        "CROWDQRELS_METRICS_DIR", "PROMETHEUS_MULTIPROC_DIR"))
    # `crowdqrels worker` serves its processes' metrics on this port (0: not served; a worker
    # sharing CROWDQRELS_METRICS_DIR with the API on one machine is in the API's /metrics).
    worker_metrics_port: int = Field(default=0, ge=0, le=65535)
    # TensorFlow's native log lines in fits' processes (start-up notices that read as errors):
    # silenced unless true (`crowdqrels serve --verbose` and `worker --verbose` set it).
    verbose: bool = False
    # Origins allowed by CORS (none: no CORS headers at all).
    cors_origins: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _refuse_insecure_production(self) -> Settings:
        if self.environment == "production" and self.database_url.startswith("sqlite"):
            raise ValueError(
                "CROWDQRELS_DATABASE_URL points at SQLite in production: use PostgreSQL"
            )
        if self.auth is None:
            self.auth = "required" if self.environment == "production" else "off"
        if self.environment == "production" and self.auth == "off":
            raise ValueError("CROWDQRELS_AUTH=off in production: every endpoint would be open "
                             "to anyone who can reach the port; use CROWDQRELS_AUTH=required")
        if self.job_stale_after_s < 2 * self.job_heartbeat_s:
            raise ValueError("CROWDQRELS_JOB_STALE_AFTER_S must be at least twice "
                             "CROWDQRELS_JOB_HEARTBEAT_S")
        return self

    @property
    def auth_required(self) -> bool:
        return self.auth == "required"


@lru_cache
def get_settings() -> Settings:
    return Settings()


def describe_invalid(exc: ValidationError) -> str:
    """A settings error as the person who set the variables needs it: each problem on a line,
    named by its environment variable, without pydantic's internals."""
    lines = []
    for error in exc.errors():
        message = str(error["msg"]).removeprefix("Value error, ")
        field = ".".join(str(part) for part in error["loc"])
        if field:
            got = error.get("input")
            message = f"CROWDQRELS_{field.upper()}: {message}" + (
                f" (got {got!r})" if isinstance(got, str | int | float) else "")
        lines.append(message)
    return "\n".join(lines)
