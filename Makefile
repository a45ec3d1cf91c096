# banditkit: `make demo` and `make test` each do the whole set-up on a fresh machine.
# `make demo` installs the package and what it needs to run; `make setup` (and test, lint,
# typecheck, package) adds the development tools of the `dev` extra (pytest, ruff, mypy,
# build, Ray).
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
TORCH_VERSION ?= 2.13.0
# CPU-only wheels: no CUDA stack is downloaded.
TORCH_INDEX ?= https://download.pytorch.org/whl/cpu
SHARED_DATA ?= $(abspath ../shared/datasets)
PYTEST_ARGS ?= -n 2

.PHONY: setup demo test lint format typecheck package clean

# the package and its dependencies: what `make demo` needs
$(BIN)/.installed: pyproject.toml Makefile
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	# CPU PyTorch: a local CPU wheel (pip's find-links) when there is one, its own
	# dependencies then from the package index; otherwise PyTorch's CPU-only index.
	if $(BIN)/python -m pip install -q --no-index --no-deps torch==$(TORCH_VERSION) 2>/dev/null; then \
	  $(BIN)/python -m pip install -q torch==$(TORCH_VERSION); \
	else \
	  $(BIN)/python -m pip install -q torch==$(TORCH_VERSION) --index-url $(TORCH_INDEX); \
	fi
	$(BIN)/python -m pip install -q -e .
	touch $@

# the development tools on top
$(BIN)/.installed-dev: $(BIN)/.installed
	$(BIN)/python -m pip install -q -e ".[dev]"
	touch $@

setup: $(BIN)/.installed-dev

demo: $(BIN)/.installed
	$(BIN)/banditkit run src/banditkit/examples/demo.yaml --out results/demo

test: setup
	BANDITKIT_DATA=$${BANDITKIT_DATA:-$(SHARED_DATA)} OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 \
	  $(BIN)/python -m pytest $(PYTEST_ARGS)

lint: setup
	$(BIN)/ruff check src tests benchmarks conftest.py
	$(BIN)/ruff format --check src tests benchmarks conftest.py

format: setup
	$(BIN)/ruff format src tests benchmarks conftest.py
	$(BIN)/ruff check --fix src tests benchmarks conftest.py

typecheck: setup
	$(BIN)/mypy

# the sdist and the wheel into dist/; the wheel installed into a fresh environment and used
package: setup
	PYTHON=$(BIN)/python .ci/check_package

clean:
	rm -rf $(VENV) build dist .pytest_cache .mypy_cache .ruff_cache src/*.egg-info
