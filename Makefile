# The two commands of the README. Each one sets up what it needs.
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-$(shell cat pyproject.toml requirements-test.txt 2>/dev/null | cksum | cut -d' ' -f1)

.PHONY: run test lint check bench clean catalogs

$(STAMP):
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[dev,postgres,celery]' -r requirements-test.txt
	rm -f $(VENV)/.installed-*; touch $(STAMP)

## Play a round in the terminal: console adapter, SQLite file, local runner.
run: $(STAMP)
	$(BIN)/quizbot play

## The whole suite (SQLite and PostgreSQL), plus lint and type checks.
test: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/python -m pytest $(PYTEST_ARGS)

bench: $(STAMP)
	for b in bench/*.py; do $(BIN)/python $$b; done

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache

## Compile the gettext catalogs (bot/locale/*/LC_MESSAGES/*.po -> .mo).
catalogs: $(STAMP)
	for po in bot/locale/*/LC_MESSAGES/*.po; do \
	  $(BIN)/pybabel compile --use-fuzzy -i $$po -o $${po%.po}.mo; done
