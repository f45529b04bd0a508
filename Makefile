# WINK Catalog: `make run` and `make test` work on a fresh clone with Python 3.11+.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
HOST ?= 127.0.0.1
PORT ?= 8000
# Links in approval emails follow the address served (run, demo, worker)
# unless WINK_BASE_URL is set: `make run PORT=8720` mails links to port 8720.
# (bound to every interface, 0.0.0.0, links name this machine: 127.0.0.1).
LINK_HOST = $(if $(filter 0.0.0.0,$(HOST)),127.0.0.1,$(HOST))
BASE_URL = $${WINK_BASE_URL:-http://$(LINK_HOST):$(PORT)}

.PHONY: run serve test setup migrate demo check lint format typecheck imports bench bench-celery bench-concurrency bench-catalog bench-scale worker beat sweep offline-provider browser clean

$(BIN)/python:
	$(PYTHON) -c 'import sys; sys.exit("Python 3.11+ is required") if sys.version_info < (3, 11) else None'
	$(PYTHON) -m venv $(VENV)

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

setup: $(STAMP)  ## Create .venv and install the project with its dev tools

migrate: setup
	DEBUG=$${DEBUG:-1} $(BIN)/python manage.py migrate --noinput

demo: migrate  ## Seed the demo catalog and sessions (idempotent)
	DEBUG=$${DEBUG:-1} WINK_BASE_URL=$(BASE_URL) $(BIN)/python manage.py seed_demo

run: demo  ## Set up, seed the demo and serve on http://127.0.0.1:8000
	@echo ""
	@echo "WINK Catalog is starting on http://$(HOST):$(PORT)/"
	@echo "  Sessions:          http://$(HOST):$(PORT)/audit/sessions/"
	@echo "  Approvals inbox:   http://$(HOST):$(PORT)/audit/approvals/"
	@echo "  Costs:             http://$(HOST):$(PORT)/audit/costs/"
	@echo "  Citations:         http://$(HOST):$(PORT)/audit/citations/"
	@echo "  Experiments:       http://$(HOST):$(PORT)/audit/experiments/"
	@echo "  Revisions:         http://$(HOST):$(PORT)/audit/revisions/"
	@echo "  Admin (catalog):   http://$(HOST):$(PORT)/admin/"
	@echo "  API docs:          http://$(HOST):$(PORT)/api/docs/"
	@echo "  Links in emails:   $(BASE_URL)"
	@echo ""
	DEBUG=$${DEBUG:-1} WINK_BASE_URL=$(BASE_URL) $(BIN)/python manage.py runserver $(HOST):$(PORT)

# Production: DEBUG off unless set; SECRET_KEY, ALLOWED_HOSTS and the rest of
# the README's production environment come from the environment. Bind, workers
# and timeout: gunicorn.conf.py (HOST and PORT as for `make run`).
serve: setup  ## Production server: migrate, collectstatic, then gunicorn (DEBUG off; needs SECRET_KEY)
	DEBUG=$${DEBUG:-0} $(BIN)/python manage.py migrate --noinput
	DEBUG=$${DEBUG:-0} $(BIN)/python manage.py collectstatic --noinput
	DEBUG=$${DEBUG:-0} HOST=$(HOST) PORT=$(PORT) \
	  exec $(BIN)/gunicorn wink_project.wsgi -c gunicorn.conf.py

# TEST_WORKERS: test processes side by side (pytest-xdist); 0 runs them in this one.
TEST_WORKERS ?= 2

test: setup  ## Set up and run every test (SQLite unless DATABASE_URL is set)
	DEBUG=1 $(BIN)/python -m pytest -n $(TEST_WORKERS)

browser:  ## Install Debian's Chromium and ChromeDriver for the browser tests (root)
	@command -v chromium >/dev/null && command -v chromedriver >/dev/null || \
	  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver; }

check: setup lint typecheck imports  ## Static checks: ruff, mypy, import contracts, migrations, schema
	DEBUG=1 $(BIN)/python manage.py makemigrations --check --dry-run
	DEBUG=1 $(BIN)/python manage.py spectacular --validate --fail-on-warn --file /dev/null

lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

format: setup
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

typecheck: setup  ## mypy over the whole project, strict on tooling/runtime ([tool.mypy] in pyproject.toml)
	DEBUG=1 $(BIN)/mypy

imports: setup  ## The layering contracts in pyproject.toml (import-linter)
	$(BIN)/lint-imports

bench: setup  ## Agent loop: httpx floor, SDK loop, adapter and the whole product path (DATABASE_URL: PostgreSQL)
	$(BIN)/python bench/agent_loop.py

# BENCH_CATALOG_ARGS: e.g. "--large 2000", "--runs 20", "--json" (see
# `$(BIN)/python bench/catalog_size.py --help`).
bench-catalog: setup  ## Prompt assembly beside 10 and 10,000 unrelated sections (SQLite; PostgreSQL with DATABASE_URL)
	$(BIN)/python bench/catalog_size.py $(BENCH_CATALOG_ARGS)

# BENCH_SCALE_ARGS: e.g. "--regenerate", "--requests 50", "--only HTML" (see
# `$(BIN)/python bench/scale.py --help`). Needs PostgreSQL (WINK_BENCH_PG).
bench-scale: setup  ## Audit reads at 100,000 sessions on PostgreSQL + gunicorn (generates the dataset once)
	$(BIN)/python bench/scale.py $(BENCH_SCALE_ARGS)

# BENCH_CELERY_ARGS: e.g. "--trace", "--rounds 5", "--broker-url amqp://..." (see
# `$(BIN)/python bench/celery_throughput.py --help`). Needs PostgreSQL and Redis.
bench-celery: setup  ## Celery throughput: 2 workers against a 50 ms provider, vs the ideal
	$(BIN)/python bench/celery_throughput.py $(BENCH_CELERY_ARGS)

# BENCH_CONCURRENCY_ARGS: e.g. "--runs 200 --delay 2", "--kill-after 20",
# "--connection-limit 30", "--pool threads --concurrency 500", "--json" (see
# `$(BIN)/python bench/concurrency.py --help`). Needs PostgreSQL and Redis.
bench-concurrency: setup  ## Runs in flight: the default worker, N runs at a 10 s provider
	$(BIN)/python bench/concurrency.py $(BENCH_CONCURRENCY_ARGS)

# The host's workers: WINK_WORKER_PROCESSES Celery workers (one per CPU on
# PostgreSQL) sharing WINK_WORKER_CONCURRENCY runs in flight on Celery's
# threads pool (WINK_WORKER_POOL), each sweeping stale runs on a thread of its
# own (WINK_WORKER_SWEEPER): no flags needed (docs/scaling.md). WORKER_ARGS
# adds Celery's own (e.g. --hostname=host2@%h).
WORKER_ARGS ?=

worker: setup  ## A Celery worker: hundreds of runs in flight, with the sweeper (needs CELERY_BROKER_URL)
	DEBUG=$${DEBUG:-1} WINK_BASE_URL=$(BASE_URL) WINK_PROCESS=worker \
	  $(BIN)/python -m wink_project.workers --loglevel=info \
	  --queues=celery,wink-maintenance $(WORKER_ARGS)

beat: setup  ## Celery beat: sends the sweep every WINK_SWEEP_INTERVAL s (for prefork workers, or WINK_WORKER_SWEEPER=0)
	DEBUG=$${DEBUG:-1} $(BIN)/celery -A wink_project beat --loglevel=info --schedule=$(VENV)/celerybeat-schedule

sweep: setup  ## Recover runs a dead worker or web process left behind, once
	DEBUG=$${DEBUG:-1} $(BIN)/python manage.py sweep_sessions

offline-provider: setup  ## Serve the offline provider on http://127.0.0.1:8001/v1
	DEBUG=$${DEBUG:-1} $(BIN)/python manage.py serve_offline_provider $(OFFLINE_ARGS)

clean:
	rm -rf $(VENV) db.sqlite3 .pytest_cache .mypy_cache .ruff_cache
