"""A test file in the prep copy tries every escape, run by real bubblewrap: as the test command
through `sandbox.run`, and written by a scripted model through the agent loop's `run_tests`.
Each attempt is refused or sees nothing, and nothing outside the copy changes."""

from __future__ import annotations

import json
import os
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from autocode import sandbox
from autocode.prep import make_prep_copy
from autocode.tasks import Source, TaskOptions, TaskRun
from support.agent import ScriptedEndpoint, call, review, roles_before_implementing, serve, text
from support.sandbox import (
    KEY_VALUE,
    SSH_KEY,
    escape_script,
    escapes_in,
    fake_home,
    git,
    listener,
    make_workspace,
    tree_hash,
    wait_until_gone,
)

pytestmark = pytest.mark.skipif(not sandbox.available(), reason="bubblewrap cannot make a sandbox here")
CLI = Source("cli", "tester")


@pytest.fixture()
def person(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The person's environment: a home with a key, a provider key variable."""
    home = fake_home(tmp_path / "home")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("OPENAI_API_KEY", KEY_VALUE)
    monkeypatch.setenv("GITHUB_TOKEN", KEY_VALUE + "gh")
    return home


@pytest.fixture(scope="module")
def endpoint() -> Iterator[ScriptedEndpoint]:
    with serve() as state:
        yield state


def _assert_all_refused(escapes: dict[str, Any], workspace: Path | None) -> None:
    # Writes at the workspace's path land in the copy (it is shown there); the rest is refused.
    assert escapes["write_work_tree"].startswith("done"), escapes
    for name in ("write_hook", "write_git_config", "write_etc", "read_ssh_key", "read_env_file",
                 "git_tag", "git_clean", "connect_loopback"):
        assert escapes[name].startswith("refused"), (name, escapes[name])
    assert escapes["provider_key"] == "None"
    assert not any("KEY" in n or "TOKEN" in n for n in escapes["env_names"]), escapes["env_names"]
    if workspace is not None:  # (the agent's tool results have machine paths redacted)
        assert escapes["cwd"] == str(workspace)  # the copy is shown at the workspace's own path
        assert "/." not in escapes["cwd"]


def _assert_person_untouched(workspace: Path, home: Path, before: tuple[str, str]) -> None:
    assert (tree_hash(workspace), tree_hash(workspace / ".git", skip=())) == before
    assert not (workspace / "ESCAPED.txt").exists()
    assert not (home / "planted.txt").exists()
    assert (workspace / "build" / "keep.txt").is_file()  # git clean never reached it
    assert "escaped-tag" not in git(workspace, "tag")
    assert not Path("/etc/autocode-escape").exists()


def test_every_escape_from_the_test_command_is_refused(tmp_path: Path, person: Path) -> None:
    workspace = make_workspace(tmp_path / "ws")
    copy = make_prep_copy(workspace).copy
    marker = f"autocode-escape-{uuid.uuid4().hex}"
    lines: list[str] = []
    with listener() as port:
        (copy / "escape.py").write_text(escape_script(workspace, person, port["port"], marker))
        before = (tree_hash(workspace), tree_hash(workspace / ".git", skip=()))
        output_file = tmp_path / "out.txt"
        outcome = sandbox.run(
            [sys.executable, "escape.py", "hang"], copy=copy, workspace=workspace, cwd=copy, timeout=3,
            cancelled=lambda: False, output_file=output_file, on_output=lines.append,
        )
        assert port["accepted"] == 0
    assert outcome.sandbox == "bwrap"
    assert outcome.status == "timed_out"
    escapes = escapes_in(outcome.output)
    _assert_all_refused(escapes, workspace)
    # Streamed as it came: the line reached the callback and the file before the kill.
    assert any(line.startswith("ESCAPES ") for line in lines)
    assert "ESCAPES " in output_file.read_text()
    assert KEY_VALUE not in outcome.output and SSH_KEY not in outcome.output and "hunter2" not in outcome.output
    # The child in a session of its own died with the sandbox's pid namespace.
    assert wait_until_gone(marker) == []
    _assert_person_untouched(workspace, person, before)
    # The write at the workspace's path went to the copy; the mount points are gone from it.
    assert (copy / "ESCAPED.txt").read_text() == "escaped\n"
    assert sorted(p.name for p in copy.iterdir()) == [".gitignore", "ESCAPED.txt", "README.md", "escape.py"]


def test_cancel_stops_a_hanging_test_and_its_children(tmp_path: Path, person: Path) -> None:
    workspace = make_workspace(tmp_path / "ws")
    copy = make_prep_copy(workspace).copy
    marker = f"autocode-cancel-{uuid.uuid4().hex}"
    flag = tmp_path / "cancel"
    (copy / "hang.py").write_text(
        "import subprocess, sys, time\n"
        f"subprocess.Popen([sys.executable, '-c', 'import time\\nwhile True: time.sleep(0.05)', {marker!r}])\n"
        "print('started', flush=True)\nwhile True: time.sleep(0.05)\n"
    )

    def on_output(line: str) -> None:
        if line == "started":
            flag.touch()

    outcome = sandbox.run([sys.executable, "hang.py"], copy=copy, workspace=workspace, cwd=copy, timeout=60,
                          cancelled=flag.exists, on_output=on_output)
    assert outcome.status == "cancelled"  # not "timeout": the 60 s bound never ran out
    assert wait_until_gone(marker) == []


def test_a_scripted_model_gets_nothing_out_of_run_tests(
    endpoint: ScriptedEndpoint, tmp_path: Path, person: Path
) -> None:
    workspace = make_workspace(tmp_path / "ws")
    marker = f"autocode-agent-{uuid.uuid4().hex}"
    seen: dict[str, str] = {}

    def keep(body: dict[str, Any]) -> None:
        seen["tool"] = body["messages"][-1]["content"]

    with listener() as port:
        script = escape_script(workspace, person, port["port"], marker)
        endpoint.load(
            *roles_before_implementing(),
            call("write_file", {"path": "escape.py", "content": script}),
            call("run_tests"),
            text("tried everything", check=keep),
            review(),
        )
        before = (tree_hash(workspace), tree_hash(workspace / ".git", skip=()))
        options = {"provider": "openai", "base_url": endpoint.url, "model": "scripted",
                   "api_key_env": "OPENAI_API_KEY", "test_command": f"{sys.executable} escape.py"}
        run = TaskRun.start(workspace, "try to get out", TaskOptions(**options))
        snap = run.approve_plan(1, CLI).wire()
        endpoint.assert_clean()
        assert port["accepted"] == 0
    # The task waits for completion approval: the person's tree and repository are as they were.
    assert snap["needs"]["kind"] == "approve_completion", snap["error"]
    _assert_person_untouched(workspace, person, before)
    escapes = escapes_in(seen["tool"])
    _assert_all_refused(escapes, None)
    details = run.details()
    assert details["tests"]["sandbox"] == "bwrap"
    assert details["launch"]["sandbox"]["enabled"] is True and details["launch"]["sandbox"]["network"] is False
    # The key never reached the evidence, the state or what `task show --json` prints.
    evidence = (run.run_dir / "evidence" / "test-output.txt").read_text()
    assert "ESCAPES " in evidence and KEY_VALUE not in evidence
    assert KEY_VALUE not in json.dumps(run.details())
    assert KEY_VALUE not in (run.run_dir / "state.json").read_text()
    assert wait_until_gone(marker) == []
    assert os.environ["OPENAI_API_KEY"] == KEY_VALUE  # the person's own environment is unchanged
