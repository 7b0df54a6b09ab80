# One image for the API and the Celery worker; the command picks the role.
FROM python:3.12-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    TF_CPP_MIN_LOG_LEVEL=3

RUN apt-get update \
    && apt-get install -y --no-install-recommends curl \
    && rm -rf /var/lib/apt/lists/*

WORKDIR /srv/crowdqrels
COPY pyproject.toml README.md alembic.ini ./
COPY app ./app
COPY models ./models
COPY migrations ./migrations
RUN pip install --upgrade pip && pip install . && crowdqrels precompile

RUN useradd --create-home crowdqrels
USER crowdqrels

EXPOSE 8000
HEALTHCHECK --interval=10s --timeout=3s --retries=5 \
    CMD curl -fsS http://127.0.0.1:8000/healthz || exit 1
CMD ["crowdqrels", "serve", "--host", "0.0.0.0", "--port", "8000"]
