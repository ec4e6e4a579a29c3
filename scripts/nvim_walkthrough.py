"""Records docs/walkthrough-nvim.md's screens: real Neovim in tmux, the real server, a sample repository.

    python scripts/nvim_walkthrough.py OUT.md

Each screen is `tmux capture-pane` text, taken when what the step waits for is on the screen.
Needs tmux, Neovim 0.11 and autocode-lsp on PATH (the project's .venv/bin).
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
INIT = ROOT / "editors" / "nvim" / "tests" / "tmux_init.lua"
FAILING_CONFTEST = """\
import pytest


def pytest_collection_modifyitems(items):
    for item in items:
        if item.name == "test_total_with_tax_applies_the_rate":
            item.add_marker(pytest.mark.xfail(strict=True, reason="the walkthrough makes it fail"))
"""


class Screen:
    def __init__(self, tmp: Path, cwd: Path, width: int = 100, height: int = 30) -> None:
        self.sock = str(tmp / "tmux.sock")
        self.tmp = str(tmp)
        xdg = " ".join(f"XDG_{n}_HOME={tmp / 'xdg' / n.lower()}" for n in ("CONFIG", "DATA", "STATE", "CACHE"))
        self.tmux("new-session", "-d", "-s", "w", "-x", str(width), "-y", str(height), "-c", str(cwd),
                  f"env {xdg} nvim --clean -S {INIT} README.md")

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
        return screen.replace(self.tmp, "~/src").replace(str(Path(sys.executable).parents[1]), ".venv")

    def close(self) -> None:
        subprocess.run(["tmux", "-S", self.sock, "kill-server"], capture_output=True, timeout=30)


def sample(tmp: Path, failing: bool) -> Path:
    repo = tmp / "shop"
    subprocess.run([sys.executable, str(ROOT / "fixtures" / "samples" / "build.py"), "pytest", str(repo)],
                   check=True, capture_output=True, timeout=60)
    if failing:
        (repo / "conftest.py").write_text(FAILING_CONFTEST, encoding="utf-8")
        for args in (["add", "conftest.py"], ["commit", "-qm", "the tax test fails"]):
            subprocess.run(["git", "-c", "user.name=w", "-c", "user.email=w@example.invalid", *args],
                           cwd=repo, check=True, timeout=60)
    return repo


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
        finally:
            screen.close()
    return shots


def main() -> None:
    out = Path(sys.argv[1])
    parts = []
    for failing in (False, True):
        for title, text in record(failing):
            parts.append(f"### {title}\n\n```text\n{text}\n```\n")
    out.write_text("\n".join(parts), encoding="utf-8")


if __name__ == "__main__":
    main()
