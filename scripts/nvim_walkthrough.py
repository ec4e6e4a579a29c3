"""Records docs/walkthrough-nvim.md's screens: real Neovim in tmux, the real server, a sample repository.

    python scripts/nvim_walkthrough.py OUT.md [verified] [failing] [model] [resume]

Each screen is `tmux capture-pane` text, taken when what the step waits for is on the screen.
Without section names all four are recorded. Needs tmux, Neovim 0.11 and autocode-lsp on PATH
(the project's .venv/bin). The model section serves a scripted OpenAI-compatible endpoint on
127.0.0.1 (tests/support/agent.py) and gives Neovim a made-up key.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
INIT = ROOT / "editors" / "nvim" / "tests" / "tmux_init.lua"
MODEL_INIT = ROOT / "editors" / "nvim" / "tests" / "tmux_model_init.lua"
SLOW_CONFTEST = """\
import time

time.sleep(15)  # slow enough to stop the server while the task verifies
"""
SHOWN_URL = "http://127.0.0.1:18000/v1"
FAILING_CONFTEST = """\
import pytest


def pytest_collection_modifyitems(items):
    for item in items:
        if item.name == "test_total_with_tax_applies_the_rate":
            item.add_marker(pytest.mark.xfail(strict=True, reason="the walkthrough makes it fail"))
"""


class Screen:
    def __init__(self, tmp: Path, cwd: Path, width: int = 100, height: int = 30, init: Path = INIT,
                 env: dict[str, str] | None = None) -> None:
        self.sock = str(tmp / "tmux.sock")
        self.tmp = str(tmp)
        self.replace: dict[str, str] = {}
        xdg = " ".join(f"XDG_{n}_HOME={tmp / 'xdg' / n.lower()}" for n in ("CONFIG", "DATA", "STATE", "CACHE"))
        more = " ".join(f"{k}={v}" for k, v in (env or {}).items())
        self.tmux("new-session", "-d", "-s", "w", "-x", str(width), "-y", str(height), "-c", str(cwd),
                  f"env {xdg} {more} nvim --clean -S {init} README.md")

    def tmux(self, *args: str) -> str:
        return subprocess.run(["tmux", "-S", self.sock, *args], check=True, capture_output=True, text=True,
                              timeout=30).stdout

    def keys(self, *keys: str) -> None:
        self.tmux("send-keys", "-t", "w", *keys)

    def wait(self, text: str, timeout: float = 180) -> str:
        deadline = time.monotonic() + timeout
        while True:
            screen = self.tmux("capture-pane", "-p", "-t", "w")
            if text in screen.replace("│", "").replace("\n", ""):
                return self.portable(screen.rstrip("\n"))
            if time.monotonic() > deadline:
                raise SystemExit(f"timed out waiting for {text!r}; the screen:\n{screen}")
            time.sleep(0.2)

    def portable(self, screen: str) -> str:
        """The screen without this machine's paths: the sample's folder and the Python environment."""
        for old, new in self.replace.items():
            screen = screen.replace(old, new)
        return screen.replace(self.tmp, "~/src").replace(str(Path(sys.executable).parents[1]), ".venv")

    def stop_server(self) -> None:
        """Kills everything Neovim started (the server and its test run), as a crash would."""
        pane = int(self.tmux("display", "-p", "-t", "w", "#{pane_pid}").strip())
        # Neovim's own processes (its terminal UI and the embedded editor) stay.
        server = next(p for p in descendants(pane) if Path(f"/proc/{p}/comm").read_text().strip() == "autocode-lsp")
        for pid in [server, *descendants(server)]:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)

    def close(self) -> None:
        subprocess.run(["tmux", "-S", self.sock, "kill-server"], capture_output=True, timeout=30)


def self_screen(screen: Screen) -> str:
    return screen.tmux("capture-pane", "-p", "-t", "w")


def descendants(pid: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except OSError:
                continue
            children.setdefault(ppid, []).append(int(entry.name))
    out, stack = [], [pid]
    while stack:
        for child in children.get(stack.pop(), []):
            out.append(child)
            stack.append(child)
    return out


def sample(tmp: Path, failing: bool, conftest: str | None = None) -> Path:
    repo = tmp / "shop"
    subprocess.run([sys.executable, str(ROOT / "fixtures" / "samples" / "build.py"), "pytest", str(repo)],
                   check=True, capture_output=True, timeout=60)
    conftest = FAILING_CONFTEST if failing else conftest
    if conftest:
        (repo / "conftest.py").write_text(conftest, encoding="utf-8")
        for args in (["add", "conftest.py"], ["commit", "-qm", "a conftest for the walkthrough"]):
            subprocess.run(["git", "-c", "user.name=w", "-c", "user.email=w@example.invalid", *args],
                           cwd=repo, check=True, timeout=60)
    return repo


def record_model() -> list[tuple[str, str]]:
    """A real model from setup{}: :AutoCode model, its check, :checkhealth, then a task on it."""
    sys.path.insert(0, str(ROOT / "tests"))
    from support.agent import (
        TEST_COMMAND,
        build_calc,
        call,
        review,
        roles_before_implementing,
        serve,
        text,
    )

    shots: list[tuple[str, str]] = []
    with tempfile.TemporaryDirectory(prefix="w", dir="/tmp", ignore_cleanup_errors=True) as name, serve() as endpoint:
        tmp = Path(name)
        repo = build_calc(tmp / "calc")
        (repo / ".autocode").mkdir()
        (repo / ".autocode" / "config.toml").write_text(f"test_command = {json.dumps(TEST_COMMAND)}\n", encoding="utf-8")
        for args in (["add", "-A"], ["commit", "-qm", "the test command"]):
            subprocess.run(["git", "-c", "user.name=w", "-c", "user.email=w@example.invalid", *args],
                           cwd=repo, check=True, timeout=60)
        endpoint.load(
            call("ping", {"ok": True}),
            *roles_before_implementing(),
            call("edit_file", {"path": "calc/ops.py", "old_text": "a - b", "new_text": "a + b"}),
            call("run_tests"),
            text("add adds now; the tests pass"),
            review(),
        )
        key = "sk-" + "walkthrough" * 2  # made up; the screens must not show it
        screen = Screen(tmp, repo, init=MODEL_INIT,
                        env={"AUTOCODE_WALKTHROUGH_URL": endpoint.url, "OPENAI_API_KEY": key})
        shown = SHOWN_URL if len(endpoint.url) == len(SHOWN_URL) else "http://127.0.0.1:PORT/v1"
        # The URL, and its start where a one-line message cut it.
        screen.replace = {endpoint.url: shown, endpoint.url.rsplit("/", 1)[0]: shown.rsplit("/", 1)[0],
                          str(Path(sys.executable).parent): ".venv/bin"}
        try:
            screen.wait("README.md")
            screen.keys(":AutoCode model", "Enter")
            shots.append((":AutoCode model: each value and where it came from", screen.wait("Key: from")))
            screen.keys(":only", "Enter", ":AutoCode model check", "Enter")
            shots.append((":AutoCode model check: one request to the endpoint", screen.wait("tools          called")))
            screen.keys(":only", "Enter", ":AutoCode start add(2, 3) gives -1; fix it.", "Enter")
            screen.wait("(plan: :AutoCode review)")
            screen.keys(":AutoCode review", "Enter")
            shots.append(("The model's plan", screen.wait("a approve plan")))
            screen.keys("a")
            screen.wait("[y/N]")
            screen.keys("y", "Enter")
            screen.wait("(change: :AutoCode review)")
            screen.keys(":AutoCode review", "Enter")
            shots.append(("The model's change, with its summary and the review", screen.wait("a apply the change")))
            screen.keys(":checkhealth autocode", "Enter")
            screen.wait("memories live")
            screen.keys("/^Model ~", "Enter", "zt")
            shots.append((":checkhealth autocode: the Model section", screen.wait("provider check: the openai")))
            if any(key in shot for _, shot in shots):
                raise SystemExit("the key is on a screen")
        finally:
            screen.close()
    return shots


def record_resume() -> list[tuple[str, str]]:
    """The server dies while the task verifies: the task says so and :AutoCode resume goes on."""
    shots: list[tuple[str, str]] = []
    with tempfile.TemporaryDirectory(prefix="w", dir="/tmp", ignore_cleanup_errors=True) as name:
        tmp = Path(name)
        screen = Screen(tmp, sample(tmp, False, SLOW_CONFTEST))
        try:
            screen.wait("README.md")
            screen.keys(":lua vim.lsp.enable('autocode')", "Enter")
            screen.keys(":AutoCode start Add total_with_tax to shop.pricing; apply patches/add-tax.patch", "Enter")
            screen.wait("asks:")
            screen.keys(":AutoCode answer", "Enter")
            screen.wait("Enter alone: 1")
            screen.keys("Enter")
            screen.wait("(plan: :AutoCode review)")
            screen.keys(":AutoCode approve", "Enter")
            screen.wait("shop: VERIFYING")
            screen.stop_server()
            # One line: the approve that was waiting says the plan was approved and how to go on
            # (the whole of it in the float); the statusline says the task is interrupted.
            shots.append(("The server stops while the task verifies: the plan was approved, the way on",
                          screen.wait("AutoCode: plan approved; the server stopped")))
            if "Press ENTER" in self_screen(screen):
                raise SystemExit("a hit-enter prompt after the server stopped:\n" + self_screen(screen))
            screen.keys(":AutoCode resume", "Enter")
            shots.append((":AutoCode resume: a new server goes on from where it stopped",
                          screen.wait("(change: :AutoCode review)", timeout=300)))
        finally:
            screen.close()
    return shots


def record(failing: bool) -> list[tuple[str, str]]:
    shots: list[tuple[str, str]] = []
    with tempfile.TemporaryDirectory(prefix="w", dir="/tmp") as name:
        tmp = Path(name)
        screen = Screen(tmp, sample(tmp, failing))
        try:
            screen.wait("README.md")
            screen.keys(":lua vim.lsp.enable('autocode')", "Enter")
            screen.keys(":AutoCode start Add total_with_tax to shop.pricing; apply patches/add-tax.patch", "Enter")
            shots.append(("The question is announced; nothing opens", screen.wait("asks:")))
            screen.keys(":AutoCode answer", "Enter")
            shots.append((":AutoCode answer: Enter alone takes the proposed default", screen.wait("Enter alone: 1")))
            screen.keys("Enter")
            shots.append(("The plan is announced", screen.wait("(plan: :AutoCode review)")))
            screen.keys(":AutoCode review", "Enter")
            shots.append((":AutoCode review opens the plan", screen.wait("a approve plan")))
            screen.keys("a")
            shots.append(("`a` asks first", screen.wait("[y/N]")))
            screen.keys("y", "Enter")
            if failing:
                shots.append(("The tests fail: the failing test by name, the ways on",
                              screen.wait("is FAILED")))
                screen.keys(":AutoCode status", "Enter")
                screen.wait("## Tests")
                screen.keys("/## Tests", "Enter", "zt")
                shots.append((":AutoCode status: tests, next steps", screen.wait("## Next")))
                screen.keys(":AutoCode output", "Enter")
                shots.append((":AutoCode output: the whole test output", screen.wait("test-output.txt")))
            else:
                screen.wait("(change: :AutoCode review)")
                screen.keys(":AutoCode review", "Enter")
                shots.append((":AutoCode review opens the change: verdict and tests first", screen.wait("a apply the change")))
                screen.keys("q", ":AutoCode hunks", "Enter")
                screen.wait("[keep]")
                screen.keys("/^@@ -1,1", "Enter", ":AutoCode hunk undo", "Enter")
                shots.append((":AutoCode hunks: what Apply will do to your files, hunk by hunk",
                              screen.wait("[undo]")))
        finally:
            screen.close()
    return shots


SECTIONS = {
    "verified": lambda: record(False),
    "failing": lambda: record(True),
    "model": record_model,
    "resume": record_resume,
}


def main() -> None:
    out = Path(sys.argv[1])
    names = sys.argv[2:] or list(SECTIONS)
    parts = []
    for name in names:
        parts.append(f"## {name}\n")
        for title, text in SECTIONS[name]():
            parts.append(f"### {title}\n\n```text\n{text}\n```\n")
    out.write_text("\n".join(parts), encoding="utf-8")


if __name__ == "__main__":
    main()
