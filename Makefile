# Every target sets itself up: a fresh clone needs only python3, make and (for
# editors) the Debian/npm packages that scripts/ installs.
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-$(shell cksum pyproject.toml | cut -d' ' -f1)
PYTEST := $(PY) -m pytest
# Parallel test workers (pytest-xdist; WORKERS=0 runs in this process). A test file's tests stay
# in one worker, so its module fixtures (a server process) start once per file.
WORKERS ?= auto
XDIST  := -n $(WORKERS) --dist loadfile
# The editor tests (a code-server and a browser each) run in one process unless asked: under
# make test they already share the machine with the unit workers.
EDITOR_WORKERS ?= 0
EDITOR_XDIST := -n $(EDITOR_WORKERS) --dist loadfile

.PHONY: venv sandbox proof-tools demo test lint unit package editors bundle bench clean

$(STAMP): pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --disable-pip-version-check --upgrade pip
	$(PY) -m pip uninstall -q -y autocode 2>/dev/null || true  # the distribution's old name
	$(PY) -m pip install -q --disable-pip-version-check -e '.[dev,pg,semantic]'
	rm -f $(VENV)/.installed-*
	touch $(STAMP)

venv: $(STAMP)

# bubblewrap (every program a task starts runs in it) and ripgrep; fast when present.
sandbox:
	bash scripts/sandbox-setup.sh

# the test runners the per-test results tests run for real (go, node, prove); they skip without them.
proof-tools:
	bash scripts/proof-tools-setup.sh

demo: venv sandbox
	$(PY) scripts/demo.py $(DEMO_ARGS)

lint: venv
	$(VENV)/bin/ruff check engine server tests scripts
	$(VENV)/bin/mypy --strict engine/autocode
	$(VENV)/bin/mypy --strict server/autocode_lsp

unit: venv sandbox proof-tools
	$(PYTEST) $(XDIST) tests/engine tests/server

editors: venv sandbox
	bash scripts/editors-setup.sh
	$(PYTEST) $(EDITOR_XDIST) tests/editors

package: venv sandbox
	bash scripts/package-check.sh

bundle: venv
	bash scripts/editors-setup.sh
	bash scripts/vscode-bundle.sh all

# The unit and editor suites run side by side; each one's output is printed when it ends.
test: lint package
	$(MAKE) --no-print-directory -j2 --output-sync=target unit editors

bench: venv sandbox
	@set -e; for f in tests/bench/bench_*.py; do echo "== $$f"; $(PY) $$f; done

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
