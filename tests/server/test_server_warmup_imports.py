"""Start-up without import races: while the warm-up thread imports the engine, no other thread of
the server imports an engine module (the re-announce of a waiting task used to, and a reconnect
then failed with `cannot import name ... from partially initialized module`).

Checked from inside the real server process by a `sitecustomize` the test puts on its
PYTHONPATH: it notes, for every `autocode.*` module, which thread ran its code and when.
Two threads running engine module code at overlapping times is the race; it needs no bad luck to
show, so the check does not depend on load.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from lsprotocol import types

from autocode_lsp import protocol
from support.lsp import child_env, close, connect, wait_until
from support.tasks import autocode, build_sample

pytest.importorskip("autocode.tasks", reason="the tasks engine part is not merged yet")

TRACER = textwrap.dedent('''
    """Test-only: note which thread (of which process) runs each engine module's code, and when."""
    import json, os, sys, threading, time
    from importlib.abc import MetaPathFinder

    LOG = os.environ["AUTOCODE_TEST_IMPORT_LOG"]

    class _Tracer(MetaPathFinder):
        def find_spec(self, name, path, target=None):
            if name != "autocode" and not name.startswith("autocode."):
                return None
            for finder in sys.meta_path:
                if finder is self or not hasattr(finder, "find_spec"):
                    continue
                spec = finder.find_spec(name, path, target)
                if spec is not None:
                    break
            else:
                return None
            run = spec.loader.exec_module

            def traced(module):
                began = time.monotonic()
                try:
                    run(module)
                finally:
                    thread = f"{os.getpid()}:{threading.current_thread().name}"
                    line = [name, thread, began, time.monotonic()]
                    with open(LOG, "a") as out:
                        out.write(json.dumps(line) + "\\n")

            spec.loader.exec_module = traced
            return spec

    sys.meta_path.insert(0, _Tracer())
''')


def overlaps(rows: list[list]) -> list[tuple[list, list]]:
    """Pairs of engine module executions by two threads of one process at overlapping times."""
    found = []
    for i, (name, thread, began, ended) in enumerate(rows):
        for other in rows[i + 1:]:
            same_process = other[1].split(":")[0] == thread.split(":")[0]
            if same_process and other[1] != thread and other[2] < ended and began < other[3]:
                found.append(([name, thread], other[:2]))
    return found


def waiting_task(tmp: Path) -> Path:
    """A repository with a task waiting for a person's answer (started by the CLI)."""
    repo, patch = build_sample("unittest", tmp / "textkit")
    proc = autocode("task", "start", "--workspace", str(repo), "--brief", f"Add longest_word via {patch}", "--json")
    assert json.loads(proc.stdout)["needs"]["kind"] == "answer_questions", proc.stdout + proc.stderr
    return repo


async def test_the_reannounce_waits_for_the_warm_up_and_imports_beside_no_thread(tmp_path: Path) -> None:
    repo = waiting_task(tmp_path)
    tracer = tmp_path / "tracer"
    tracer.mkdir()
    (tracer / "sitecustomize.py").write_text(TRACER)
    log = tmp_path / "imports.jsonl"
    env = child_env()
    env["PYTHONPATH"] = os.pathsep.join([str(tracer), *filter(None, [env.get("PYTHONPATH")])])
    env["AUTOCODE_TEST_IMPORT_LOG"] = str(log)
    env.pop("AUTOCODE_NO_WARMUP", None)
    session = await connect("stdio", log_file=tmp_path / "lsp.log", env=env)
    try:
        session.choose = lambda params: None
        await session.client.initialize_session(types.InitializeParams(
            capabilities=types.ClientCapabilities(),
            client_info=types.ClientInfo(name="Reconnecting", version="test"),
            workspace_folders=[types.WorkspaceFolder(uri=repo.as_uri(), name="textkit")],
        ))
        # The re-announce asks the open question again: it listed the tasks through the engine.
        await wait_until(lambda: session.message_requests, timeout=120, what="the question asked again")
        assert "asks:" in session.message_requests[0].message
        listed = await session.command(protocol.TASK_LIST, {"workspace": str(repo)})  # waits for the warm-up
        assert [t["needs"]["kind"] for t in listed["tasks"]] == ["answer_questions"]
    finally:
        await close(session)
    rows = [json.loads(line) for line in log.read_text().splitlines()]
    threads = {row[1].split(":")[1] for row in rows}
    assert "autocode-warmup" in threads, threads  # the trace saw the warm-up (it works)
    assert overlaps(rows) == []
    assert "no tasks listed" not in (tmp_path / "lsp.log").read_text()


def test_the_tracer_sees_two_threads_importing_at_once(tmp_path: Path) -> None:
    """The check itself: two threads running engine module code at once are caught.

    Two test-only modules are put into the `autocode` package; each one's body waits at a shared
    barrier, so both bodies are surely running at the same moment (no luck with timing needed).
    """
    (tmp_path / "sitecustomize.py").write_text(TRACER)
    extra = tmp_path / "extra"
    extra.mkdir()
    for name in ("probe_one", "probe_two"):
        (extra / f"{name}.py").write_text("import builtins\nbuiltins.autocode_probe_gate.wait(timeout=60)\n")
    log = tmp_path / "imports.jsonl"
    script = (
        "import builtins, threading, autocode\n"
        f"autocode.__path__.append({str(extra)!r})\n"
        "builtins.autocode_probe_gate = threading.Barrier(2)\n"
        "threads = [threading.Thread(target=__import__, args=('autocode.' + n,), name=n) for n in ('probe_one', 'probe_two')]\n"
        "[t.start() for t in threads]; [t.join() for t in threads]\n"
    )
    env = child_env()
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path), *filter(None, [env.get("PYTHONPATH")])])
    env["AUTOCODE_TEST_IMPORT_LOG"] = str(log)
    subprocess.run([sys.executable, "-c", script], env=env, check=True, timeout=300)
    rows = [json.loads(line) for line in log.read_text().splitlines()]
    assert [sorted(one[0] for one in pair) for pair in overlaps(rows)] == [["autocode.probe_one", "autocode.probe_two"]], rows


async def test_an_engine_failure_while_re_announcing_is_an_error_not_an_empty_list(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture,
) -> None:
    """The import race was logged at INFO as "no tasks listed", like a folder without tasks, and
    the waiting question was never asked again. An engine failure is now an error with its
    traceback; only the engine's own refusals (a folder that is not a repository) stay INFO."""
    import logging

    import autocode.tasks
    from autocode_lsp.features import tasks as feature

    def broken(folder: Path) -> list[object]:
        raise ImportError("cannot import name 'STATUSES' from partially initialized module 'autocode.record.load'")

    class Session:
        closed = False

    monkeypatch.setattr(autocode.tasks, "list_tasks", broken)
    with caplog.at_level(logging.INFO, logger="autocode_lsp"):
        await feature._reannounce(Session(), [tmp_path])  # type: ignore[arg-type]
    [record] = [r for r in caplog.records if str(tmp_path) in r.getMessage()]
    assert record.levelno == logging.ERROR and record.exc_info is not None
    assert "listing the waiting tasks" in record.getMessage() and "no tasks listed" not in record.getMessage()

    monkeypatch.undo()
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="autocode_lsp"):
        await feature._reannounce(Session(), [tmp_path])  # not a repository: an ordinary empty state
    [record] = [r for r in caplog.records if str(tmp_path) in r.getMessage()]
    assert record.levelno == logging.INFO and "no tasks listed" in record.getMessage()


HOLD = textwrap.dedent('''
    """Test-only: hold the warm-up before its later imports until the test says so, serving what
    early commands hand over meanwhile (as the warm-up does between two imports)."""
    import os, sys, time
    from importlib.abc import MetaPathFinder

    RELEASE = os.environ["AUTOCODE_TEST_WARMUP_RELEASE"]

    class _Hold(MetaPathFinder):
        def find_spec(self, name, path, target=None):
            if name != "autocode_lsp.warmup":
                return None
            for finder in sys.meta_path:
                if finder is self or not hasattr(finder, "find_spec"):
                    continue
                spec = finder.find_spec(name, path, target)
                if spec is not None:
                    break
            else:
                return None
            run = spec.loader.exec_module

            def held(module):
                run(module)
                later, first = module._later, [True]

                def _later(name):
                    if first[0]:
                        first[0] = False
                        while not os.path.exists(RELEASE):
                            module._serve_waiting()
                            time.sleep(0.01)
                    later(name)

                module._later = _later

            spec.loader.exec_module = held
            return spec

    sys.meta_path.insert(0, _Hold())
''')


def _repository(tmp_path: Path) -> Path:
    """A repository with one empty commit whose message names the test: another test's empty
    "start" commit by the same test author in the same second has the same hash, so the same
    repository identity (and that test's team memories)."""
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True, timeout=60)
    subprocess.run(["git", "-C", str(repo), "commit", "-q", "--allow-empty", "-m", f"start {tmp_path.name}"],
                   check=True, timeout=60)
    return repo


async def test_the_first_memory_commands_wait_for_the_memory_modules_only(tmp_path: Path) -> None:
    """Sent at once after `initialized`, memory.save and memory.search are answered while the
    warm-up has not begun its task and doctor imports (held there until the answers came); their
    engine work ran in the warm-up thread, and no other thread ran engine module code meanwhile."""
    repo = _repository(tmp_path)
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    (hooks / "sitecustomize.py").write_text(TRACER + HOLD)
    log, release = tmp_path / "imports.jsonl", tmp_path / "release"
    env = child_env()
    env["PYTHONPATH"] = os.pathsep.join([str(hooks), *filter(None, [env.get("PYTHONPATH")])])
    env.update(AUTOCODE_TEST_IMPORT_LOG=str(log), AUTOCODE_TEST_WARMUP_RELEASE=str(release))
    env.pop("AUTOCODE_NO_WARMUP", None)
    session = await connect("stdio", log_file=tmp_path / "lsp.log", env=env)
    try:
        await session.client.initialize_session(types.InitializeParams(
            capabilities=types.ClientCapabilities(),
            workspace_folders=[types.WorkspaceFolder(uri=repo.as_uri(), name="repo")],
        ))
        await session.command(protocol.PROTOCOL_INFO, {})  # `initialized` was handled (in order)
        sent = time.monotonic()
        saved = await session.command(protocol.MEMORY_SAVE, {
            "content": "The tests of this repository run with unittest discovery.", "workspace": str(repo)})
        found = await session.command(protocol.MEMORY_SEARCH, {"query": "unittest", "workspace": str(repo)})
        answered = time.monotonic()
        assert saved["saved"] and [m["id"] for m in found["memories"]] == [saved["id"]], (saved, found)
        rows = [json.loads(line) for line in log.read_text().splitlines()]
        assert not [r for r in rows if r[0] in ("autocode.doctor", "autocode.sandbox")], rows  # still held
        release.write_text("")
        listed = await session.command(protocol.TASK_LIST, {"workspace": str(repo)})  # the full warm-up
        assert listed["tasks"] == []
    finally:
        release.write_text("")
        await close(session)
    rows = [json.loads(line) for line in log.read_text().splitlines()]
    assert {"autocode.doctor", "autocode.sandbox"} <= {r[0] for r in rows}  # the hold let them go
    [server] = {r[1].split(":")[0] for r in rows if r[1].endswith(":autocode-warmup")}
    beside = [r for r in rows if sent <= r[2] <= answered and r[1].startswith(f"{server}:")
              and not r[1].endswith(":autocode-warmup")]
    assert beside == [], beside  # the memory commands imported nothing outside the warm-up thread
    assert overlaps(rows) == []


ORDER = textwrap.dedent('''
    """Test-only: end the warm-up's memory modules only once a memory command waits for them, and
    note when the warm-up thread runs the work an early command handed over."""
    import json, os, sys, threading, time
    from importlib.abc import MetaPathFinder

    LOG = os.environ["AUTOCODE_TEST_IMPORT_LOG"]

    class _Order(MetaPathFinder):
        def find_spec(self, name, path, target=None):
            if name != "autocode_lsp.warmup":
                return None
            for finder in sys.meta_path:
                if finder is self or not hasattr(finder, "find_spec"):
                    continue
                spec = finder.find_spec(name, path, target)
                if spec is not None:
                    break
            else:
                return None
            run = spec.loader.exec_module

            def ordered(module):
                run(module)
                prepare, serve = module._prepare_wire, module._run

                def _prepare_wire(features=None):
                    if features is not None:  # the memory modules' end: a memory command is waiting
                        deadline = time.monotonic() + 120
                        while module._arriving < 1 and time.monotonic() < deadline:
                            time.sleep(0.01)
                    prepare(features)

                def _run(call, future):
                    began = time.monotonic()
                    serve(call, future)
                    line = ["<handed-over work>", f"{os.getpid()}:{threading.current_thread().name}",
                            began, time.monotonic()]
                    with open(LOG, "a") as out:
                        out.write(json.dumps(line) + "\\n")

                module._prepare_wire, module._run = _prepare_wire, _run

            spec.loader.exec_module = ordered
            return spec

    sys.meta_path.insert(0, _Order())
''')


async def test_a_memory_command_waiting_at_the_end_of_the_memory_modules_runs_before_the_later_imports(
    tmp_path: Path,
) -> None:
    """The warm-up lets a memory command that is waiting hand its work over before it starts the
    task and doctor imports: the work does not wait for them."""
    repo = _repository(tmp_path)
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    (hooks / "sitecustomize.py").write_text(TRACER + ORDER)
    log = tmp_path / "imports.jsonl"
    env = child_env()
    env["PYTHONPATH"] = os.pathsep.join([str(hooks), *filter(None, [env.get("PYTHONPATH")])])
    env["AUTOCODE_TEST_IMPORT_LOG"] = str(log)
    env.pop("AUTOCODE_NO_WARMUP", None)
    session = await connect("stdio", log_file=tmp_path / "lsp.log", env=env)
    try:
        await session.client.initialize_session(types.InitializeParams(
            capabilities=types.ClientCapabilities(),
            workspace_folders=[types.WorkspaceFolder(uri=repo.as_uri(), name="repo")],
        ))
        found = await session.command(protocol.MEMORY_SEARCH, {"query": "unittest", "workspace": str(repo)})
        assert found["memories"] == []
        await session.command(protocol.TASK_LIST, {"workspace": str(repo)})  # the whole warm-up ran
    finally:
        await close(session)
    rows = [json.loads(line) for line in log.read_text().splitlines()]
    [work] = [r for r in rows if r[0] == "<handed-over work>"]
    [doctor] = [r for r in rows if r[0] == "autocode.doctor"]
    assert work[1] == doctor[1] and work[1].endswith(":autocode-warmup"), (work, doctor)
    assert work[3] <= doctor[2], (work, doctor)  # the work ran before the later imports began
    assert overlaps(rows) == []
