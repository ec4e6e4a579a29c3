"""Helpers for the sandbox tests: a workspace with secrets around it, a script that tries every
escape from inside the copy, and hashes that prove nothing outside the copy changed."""

from __future__ import annotations

import hashlib
import json
import os
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

KEY_VALUE = "sk-test-" + "0123456789abcdefghijklmnop"
SSH_KEY = "-----FAKE KEY FOR A TEST-----\nnot a real key\n"
ENV_SECRET = "DATABASE_" + "PASSWORD=" + "hunter2-but-longer\n"  # assembled: no credential-shaped literal


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-c", "core.hooksPath=/dev/null", "-c", "user.name=t", "-c", "user.email=t@example.invalid", *args],
        cwd=cwd, check=True, capture_output=True, text=True,
    ).stdout


def make_workspace(dest: Path, files: dict[str, str] | None = None, ignore: str = "") -> Path:
    """A committed repository with an ignored `.env` and an ignored build folder."""
    base = {
        "README.md": "# sample\n",
        ".gitignore": ".env\nbuild/\n.venv/\nnode_modules/\n__pycache__/\n" + ignore,
    }
    base.update(files or {})
    dest.mkdir(parents=True)
    for rel, content in base.items():
        path = dest / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content, encoding="utf-8")
    git(dest, "init", "-q")
    git(dest, "add", "-A")
    git(dest, "commit", "-q", "-m", "initial")
    (dest / ".env").write_text(ENV_SECRET, encoding="utf-8")
    (dest / "build").mkdir()
    (dest / "build" / "keep.txt").write_text("ignored, must survive git clean\n", encoding="utf-8")
    return dest


def fake_home(dest: Path) -> Path:
    (dest / ".ssh").mkdir(parents=True)
    (dest / ".ssh" / "id_ed25519").write_text(SSH_KEY, encoding="utf-8")
    (dest / ".gitconfig").write_text("[user]\n\tname = person\n", encoding="utf-8")
    return dest


def tree_hash(folder: Path, skip: tuple[str, ...] = (".autocode",)) -> str:
    """One hash of every path, mode and content under `folder` (including .git), but `skip`."""
    digest = hashlib.sha256()
    for path in sorted(folder.rglob("*")):
        rel = path.relative_to(folder)
        if rel.parts and rel.parts[0] in skip:
            continue
        st = path.lstat()
        digest.update(f"{rel}\0{st.st_mode}\0".encode())
        if path.is_file() and not path.is_symlink():
            digest.update(path.read_bytes())
    return digest.hexdigest()


@contextmanager
def listener(host: str = "127.0.0.1") -> Iterator[dict[str, Any]]:
    """A real TCP listener on `host` (127.0.0.1; "0.0.0.0" for every address); `accepted` counts
    connections that reached it."""
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind((host, 0))
    server.listen(5)
    server.settimeout(0.2)
    state: dict[str, Any] = {"port": server.getsockname()[1], "accepted": 0}
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            state["accepted"] += 1
            conn.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        stop.set()
        thread.join(2)
        server.close()


ESCAPE_SCRIPT = r'''
import json, os, socket, subprocess, sys, time
WS = {workspace!r}
HOME = {home!r}
PORT = {port}
MARKER = {marker!r}
results = {{}}

def attempt(name, fn):
    try:
        results[name] = "done: " + str(fn())
    except Exception as exc:
        results[name] = "refused: " + type(exc).__name__

def write(path):
    with open(path, "w") as f:
        f.write("escaped\n")
    return path

def read(path):
    with open(path) as f:
        return f.read()

attempt("write_work_tree", lambda: write(os.path.join(WS, "ESCAPED.txt")))
attempt("write_hook", lambda: write(os.path.join(WS, ".git", "hooks", "post-commit")))
attempt("write_git_config", lambda: write(os.path.join(WS, ".git", "config")))
attempt("write_home", lambda: write(os.path.join(HOME, "planted.txt")))
attempt("write_etc", lambda: write("/etc/autocode-escape"))
attempt("read_ssh_key", lambda: read(os.path.join(HOME, ".ssh", "id_ed25519")))
attempt("read_env_file", lambda: read(os.path.join(WS, ".env")))
def run_git(*args):
    proc = subprocess.run(["git", *args], capture_output=True, text=True)
    if proc.returncode:
        raise RuntimeError(proc.stderr.strip())
    return proc.stdout
attempt("git_tag", lambda: run_git("tag", "escaped-tag"))
attempt("git_clean", lambda: run_git("clean", "-fdx"))
def connect():
    s = socket.create_connection(("127.0.0.1", PORT), timeout=2)
    s.close()
    return "connected"
attempt("connect_loopback", connect)
results["provider_key"] = str(os.environ.get("OPENAI_API_KEY"))
results["env_names"] = sorted(os.environ)
results["cwd"] = os.getcwd()
# A child in a session of its own that would outlive us.
subprocess.Popen([sys.executable, "-c", "import time\nwhile True: time.sleep(0.05)", MARKER],
                 start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
print("ESCAPES " + json.dumps(results), flush=True)
if "hang" in sys.argv:
    while True:
        time.sleep(0.05)
'''


def escape_script(workspace: Path, home: Path, port: int, marker: str) -> str:
    return ESCAPE_SCRIPT.format(workspace=str(workspace), home=str(home), port=port, marker=marker)


def escapes_in(output: str) -> dict[str, Any]:
    for line in output.splitlines():
        if line.startswith("ESCAPES "):
            data: dict[str, Any] = json.loads(line[len("ESCAPES "):])
            return data
    raise AssertionError(f"no ESCAPES line in the output:\n{output[-3000:]}")


def processes_with(marker: str) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cmdline = Path("/proc", entry, "cmdline").read_bytes()
        except OSError:
            continue
        if marker.encode() in cmdline.split(b"\0"):
            found.append(int(entry))
    return found


def wait_until_gone(marker: str, seconds: float = 5.0) -> list[int]:
    """Processes still carrying `marker` once they had `seconds` to be reaped (empty when all died)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        left = processes_with(marker)
        if not left:
            return []
        time.sleep(0.05)
    return processes_with(marker)
