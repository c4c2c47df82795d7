# Two commands do everything on a fresh machine: `make run` and `make test`.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PORT ?= 8000
WORKERS ?= 2

.PHONY: run port-free test check bench lint format demo messages cluster cluster-stop drill restore-drill

# Translations: the .po files are the source, the .mo files are built (msgfmt, from Debian's
# gettext, which scripts/ensure-build-deps installs) and not committed.
PO_FILES := $(wildcard locale/*/LC_MESSAGES/django.po)
MO_FILES := $(PO_FILES:.po=.mo)

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(VENV)/.runtime-installed: requirements.txt | $(BIN)/python
	scripts/ensure-build-deps
	$(BIN)/pip install -q --disable-pip-version-check -r requirements.txt
	touch $@

$(VENV)/.dev-installed: requirements-dev.txt scripts/ensure-test-deps $(VENV)/.runtime-installed
	scripts/ensure-test-deps
	PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 $(BIN)/pip install -q --disable-pip-version-check \
		-r requirements-dev.txt
	touch $@

%.mo: %.po
	scripts/ensure-build-deps
	msgfmt --check --output-file=$@ $<

messages: $(MO_FILES)

## run: serve the app (config/serve.py) on 127.0.0.1:$(PORT) (SQLite under var/ unless DATABASE_URL),
## with the scheduler (order expiry) beside it
run: port-free $(VENV)/.runtime-installed $(MO_FILES)
	$(BIN)/python manage.py migrate --noinput -v0
	$(BIN)/python manage.py collectstatic --noinput -v0
	$(BIN)/python manage.py seed_demo_products
	PORT=$(PORT) $(BIN)/python manage.py seed_demo
	exec scripts/serve $(PORT) $(WORKERS)

# Before any setup, so that a taken port is said at once (prerequisites run left to right).
port-free:
	scripts/port-free $(PORT)

## test: the whole suite against MariaDB (DATABASE_URL) and Redis (REDIS_URL)
test: $(VENV)/.dev-installed $(MO_FILES)
	scripts/ensure-bench-deps
	scripts/ensure-cluster-deps
	$(BIN)/pytest

## check: static checks that need no database (pyproject.toml): the import contracts, ruff's
## lint and format, mypy
check: $(VENV)/.dev-installed
	$(BIN)/lint-imports
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

## bench: load benchmarks; prints a table and writes bench/results/*.json
bench: $(VENV)/.dev-installed
	scripts/ensure-bench-deps
	scripts/ensure-cluster-deps
	$(BIN)/python -m bench.run

## cluster: a local 3-node Galera cluster behind HAProxy (data in var/cluster, ports from
## 13300); prints the DATABASE_URL (HAProxy's writer port) and DATABASE_REPLICA_URL to export
cluster: $(VENV)/.runtime-installed
	scripts/cluster start

## cluster-stop: a clean shutdown of that cluster (the writer last, so it bootstraps next time)
cluster-stop: $(VENV)/.runtime-installed
	scripts/cluster stop

## drill: the failover drill (docs/operations.md): claims, checkouts and pays through HAProxy
## on a 3-node cluster of its own with its supervisor and the scheduler running, while the
## writer is SIGKILLed KILLS (20) times, backups killed, the writer frozen, two and then all
## nodes killed; the ledger's checks, then the negative control; exit 1 on a violation
KILLS ?= 20
drill: $(VENV)/.dev-installed
	scripts/ensure-cluster-deps
	$(BIN)/python -m drill.run --kills $(KILLS)

lint: $(VENV)/.dev-installed
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

format: $(VENV)/.dev-installed
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

## restore-drill: docs/operations.md's backup and restore, tried (drill/restore.py): a backup
## of a 3-node cluster taken under claims, restored into a new cluster that the same app and
## Redis serve from; exit 1 when a claim acknowledged before the backup is missing, the counts
## are wrong, or a count the copy lost refuses claims past the restore watch
restore-drill: $(VENV)/.dev-installed
	scripts/ensure-cluster-deps
	$(BIN)/python -m drill.restore
