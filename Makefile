# One-machine set-up: .venv, Debian packages, SQLite, embedded Redis.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PORT ?= 8000
export PYTHONUNBUFFERED := 1
-include .env
export

.PHONY: run worker test test-fast test-models lint bench stress eval setup sysdeps migrate check-deploy clean

$(VENV)/.installed: requirements.txt requirements-dev.txt constraints.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -r requirements-dev.txt -c constraints.txt
	touch $@

sysdeps:
	./scripts/sysdeps.sh

setup: sysdeps $(VENV)/.installed

migrate: setup
	$(PY) manage.py migrate --noinput
	$(PY) manage.py collectstatic --noinput -v0
	$(PY) manage.py ensure_demo_user

# `make run` has no proxy in front: daphne itself caps request bodies as Twisted receives them (2.5 MiB,
# knowledge uploads 5 x KB_MAX_UPLOAD_BYTES; research/jobs/web/asgi_limits.py), so nothing over a limit is
# stored; it serves plain HTTP on 127.0.0.1 without timeouts for slow clients. Put it behind the compose
# proxy (deploy/caddy/Caddyfile) before exposing it (docs/operations.md, "Limits").
run: migrate
	$(PY) -m research.devserver --port $(PORT)

worker: setup
	$(PY) -m celery -A research worker -Q agents,render,kb -c $${WORKER_CONCURRENCY:-4} --loglevel INFO -n worker-$$$$@%h --without-gossip --without-mingle

lint: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy research

check-deploy: setup
	DEBUG=0 SECURE_PRODUCTION=1 SECRET_KEY=ci-$$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n') \
	ALLOWED_HOSTS=research.example.com $(PY) manage.py check --deploy --fail-level WARNING

# Every process a test starts appends its job status moves here; graph_coverage.py then checks that each
# edge of the declared job graph (research/jobs/states.py) was taken by some test.
test: export JOB_TRANSITIONS_LOG := $(CURDIR)/.run/test-transitions.log
test: setup
	mkdir -p .run && rm -f $(JOB_TRANSITIONS_LOG)
	$(PY) manage.py collectstatic --noinput -v0
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy research
	$(PY) scripts/import_graph.py --quiet
	$(VENV)/bin/lint-imports --no-cache
	$(MAKE) --no-print-directory check-deploy
	$(VENV)/bin/pytest -q $(PYTEST_ARGS) --ignore=tests/integration --ignore=tests/faults --ignore=tests/scale
	# The suites that run real workers use a private PostgreSQL, as production does (tests/support/postgres.py).
	TEST_DATABASE=postgres $(VENV)/bin/pytest -q $(PYTEST_ARGS) tests/integration tests/faults tests/scale
	$(PY) scripts/graph_coverage.py $(JOB_TRANSITIONS_LOG)

# The unit tests alone (marker `unit`, tests/support/lanes.py), less those slow by design (`slow`): no Redis,
# Celery, daphne, PostgreSQL or browser, and starting one fails the test. On two processes (pytest-xdist).
# The quick loop while working; `make test` is the whole suite.
test-fast: setup
	$(VENV)/bin/ruff check .
	TEST_FAST=1 $(VENV)/bin/pytest -q -m "unit and not slow" -n $${TEST_FAST_WORKERS:-2} $(PYTEST_ARGS)

# Whole jobs against a real model server (llama-cpp-python + SmolLM2-135M); see README "Models".
test-models: setup
	./scripts/test-models.sh

bench: setup
	$(PY) bench/run.py

stress: setup
	$(PY) bench/run.py --only scale,stream

eval: setup
	$(PY) bench/eval/run.py

clean:
	rm -rf .run outputs db.sqlite3
