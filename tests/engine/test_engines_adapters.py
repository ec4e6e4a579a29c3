"""The engine adapters without their CLIs: command lines, environments, output parsing, the
registry, the record of the copy, and the sandbox's idle limit and engine credentials.

The lines parsed here are shaped as each CLI prints them (Claude Code's were recorded from
2.1.197 against the scripted model; Aider's from 0.86.2).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from autocode import sandbox
from autocode.errors import UsageError
from autocode.providers import ProviderConfig, check_config, engine_specs
from autocode.providers.engines import copy_state
from autocode.providers.engines.aider import Aider
from autocode.providers.engines.base import Job
from autocode.providers.engines.catalog import load_adapter
from autocode.providers.engines.claude_code import ClaudeCode
from autocode.providers.engines.codex import Codex
from autocode.providers.engines.gemini import Gemini
from autocode.providers.engines.opencode import OpenCode
from autocode.sandbox import environment


def job(tmp_path: Path, **kw: object) -> Job:
    values: dict[str, object] = {"prompt": "Fix add.", "workdir": tmp_path, "scratch": tmp_path / "home",
                                 "model": "m1", "base_url": "http://127.0.0.1:9/v1", "key": "k"}
    values.update(kw)
    return Job(**values)  # type: ignore[arg-type]


def test_every_engine_is_registered_with_an_adapter_that_loads() -> None:
    assert set(engine_specs()) == {"claude-code", "codex", "aider", "opencode", "gemini"}
    for name, spec in engine_specs().items():
        adapter = load_adapter(spec)
        assert adapter.name == name and adapter.program and adapter.install and adapter.key_variable


def test_an_unknown_engine_is_refused_before_anything_starts() -> None:
    with pytest.raises(UsageError, match="unknown engine 'cursor'; use one of claude-code"):
        check_config(ProviderConfig(engine="cursor"))


def test_the_engine_plays_the_implementer_only() -> None:
    config = ProviderConfig(engine="aider", engine_model="m")
    assert config.route("implementer") == ("aider", "m")
    assert config.route("planner") == ("fixture", None)


def test_claude_code_command_and_environment(tmp_path: Path) -> None:
    adapter = ClaudeCode()
    argv = adapter.argv("/x/claude", job(tmp_path))
    assert argv[:3] == ["/x/claude", "-p", "Fix add."]
    assert argv[argv.index("--output-format") + 1] == "stream-json" and "--permission-mode" in argv
    env = adapter.env(job(tmp_path))
    assert env["ANTHROPIC_BASE_URL"] == "http://127.0.0.1:9" and env["ANTHROPIC_API_KEY"] == "k"
    assert env["CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"] == "1"


CLAUDE_LINES = [
    json.dumps({"type": "system", "subtype": "init", "model": "claude-sonnet-4-5", "session_id": "s"}),
    json.dumps({"type": "assistant", "message": {"content": [
        {"type": "tool_use", "id": "t1", "name": "Read", "input": {"file_path": "/w/calc/ops.py"}}]}}),
    json.dumps({"type": "user", "message": {"content": [{"type": "tool_result", "tool_use_id": "t1", "content": "x"}]}}),
    json.dumps({"type": "assistant", "message": {"content": [
        {"type": "tool_use", "id": "t2", "name": "Edit",
         "input": {"file_path": "/w/calc/ops.py", "old_string": "-", "new_string": "+"}}]}}),
    json.dumps({"type": "assistant", "message": {"content": [{"type": "text", "text": "Done."}]}}),
    json.dumps({"type": "result", "subtype": "success", "is_error": False, "result": "Done.", "num_turns": 3,
                "total_cost_usd": 0.00243, "usage": {"input_tokens": 360, "cache_read_input_tokens": 40,
                                                     "output_tokens": 90}}),
]


def test_claude_code_stream_json_becomes_tools_edits_text_and_usage() -> None:
    events = [e for line in CLAUDE_LINES for e in ClaudeCode().parse(line)]
    kinds = [e.kind for e in events]
    assert kinds == ["text", "tool", "edit", "text", "result"]
    assert events[2].path == "/w/calc/ops.py" and events[2].text == "Edit /w/calc/ops.py"
    assert events[-1].usage == {"prompt_tokens": 400, "completion_tokens": 90, "total_tokens": 490}
    assert events[-1].cost_usd == pytest.approx(0.00243)


def test_claude_code_without_a_login_is_a_login_event() -> None:
    line = json.dumps({"type": "assistant", "error": "authentication_failed", "message": {
        "content": [{"type": "text", "text": "Not logged in · Please run /login"}]}})
    result = json.dumps({"type": "result", "is_error": True, "result": "Not logged in · Please run /login"})
    assert [e.kind for e in ClaudeCode().parse(line)] == ["login"]
    assert [e.kind for e in ClaudeCode().parse(result)] == ["login", "result"]


def test_aider_command_names_no_git_no_questions_and_its_own_files(tmp_path: Path) -> None:
    adapter = Aider()
    given = job(tmp_path, files=("calc/ops.py",))
    adapter.prepare(given)
    argv = adapter.argv("/x/aider", given)
    for flag in ("--yes-always", "--no-git", "--no-auto-commits", "--no-check-update", "--analytics-disable"):
        assert flag in argv
    assert argv[argv.index("--model") + 1] == "openai/m1" and argv[-1] == "calc/ops.py"
    meta = json.loads((given.scratch / "model-metadata.json").read_text())
    assert meta["openai/m1"]["litellm_provider"] == "openai"
    assert adapter.env(given)["OPENAI_API_KEY"] == "k"


def test_aider_plain_lines_become_edits_usage_and_login_failures() -> None:
    parse = Aider().parse
    assert [(e.kind, e.path) for e in parse("Applied edit to calc/ops.py")] == [("edit", "calc/ops.py")]
    usage = parse("Tokens: 1.2k sent, 30 received. Cost: $0.0001 message, $0.0003 session.")[0]
    assert usage.kind == "usage" and usage.usage["prompt_tokens"] == 1200 and usage.cost_usd == pytest.approx(0.0003)
    assert parse("litellm.AuthenticationError: AuthenticationError: OpenAIException - Incorrect API key")[0].kind == "login"
    assert parse("Tokens: 120 sent, 30 received.")[0].usage["total_tokens"] == 150
    assert parse("")  == []


def test_codex_opencode_and_gemini_lines(tmp_path: Path) -> None:
    codex = Codex()
    argv = codex.argv("/x/codex", job(tmp_path))
    assert argv[1:3] == ["exec", "--json"] and argv[-1] == "Fix add." and "model_provider=autocode" in argv
    assert [e.kind for e in codex.parse(json.dumps({"type": "item.completed", "item": {
        "type": "file_change", "changes": [{"path": "a.py", "kind": "update"}]}}))] == ["edit"]
    assert codex.parse(json.dumps({"type": "turn.completed", "usage": {"input_tokens": 5, "output_tokens": 2}}))[0].usage[
        "total_tokens"] == 7
    assert codex.parse(json.dumps({"type": "error", "message": "401 Unauthorized"}))[0].kind == "login"
    assert codex.parse(json.dumps({"type": "item.started", "item": {
        "type": "command_execution", "command": "sed -i s/a/b/ x.py"}}))[0].kind == "tool"
    assert codex.parse(json.dumps({"type": "item.completed", "item": {
        "type": "error", "message": "Model metadata for `m1` not found"}}))[0].kind == "text"
    assert codex.parse(json.dumps({"type": "turn.failed", "error": {"message": "stream error"}}))[0].kind == "error"
    opencode = OpenCode()
    config = json.loads(opencode.env(job(tmp_path))["OPENCODE_CONFIG_CONTENT"])
    assert config["provider"]["autocode"]["options"]["baseURL"] == "http://127.0.0.1:9/v1"
    assert opencode.parse(json.dumps({"type": "tool_use", "part": {"tool": "edit", "state": {
        "input": {"filePath": "a.py"}}}}))[0].kind == "edit"
    gemini = Gemini()
    assert gemini.env(job(tmp_path))["GEMINI_API_KEY"] == "k"
    assert gemini.parse(json.dumps({"type": "tool_use", "tool_name": "replace",
                                    "parameters": {"file_path": "a.py"}}))[0].kind == "edit"


def test_versions_outside_the_known_majors_are_not_supported() -> None:
    assert ClaudeCode().version_of("2.1.197 (Claude Code)") == "2.1.197"
    assert ClaudeCode().supported("2.1.197") and not ClaudeCode().supported("3.0.0")
    assert Aider().supported("0.86.2") and not Aider().supported("1.0.0")


def test_the_record_of_the_copy_names_each_changed_file_with_its_first_content(tmp_path: Path) -> None:
    copy = tmp_path / "copy"
    (copy / "pkg").mkdir(parents=True)
    (copy / "pkg" / "a.py").write_text("one\n")
    (copy / "gone.txt").write_text("bye\n")
    (copy / "same.txt").write_text("same\n")
    (copy / ".gitignore").write_text("build/\n")
    store = tmp_path / "run" / "engine" / "tree.git"
    before = copy_state.capture(copy, store, (".aider*",))
    (copy / "pkg" / "a.py").write_text("two\n")
    (copy / "gone.txt").unlink()
    (copy / "new.py").write_text("new\n")
    (copy / ".aider.chat.history.md").write_text("the CLI's own file\n")
    (copy / "build").mkdir()
    (copy / "build" / "out.o").write_text("ignored by the copy\n")
    after = copy_state.capture(copy, store, (".aider*",))
    assert copy_state.changes(copy, store, before, after) == {"gone.txt": "bye\n", "new.py": None, "pkg/a.py": "one\n"}
    assert not (copy / ".git").exists()  # the copy itself gets no repository


def test_a_program_that_prints_nothing_is_stopped_by_the_idle_limit(tmp_path: Path) -> None:
    script = "import sys, time; print('started', flush=True); time.sleep(600)"
    outcome = sandbox.run([sys.executable, "-c", script], copy=tmp_path, workspace=tmp_path, cwd=tmp_path,
                          timeout=300, idle_timeout=0.5, cancelled=lambda: False, policy=sandbox.Policy(enabled=False))
    assert outcome.status == "idle" and "started" in outcome.output


def test_an_engine_key_enters_only_as_its_own_credential(tmp_path: Path) -> None:
    env, notes = environment.build(home=str(tmp_path), git_ceiling=str(tmp_path), source={},
                                   extra={"ANTHROPIC_API_KEY": "from-extra"})
    assert "ANTHROPIC_API_KEY" not in env and notes
    env, _ = environment.build(home=str(tmp_path), git_ceiling=str(tmp_path), source={"ANTHROPIC_API_KEY": "host"},
                               credentials={"ANTHROPIC_API_KEY": "engine-key"})
    assert env["ANTHROPIC_API_KEY"] == "engine-key"
    env, _ = environment.build(home=str(tmp_path), git_ceiling=str(tmp_path), source={"ANTHROPIC_API_KEY": "host"})
    assert "ANTHROPIC_API_KEY" not in env  # the caller's own key never leaks in


def test_doctor_lists_each_engine_on_path_with_its_version(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from autocode.providers.engines.found import engines_found

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    fake = tmp_path / "bin"
    fake.mkdir()
    for name, says in (("claude", "2.1.197 (Claude Code)"), ("aider", "aider 7.0.0")):
        (fake / name).write_text(f"#!/bin/sh\necho '{says}'\n")
        (fake / name).chmod(0o755)
    found = {e["engine"]: e for e in engines_found(path=str(fake))}
    assert found["claude-code"]["version"] == "2.1.197" and found["claude-code"]["supported"] is True
    assert found["aider"]["version"] == "7.0.0" and found["aider"]["supported"] is False
    assert found["gemini"]["path"] is None and "npm install -g @google/gemini-cli" in found["gemini"]["remedy"]
    # The version is remembered by the program's path, size and time: a changed program is asked again.
    (fake / "claude").write_text("#!/bin/sh\necho '2.2.0 (Claude Code)'\n")
    assert {e["engine"]: e for e in engines_found(path=str(fake))}["claude-code"]["version"] == "2.2.0"
