"""The agent loop over LSP: each tool call is a `$/progress` report, and the snapshot carries the usage.

The server (a real process) runs a task with the openai provider against a
scripted chat-completions endpoint in this test process (real HTTP).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from lsprotocol import types

from autocode_lsp import protocol
from support import trust
from support.agent import (
    TEST_COMMAND,
    ScriptedEndpoint,
    build_calc,
    call,
    review,
    roles_before_implementing,
    serve,
    text,
)
from support.lsp import close, connect, initialize


@pytest.fixture(scope="module")
def endpoint() -> Iterator[ScriptedEndpoint]:
    with serve() as state:
        yield state


async def test_tool_calls_are_progress_reports_and_usage_is_in_the_snapshot(
    endpoint: ScriptedEndpoint, tmp_path: Path
) -> None:
    repo = build_calc(tmp_path / "calc")
    (repo / ".autocode").mkdir()
    (repo / ".autocode" / "config.toml").write_text(
        f'provider = "openai"\nbase_url = "{endpoint.url}"\nmodel = "scripted"\n', encoding="utf-8"
    )
    trust(repo)
    endpoint.load(
        *roles_before_implementing(),
        call("read_file", {"path": "calc/ops.py"}),
        call("edit_file", {"path": "calc/ops.py", "old_text": "a - b", "new_text": "a * b"}),
        call("run_tests"),
        call("edit_file", {"path": "calc/ops.py", "old_text": "a * b", "new_text": "a + b"}),
        call("run_tests"),
        text("add adds now"),
        review(),
    )
    session = await connect("stdio", log_file=tmp_path / "lsp.log")
    try:
        await initialize(session, preset="vscode", folders=[repo], opt_in=False, progress=True)
        session.choose = lambda params: None  # the plan prompt is dismissed; approval comes by command
        first = await session.command(protocol.TASK_START, {"brief": "add(2, 3) gives -1; fix it.",
                                                            "testCommand": TEST_COMMAND})
        assert first["needs"]["kind"] == "approve_plan", first
        before = set(session.client.progress_reports)
        snap = await session.command(protocol.TASK_APPROVE_PLAN, {"taskId": first["id"], "revision": 1})
        endpoint.assert_clean()
        assert snap["needs"]["kind"] == "approve_completion", snap["error"]
        messages = [v.message for t, vs in session.client.progress_reports.items() if t not in before
                    for v in vs if isinstance(v, types.WorkDoneProgressReport)]
        for expected in ("implementing: reading calc/ops.py", "implementing: editing calc/ops.py",
                         "implementing: running tests: 2 failed", "implementing: running tests: passed"):
            assert expected in messages, messages
        agent = snap["agent"]
        assert agent["roles"]["implementer"]["turns"] == 6 and agent["usage"]["totalTokens"] == 110 * 10
        assert agent["roles"]["implementer"]["summary"] == "add adds now"
        # The readable transcript, as a file an editor opens and as text.
        page = await session.command(protocol.TASK_TRANSCRIPT, {"taskId": first["id"]})
        assert Path(page["path"]).read_text(encoding="utf-8") == page["markdown"]
        assert "## implementer" in page["markdown"] and "**ended: answered**" in page["markdown"]
    finally:
        await close(session)
