"""The test suite tells the truth under load: no clock decides a result outside `tests/bench`.

Two shapes pass on a quiet machine and fail (or pass) for the wrong reason on a loaded one:

- an assert on an elapsed time (`time.monotonic() - started < 2`): a loaded machine fails it
  with nothing wrong, and a quiet one proves nothing the behaviour's own evidence could not;
- a sleep followed straight by an assert ("wait a little, then check nothing happened"): on
  a loaded machine the thing checked may simply not have happened *yet*. Wait instead for an
  event or a later message that proves the other side acted.

A bound on a hang (`assert time.monotonic() < deadline` inside a wait loop) is neither: it
fails only when something never happens.

The sleep check looks past the next statement: a sleep is flagged when any assert runs after
it (in its block or the blocks around it), unless it is the pause of a poll, directly in the
body of a loop that stops on a condition. The Neovim scripts (Lua) get the same check for a
bare `vim.wait(ms)` followed by a check; a script that could not yet do without one would be
named in `LUA_NOT_YET` with its reason (none is today: the plugin's `User` events
AutoCodeBufferChecked and AutoCodeServerExit mark the moments those scripts waited for).

The VS Code end-to-end scripts (`editors/vscode/test/e2e/*.mjs`) are not checked, because the
shape cannot be told apart there: a script waits (`page.waitForTimeout`), reads the screen
into its `result` object and goes on; the asserts are made afterwards in Python, on fields of
that result, by tests/editors/test_vscode_*.py. Most of the twenty-odd waits let an animation
settle before a screenshot or before reading something that is there; whether a field read
after one is asserted absent is known only by following it into another language. The reads
that are asserted absent today: `allNotifications` (run.mjs, 3 s after the first toast; no
second one), `dialogDuringReview` (800 ms after the diff opens; no dialog) and
`notificationCenter` (500 ms after it opens; no "is ready" toast).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
CLOCK = re.compile(r"\b(?:monotonic|perf_counter|time)\(\)\s*-")
"""A clock read minus a start: `time.monotonic() - t`, `loop.time() - began`."""


def _sources() -> list[Path]:
    return [p for p in sorted(TESTS.rglob("*.py")) if "bench" not in p.relative_to(TESTS).parts]


def _elapsed_names(tree: ast.AST) -> set[str]:
    """Names assigned an elapsed time (`took = time.monotonic() - asked`)."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and CLOCK.search(ast.unparse(node.value)):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
    return names


def test_no_assert_on_an_elapsed_time() -> None:
    found = []
    for path in _sources():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        elapsed = _elapsed_names(tree)
        for node in ast.walk(tree):
            if not isinstance(node, ast.Assert):
                continue
            test = ast.unparse(node.test)
            used = {n.id for n in ast.walk(node.test) if isinstance(n, ast.Name)}
            if CLOCK.search(test) or used & elapsed:
                found.append(f"{path.relative_to(TESTS)}:{node.lineno}: assert {test}")
    assert found == [], "wall-clock asserts outside tests/bench:\n" + "\n".join(found)


def _sleep(statement: ast.stmt) -> bool:
    if not isinstance(statement, ast.Expr):
        return False
    call = statement.value.value if isinstance(statement.value, ast.Await) else statement.value
    if not isinstance(call, ast.Call) or not ast.unparse(call.func).endswith("sleep"):
        return False
    # `sleep(0)` only yields to the event loop; it waits for nothing.
    return not (call.args and isinstance(call.args[0], ast.Constant) and call.args[0].value == 0)


def _polls(loop: ast.stmt) -> bool:
    """A loop that stops on a condition: a `while` whose test is not constant, or a loop with a
    `break` or `return` of its own (a `for _ in range(n)` poll with a bound)."""
    if isinstance(loop, ast.While) and not isinstance(loop.test, ast.Constant):
        return True
    stack: list[ast.AST] = list(getattr(loop, "body", []))
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.Break, ast.Return)):
            return True
        if not isinstance(node, (ast.While, ast.For, ast.AsyncFor, ast.FunctionDef, ast.AsyncFunctionDef)):
            stack.extend(ast.iter_child_nodes(node))
    return False


def _asserts(statements: list[ast.stmt]) -> bool:
    return any(isinstance(node, ast.Assert) for statement in statements for node in ast.walk(statement))


def _sleeps_then_asserts(
    body: list[ast.stmt], path: Path, found: list[str],
    after: tuple[list[ast.stmt], ...] = (), poll: bool = False,
) -> None:
    """Every sleep that some assert runs after, in its block or in the blocks around it.

    A sleep is the pause of a poll only when it sits directly in the body of a loop that stops
    on a condition (`while not ready(): sleep(...)`): the loop's own check decides. Anywhere else
    (straight before an assert, before other statements and then an assert, in an `if` inside a
    loop, in a loop that only repeats) it is a guess at how long the other side needs.
    """
    for i, statement in enumerate(body):
        rest = body[i + 1:]
        if _sleep(statement) and not poll and (_asserts(rest) or any(_asserts(outer) for outer in after)):
            found.append(f"{path.relative_to(TESTS)}:{statement.lineno}: {ast.unparse(statement)}")
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            _sleeps_then_asserts(statement.body, path, found)
            continue
        loop = isinstance(statement, (ast.While, ast.For, ast.AsyncFor))
        around = (rest, *after)
        for field in ("body", "orelse", "finalbody"):
            inner = getattr(statement, field, None)
            if isinstance(inner, list) and inner and isinstance(inner[0], ast.stmt):
                _sleeps_then_asserts(inner, path, found, around, loop and field == "body" and _polls(statement))
        for handler in getattr(statement, "handlers", []):
            _sleeps_then_asserts(handler.body, path, found, around)
        for case in getattr(statement, "cases", []):
            _sleeps_then_asserts(case.body, path, found, around)


def test_no_sleep_then_assert() -> None:
    found: list[str] = []
    for path in _sources():
        _sleeps_then_asserts(ast.parse(path.read_text(encoding="utf-8")).body, path, found)
    assert found == [], "a sleep, then an assert (wait for an event or a later message):\n" + "\n".join(found)


LUA_TESTS = (TESTS.parent / "editors" / "nvim" / "tests", TESTS / "editors")
BARE_WAIT = re.compile(r"\bvim\.wait\(\s*[^,()]+\)")
"""`vim.wait(500)`: Neovim's sleep (it runs the event loop but waits for no condition)."""
LUA_ASSERT = re.compile(r"\b(?:H\.(?:check|eq|wait|wait_note)|assert)\(")
LUA_NOT_YET: dict[str, str] = {}
"""Lua scripts that still wait, then check that nothing happened, and why no event was found yet:
the check fails for any other script, and for these once they no longer need the entry."""


def _lua_scripts() -> list[Path]:
    found = {p for folder in LUA_TESTS if folder.is_dir() for p in folder.rglob("*.lua")}
    return sorted(p for p in found if not p.name.startswith("bench_"))


def lua_waits_then_checks(text: str) -> list[int]:
    """Lines of a Lua test script with a bare `vim.wait(ms)` that a check comes after.

    The scripts run top to bottom, so any check below the wait is "after" it; a wait given a
    condition (`vim.wait(ms, function() ... end)`, `H.wait`) is a poll and is not matched.
    """
    lines = text.splitlines()
    code = [line.split("--", 1)[0] for line in lines]
    return [i + 1 for i, line in enumerate(code)
            if BARE_WAIT.search(line) and any(LUA_ASSERT.search(later) for later in code[i + 1:])]


def test_no_lua_wait_then_check() -> None:
    found, excused = [], set()
    for path in _lua_scripts():
        lines = lua_waits_then_checks(path.read_text(encoding="utf-8"))
        if lines and path.name in LUA_NOT_YET:
            excused.add(path.name)
        elif lines:
            found += [f"{path.relative_to(TESTS.parent)}:{n}" for n in lines]
    assert found == [], "vim.wait(ms), then a check (wait for a note or a later message):\n" + "\n".join(found)
    assert excused == set(LUA_NOT_YET), f"no longer needed: {set(LUA_NOT_YET) - excused}"


def test_the_lua_check_sees_a_bare_wait_and_lets_polls_be() -> None:
    assert lua_waits_then_checks("vim.cmd('x')\nvim.wait(500)\nlocal n = #notes\nH.eq(n, 0, 'quiet')\n") == [2]
    assert lua_waits_then_checks("vim.wait(500, function() return done end)\nH.eq(done, true, 'done')\n") == []
    assert lua_waits_then_checks("H.check(ok, 'x')\nvim.wait(100)\n") == []  # nothing checked after it
    assert lua_waits_then_checks("-- vim.wait(500) is a guess\nH.check(ok, 'x')\n") == []


def test_the_sleep_check_sees_a_guess_wherever_it_hides_and_lets_polls_be() -> None:
    guesses = (
        "def test_x():\n    time.sleep(1)\n    n = count()\n    assert n == 0\n",  # other statements between
        "def test_x():\n    while proc.poll() is None:\n        if seen():\n            time.sleep(2)\n"
        "            n = count()\n        time.sleep(0.5)\n    assert n == 1\n",  # in an `if` inside a poll
        "def test_x():\n    for _ in range(3):\n        time.sleep(1)\n        poke()\n    assert quiet()\n",
        "async def test_x():\n    with open_it() as it:\n        await asyncio.sleep(1)\n    assert it.closed\n",
    )
    polls = (
        "def test_x():\n    while not ready() and time.monotonic() < deadline:\n        time.sleep(0.1)\n"
        "    assert ready()\n",
        "def test_x():\n    for _ in range(50):\n        time.sleep(0.1)\n        if ready():\n            break\n"
        "    assert ready()\n",
        "def test_x():\n    time.sleep(0.1)\n    poke()\n",  # nothing asserted after it
    )
    for source in guesses:
        found: list[str] = []
        _sleeps_then_asserts(ast.parse(source).body, TESTS / "x.py", found)
        assert len(found) == 1, source
    for source in polls:
        found = []
        _sleeps_then_asserts(ast.parse(source).body, TESTS / "x.py", found)
        assert found == [], source


def test_the_checks_see_both_shapes() -> None:
    source = (
        "async def test_x():\n"
        "    started = time.monotonic()\n"
        "    await asyncio.sleep(0.5)\n"
        "    assert not marker.exists()\n"
        "    took = time.monotonic() - started\n"
        "    assert took < 2\n"
    )
    tree = ast.parse(source)
    found: list[str] = []
    _sleeps_then_asserts(tree.body, TESTS / "x.py", found)
    assert len(found) == 1
    assert _elapsed_names(tree) == {"took"}
