"""An engine's tool calls reach the editor: the real `autocode-lsp` process (stdio, the pytest-lsp
client declaring `window.workDoneProgress`) runs a task whose implementer is a real agent CLI, the
fastest one `make engines` installed, against the scripted model on 127.0.0.1
(tests/support/engine_model.py). While the CLI works, each tool call it makes is a `$/progress`
report naming the engine and the call; the `autocode/task/didChange` snapshots after it carry the
engine, its version and its count of tool calls. Skips, saying so, when no engine CLI is installed.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from lsprotocol import types

from autocode_lsp import protocol
from support.agent import BUGGY_OPS, TEST_COMMAND, build_calc
from support.engine_model import Fix, serve
from support.lsp import close, connect, initialize, wait_until

ROOT = Path(__file__).resolve().parents[2]
TOOLS = ROOT / ".tools"
NPM_BIN = TOOLS / "npm" / "node_modules" / ".bin"
# Fastest first, as tests/bench/bench_engines.py measured them alone on the scripted model.
CANDIDATES = (("codex", NPM_BIN / "codex", "scripted"), ("claude-code", NPM_BIN / "claude", "claude-sonnet-4-5"),
              ("opencode", NPM_BIN / "opencode", "scripted"), ("gemini", NPM_BIN / "gemini", "gemini-2.5-flash"),
              ("aider", TOOLS / "aider" / "bin" / "aider", "scripted"))
FOUND = next(((name, program, model) for name, program, model in CANDIDATES if program.exists()), None)
KEY_VAR = "ENGINE_TEST_KEY"
BRIEF = "add(2, 3) gives -1; make add return the sum."

pytestmark = pytest.mark.skipif(
    FOUND is None, reason="no engine CLI is installed here: run `make engines` (scripts/engines-setup.sh)"
)


async def test_the_engines_tool_calls_are_progress_reports_and_the_snapshot_names_the_engine(tmp_path: Path) -> None:
    assert FOUND is not None
    engine, program, model_name = FOUND
    repo = build_calc(tmp_path / "calc")
    config = tmp_path / "xdg-config"
    (config / "autocode").mkdir(parents=True)
    with serve(Fix("calc/ops.py", "    return a - b", "    return a + b", repo)) as model:
        # The engine is the person's choice: their user config, read by the server process.
        (config / "autocode" / "config.toml").write_text(
            f'engine = "{engine}"\nengine_model = "{model_name}"\nengine_base_url = "{model.url}"\n'
            f'engine_api_key_env = "{KEY_VAR}"\nengine_idle_timeout = 120\n'
            'sandbox_env = ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"]\n', encoding="utf-8")
        env = {**os.environ, "XDG_CONFIG_HOME": str(config), KEY_VAR: "sk-engine-" + "test" * 4,
               "PATH": os.pathsep.join([str(program.parent), os.environ.get("PATH", "")])}
        session = await connect("stdio", log_file=tmp_path / "lsp.log", env=env)
        try:
            # Opted in, as the VS Code extension is: the question and the plan come to the client,
            # and every change of the task as an `autocode/task/didChange` snapshot.
            await initialize(session, preset="vscode", folders=[repo], opt_in=True, progress=True)
            session.answer_question = lambda q: "Name tests after the behaviour they check."
            session.review_plan = lambda p: {"decision": "approve"}
            first = await session.command(protocol.TASK_START, {"brief": BRIEF, "testCommand": TEST_COMMAND})
            task_id = first["id"]

            def settled() -> bool:
                last = [c["task"] for c in session.did_change if c["task"]["id"] == task_id][-1:]
                return bool(last) and ((last[0]["needs"] or {}).get("kind") == "approve_completion"
                                       or last[0]["done"])

            await wait_until(settled, timeout=240, what="the engine's change proved, or the task ended")
            snap = [c["task"] for c in session.did_change if c["task"]["id"] == task_id][-1]
            assert snap["needs"] and snap["needs"]["kind"] == "approve_completion", snap["error"]
            assert snap["needs"]["proof"]["status"] == "verified"
            assert [q["question"]["id"] for q in session.questions] == ["test-naming"] and session.reviews
            assert (repo / "calc" / "ops.py").read_text() == BUGGY_OPS  # the engine worked in the copy

            # $/progress: the engine starting, then each of its tool calls, as the task's reports.
            messages = [v.message or "" for vs in session.client.progress_reports.values()
                        for v in vs if isinstance(v, types.WorkDoneProgressReport)]
            assert any(m.startswith(f"implementing: {engine} ") and "is working in the prep copy" in m
                       for m in messages), messages
            calls = [m for m in messages if m.startswith(f"implementing: {engine}: ")]
            assert calls and any("calc/ops.py" in m for m in calls), messages

            # didChange: the snapshot the editor renders names the engine and counts its tool calls.
            implementer = snap["agent"]["roles"]["implementer"]
            assert implementer["mode"] == "engine" and implementer["engine"] == engine, implementer
            assert implementer["engineVersion"] and implementer["toolCalls"] >= len(calls) >= 1, (implementer, calls)
            await session.command(protocol.TASK_CANCEL, {"taskId": task_id})
        finally:
            await close(session)
