"""`autocode.verify` over LSP (the real server over stdio): the same proof as a task's for a change
AutoCode did not make, reported with progress, offered as a code action on any document."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio
from lsprotocol import types

from autocode_lsp import protocol
from support import make_repo, write_files
from support.lsp import Session, close, connect, initialize

PYTEST = f"env PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 {sys.executable} -m pytest -q"
BASE = {"calc.py": "def add(a, b):\n    return a - b\n", "tests/__init__.py": "", "conftest.py": "",
        "pytest.ini": "[pytest]\ntestpaths = tests\n", ".gitignore": "__pycache__/\n.pytest_cache/\n"}


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = make_repo(tmp_path_factory.mktemp("verify") / "project", BASE)
    write_files(root, {"calc.py": "def add(a, b):\n    return a + b\n",
                       "tests/test_calc.py": "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"})
    return root


@pytest_asyncio.fixture(scope="module")
async def session(repo: Path, tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Session]:
    s = await connect("stdio", log_file=tmp_path_factory.mktemp("logs") / "lsp.log")
    await initialize(s, preset="vscode", folders=[repo], progress=True)
    yield s
    await close(s)


async def test_verify_proves_the_work_tree_with_named_tests_and_progress(session: Session, repo: Path) -> None:
    before = set(session.client.progress_reports)
    result = await session.command(protocol.VERIFY, {"testCommand": PYTEST})
    proof = result["proof"]
    assert proof["status"] == "verified" and proof["verified"] is True, proof
    assert proof["proofs"] == ["tests/test_calc.py::test_add"]
    assert result["change"].startswith("the work tree against")
    assert (Path(result["evidence"]) / "proof.json").is_file()
    assert [t for t in session.client.progress_reports if t not in before], "no $/progress for the verification"
    assert (repo / "calc.py").read_text() == "def add(a, b):\n    return a + b\n"


async def test_verify_is_a_code_action_and_bad_ranges_are_errors(session: Session, repo: Path) -> None:
    actions = await session.client.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=(repo / "calc.py").as_uri()),
        range=types.Range(start=types.Position(line=0, character=0), end=types.Position(line=0, character=0)),
        context=types.CodeActionContext(diagnostics=[]),
    ))
    titles = [a.title for a in actions or []]  # the client may read them as Commands; both have titles
    assert "AutoCode: verify my changes" in titles
    error = await session.command_error(protocol.VERIFY, {"range": "nope..HEAD", "testCommand": PYTEST})
    assert "'nope' is not a commit" in error.message
