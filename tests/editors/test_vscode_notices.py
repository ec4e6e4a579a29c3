"""Issue 34 in a real VS Code (code-server + Playwright, editors/vscode/test/e2e/run.mjs): a task's
notices close themselves once what they announce has passed, also when it passed through another
channel (here the CLI, in another process: the server notices the change on disk and tells the
extension), so nothing stale stays in the notification centre, with no refresh by the person.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

# The code-server harness lives in the module next to this one.
sys.path.insert(0, str(Path(__file__).parent))
import test_vscode_extension as vscode_e2e

pytestmark = pytest.mark.editor

code_server = vscode_e2e.code_server  # the fixture: one code-server per test, stopped after it

NAMING = "Name unittest methods after the behaviour they check."


@pytest.mark.timeout(900)
def test_notices_close_once_answered_and_approved_through_the_cli(tmp_path: Path, code_server: Any) -> None:
    """The question's notice (with Answer) and the verified change's (with Review Changes) are up;
    the question is answered and the change approved with the CLI; with nothing done in VS Code,
    each notice is gone from the toasts and from the notification centre, and the change is on disk."""
    repo = tmp_path / "textkit"
    patch = vscode_e2e._build_sample("unittest", repo)
    server = code_server({"autocode.python": sys.executable})
    cli = [sys.executable, "-m", "autocode"]  # the PYTHONPATH the tests run with finds it
    result = vscode_e2e.run_scenario(
        "notices-pass", server.url(repo), AUTOCODE_E2E_BRIEF=f"Add longest_word(): apply {patch}",
        AUTOCODE_E2E_CLI=json.dumps(cli), AUTOCODE_E2E_REPO=str(repo),
        AUTOCODE_E2E_QUESTION="test-naming", AUTOCODE_E2E_ANSWER=NAMING)
    assert "asks:" in result["questionToast"] and "Answer" in result["questionActions"], result["questionActions"]
    assert not [t for t in result["centerAfterAnswer"] if "asks:" in t], result["centerAfterAnswer"]
    assert "Review Changes" in result["verifiedActions"], result["verifiedActions"]
    assert not [t for t in result["centerAfterApprove"] if "is verified" in t], result["centerAfterApprove"]
    assert "completed" in result["tasksView"].lower()
    assert "def longest_word" in (repo / "textkit" / "words.py").read_text()
