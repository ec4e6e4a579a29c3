"""`autocode.session.configure`: an editor's model settings reach the session's tasks, and the
person's key reaches the endpoint from the server's memory only (never a file, never the log).

The real server process over stdio runs a task against a scripted endpoint in this process.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from autocode_lsp import protocol
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


def _files_holding(root: Path, needle: str) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file() and needle in p.read_text(errors="replace")]


async def test_the_editors_settings_and_key_reach_the_endpoint_and_no_file(
    endpoint: ScriptedEndpoint, tmp_path: Path
) -> None:
    key = "sk-" + "session" * 4  # assembled at run time, so no literal key sits in the repository
    repo = build_calc(tmp_path / "calc")  # no settings file: provider, model and URL come from the editor
    endpoint.load(
        *roles_before_implementing(),
        call("edit_file", {"path": "calc/ops.py", "old_text": "a - b", "new_text": "a + b"}),
        call("run_tests"),
        text("add adds now"),
        review(),
    )
    log = tmp_path / "logs" / "lsp.log"
    log.parent.mkdir()
    session = await connect("stdio", log_file=log)
    try:
        await initialize(session, preset="vscode", folders=[repo], opt_in=False, progress=False)
        session.choose = lambda params: None
        given = await session.command(protocol.SESSION_CONFIGURE, {
            "provider": "openai", "model": "scripted", "baseUrl": endpoint.url, "apiKey": key})
        assert given["apiKeySet"] is True and given["apiKeyEnv"] == "OPENAI_API_KEY"
        assert given["settings"] == {"provider": "openai", "model": "scripted", "baseUrl": endpoint.url}
        assert key not in str(given)
        doctor = await session.command(protocol.DOCTOR, {})
        assert doctor["report"]["settings"]["provider"]["origin"] == "flag", doctor["report"]["settings"]["provider"]
        first = await session.command(protocol.TASK_START, {"brief": "add(2, 3) gives -1; fix it.",
                                                            "testCommand": TEST_COMMAND})
        assert first["needs"]["kind"] == "approve_plan", first
        snap = await session.command(protocol.TASK_APPROVE_PLAN, {"taskId": first["id"], "revision": 1})
        endpoint.assert_clean()
        assert snap["needs"]["kind"] == "approve_completion", snap["error"]
        assert snap["agent"]["roles"]["implementer"]["summary"] == "add adds now"
        auth = {r["headers"].get("Authorization") for r in endpoint.requests}
        assert auth == {f"Bearer {key}"}, auth
        # Forgetting the key: the next request would carry none.
        forgot = await session.command(protocol.SESSION_CONFIGURE, {"provider": "openai", "apiKey": ""})
        assert forgot["apiKeySet"] is False
    finally:
        await close(session)
    assert not _files_holding(repo, key)
    assert not _files_holding(log.parent, key), log.read_text()[-2000:]


async def test_the_provider_check_names_the_key_variable_never_its_value(
    endpoint: ScriptedEndpoint, tmp_path: Path
) -> None:
    key = "sk-" + "probe" * 5
    repo = build_calc(tmp_path / "calc")
    endpoint.load(call("ping", {"ok": True}))
    log = tmp_path / "lsp.log"
    session = await connect("stdio", log_file=log)
    try:
        await initialize(session, preset="vscode", folders=[repo], opt_in=False, progress=False)
        before = await session.command(protocol.PROVIDER_CHECK, {})
        assert "fixture" in before["text"] and not endpoint.requests
        await session.command(protocol.SESSION_CONFIGURE, {
            "provider": "openai", "model": "scripted", "baseUrl": endpoint.url, "apiKey": key})
        found = await session.command(protocol.PROVIDER_CHECK, {})
        assert found["check"]["result"] == "answered", found
        assert found["check"]["api_key_env"] == "OPENAI_API_KEY" and found["check"]["api_key_set"] is True
        assert key not in str(found)
        assert endpoint.requests[-1]["headers"].get("Authorization") == f"Bearer {key}"
    finally:
        await close(session)
    assert key not in log.read_text()


async def test_the_engine_setting_is_taken_and_a_key_variable_that_is_no_key_is_refused(tmp_path: Path) -> None:
    repo = build_calc(tmp_path / "calc")
    session = await connect("stdio", log_file=tmp_path / "lsp.log")
    try:
        await initialize(session, preset="vscode", folders=[repo], opt_in=False, progress=False)
        given = await session.command(protocol.SESSION_CONFIGURE, {"provider": "fixture", "engine": "codex"})
        assert given["settings"]["engine"] == "codex" and given["ignored"] == []
        secret = "sk-" + "z" * 24
        for variable in ("PATH", "LD_PRELOAD", "HOME", "lower_key", "PYTHONPATH"):
            with pytest.raises(Exception) as refused:
                await session.command(protocol.SESSION_CONFIGURE, {"apiKey": secret, "apiKeyEnv": variable})
            assert "ends in _KEY or _TOKEN" in str(refused.value), refused.value
        # The server's own PATH is untouched: the next task's programs still start.
        doctor = await session.command(protocol.DOCTOR, {})
        assert doctor["report"]
        assert secret not in (tmp_path / "lsp.log").read_text(errors="replace")
    finally:
        await close(session)


async def test_a_vscode_user_is_told_the_setting_not_the_cli_flag(tmp_path: Path) -> None:
    """The fixture provider cannot implement a real brief: VS Code is told which settings and
    command set up a real model; Neovim gets the engine's words as they are."""
    from support import make_repo

    messages = {}
    for preset in ("vscode", "neovim"):
        repo = make_repo(tmp_path / preset, {"README.md": "hello\n"})
        session = await connect("stdio", log_file=tmp_path / f"{preset}.log")
        try:
            await initialize(session, preset=preset, folders=[repo], opt_in=False, progress=False)
            session.choose = lambda params: None
            first = await session.command(protocol.TASK_START, {"brief": "Add a changelog.", "testCommand": TEST_COMMAND})
            snap = first
            for _ in range(5):
                if snap["needs"]["kind"] == "answer_questions":
                    question = snap["needs"]["questions"][0]
                    snap = await session.command(protocol.TASK_ANSWER, {
                        "taskId": first["id"], "questionId": question["id"], "text": "Describe the behaviour.",
                        "how": "typed"})
                elif snap["needs"]["kind"] == "approve_plan":
                    snap = await session.command(protocol.TASK_APPROVE_PLAN, {
                        "taskId": first["id"], "revision": snap["needs"]["planRevision"]})
                else:
                    break
            assert snap["state"] == "FAILED", snap
            messages[preset] = snap["error"]["message"]
            listed = await session.command(protocol.TASK_LIST, {})
            assert listed["tasks"][0]["error"]["message"] == messages[preset]
        finally:
            await close(session)
    assert "autocode.provider" in messages["vscode"] and "AutoCode: Set API Key" in messages["vscode"], messages
    assert "autocode.provider" not in messages["neovim"], messages
