"""Starting autocode-mcp: the workspace is fixed at start and must be a git work tree; a bad
start says what to do and writes nothing; `autocode --help` and the language server never
load the MCP SDK."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from support import make_repo
from support.mcp import server_command, server_env

pytest.importorskip("mcp", reason="the MCP SDK is not installed (pip install '.[mcp]')")


def run_server(workspace: Path | None, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        server_command(workspace, *args), cwd=cwd, env=server_env(), capture_output=True, text=True,
        timeout=120, stdin=subprocess.DEVNULL,
    )


def test_a_folder_outside_git_is_refused_and_nothing_is_written(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    for given, cwd in ((plain, None), (None, plain), (tmp_path / "missing", None)):
        proc = run_server(given, "--log-file", str(tmp_path / "mcp.log"), cwd=cwd)
        assert proc.returncode == 2, proc.stderr
        assert proc.stdout == ""  # stdout is the protocol's: never a word of prose
        assert "autocode-mcp:" in proc.stderr and "--workspace" in proc.stderr
    assert list(plain.iterdir()) == []
    assert not (tmp_path / "mcp.log").exists()


def test_a_sub_folder_serves_its_repository_and_a_bad_agent_name_is_refused(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"src/a.py": "x = 1\n"})
    proc = run_server(repo / "src", "--agent", "no spaces please")
    assert proc.returncode == 2 and "--agent" in proc.stderr and proc.stdout == ""
    # With stdin closed at once the server starts, serves nothing and ends cleanly.
    proc = run_server(repo / "src", "--log-file", str(tmp_path / "mcp.log"))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == ""
    assert f"serving {repo}" in (tmp_path / "mcp.log").read_text(encoding="utf-8")


def test_the_cli_and_the_language_server_never_import_the_sdk() -> None:
    probe = (
        "import sys, autocode.cli, autocode_lsp.server, autocode_lsp.__main__\n"
        "autocode.cli.build_parser()\n"
        "print(sorted(m for m in sys.modules if m == 'mcp' or m.startswith(('mcp.', 'autocode_mcp'))))\n"
    )
    proc = subprocess.run([sys.executable, "-c", probe], env=server_env(), capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"
