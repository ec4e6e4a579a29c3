"""The editors' one prompt: `autocode.task.start` in a repository whose settings name an endpoint
answers `trustRequired` with the sentences to show, and `autocode.project.trust` records the
person's yes for exactly the values shown (the real server over stdio)."""

from __future__ import annotations

from pathlib import Path

from autocode_lsp import protocol
from support import git, make_repo
from support.lsp import close, connect, initialize


async def test_task_start_asks_for_trust_and_the_trust_command_records_exactly_what_was_shown(
    tmp_path: Path,
) -> None:
    store = tmp_path / "team" / "mem.sqlite3"
    repo = make_repo(tmp_path / "repo", {
        "README.md": "r\n",
        ".autocode/config.toml": f'memory_path = "{store.as_posix()}"\napi_key_env = "GITHUB_TOKEN"\n',
    })
    session = await connect("stdio", log_file=tmp_path / "lsp.log")
    try:
        await initialize(session, preset="vscode", folders=[repo])
        err = await session.command_error(protocol.TASK_START, {"brief": "Do it.", "testCommand": "python3 -c pass"})
        assert err.code == -32803 and err.data["kind"] == "trustRequired"
        assert f"write memories to {store}" in err.data["says"]
        assert "run AutoCode: Trust Repository (it shows them and records your yes)" in err.message
        assert "autocode trust" not in err.message  # the CLI's words are not a VS Code person's
        assert not (repo / ".autocode" / "runs").exists() and not store.exists()

        shown = await session.command(protocol.PROJECT_TRUST, {})
        assert shown["status"] == "not-trusted" and shown["recorded"] is False
        assert shown["digest"] == err.data["digest"] and shown["says"] == err.data["says"]
        bad = await session.command_error(protocol.PROJECT_TRUST, {"confirm": True})
        assert bad.code == -32602 and "digest" in bad.message

        # The file changes between the prompt and the yes: the old digest trusts nothing.
        config = repo / ".autocode" / "config.toml"
        config.write_text(config.read_text().replace("GITHUB_TOKEN", "OTHER_TOKEN"))
        git(repo, "commit", "-qam", "another variable")
        stale = await session.command_error(protocol.PROJECT_TRUST, {"confirm": True, "digest": shown["digest"]})
        assert stale.data["kind"] == "trustChanged" and "send the variable OTHER_TOKEN to the provider endpoint" \
            in stale.data["says"]
        again = await session.command(protocol.PROJECT_TRUST, {})
        assert again["status"] == "not-trusted"

        done = await session.command(protocol.PROJECT_TRUST, {"confirm": True, "digest": again["digest"]})
        assert (done["status"], done["trusted"], done["recorded"]) == ("trusted", True, True)
        snap = await session.command(protocol.TASK_START, {"brief": "Do it.", "testCommand": "python3 -c pass"})
        assert snap["id"] and store.is_file()

        revoked = await session.command(protocol.PROJECT_TRUST, {"revoke": True})
        assert (revoked["status"], revoked["recorded"]) == ("not-trusted", True)
    finally:
        await close(session)
