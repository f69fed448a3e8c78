# The README's two commands: `make demo` and `make test`. Both create and reuse .venv.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
export TF_CPP_MIN_LOG_LEVEL ?= 2

.PHONY: demo test test-quick bench lint

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

$(VENV)/.installed: setup.py $(BIN)/python
	$(BIN)/pip install -q -e '.[test,ray,exact]'
	touch $@

demo: $(VENV)/.installed
	$(BIN)/python -m placer.demo

test: $(VENV)/.installed
	$(BIN)/lint-imports --no-cache
	$(BIN)/ruff check .
	$(BIN)/python -m pytest -q -n 2 --dist loadgroup --no-loadscope-reorder --durations=15 tests

test-quick: $(VENV)/.installed
	$(BIN)/python -m pytest -q -n 2 -m "not slow" tests

bench: $(VENV)/.installed
	$(BIN)/python -m bench.run_all

lint: $(VENV)/.installed
	$(BIN)/ruff check . && $(BIN)/ruff format --check .

# The benchmark suite (bench/suite.py): results under bench/results/suite/, a killed run resumes.
.PHONY: bench-suite bench-suite-quick

bench-suite: $(VENV)/.installed
	nice -n 10 $(BIN)/python -m bench.suite

bench-suite-quick: $(VENV)/.installed
	nice -n 10 $(BIN)/python -m bench.suite --tier=quick
