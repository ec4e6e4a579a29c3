"""Server tests: every module drives the real `autocode-lsp` process through pytest-lsp.

pytest-lsp's specification checks are errors here, so a server message the
client did not declare support for fails the test.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

# Some server test modules import the set-up of another one (test_server_tasks_flow).
sys.path.insert(0, str(Path(__file__).parent))


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.filterwarnings("error::pytest_lsp.LspSpecificationWarning"))
