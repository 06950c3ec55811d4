# The two commands a newcomer needs: `make demo` and `make test`.
# Both create .venv with the Python on PATH and install msoctl into it.

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: demo test test-fast peers lint typecheck pytest docs bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --upgrade pip
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[dev]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/msoctl demo

test: peers lint typecheck docs pytest

# Third-party peers of the interop tests: Debian's netconfd (yuma123) with
# openssh-server (a private sshd on loopback carries its netconf subsystem; no system
# sshd is started or needed), libyang with its Python binding (the `yang` extra), and
# PostgreSQL for the journal's shared store (the tests initdb a private cluster of their
# own, on a port and socket directory of its own; no system cluster is used).
# Installed only when run as root and missing; otherwise their tests skip, except in
# CI (CI=true), where they fail.
# And torch, the CPU build, into .venv, for the collectives over a namespace fabric
# (tests/interop/test_ring_collectives.py). Pinned: any other spelling (no version, a
# range) pulls the multi-GB CUDA build. Missing, its test skips, or fails in CI.
TORCH := torch==2.13.0
PEER_DEBS := netconfd openssh-server libyang2-dev smitools snmp prometheus prometheus-snmp-exporter \
             postgresql

peers: $(STAMP)
	@missing=$$(for deb in $(PEER_DEBS); do \
	    dpkg-query -W -f='$${Status}' $$deb 2>/dev/null | grep -q 'ok installed' || echo $$deb; \
	  done); \
	if [ -n "$$missing" ] && [ "$$(id -u)" = 0 ]; then \
	  log=$$(mktemp); \
	  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
	      --no-install-recommends $$missing; } >"$$log" 2>&1 \
	    || { cat "$$log" >&2; rm -f "$$log"; exit 1; }; \
	  rm -f "$$log"; \
	elif [ -n "$$missing" ]; then \
	  echo "note: not root, so not installing" $$missing "(their tests will skip)" >&2; \
	fi
	@if [ -e /usr/include/libyang/libyang.h ] && ! $(BIN)/python -c 'import libyang' 2>/dev/null; then \
	  $(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[dev,yang]'; \
	fi
	@if ! $(BIN)/python -c 'import importlib.util, sys; sys.exit(not importlib.util.find_spec("torch"))'; then \
	  $(BIN)/python -m pip install --quiet --disable-pip-version-check '$(TORCH)'; \
	fi

lint: $(STAMP)
	$(BIN)/ruff check msoctl drivers emulators tests bench

typecheck: $(STAMP)
	$(BIN)/mypy

# The suite in two passes at once (tests/passes.py, docs/testing.md): every test not marked
# serial on $(PYTEST_WORKERS) worker processes at the lowest CPU priority, each test module
# whole on one worker (so the lab or peer it shares starts once); beside it, the serial
# ones, whose timing in real time must not be stretched by that load, in one process at
# normal priority. PYTEST_WORKERS=0 runs the first pass in pytest's own process.
# pytest exits 5 when no test ran; make treats that as the failure it is.
PYTEST_WORKERS ?= 6
PYTEST_PARALLEL = -n $(PYTEST_WORKERS) --dist loadfile --no-loadscope-reorder
# The suite starts several hundred Python processes (workers, CLIs, emulators, peers'
# clients); each would compile again every module it imports if bytecode caching were
# off, as PYTHONDONTWRITEBYTECODE turns it off in some container images. The tests run
# with Python's default: __pycache__ written (ignored by git).
PYTEST = env -u PYTHONDONTWRITEBYTECODE $(BIN)/python -m pytest

pytest: $(STAMP) peers
	env -u PYTHONDONTWRITEBYTECODE $(BIN)/python -m tests.passes --workers $(PYTEST_WORKERS)

# The documentation site from docs/ (mkdocs.yml) into build/site, which git ignores.
# --strict fails on any warning: a link to a page or an anchor that does not exist.
docs: $(STAMP)
	$(BIN)/mkdocs build --strict --quiet

# The inner loop: the unit and conformance tests (CI runs everything, through `make test`).
test-fast: $(STAMP) peers
	$(PYTEST) $(PYTEST_PARALLEL) tests/unit tests/conformance

bench: $(STAMP)
	$(BIN)/python bench/ocs_remap.py
	$(BIN)/python bench/ocs_open.py
	$(BIN)/python bench/amp_poll.py
	$(BIN)/python bench/switch_fleet.py
	$(BIN)/python bench/netconf_edit.py
	$(BIN)/python bench/ocs_characterize.py
	$(BIN)/python bench/cpo_walk.py
	$(BIN)/python bench/protection.py
	$(BIN)/python bench/protection_scale.py
	$(BIN)/python bench/exporter_probe.py
	$(BIN)/python bench/exporter_fleet.py
	$(BIN)/python bench/startup.py
	$(BIN)/python bench/journal.py
	$(BIN)/python bench/lab_scale.py

clean:
	rm -rf $(VENV) build dist *.egg-info .mypy_cache .ruff_cache .pytest_cache lab-state
