# Every target sets itself up: a fresh clone needs only python3, make and (for
# editors) the Debian/npm packages that scripts/ installs.
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-$(shell cksum pyproject.toml | cut -d' ' -f1)
PYTEST := $(PY) -m pytest

.PHONY: venv sandbox proof-tools mcp-tools demo test lint unit package editors bundle bench clean

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

unit: venv sandbox proof-tools mcp-tools
	$(PYTEST) tests/engine tests/server tests/mcp

editors: venv sandbox
	bash scripts/editors-setup.sh
	$(PYTEST) tests/editors

package: venv sandbox
	bash scripts/package-check.sh

bundle: venv
	bash scripts/editors-setup.sh
	bash scripts/vscode-bundle.sh all

test: lint unit package editors

bench: venv sandbox
	@set -e; for f in tests/bench/bench_*.py; do echo "== $$f"; $(PY) $$f; done

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
