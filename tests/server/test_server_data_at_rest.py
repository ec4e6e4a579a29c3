"""What the server leaves on disk is its owner's alone, whatever the umask, and the log never
holds the credentials a person pasted into a brief, an answer or a memory."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from autocode_lsp import protocol
from support import make_repo
from support.remote import StdioClient, command_frame, frame, initialize_frame, private_env
from support.scrub import load_corpus

pytestmark = pytest.mark.timeout(180)


def _secrets() -> list[str]:
    found = [str(c["secret"]) for c in load_corpus()["credentials"] if len(str(c.get("secret", ""))) >= 16]
    return found[:3]


def _modes(root: Path) -> dict[str, int]:
    found = {".": stat.S_IMODE(root.stat().st_mode)}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = Path(dirpath) / name
            found[str(path.relative_to(root))] = stat.S_IMODE(path.lstat().st_mode)
    return found


@pytest.mark.parametrize("umask", [0o022, 0o000], ids=["umask022", "umask000"])
def test_memory_db_log_and_run_state_are_private_and_the_log_is_scrubbed(umask: int, tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "project", {"a.txt": "a\n"})
    env = private_env(tmp_path)
    log_file = tmp_path / "fresh" / "logs" / "lsp.log"
    secrets = _secrets()
    assert secrets, "the scrub corpus has no credentials"
    process = subprocess.Popen(
        ["sh", "-c", f'umask {umask:03o} && exec "$@"', "sh", sys.executable, "-m", "autocode_lsp",
         "--log-file", str(log_file), "--log-level", "debug"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, cwd=tmp_path,
    )
    client = StdioClient(process)
    replies: dict[int, dict[str, object]] = {}
    try:
        replies[1] = client.request(initialize_frame(1, None, repo), 1)
        client.send(frame({"method": "initialized", "params": {}}))
        fact = {"content": "Builds here need the VPN to reach the registry."}
        replies[2] = client.request(command_frame(2, protocol.MEMORY_SAVE, fact), 2)
        leaked = {"content": f"the deploy key is {secrets[0]}"}
        replies[3] = client.request(command_frame(3, protocol.MEMORY_SAVE, leaked), 3)
        brief = f"Add a NOTES file; the staging password is {secrets[1 % len(secrets)]}"
        replies[4] = client.request(command_frame(4, protocol.TASK_START, {"brief": brief, "testCommand": "true"}), 4)
        client.request(frame({"id": 5, "method": "shutdown"}), 5)
        client.send(frame({"method": "exit"}))
        assert process.wait(timeout=30) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert "result" in replies[2], replies[2]

    # The log: 0600 in 0700 folders, and not one of the credentials, at debug level.
    assert stat.S_IMODE(log_file.stat().st_mode) == 0o600
    assert stat.S_IMODE(log_file.parent.stat().st_mode) == 0o700
    assert stat.S_IMODE((tmp_path / "fresh").stat().st_mode) == 0o700
    text = log_file.read_text(encoding="utf-8")
    assert "Add a NOTES file" in text, "the brief was not logged: the check below proves nothing"
    for secret in secrets:
        assert secret not in text
    assert "[redacted:" in text

    # The memory database (and SQLite's side files).
    data = Path(env["XDG_DATA_HOME"]) / "autocode"
    db_files = [p for p in data.iterdir() if p.name.startswith("memory.sqlite3")]
    assert db_files, list(data.iterdir())
    assert stat.S_IMODE(data.stat().st_mode) == 0o700
    for path in db_files:
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path

    # The task's run folder.
    assert "result" in replies[4], replies[4]
    runs = repo / ".autocode" / "runs"
    modes = _modes(runs)
    assert len(modes) > 3, modes
    for name, mode in modes.items():
        path = runs / name
        expected = 0o700 if path.is_dir() else 0o600
        assert mode == expected, (oct(umask), name, oct(mode))
