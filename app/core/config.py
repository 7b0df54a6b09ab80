"""The one reader of environment variables (prefix CROWDQRELS_)."""

from __future__ import annotations

from functools import lru_cache
from typing import Literal

from pydantic import Field, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="CROWDQRELS_", env_file=".env", extra="ignore")

    environment: Literal["development", "test", "production"] = "development"
    database_url: str = "sqlite:///./crowdqrels.db"
    # Fit jobs: "inline" runs each fit in a child process of the API; "celery" sends it to workers.
    jobs: Literal["inline", "celery"] = "inline"
    broker_url: str = "redis://127.0.0.1:6379/0"
    celery_queue: str = "celery"
    # Fits the in-process runner runs at once (each in its own process).
    max_parallel_fits: int = Field(default=1, ge=1)
    # Largest request body accepted, in bytes (413 above it). RF10's 3.5 MB file fits easily.
    max_body_bytes: int = Field(default=256 * 1024 * 1024, gt=0)
    # Rows per bulk statement when ingesting.
    insert_chunk_rows: int = Field(default=20_000, gt=0)

    @model_validator(mode="after")
    def _refuse_insecure_production(self) -> Settings:
        if self.environment == "production" and self.database_url.startswith("sqlite"):
            raise ValueError(
                "CROWDQRELS_DATABASE_URL points at SQLite in production: use PostgreSQL"
            )
        return self


@lru_cache
def get_settings() -> Settings:
    return Settings()
