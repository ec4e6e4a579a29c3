"""Neovim as a person sees it: a real terminal (tmux), the screen read with capture-pane.

What only a screen shows: a message that would stop at "Press ENTER" in a narrow window,
and the statusline of a window that is not the current one.
"""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

_spec = importlib.util.spec_from_file_location("nvim_plugin_helpers", Path(__file__).with_name("test_nvim_plugin.py"))
assert _spec is not None and _spec.loader is not None
_helpers = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_helpers)
PLUGIN, find_nvim = _helpers.PLUGIN, _helpers.find_nvim

pytestmark = [
    pytest.mark.editor,
    pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed (apt-get install tmux)"),
]


class Screen:
    """One tmux session running Neovim; `text()` is what the terminal shows."""

    def __init__(self, tmp: Path, width: int, height: int, cwd: Path) -> None:
        self.sock = str(tmp / "tmux.sock")
        xdg = " ".join(f"XDG_{n}_HOME={tmp / 'xdg' / n.lower()}" for n in ("CONFIG", "DATA", "STATE", "CACHE"))
        init = PLUGIN / "tests" / "tmux_init.lua"
        self.tmux("new-session", "-d", "-s", "t", "-x", str(width), "-y", str(height), "-c", str(cwd),
                  f"env {xdg} {find_nvim()} --clean -S {init}")

    def tmux(self, *args: str) -> str:
        return subprocess.run(["tmux", "-S", self.sock, *args], check=True, capture_output=True, text=True,
                              timeout=30).stdout

    def text(self) -> str:
        return self.tmux("capture-pane", "-p", "-t", "t")

    def keys(self, *keys: str) -> None:
        self.tmux("send-keys", "-t", "t", *keys)

    def wait(self, what: str, cond: Callable[[str], bool], timeout: float = 20) -> str:
        deadline = time.monotonic() + timeout
        while True:
            screen = self.text()
            if cond(screen):
                return screen
            if time.monotonic() > deadline:
                pytest.fail(f"timed out waiting for {what}; the screen:\n{screen}")
            time.sleep(0.1)

    def close(self) -> None:
        subprocess.run(["tmux", "-S", self.sock, "kill-server"], capture_output=True, timeout=30)


@pytest.fixture
def screen_factory(tmp_path: Path) -> Iterator[Callable[..., Screen]]:
    made: list[Screen] = []

    def make(width: int, height: int, cwd: Path) -> Screen:
        screen = Screen(tmp_path, width, height, cwd)
        made.append(screen)
        screen.wait("Neovim to start", lambda s: "[No Name]" in s)
        return screen

    yield make
    for screen in made:
        screen.close()


def flat(screen: str) -> str:
    """The screen's text without the float's border, spaces and line breaks (wrapped text joined)."""
    return "".join(ch for ch in screen if ch not in "│╭╮╰╯─ \n~")


def test_a_long_message_fits_one_line_and_opens_in_a_float(tmp_path: Path, screen_factory: Callable[..., Screen]) -> None:
    screen = screen_factory(40, 15, tmp_path)
    screen.keys(":lua fail()", "Enter")
    shown = screen.wait("the float", lambda s: "evidence/test-output.txt" in flat(s))
    assert "Press ENTER" not in shown, shown
    last = shown.rstrip("\n").splitlines()[-1]
    assert last.startswith("AutoCode: task t-long is F") and len(last) <= 40, shown
    # The whole message is in the float; the next key closes it and does what it always does.
    assert "test_pricing.py::test_total_with_tax_applies_the_rate" in flat(shown), shown
    screen.keys("i", "typed", "Escape")
    after = screen.wait("the typed text", lambda s: "typed" in s and "╭" not in s)
    assert "test_total_with_tax" not in flat(after), after
    # And it is there to read again.
    screen.keys(":AutoCode messages", "Enter")
    screen.wait("the messages buffer", lambda s: "╭" not in s and "test_total_with_tax_applies_the_rate" in flat(s))


def test_each_window_shows_its_own_repositorys_task(tmp_path: Path, screen_factory: Callable[..., Screen]) -> None:
    for name in ("shop", "blog"):
        (tmp_path / name / ".git").mkdir(parents=True)
        (tmp_path / name / "README.md").write_text(f"# {name}\n", encoding="utf-8")
    screen = screen_factory(90, 16, tmp_path)
    screen.keys(":e shop/README.md", "Enter")
    screen.keys(":split blog/README.md", "Enter")
    screen.keys(":wincmd j", "Enter")  # the cursor in shop's window; blog's is the other one
    screen.keys(":lua task('shop', 'IMPLEMENTING')", "Enter")
    screen.keys(":lua task('blog', 'WAITING_FOR_USER', 'answer_questions')", "Enter")
    shown = screen.wait("both statuslines", lambda s: "AutoCode blog" in s and "AutoCode shop" in s)
    lines = shown.splitlines()
    blog = next(line for line in lines if line.startswith("README.md") and "blog" in line)
    assert "AutoCode blog: WAITING_FOR_USER (question: :AutoCode answer)" in blog, shown
    # A later change of blog's task (from a timer, as a server's notification) redraws blog's
    # window too, though the cursor is in shop's.
    screen.keys(":lua task('blog', 'PLANNING', nil, 2)", "Enter")
    shown = screen.wait("blog's statusline to follow", lambda s: "AutoCode blog: PLANNING" in s)
    shop = [line for line in shown.splitlines() if "AutoCode shop" in line]
    assert shop and all("IMPLEMENTING" in line for line in shop), shown
