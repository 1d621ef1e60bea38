# One command each: `make test` (set up + the whole suite), `make demo` (set up + a guided tour).
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: install test demo lint typecheck clean devservers-stop browser-check dev dev-stop docs async-client

$(STAMP): pyproject.toml clients/python/pyproject.toml
	@command -v $(PYTHON) >/dev/null 2>&1 || { echo "Python 3.11 or newer is required ($(PYTHON) not found; make PYTHON=python3.12 picks another)"; exit 1; }
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[dev]"
	$(BIN)/python -m pip install --quiet -e "./clients/python[mcp,langgraph]"
	touch $(STAMP)

install: $(STAMP)

test: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/mypy
	$(BIN)/python -m pytest

demo: $(STAMP)
	$(BIN)/python manage.py demo

# A dev stack on this checkout's embedded services (var/): web on :8000 (or a free port), a worker and beat. Prints
# the URLs and, the first time, an API key (kept in var/run/dev-api-key); Ctrl-C stops everything it started.
dev: $(STAMP)
	$(BIN)/python manage.py dev

# Stops `make dev` from another shell: SIGTERM to its pid (var/run/dev.pid), and it stops what it started; then any
# process group a `make dev` killed with -9 left behind (var/run/dev-<name>.pid).
dev-stop:
	@pid=$$(cat var/run/dev.pid 2>/dev/null); \
	if [ -n "$$pid" ] && tr '\0' ' ' < /proc/$$pid/cmdline 2>/dev/null | grep -q "manage.py dev"; then \
		echo "stopping make dev (pid $$pid) ..."; kill -TERM "$$pid"; \
		while kill -0 "$$pid" 2>/dev/null; do sleep 0.2; done; \
	else echo "make dev is not running"; rm -f var/run/dev.pid; fi; \
	for f in var/run/dev-*.pid; do \
		[ -f "$$f" ] || continue; kill -TERM -- "-$$(cat "$$f")" 2>/dev/null && echo "stopped $$f"; rm -f "$$f"; \
	done

# The operator pages in a real headless Chromium (Debian's package), served by gunicorn with WhiteNoise as in
# production; screenshots under var/browser-check/.
browser-check: $(STAMP)
	@command -v chromium >/dev/null 2>&1 || { $(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq chromium; }
	$(BIN)/python manage.py browser_check

# The documentation site under var/site (`make test` builds it too, with --strict, in tests/docs/test_site.py).
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

# The asyncio client is generated from the blocking one: run this after editing clients/python/zeromem_client/_sync.py
# (the suite fails while _async.py is stale).
async-client: $(STAMP)
	$(BIN)/python clients/python/scripts/gen_async.py

lint: $(STAMP)
	$(BIN)/ruff check .

typecheck: $(STAMP)
	$(BIN)/mypy

devservers-stop: $(STAMP)
	$(BIN)/python manage.py devservers stop

clean:
	rm -rf $(VENV) var
