# The two commands of the README. Each one sets up what it needs.
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-$(shell cat pyproject.toml requirements-test.txt 2>/dev/null | cksum | cut -d' ' -f1)

.PHONY: run test test-newest lint check bench clean catalogs extract env newest-env

# The venv's own pip installs the project (an upgrade first cost a round of index look-ups).
$(STAMP):
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q -e '.[dev,postgres,celery]' -r requirements-test.txt
	rm -f $(VENV)/.installed-*; touch $(STAMP)

env: $(STAMP)

## Play a round in the terminal: console adapter, SQLite file, local runner.
run: $(STAMP)
	$(BIN)/quizbot play

## The whole suite (SQLite and PostgreSQL), plus lint and type checks. pytest runs on every
## core (pytest-xdist; each worker has its own PostgreSQL database); PYTEST_WORKERS=0 runs it
## in one process.
## Bytecode caches are written even where the shell says not to (PYTHONDONTWRITEBYTECODE):
## without them each worker compiles every module again (collection 17 s against 6 s).
## mypy (one core, 35 s without its cache) runs beside pytest, whose workers leave about a
## sixth of the cores idle; its report follows pytest's, and either failing fails the target.
PYTEST_WORKERS ?= auto
PYTEST := -m pytest -n $(PYTEST_WORKERS) --dist worksteal
WRITE_BYTECODE := PYTHONDONTWRITEBYTECODE=
test: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	@types_log="$$(mktemp)"; $(BIN)/mypy >"$$types_log" 2>&1 & types=$$!; \
	$(WRITE_BYTECODE) $(BIN)/python $(PYTEST) $(PYTEST_ARGS); tests_rc=$$?; \
	wait $$types; types_rc=$$?; echo "mypy:"; cat "$$types_log"; rm -f "$$types_log"; \
	[ $$tests_rc -eq 0 ] && [ $$types_rc -eq 0 ]

## The suite again on the newest Python here (>= 3.12; 3.13 on the project's machines),
## without torch: the CPU torch wheel is built for 3.11 only, and torch's tests skip cleanly.
## Lint and mypy run once, in `make test`; so do the PostgreSQL runs, the browser's and the
## tests marked `slow` (long load, race, property and content checks). This pass checks the
## language and the libraries on it, not the database, chromium or the data: it keeps
## .ci/run under 12 min.
NEWEST_ARGS ?= -k "not postgresql" -m "not slow" --ignore=tests/dashboard/browser
VENV_NEWEST ?= .venv-newest
PY_NEWEST ?= $(shell scripts/newest_python.sh)
STAMP_NEWEST := $(VENV_NEWEST)/.installed-$(shell cat pyproject.toml | cksum | cut -d' ' -f1)

$(STAMP_NEWEST):
	test -x $(VENV_NEWEST)/bin/python || $(PY_NEWEST) -m venv $(VENV_NEWEST)
	$(VENV_NEWEST)/bin/python -m pip install -q -e '.[dev,postgres,celery]'
	rm -f $(VENV_NEWEST)/.installed-*; touch $(STAMP_NEWEST)

## Only the newest Python's environment (.ci/run builds it while `make test` runs).
newest-env:
	@if [ -z "$(PY_NEWEST)" ]; then echo "no Python >= 3.12 here: no environment to build"; \
	else $(MAKE) --no-print-directory $(STAMP_NEWEST); fi

test-newest:
	@if [ -z "$(PY_NEWEST)" ]; then echo "no Python >= 3.12 here: the newest-Python pass is skipped"; \
	else $(MAKE) --no-print-directory $(STAMP_NEWEST) && $(VENV_NEWEST)/bin/python --version \
	  && $(WRITE_BYTECODE) $(VENV_NEWEST)/bin/python $(PYTEST) $(NEWEST_ARGS) $(PYTEST_ARGS); fi

bench: $(STAMP)
	for b in bench/[!_]*.py; do $(BIN)/python $$b; done

clean:
	rm -rf $(VENV) $(VENV_NEWEST) .pytest_cache .mypy_cache .ruff_cache

## Compile the gettext catalogs (bot/locale/*/LC_MESSAGES/*.po -> .mo).
catalogs: $(STAMP)
	for po in bot/locale/*/LC_MESSAGES/*.po; do \
	  $(BIN)/pybabel compile --use-fuzzy -i $$po -o $${po%.po}.mo; done

## Extract every marked string of every package into build/messages.pot (the keywords of
## bot/i18n.py's docstring), to compare with the catalogs or start a new one.
I18N_KEYWORDS := -k t -k n:1,2 -k pgettext:1c,2 -k N_ -k Text
extract: $(STAMP)
	mkdir -p build
	$(BIN)/pybabel extract --no-default-keywords $(I18N_KEYWORDS) --sort-by-file \
	  -F babel.cfg -o build/messages.pot bot adapters gpu_runner questions
