"""Whole tasks with a real agent CLI as the implementer, each pointed at a scripted model on 127.0.0.1.

The CLIs are the ones `make engines` installs from the registries (Aider from PyPI into
.tools/aider; Claude Code, Codex, OpenCode and Gemini CLI from npm into .tools/npm); a test skips, saying so, only when its CLI
is not installed. The fixture provider plays the other roles: the task asks its question, the
plan is approved, the engine makes the fix in the sandboxed prep copy, the proof runs the
project's tests, and the change is applied to the work tree. Bad cases: a cancel mid-run
leaves no process behind (read from /proc), a missing key fails as a login error, a missing
program and an untrusted choice fail before anything starts.
"""

from __future__ import annotations

import base64
import json
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from autocode.memory import MemoryContext, open_memory
from autocode.providers.engines.base import EngineError
from autocode.settings import resolve_settings
from autocode.tasks import Source, TaskOptions, TaskRun
from support.agent import BUGGY_OPS, FIXED_OPS, TEST_COMMAND, build_calc
from support.egress_probe import outside_address, probe_source, reachable, results_in
from support.engine_model import EngineModel, Fix, serve
from support.sandbox import listener

ROOT = Path(__file__).resolve().parents[2]
TOOLS = ROOT / ".tools"
NPM_BIN = TOOLS / "npm" / "node_modules" / ".bin"
BIN = {"aider": TOOLS / "aider" / "bin", "claude-code": NPM_BIN, "codex": NPM_BIN, "opencode": NPM_BIN,
       "gemini": NPM_BIN}
PROGRAM = {"aider": "aider", "claude-code": "claude", "codex": "codex", "opencode": "opencode", "gemini": "gemini"}
MODEL = {"aider": "scripted", "claude-code": "claude-sonnet-4-5", "codex": "scripted", "opencode": "scripted",
         "gemini": "gemini-2.5-flash"}
ENGINES = ("claude-code", "aider", "codex", "opencode", "gemini")
NEWER = ("opencode", "gemini")  # the two whose endpoint failures below are shown by their real CLIs
KEY_VAR = "ENGINE_TEST_KEY"
CLI = Source("cli", "tester")
BRIEF = "add(2, 3) gives -1; make add return the sum."
LESSON = "The calc helpers must stay free of third-party imports."


def installed(engine: str) -> bool:
    return (BIN[engine] / PROGRAM[engine]).exists()


def needs(engine: str) -> Any:
    return pytest.mark.skipif(
        not installed(engine), reason=f"{engine} is not installed here: run `make engines` (scripts/engines-setup.sh)"
    )


@pytest.fixture
def person(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A user config folder of this test's own (the person's layer), and PATH with the engines."""
    config = tmp_path / "xdg-config"
    (config / "autocode").mkdir(parents=True)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(config))
    monkeypatch.setenv("PATH", os.pathsep.join([*dict.fromkeys(str(b) for b in BIN.values()),
                                                os.environ.get("PATH", "")]))
    monkeypatch.setenv(KEY_VAR, "sk-engine-" + "test" * 4)  # assembled at run time
    yield config / "autocode" / "config.toml"


def choose(user_config: Path, engine: str, url: str, *, key: bool = True, idle: float | None = None) -> None:
    lines = [
        f'engine = "{engine}"',
        f'engine_model = "{MODEL.get(engine, "scripted")}"',
        f'engine_base_url = "{url}"',
        'sandbox_env = ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"]',
    ]
    if key:
        lines.append(f'engine_api_key_env = "{KEY_VAR}"')
    if idle is not None:
        lines.append(f"engine_idle_timeout = {idle}")
    user_config.write_text("\n".join(lines) + "\n", encoding="utf-8")


def start(repo: Path) -> TaskRun:
    return TaskRun.start(repo, BRIEF, TaskOptions(test_command=TEST_COMMAND))


def to_plan_approval(run: TaskRun) -> None:
    snap = run.snapshot().wire()
    assert snap["needs"]["kind"] == "answer_questions", snap
    question = snap["needs"]["questions"][0]["id"]
    snap = run.answer(question, "Name tests after the behaviour they check.", CLI, how="typed").wire()
    assert snap["needs"]["kind"] == "approve_plan", snap


def events(run: TaskRun) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (run.run_dir / "events.jsonl").read_text().splitlines()]


def whole_task(engine: str, where: Path, user_config: Path) -> tuple[TaskRun, EngineModel, dict[str, Any]]:
    """A whole task with `engine`; `where` is a folder to build the repository in, or the repository."""
    repo = where if (where / ".git").is_dir() else build_calc(where / "calc")
    with open_memory(resolve_settings(repo)) as memory:
        saved = memory.save(MemoryContext(agent="implementer", repository=repo), LESSON, shared=True)
    assert saved.saved, saved
    with serve(Fix("calc/ops.py", "    return a - b", "    return a + b", repo)) as model:
        choose(user_config, engine, model.url)
        run = start(repo)
        to_plan_approval(run)
        assert (repo / "calc" / "ops.py").read_text() == BUGGY_OPS  # nothing touched before approval
        snap = run.approve_plan(1, CLI).wire()
        assert snap["needs"] and snap["needs"]["kind"] == "approve_completion", snap["error"]
        assert (repo / "calc" / "ops.py").read_text() == BUGGY_OPS  # the engine worked in the copy
        proof = snap["needs"]["proof"]
        # Proved by the named tests that failed before the engine's change and pass with it.
        assert proof["status"] == "verified", proof
        assert "calc/ops.py" in snap["needs"]["files"]
        snap = run.approve_completion(CLI).wire()
        assert snap["state"] == "COMPLETED", snap
        assert snap["result"]["verified"] is True
        return run, model, snap


def check_applied(run: TaskRun, model: EngineModel, snap: dict[str, Any], engine: str) -> None:
    repo = run.workspace
    assert (repo / "calc" / "ops.py").read_text() == FIXED_OPS
    # The engine's requests carried the key it was given by name, and only to the scripted endpoint.
    posts = [r for r in model.requests if r["method"] == "POST"]
    assert posts and all(os.environ[KEY_VAR] in str(r["auth"]) for r in posts)
    agent = snap["agent"]["roles"]["implementer"]
    assert agent["mode"] == "engine" and agent["engine"] == engine and agent["engineVersion"]
    assert agent["usage"]["totalTokens"] > 0 and agent["toolCalls"] >= 1
    assert agent["stopped"] == "answered" and agent["turns"] >= 1
    # The brief, the plan, the person's answer and the recalled memory reached the engine as its instructions.
    said = json.dumps([r["body"] for r in posts])
    assert "make add return the sum" in said and "Name tests after the behaviour" in said
    assert LESSON in said and "Approved plan" in said
    kinds = [e["event"] for e in events(run)]
    assert "engine_started" in kinds and "engine_tool" in kinds and "engine_ended" in kinds
    # Its transcript is kept in the run folder, without the key.
    output = (run.run_dir / "engine" / "output.jsonl").read_text()
    assert output.strip() and os.environ[KEY_VAR] not in output
    path, page = run.transcript()
    assert "## implementer (engine)" in page and "calc/ops.py" in page, page
    for path in run.run_dir.rglob("*"):
        if path.is_file() and "tree.git" not in path.parts:
            assert os.environ[KEY_VAR] not in path.read_text(errors="replace"), path


@needs("claude-code")
def test_claude_code_implements_a_whole_task_in_the_copy(tmp_path: Path, person: Path) -> None:
    run, model, snap = whole_task("claude-code", tmp_path, person)
    check_applied(run, model, snap, "claude-code")
    assert snap["agent"]["roles"]["implementer"]["costUsd"] is not None
    assert any("/v1/messages" in p for p in model.paths())


@needs("aider")
def test_aider_implements_a_whole_task_in_the_copy(tmp_path: Path, person: Path) -> None:
    run, model, snap = whole_task("aider", tmp_path, person)
    check_applied(run, model, snap, "aider")
    assert any(p.endswith("/chat/completions") for p in model.paths())
    # Aider's own files stayed out of the change and out of the work tree.
    assert not list(run.workspace.glob(".aider*"))


@needs("codex")
def test_codex_implements_a_whole_task_in_the_copy(tmp_path: Path, person: Path) -> None:
    run, model, snap = whole_task("codex", tmp_path, person)
    check_applied(run, model, snap, "codex")
    assert any(p.endswith("/responses") for p in model.paths())


@needs("opencode")
def test_opencode_implements_a_whole_task_in_the_copy(tmp_path: Path, person: Path) -> None:
    run, model, snap = whole_task("opencode", tmp_path, person)
    check_applied(run, model, snap, "opencode")
    assert any(p.endswith("/chat/completions") for p in model.paths())
    # It named the file it edited (an edit event), and its own state stayed in the private home.
    edits = [e for e in events(run) if e["event"] == "engine_tool" and e.get("kind") == "edit"]
    assert edits and edits[0]["path"].endswith("calc/ops.py"), edits
    assert not (run.workspace / ".opencode").exists()


@needs("gemini")
def test_gemini_implements_a_whole_task_in_the_copy(tmp_path: Path, person: Path) -> None:
    run, model, snap = whole_task("gemini", tmp_path, person)
    check_applied(run, model, snap, "gemini")
    assert any(":streamGenerateContent" in p for p in model.paths())
    # The settings it needs to run unattended were written in its private home, not the copy.
    assert (run.run_dir / "engine" / "home" / ".gemini" / "settings.json").is_file()
    assert not (run.workspace / ".gemini").exists()


def _processes_under(folder: Path) -> list[str]:
    """Processes whose working folder or command line names `folder` (read from /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            cwd = os.readlink(entry / "cwd")
        except OSError:
            continue
        if str(folder) in cmdline or cwd.startswith(str(folder)):
            found.append(f"{entry.name}: {cmdline[:200]}")
    return found


@pytest.mark.parametrize("engine", [pytest.param(e, marks=needs(e)) for e in ENGINES])
def test_a_cancel_mid_run_stops_the_cli_and_every_child(engine: str, tmp_path: Path, person: Path) -> None:
    repo = build_calc(tmp_path / "calc")
    hold = threading.Event()
    with serve(Fix("calc/ops.py", "    return a - b", "    return a + b", repo), hold=hold) as model:
        choose(person, engine, model.url)
        run = start(repo)
        to_plan_approval(run)
        outcome: dict[str, Any] = {}
        worker = threading.Thread(target=lambda: outcome.update(snap=run.approve_plan(1, CLI).wire()))
        worker.start()
        assert model.seen.wait(120), "the engine never asked its model"
        assert _processes_under(repo), "the engine is running in the copy"
        TaskRun.load(repo, run.id).cancel()
        worker.join(120)
        hold.set()
        assert not worker.is_alive()
        assert outcome["snap"]["state"] == "CANCELLED", outcome["snap"]
        # The kernel ends the sandbox's pid namespace as its first process dies: wait for that.
        deadline = time.monotonic() + 30
        while (left := _processes_under(repo)) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not left, left
        assert (repo / "calc" / "ops.py").read_text() == BUGGY_OPS


@pytest.mark.parametrize("engine", [pytest.param(e, marks=needs(e)) for e in ENGINES])
def test_a_missing_login_fails_clearly_and_changes_nothing(engine: str, tmp_path: Path, person: Path) -> None:
    repo = build_calc(tmp_path / "calc")
    # The endpoint wants the key, as a real one does: a CLI that sends its request anyway hears 401.
    fix = Fix("calc/ops.py", "    return a - b", "    return a + b", repo)
    with serve(fix, key=os.environ[KEY_VAR]) as model:
        choose(person, engine, model.url, key=False, idle=60)
        run = start(repo)
        to_plan_approval(run)
        snap = run.approve_plan(1, CLI).wire()
    assert snap["state"] == "FAILED", snap
    assert snap["error"]["kind"] == "engineLogin", snap["error"]
    assert "engine_api_key_env" in snap["error"]["message"]  # the remedy
    assert (repo / "calc" / "ops.py").read_text() == BUGGY_OPS


@pytest.mark.parametrize("engine", [pytest.param(e, marks=needs(e)) for e in NEWER])
def test_a_key_the_endpoint_refuses_is_a_login_error_naming_the_engine(engine: str, tmp_path: Path,
                                                                       person: Path) -> None:
    repo = build_calc(tmp_path / "calc")
    fix = Fix("calc/ops.py", "    return a - b", "    return a + b", repo)
    with serve(fix, key="sk-another-key-altogether") as model:
        choose(person, engine, model.url, idle=60)
        run = start(repo)
        to_plan_approval(run)
        snap = run.approve_plan(1, CLI).wire()
        assert [r for r in model.requests if r["method"] == "POST"], "the CLI asked its endpoint"
    assert snap["state"] == "FAILED", snap
    error = snap["error"]
    assert error["kind"] == "engineLogin", error
    message = error["message"]
    assert f"the {engine} engine could not log in" in message and "not valid" in message, message
    assert "engine_api_key_env" in message and "engine/output.jsonl" in message  # the remedy, and where to look
    assert (repo / "calc" / "ops.py").read_text() == BUGGY_OPS


@pytest.mark.parametrize("engine", [pytest.param(e, marks=needs(e)) for e in NEWER])
def test_an_endpoint_that_answers_5xx_fails_the_task_naming_the_engine(engine: str, tmp_path: Path,
                                                                       person: Path) -> None:
    """The CLI retries on its own (Gemini CLI as AutoCode's settings bound it, OpenCode as the
    endpoint's retry-after says: without that header it backed off for over a minute), then gives
    up: the task fails with the endpoint's answer, the engine and the remedy."""
    repo = build_calc(tmp_path / "calc")
    fix = Fix("calc/ops.py", "    return a - b", "    return a + b", repo)
    with serve(fix, fail=503) as model:
        choose(person, engine, model.url, idle=150)
        run = start(repo)
        to_plan_approval(run)
        snap = run.approve_plan(1, CLI).wire()
        asked = len([r for r in model.requests if r["method"] == "POST"])
    assert asked >= 2, asked  # it did retry
    assert snap["state"] == "FAILED", snap
    error = snap["error"]
    assert error["kind"] == "engineCrashed", error
    message = error["message"]
    assert f"the {engine} engine ended" in message and "overloaded" in message, message
    assert "engine/output.jsonl" in message and error["remedy"]["kind"] == "resumeTask", error
    assert (repo / "calc" / "ops.py").read_text() == BUGGY_OPS


def test_a_key_variable_that_is_not_set_fails_before_the_cli_runs(tmp_path: Path, person: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    fake = tmp_path / "bin"
    fake.mkdir()
    program = fake / "claude"
    program.write_text("#!/bin/sh\necho '2.1.197 (Claude Code)'\n")
    program.chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.delenv(KEY_VAR)
    repo = build_calc(tmp_path / "calc")
    choose(person, "claude-code", "http://127.0.0.1:9/v1")
    run = start(repo)
    to_plan_approval(run)
    snap = run.approve_plan(1, CLI).wire()
    assert snap["error"]["kind"] == "engineLogin" and KEY_VAR in snap["error"]["message"], snap["error"]
    assert not (run.run_dir / "engine" / "output.jsonl").exists()  # the CLI never started


def test_a_missing_program_fails_before_anything_is_made(tmp_path: Path, person: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    repo = build_calc(tmp_path / "calc")
    choose(person, "gemini", "http://127.0.0.1:9/v1")
    with pytest.raises(EngineError) as caught:
        start(repo)
    assert caught.value.kind == "engineMissing"
    assert "npm install -g @google/gemini-cli" in caught.value.message
    assert not (repo / ".autocode" / "runs").exists()


def test_an_unknown_version_is_refused_with_the_versions_it_reads(tmp_path: Path, person: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    fake = tmp_path / "bin"
    fake.mkdir()
    program = fake / "claude"
    program.write_text("#!/bin/sh\necho '9.0.0 (Claude Code)'\n")
    program.chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake}{os.pathsep}{os.environ['PATH']}")
    repo = build_calc(tmp_path / "calc")
    choose(person, "claude-code", "http://127.0.0.1:9/v1")
    run = start(repo)
    to_plan_approval(run)
    snap = run.approve_plan(1, CLI).wire()
    assert snap["error"]["kind"] == "engineVersion", snap["error"]
    assert "9.0.0" in snap["error"]["message"] and "2.x" in snap["error"]["message"]
    assert (repo / "calc" / "ops.py").read_text() == BUGGY_OPS


def test_a_silent_cli_is_stopped_by_the_idle_timeout(tmp_path: Path, person: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    fake = tmp_path / "bin"
    fake.mkdir()
    program = fake / "claude"
    # Answers --version, then waits for ever in a child of its own, as a CLI waiting for input would.
    program.write_text('#!/bin/sh\nif [ "$1" = --version ]; then echo "2.1.197 (Claude Code)"; exit 0; fi\n'
                       "sleep 600 &\nwait\n")
    program.chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake}{os.pathsep}{os.environ['PATH']}")
    repo = build_calc(tmp_path / "calc")
    choose(person, "claude-code", "http://127.0.0.1:9/v1", idle=1)
    run = start(repo)
    to_plan_approval(run)
    snap = run.approve_plan(1, CLI).wire()
    assert snap["error"]["kind"] == "engineIdle", snap["error"]
    assert "engine_idle_timeout" in snap["error"]["message"]
    deadline = time.monotonic() + 30
    while (left := [p for p in _processes_under(repo) if "sleep 600" in p]) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not left, left


def test_a_repository_cannot_choose_an_engine(tmp_path: Path, person: Path) -> None:
    repo = build_calc(tmp_path / "calc")
    (repo / ".autocode").mkdir()
    (repo / ".autocode" / "config.toml").write_text('engine = "aider"\nengine_base_url = "http://127.0.0.1:9/v1"\n')
    person.write_text('sandbox_env = ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"]\n')
    run = start(repo)
    to_plan_approval(run)
    snap = run.approve_plan(1, CLI).wire()
    # The repository's engine is ignored: the fixture provider implemented (no engine ran).
    launch = json.loads((run.run_dir / "launch.json").read_text())
    assert launch["values"]["engine"] is None and launch["values"]["engine_base_url"] is None
    assert not (run.run_dir / "engine").exists()
    assert snap["error"] is None or not snap["error"]["kind"].startswith("engine")


def test_an_engine_named_as_a_provider_is_refused(tmp_path: Path, person: Path) -> None:
    repo = build_calc(tmp_path / "calc")
    with pytest.raises(EngineError) as caught:
        TaskRun.start(repo, BRIEF, TaskOptions(test_command=TEST_COMMAND, provider="aider"))
    assert caught.value.kind == "engineRefused" and 'engine = "aider"' in caught.value.message
    assert not (repo / ".autocode" / "runs").exists()


def test_an_engine_starts_without_sandbox_network(tmp_path: Path, person: Path) -> None:
    """sandbox_network is for the tests; an engine reaches its endpoint through the egress proxy."""
    repo = build_calc(tmp_path / "calc")
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "claude").write_text("#!/bin/sh\necho '2.1.197 (Claude Code)'\n")
    (fake / "claude").chmod(0o755)
    os.environ["PATH"] = f"{fake}{os.pathsep}{os.environ['PATH']}"
    person.write_text('engine = "claude-code"\nsandbox_env = ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"]\n')
    run = start(repo)
    launch = json.loads((run.run_dir / "launch.json").read_text())
    assert launch["sandbox"]["enabled"] is True and launch["sandbox"]["network"] is False


@needs("claude-code")
def test_a_task_failed_on_its_login_resumes_once_the_key_is_named(tmp_path: Path, person: Path) -> None:
    repo = build_calc(tmp_path / "calc")
    with serve(Fix("calc/ops.py", "    return a - b", "    return a + b", repo)) as model:
        choose(person, "claude-code", model.url, key=False, idle=60)
        run = start(repo)
        to_plan_approval(run)
        assert run.approve_plan(1, CLI).wire()["error"]["kind"] == "engineLogin"
        choose(person, "claude-code", model.url, key=True)  # the person names the key, then resumes
        snap = TaskRun.load(repo, run.id).resume().wire()
        assert snap["needs"] and snap["needs"]["kind"] == "approve_completion", snap["error"]
        assert snap["needs"]["proof"]["status"] == "verified"
        snap = TaskRun.load(repo, run.id).approve_completion(CLI).wire()
    assert snap["state"] == "COMPLETED" and (repo / "calc" / "ops.py").read_text() == FIXED_OPS


def test_a_crashing_cli_fails_with_its_last_lines_and_where_its_output_is(tmp_path: Path, person: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    fake = tmp_path / "bin"
    fake.mkdir()
    program = fake / "claude"
    program.write_text('#!/bin/sh\nif [ "$1" = --version ]; then echo "2.1.197 (Claude Code)"; exit 0; fi\n'
                       'echo "TypeError: cannot read properties of undefined" >&2\nexit 3\n')
    program.chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake}{os.pathsep}{os.environ['PATH']}")
    repo = build_calc(tmp_path / "calc")
    choose(person, "claude-code", "http://127.0.0.1:9/v1")
    run = start(repo)
    to_plan_approval(run)
    snap = run.approve_plan(1, CLI).wire()
    assert snap["error"]["kind"] == "engineCrashed", snap["error"]
    assert snap["error"]["remedy"]["kind"] == "resumeTask", snap["error"]  # each face names its way to resume
    message = snap["error"]["message"]
    assert "exit code 3" in message and "TypeError" in message and "engine/output.jsonl" in message
    assert (repo / "calc" / "ops.py").read_text() == BUGGY_OPS


@pytest.mark.parametrize("engine", [pytest.param(e, marks=needs(e)) for e in ENGINES])
def test_a_repository_cannot_point_the_engine_elsewhere(engine: str, tmp_path: Path, person: Path) -> None:
    """The CLIs' own project files (Claude Code's .claude/settings.json, Aider's .aider.conf.yml and
    .env, Codex's .codex/config.toml, OpenCode's opencode.json, Gemini CLI's .gemini/.env and
    .gemini/settings.json) could name another endpoint for the key; the engine reads none of them."""
    with serve(Fix("calc/ops.py", "    return a - b", "    return a + b", tmp_path)) as decoy:
        repo = build_calc(tmp_path / "calc", {
            ".claude/settings.json": json.dumps({"env": {"ANTHROPIC_BASE_URL": decoy.root}}),
            ".aider.conf.yml": f"openai-api-base: {decoy.url}\n",
            ".env": f"OPENAI_API_BASE={decoy.url}\nAIDER_OPENAI_API_BASE={decoy.url}\n",
            ".codex/config.toml": f'model_provider = "decoy"\n[model_providers.decoy]\nname = "decoy"\n'
                                  f'base_url = "{decoy.url}"\nenv_key = "OPENAI_API_KEY"\n',
            "opencode.json": json.dumps({"provider": {"autocode": {"options": {"baseURL": decoy.url}}}}),
            ".gemini/.env": f"GOOGLE_GEMINI_BASE_URL={decoy.root}\n",
            ".gemini/settings.json": json.dumps({"security": {"auth": {"selectedType": "gemini-api-key"}},
                                                 "advanced": {"excludedEnvVars": []}}),
        })
        _run, model, _snap = whole_task(engine, repo, person)
        assert decoy.requests == [], decoy.paths()
        assert [r for r in model.requests if r["method"] == "POST"]
    assert (repo / "calc" / "ops.py").read_text() == FIXED_OPS


@needs("codex")
def test_a_command_the_engine_runs_reaches_only_its_endpoint(tmp_path: Path, person: Path) -> None:
    """The scripted model asks Codex to run a probe after its edit: from inside the engine's run,
    another 127.0.0.1 port, a non-loopback address and a DNS lookup fail while the endpoint answers,
    and the proxy's refusals are in the task's events and transcript."""
    repo = build_calc(tmp_path / "calc")
    outside = outside_address()
    fix = Fix("calc/ops.py", "    return a - b", "    return a + b", repo)
    with listener() as other, listener("0.0.0.0") as everywhere, serve(fix) as model:
        if outside is not None and not reachable(outside, everywhere["port"]):
            outside = None
        expected = 1 if outside is not None else 0
        deadline = time.monotonic() + 30  # the listener's thread counts the connection just made
        while everywhere["accepted"] < expected and time.monotonic() < deadline:
            time.sleep(0.01)
        source = probe_source(int(model.root.rsplit(":", 1)[1]), other["port"], outside, everywhere["port"])
        encoded = base64.b64encode(source.encode()).decode()
        fix.also = f"python3 -c \"import base64; exec(base64.b64decode('{encoded}'))\""
        choose(person, "codex", model.url)
        run = start(repo)
        to_plan_approval(run)
        snap = run.approve_plan(1, CLI).wire()
        assert snap["needs"] and snap["needs"]["kind"] == "approve_completion", snap["error"]
        assert other["accepted"] == 0 and everywhere["accepted"] == expected
    said = [json.loads(line) for line in (run.run_dir / "engine" / "output.jsonl").read_text().splitlines()
            if line.startswith("{")]
    printed = "\n".join(str(e.get("item", {}).get("aggregated_output") or "") for e in said)
    if "EGRESS {" not in printed:  # say what Codex did instead
        steps = [(e.get("type"), e.get("item", {}).get("type"), e.get("item", {}).get("status")) for e in said]
        raise AssertionError(f"the probe printed no results; Codex's events: {steps}")
    got = results_in(printed)
    for name in ("endpoint_forwarder", "endpoint_proxy", "endpoint_connect"):
        assert " 200 " in got[name], (name, got)
    for name in ("other_proxy", "other_connect", "named_connect"):
        assert got[name].startswith("ok: HTTP/1.1 403"), (name, got)
    assert got["direct_other"].startswith("failed: ConnectionRefusedError"), got
    assert got["dns_lookup"].startswith("failed: "), got
    if outside is not None:
        assert "unreachable" in got["direct_outside"], got
    refused = [e for e in events(run) if e["event"] == "engine_egress_refused"]
    destinations = {e["destination"] for e in refused}
    assert {f"127.0.0.1:{other['port']}", "example.com:443"} <= destinations, refused
    _path, page = run.transcript()
    assert f"network refused:** CONNECT 127.0.0.1:{other['port']}" in page, page
