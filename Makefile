# Every target sets itself up: a fresh clone needs only python3, make and (for
# editors) the Debian/npm packages that scripts/ installs.
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-$(shell cksum pyproject.toml | cut -d' ' -f1)
PYTEST := $(PY) -m pytest
# Parallel test workers (pytest-xdist; WORKERS=0 runs in this process). A test file's tests stay
# in one worker, so its module fixtures (a server process) start once per file. (One more worker
# than the cores made make test slower in a clean clone: 989 s against 899-923 s.)
WORKERS ?= auto
XDIST  := -n $(WORKERS) --dist loadfile
# The editor tests in two workers: run alone, the Neovim file kept the two cores only 57 % busy
# (tests typing at a person's pace, a task's deliberately slow tests), and one process outlasted
# the unit suite by 2-3 minutes (docs/performance.md).
EDITOR_WORKERS ?= 2
EDITOR_XDIST := -n $(EDITOR_WORKERS) --dist loadfile
# The project's modules compiled before the tests: every test starts CLIs and servers (about
# 2,000 Python processes a run), and where PYTHONDONTWRITEBYTECODE is set, or a module changed
# since its cache was written, each of them compiled the sources again (docs/performance.md).
COMPILE := $(PY) -m compileall -q -j0 engine server tests/support > /dev/null

.PHONY: venv sandbox proof-tools engines mcp-tools demo test lint unit unit-tools unit-tests package editors \
	editor-tools editor-tests bundle bench clean

$(STAMP): pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --disable-pip-version-check --upgrade pip
	$(PY) -m pip uninstall -q -y autocode 2>/dev/null || true  # the distribution's old name
	$(PY) -m pip install -q --disable-pip-version-check -e '.[dev,pg,semantic,mcp]'
	rm -f $(VENV)/.installed-*
	touch $(STAMP)

venv: $(STAMP)

# bubblewrap (every program a task starts runs in it) and ripgrep; fast when present.
sandbox:
	bash scripts/sandbox-setup.sh

# the test runners the per-test results tests run for real (go, node, prove); they skip without them.
proof-tools:
	bash scripts/proof-tools-setup.sh

# the agent CLIs the engine tests run for real (Aider from PyPI, Claude Code and Codex from npm)
# under .tools/, in environments of their own; the tests skip without them.
engines: proof-tools
	bash scripts/engines-setup.sh

# @modelcontextprotocol/inspector, the MCP client tests/mcp drives autocode-mcp with besides the SDK's.
mcp-tools: proof-tools
	bash scripts/mcp-setup.sh

demo: venv sandbox
	$(PY) scripts/demo.py $(DEMO_ARGS)

lint: venv
	$(VENV)/bin/ruff check engine server tests scripts
	$(VENV)/bin/mypy --strict engine/autocode
	$(VENV)/bin/mypy --strict server/autocode_lsp
	$(VENV)/bin/mypy --strict server/autocode_mcp

# Each suite is its set-up (*-tools) and then its tests (*-tests, which expect the set-up done).
unit: unit-tools
	$(COMPILE)
	$(MAKE) --no-print-directory unit-tests

unit-tools: venv sandbox proof-tools engines mcp-tools

unit-tests:
	$(PYTEST) $(XDIST) tests/engine tests/server tests/mcp

editors: venv editor-tools
	$(COMPILE)
	$(MAKE) --no-print-directory editor-tests

# (no venv: the editors' set-up is npm, Debian packages and git clones, so it starts at once)
editor-tools: sandbox
	bash scripts/editors-setup.sh

editor-tests:
	$(PYTEST) $(EDITOR_XDIST) tests/editors

package: venv sandbox
	bash scripts/package-check.sh

bundle: venv
	bash scripts/editors-setup.sh
	bash scripts/vscode-bundle.sh all

# Lint, the package check and both suites' set-up run side by side (mypy and the package check use
# one core each; the set-up downloads and compiles), then the two suites side by side; each
# target's output is printed when it ends. A failed lint or set-up stops before the suites.
test:
	$(MAKE) --no-print-directory -j4 --output-sync=target lint package unit-tools editor-tools
	$(COMPILE)
	$(MAKE) --no-print-directory -j2 --output-sync=target unit-tests editor-tests

bench: venv sandbox engines
	@set -e; for f in tests/bench/bench_*.py; do echo "== $$f"; $(PY) $$f; done

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
