# banditkit: `make demo` and `make test` each do the whole set-up on a fresh machine.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
TORCH_VERSION ?= 2.13.0
# CPU-only wheels: no CUDA stack is downloaded.
TORCH_INDEX ?= https://download.pytorch.org/whl/cpu
SHARED_DATA ?= $(abspath ../shared/datasets)
PYTEST_ARGS ?= -n 2

.PHONY: setup demo test lint format typecheck package clean

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
	$(BIN)/python -m pip install -q -e ".[dev]"
	touch $@

setup: $(BIN)/.installed

demo: setup
	$(BIN)/banditkit run src/banditkit/examples/demo.yaml --out results/demo

test: setup
	BANDITKIT_DATA=$${BANDITKIT_DATA:-$(SHARED_DATA)} OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 \
	  $(BIN)/python -m pytest $(PYTEST_ARGS)

lint: setup
	$(BIN)/ruff check src tests conftest.py
	$(BIN)/ruff format --check src tests conftest.py

format: setup
	$(BIN)/ruff format src tests conftest.py
	$(BIN)/ruff check --fix src tests conftest.py

typecheck: setup
	$(BIN)/mypy

# build the sdist and the wheel, install the wheel into a fresh environment, use it (offline)
package: setup
	PYTHON=$(BIN)/python .ci/check_package

clean:
	rm -rf $(VENV) build dist .pytest_cache .mypy_cache .ruff_cache src/*.egg-info
