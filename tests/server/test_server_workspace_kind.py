"""The server checks a `workspace` argument with the engine's one workspace check.

A well-formed path inside the session's folders that cannot be a workspace
(missing, a file, a `.git` folder, no repository) is `-32803` with
`data.kind = "workspaceInvalid"`, the same kind the CLI and the engine give;
a malformed argument (relative path, not a file URI) stays `-32602`.
"""

from __future__ import annotations

from pathlib import Path

from autocode_lsp import protocol
from support import make_repo
from support.lsp import close, connect, initialize


async def test_a_bad_workspace_is_the_one_engine_kind(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    plain = root / "plain"
    plain.mkdir()
    repo = make_repo(root / "repo", {"a.txt": "a\n"})
    a_file = root / "file.txt"
    a_file.write_text("x")
    session = await connect("stdio", log_file=tmp_path / "lsp.log")
    try:
        await initialize(session, preset="vscode", folders=[root])
        for bad in (root / "missing", a_file, repo / ".git"):
            err = await session.command_error(protocol.TASK_LIST, {"workspace": str(bad)})
            assert err.code == -32803 and err.data["kind"] == "workspaceInvalid", (bad, err.message)
        for command, args in ((protocol.TASK_START, {"brief": "x"}), (protocol.TASK_LIST, {})):
            err = await session.command_error(command, {**args, "workspace": str(plain)})
            assert err.code == -32803 and err.data["kind"] == "workspaceInvalid", command
            assert "not inside a git repository" in err.message
        err = await session.command_error(protocol.TASK_LIST, {"workspace": "relative/path"})
        assert err.code == -32602
    finally:
        await close(session)
    assert not (root / "missing").exists() and a_file.read_text() == "x"
    assert list(plain.iterdir()) == []
