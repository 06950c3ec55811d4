# The two commands a newcomer needs: `make demo` and `make test`.
# Both create .venv with the Python on PATH and install msoctl into it.

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: demo test lint typecheck pytest bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --upgrade pip
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[dev]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/msoctl demo

test: lint typecheck pytest

lint: $(STAMP)
	$(BIN)/ruff check msoctl drivers emulators tests bench

typecheck: $(STAMP)
	$(BIN)/mypy

# pytest exits 5 when no test ran; make treats that as the failure it is.
pytest: $(STAMP)
	$(BIN)/python -m pytest

bench: $(STAMP)
	$(BIN)/python bench/ocs_remap.py
	$(BIN)/python bench/amp_poll.py

clean:
	rm -rf $(VENV) build dist *.egg-info .mypy_cache .ruff_cache .pytest_cache lab-state
