"""Neovim as a person sees it: a real terminal (tmux), the screen read with capture-pane.

What only a screen shows: a message that would stop at "Press ENTER" in a narrow window,
and the statusline of a window that is not the current one.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from support import seed_user_cache

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

    def __init__(self, tmp: Path, width: int, height: int, cwd: Path, init: str = "tmux_init.lua",
                 more_env: dict[str, str] | None = None) -> None:
        self.sock = str(tmp / "tmux.sock")
        env = [f"XDG_{n}_HOME={tmp / 'xdg' / n.lower()}" for n in ("CONFIG", "DATA", "STATE", "CACHE")]
        seed_user_cache(tmp / "xdg" / "cache")
        # The project's own server first on PATH, as an installed autocode-lsp would be.
        env.append(f"PATH={Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
        env += [f"{k}={v}" for k, v in (more_env or {}).items()]
        self.tmux("new-session", "-d", "-s", "t", "-x", str(width), "-y", str(height), "-c", str(cwd),
                  shlex.join(["env", *env, find_nvim(), "--clean", "-S", str(PLUGIN / "tests" / init)]))

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

    def make(width: int, height: int, cwd: Path, init: str = "tmux_init.lua", ready: str = "[No Name]",
             more_env: dict[str, str] | None = None) -> Screen:
        screen = Screen(tmp_path, width, height, cwd, init, more_env)
        made.append(screen)
        screen.wait("Neovim to start", lambda s: ready in s)
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


# A person's typing, in Neovim's key notation: normal, insert, command-line, visual (v, V, Ctrl-V,
# each ended by an operator), replace and operator-pending mode, each lasting across keys.
TOKENS = [
    "i", "hello ", "there", "<Esc>", "dd", "p", ":", "let g:typed = get(g:, 'typed', 0) + 1", "<CR>",
    "j", ":", "w", "<CR>", "A", " more", "<Esc>", "2", "dd", "P",
    "v", "l", "l", "d", "V", "j", "y", "P", "<C-v>", "j", "l", ">",
    "R", "XY", "Z", "<Esc>", "d", "j", "c", "i", "w", "new", "<Esc>", ">", ">", "g", "U", "U",
]
TMUX_KEYS = {"<Esc>": "Escape", "<CR>": "Enter", "<C-v>": "C-v"}
START = [f"line {i}" for i in range(1, 13)]
MODE_SHOWN = ("-- INSERT --", "-- REPLACE --", "-- VISUAL")

ORACLE = """
local tokens = vim.json.decode(io.open(_G.arg[1]):read('a'))
vim.cmd.edit(vim.fn.fnameescape(_G.arg[2]))
vim.api.nvim_feedkeys(vim.api.nvim_replace_termcodes(table.concat(tokens), true, false, true), 'xt', false)
io.open(_G.arg[3], 'w'):write(vim.json.encode(vim.api.nvim_buf_get_lines(0, 0, -1, false)))
"""


def what_the_keys_make(tmp: Path, tokens: list[str]) -> list[str]:
    """The lines the same keys make of START in a Neovim nobody else touches."""
    (tmp / "oracle").mkdir(exist_ok=True)
    script, keys, notes, out = (tmp / "oracle" / n for n in ("oracle.lua", "keys.json", "notes.txt", "out.json"))
    script.write_text(ORACLE, encoding="utf-8")
    keys.write_text(json.dumps(tokens), encoding="utf-8")
    notes.write_text("\n".join(START) + "\n", encoding="utf-8")
    subprocess.run([find_nvim(), "--headless", "--clean", "-l", str(script), str(keys), str(notes), str(out)],
                   check=True, capture_output=True, timeout=60, cwd=tmp / "oracle", stdin=subprocess.DEVNULL)
    lines: list[str] = json.loads(out.read_text(encoding="utf-8"))
    return lines


def test_terminal_keys_in_every_mode_stay_the_persons_while_a_question_arrives(
    tmp_path: Path, screen_factory: Callable[..., Screen]
) -> None:
    """Keys sent to Neovim's terminal (tmux send-keys), as a person types them, in every mode while
    the real server's question arrives: the buffer ends exactly as the keys alone make it, no
    picker opened, nothing was answered; then :AutoCode answer and Enter take the default."""
    repo = _helpers.sample_repo(tmp_path)
    (repo / "notes.txt").write_text("\n".join(START) + "\n", encoding="utf-8")
    screen = screen_factory(140, 20, repo, "tmux_keys_init.lua", "notes.txt")
    screen.keys(":AutoCode start Add total_with_tax to shop.pricing; apply patches/add-tax.patch", "Enter")
    typed: list[str] = []

    def type_round() -> None:
        for token in TOKENS:
            if token in TMUX_KEYS:
                screen.keys(TMUX_KEYS[token])
            else:
                screen.keys("-l", token)
            typed.append(token)
            if token == "<Esc>":
                # A person sees the mode end before typing on. The terminal UI takes an Escape
                # followed within 'ttimeoutlen' (50 ms) by another key as Alt and that key.
                time.sleep(0.2)
                screen.wait("the mode to end", lambda s: not any(m in s.splitlines()[-1] for m in MODE_SHOWN))
            time.sleep(0.04)

    deadline = time.monotonic() + 120
    while "question: :AutoCode answer" not in screen.text():
        assert time.monotonic() < deadline, screen.text()
        type_round()
    for _ in range(2):  # and two more rounds after it arrived
        type_round()
    screen.keys(":silent write | echo 'the last write'", "Enter")
    shown = screen.wait("the last write", lambda s: "the last write" in s.splitlines()[-1])
    assert "Number and Enter" not in shown and "autocode://" not in shown and "Press ENTER" not in shown, shown
    want = what_the_keys_make(tmp_path, typed)
    assert (repo / "notes.txt").read_text(encoding="utf-8").splitlines() == want
    assert "question: :AutoCode answer" in shown, shown
    runs = [p for p in (repo / ".autocode" / "runs").iterdir() if p.is_dir()]
    for run in runs:
        ledger = run / "ledger.json"
        assert not ledger.exists() or json.loads(ledger.read_text(encoding="utf-8"))["answers"] == []

    # On purpose now: the numbered list in the command line, Enter alone takes the default.
    screen.keys(":AutoCode answer", "Enter")
    screen.wait("the numbered list", lambda s: "Number and Enter" in s)
    screen.keys("Enter")
    screen.wait("the question to be answered", lambda s: "question: :AutoCode answer" not in s, timeout=60)
    (run,) = runs
    ledger_path = run / "ledger.json"
    deadline = time.monotonic() + 60
    while not (ledger_path.exists() and json.loads(ledger_path.read_text(encoding="utf-8"))["answers"]):
        assert time.monotonic() < deadline, "no answer recorded"
        time.sleep(0.2)
    answers = json.loads(ledger_path.read_text(encoding="utf-8"))["answers"]
    assert [a["how"] for a in answers] == ["acceptedDefault"]


def test_a_server_killed_while_its_plan_runs_is_said_in_one_line(
    tmp_path: Path, screen_factory: Callable[..., Screen]
) -> None:
    """The server is killed while an approved plan verifies (a conftest makes the changed copy's
    tests never finish, so the approve still waits). Neovim's own "Client autocode quit with exit
    code 0 and signal 9 …" used to come after the plugin's lines and stop at "Press ENTER"; now
    the one line is the approve's, saying the plan was approved and how to resume. v:scrollstart
    is read when the plugin's AutoCodeServerExit fires, after Neovim's own exit work: empty means
    no message scrolled the screen, so no hit-enter prompt follows."""
    repo = _helpers.sample_repo(tmp_path)
    (repo / "conftest.py").write_text(_helpers.HELD_WHEN_CHANGED_CONFTEST, encoding="utf-8")
    _helpers.git(repo, "add", "conftest.py")
    _helpers.git(repo, "commit", "-qm", "the changed copy's tests never finish")
    exits = tmp_path / "exits.jsonl"
    screen = screen_factory(100, 30, repo, more_env={"AUTOCODE_TEST_EXITS": str(exits)})
    screen.keys(":edit README.md", "Enter")
    screen.keys(":lua vim.lsp.enable('autocode')", "Enter")
    screen.keys(":AutoCode start Add total_with_tax to shop.pricing; apply patches/add-tax.patch", "Enter")
    screen.wait("the question", lambda s: "asks:" in s, timeout=60)
    screen.keys(":AutoCode answer", "Enter")
    screen.wait("the numbered list", lambda s: "Enter alone: 1" in s)
    screen.keys("Enter")
    screen.wait("the plan", lambda s: "(plan: :AutoCode review)" in s, timeout=60)
    screen.keys(":AutoCode approve", "Enter")
    screen.wait("the task to verify", lambda s: " is VERIFYING" in s, timeout=120)
    # Whatever scrolled before is not this test's business; the echo shows the reset was done.
    screen.keys(":let v:scrollstart = '' | echo 'scroll reset'", "Enter")
    screen.wait("the reset", lambda s: "scroll reset" in s.splitlines()[-1])

    pane = int(screen.tmux("display", "-p", "-t", "t", "#{pane_pid}").strip())
    (server,) = _helpers.server_pids(pane)
    os.kill(server, signal.SIGKILL)
    deadline = time.monotonic() + 30
    while not (exits.exists() and exits.read_text(encoding="utf-8").strip()):
        assert time.monotonic() < deadline, screen.text()
        time.sleep(0.1)
    (ended,) = [json.loads(line) for line in exits.read_text(encoding="utf-8").splitlines()]
    assert ended["scrollstart"] == "", (ended, screen.text())
    assert "was VERIFYING" in ended["message"], ended

    shown = screen.wait("the approve's line", lambda s: "AutoCode: plan approved; the server stopped during" in s)
    assert "Press ENTER" not in shown and "quit with exit code" not in shown, shown
    # The whole line is in the float (it is longer than the screen is wide).
    assert flat("(while VERIFYING): :AutoCode resume continues task t-") in flat(shown), shown
