# Two commands on a fresh machine with Python >= 3.11 and make:
#   make demo   set everything up and open the app on a demo built from real lovia runs
#   make test   set everything up, type-check (mypy) and run the whole test suite
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test check lint types format screenshots bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[dev]"
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/lovia-tui demo

# The type check is part of the test command (CI runs exactly `make test`):
# mypy is pinned, so it is as deterministic as the tests, and takes seconds.
test: $(STAMP) types
	$(BIN)/python -m pytest

lint: $(STAMP)
	$(BIN)/ruff check lovia_tui tests benchmarks
	$(BIN)/ruff format --check lovia_tui tests benchmarks

types: $(STAMP)
	$(BIN)/mypy

format: $(STAMP)
	$(BIN)/ruff format lovia_tui tests benchmarks
	$(BIN)/ruff check --fix lovia_tui tests benchmarks

check: lint types test

screenshots: $(STAMP)
	$(BIN)/python -m lovia_tui.screenshots screenshots

bench: $(STAMP)
	$(BIN)/python benchmarks/run_all.py
	$(BIN)/python benchmarks/run_shapes.py
	$(BIN)/python benchmarks/search_index.py --size 10k
	$(BIN)/python benchmarks/actions_beside_writer.py

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache
