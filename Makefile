# One command each: `make test` (set up + the whole suite), `make demo` (set up + a guided tour).
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: install test demo lint typecheck clean devservers-stop browser-check

$(STAMP): pyproject.toml
	@command -v $(PYTHON) >/dev/null 2>&1 || { echo "Python 3.11 is required ($(PYTHON) not found)"; exit 1; }
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[dev]"
	touch $(STAMP)

install: $(STAMP)

test: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/mypy
	$(BIN)/python -m pytest

demo: $(STAMP)
	$(BIN)/python manage.py demo

# The operator pages in a real headless Chromium (Debian's package); screenshots under var/browser-check/.
browser-check: $(STAMP)
	@command -v chromium >/dev/null 2>&1 || { $(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq chromium; }
	$(BIN)/python manage.py browser_check

lint: $(STAMP)
	$(BIN)/ruff check .

typecheck: $(STAMP)
	$(BIN)/mypy

devservers-stop: $(STAMP)
	$(BIN)/python manage.py devservers stop

clean:
	rm -rf $(VENV) var
