"""Issue 34 in a real VS Code (code-server + Playwright, editors/vscode/test/e2e/run.mjs): a real
model set up from the editor with the key in SecretStorage, and the ways out of a failed or
interrupted task as buttons. Screenshots land in artifacts/vscode/<scenario>/.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from support import make_repo
from support.agent import (
    TEST_COMMAND,
    ScriptedEndpoint,
    build_calc,
    call,
    review,
    roles_before_implementing,
    serve,
    text,
)

# The code-server harness lives in the module next to this one.
sys.path.insert(0, str(Path(__file__).parent))
import test_vscode_extension as vscode_e2e

pytestmark = pytest.mark.editor

code_server = vscode_e2e.code_server  # the fixture: one code-server per test, stopped after it
_build_sample = vscode_e2e._build_sample
run_scenario = vscode_e2e.run_scenario

ROOT = Path(__file__).resolve().parents[2]
NAMING = "Name unittest methods after the behaviour they check."


@pytest.fixture
def endpoint() -> Iterator[ScriptedEndpoint]:
    with serve() as state:
        yield state


def _files_holding(root: Path, needle: str) -> list[Path]:
    found = []
    for path in root.rglob("*"):
        try:
            if path.is_file() and needle.encode() in path.read_bytes():
                found.append(path)
        except OSError:
            continue
    return found


@pytest.mark.timeout(900)
def test_a_real_model_is_set_up_from_vscode_and_the_key_stays_in_memory(
    tmp_path: Path, code_server: Any, endpoint: ScriptedEndpoint
) -> None:
    """Settings and a walkthrough step name the provider, model and URL; "AutoCode: Set API Key"
    keeps the key in SecretStorage and hands it to the server, which sends it to the endpoint; it
    is in no file of the workspace, the settings or the logs. The provider check and the agent's
    summary and transcript are one click away; the status item's record state is doctor's."""
    key = "sk-" + "vscode" * 4  # assembled at run time
    repo = build_calc(tmp_path / "calc")
    endpoint.load(
        call("ping", {"ok": True}),  # the provider check
        *roles_before_implementing(),
        call("edit_file", {"path": "calc/ops.py", "old_text": "a - b", "new_text": "a + b"}),
        call("run_tests"),
        text("add adds now; the tests pass"),
        review(),
    )
    (repo / ".autocode").mkdir()
    (repo / ".autocode" / "config.toml").write_text(f'test_command = "{TEST_COMMAND}"\n')
    subprocess.run(["git", "add", "-A"], cwd=repo, check=True)
    subprocess.run(["git", "-c", "user.email=t@e", "-c", "user.name=t", "commit", "-qm", "settings"], cwd=repo, check=True)
    server = code_server({"autocode.python": sys.executable, "autocode.provider": "openai",
                          "autocode.model": "scripted", "autocode.baseUrl": endpoint.url})
    result = run_scenario("model-setup", server.url(repo), AUTOCODE_E2E_KEY=key,
                          AUTOCODE_E2E_BRIEF="add(2, 3) gives -1; fix it.")
    # The walkthrough's step and the settings it opens.
    assert "Set API Key" in result["walkthroughStep"] and "Check Provider" in result["walkthroughStep"]
    for name in ("Provider", "Model", "Base Url", "Engine"):
        assert name in result["settingsEditor"], result["settingsEditor"][:2000]
    assert result["keyBoxIsPassword"] is True
    assert "OPENAI_API_KEY" in result["keySet"]
    assert "answered" in result["providerCheck"] and "OPENAI_API_KEY: set" in result["providerCheck"]
    # The key went from SecretStorage through the server to the endpoint, on every request.
    auth = {r["headers"].get("Authorization") for r in endpoint.requests}
    assert auth == {f"Bearer {key}"}, auth
    assert all(r["body"]["model"] == "scripted" for r in endpoint.requests)
    # The agent's final answer in the Tasks view; its transcript opens.
    assert "add adds now" in result["tasksView"], result["tasksView"]
    assert "transcript" in result["transcriptTab"].lower()
    assert "implementer" in result["transcript"]
    # The plan's "is ready" and the review's "changed files are open" closed once they had passed;
    # the completion (with its button) is still there.
    held = " ".join(result["notificationCenter"])
    assert "is ready" not in held and "changed file" not in held, result["notificationCenter"]
    assert "completed" in held, result["notificationCenter"]
    # The language status item says what doctor says about the record.
    assert "record: valid" in result["languageStatus"], result["languageStatus"]
    assert "valid" in result["doctor"]
    # Never written: not in the workspace, the settings file, or any log.
    assert not _files_holding(repo, key)
    assert key not in (server.user_data / "User" / "settings.json").read_text()
    assert not _files_holding(server.user_data / "logs", key)
    assert key not in server.log.read_text(errors="replace")
    state_home = Path(os.environ.get("XDG_STATE_HOME", Path.home() / ".local" / "state")) / "autocode"
    if state_home.is_dir():
        assert not _files_holding(state_home, key)


@pytest.mark.timeout(900)
def test_a_failed_verification_offers_its_ways_out(tmp_path: Path, code_server: Any) -> None:
    """The test command cannot run: the notification names the failure without a bare path and
    has Show test output / Retry verification buttons; the Tests and Error rows open the output;
    after the person fixes the test command, Retry verification verifies the change again."""
    repo = tmp_path / "textkit"
    patch = _build_sample("unittest", repo)
    (repo / ".autocode").mkdir(exist_ok=True)
    (repo / ".autocode" / "config.toml").write_text('test_command = "python3 -m nosuchrunner"\n')
    server = code_server({"autocode.python": sys.executable})
    result = run_scenario("failure-ways-out", server.url(repo), AUTOCODE_E2E_BRIEF=f"Add longest_word(): apply {patch}",
                          AUTOCODE_E2E_ANSWER=NAMING, AUTOCODE_E2E_REPO=str(repo),
                          AUTOCODE_E2E_FIXED_TEST_COMMAND="python3 -m unittest")
    toast = result["failureToast"]
    assert "failed" in toast and "test-output.txt" not in toast, toast
    assert {"Show test output", "Retry verification"} <= set(result["failureButtons"]), result["failureButtons"]
    assert result["outputTab"] == "test-output.txt"
    assert result["errorRowTab"] == "test-output.txt" and result["testsRowTab"] == "test-output.txt"
    assert any(a and a.startswith("Retry Verification") for a in result["inlineActions"]), result["inlineActions"]
    assert result["afterRetry"].startswith("verified"), result["afterRetry"]


def _interrupted_task(repo: Path) -> str:
    """A task left VERIFYING: the CLI runs it with a slow test, and is killed while it verifies."""
    brief = "Add longest_word(): apply patches/add-longest-word.patch"
    answers = repo.parent / "answers.json"
    answers.write_text(json.dumps({"answers": {"test-naming": NAMING}, "approve_plan": True}))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "engine"), str(ROOT / "server")])}
    proc = subprocess.Popen([sys.executable, "-m", "autocode", "task", "start", "--workspace", str(repo),
                             "--brief", brief, "--test-command", "python3 -m unittest", "--answers", str(answers),
                             "--no-interactive"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    runs = repo / ".autocode" / "runs"
    deadline = time.monotonic() + 240
    try:
        while time.monotonic() < deadline:
            states = [json.loads((d / "state.json").read_text()) for d in runs.glob("t-*") if (d / "state.json").is_file()] \
                if runs.is_dir() else []
            if any(s.get("state") == "VERIFYING" for s in states):
                break
            assert proc.poll() is None, "the task ended before it verified"
            time.sleep(0.2)
        else:
            raise AssertionError("the task never reached VERIFYING")
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    return brief


@pytest.mark.timeout(900)
def test_an_interrupted_task_offers_resume_as_a_button(tmp_path: Path, code_server: Any) -> None:
    """A task whose process was killed while it verified: the window says it was interrupted, with
    Resume as a notification button and an inline action; Resume continues it."""
    repo = tmp_path / "textkit"
    _build_sample("unittest", repo)
    slow = repo / "tests" / "test_slowly.py"
    slow.write_text("import time\nimport unittest\n\n\nclass Slowly(unittest.TestCase):\n"
                    "    def test_takes_its_time(self):\n        time.sleep(8)\n")
    subprocess.run(["git", "add", "-A"], cwd=repo, check=True)
    subprocess.run(["git", "-c", "user.email=t@e", "-c", "user.name=t", "commit", "-qm", "slow"], cwd=repo, check=True)
    brief = _interrupted_task(repo)
    server = code_server({"autocode.python": sys.executable})
    result = run_scenario("interrupted", server.url(repo), AUTOCODE_E2E_TASK=brief)
    assert "interrupted while verifying" in result["interruptedToast"], result["interruptedToast"]
    assert "Resume" in result["interruptedButtons"], result["interruptedButtons"]
    assert "interrupted while verifying" in result["tasksView"]
    assert any(a and a.startswith("Resume Task") for a in result["inlineActions"]), result["inlineActions"]
    assert "interrupted" not in result["afterResume"]


@pytest.mark.timeout(600)
def test_a_refused_memory_is_shown_in_its_input_box_with_the_text_kept(tmp_path: Path, code_server: Any) -> None:
    repo = make_repo(tmp_path / "repo", {"README.md": "hello\n"})
    server = code_server({"autocode.python": sys.executable})
    typed = "Fixing PAY-128 needs the billing flag turned on."
    advice = "Prefer small focused commits with one reason each."
    result = run_scenario("memory-inline", server.url(repo), AUTOCODE_E2E_MEMORY=typed, AUTOCODE_E2E_ADVICE=advice)
    assert result["refusalMessage"].startswith("Not saved: it names a task key (PAY-128)"), result["refusalMessage"]
    assert result["valueKept"] == typed
    assert result["dialogShown"] is False
    # The promotion's skills: a read-only rendered page, no Untitled document left to discard.
    assert "skills-made-by-promotion" in result["skillsTab"], result["skillsTab"]
    assert "Skills made by promotion" in result["skillsPage"] and "{" not in result["skillsPage"], result["skillsPage"]
    assert not [t for t in result["tabsAfterSkills"] if t.startswith("Untitled")], result["tabsAfterSkills"]
    assert result["dirtyTabs"] == 0


@pytest.mark.timeout(1500)  # the first to ask for the bundle builds it (minutes under load)
def test_each_bundled_python_gets_its_own_bytecode() -> None:
    """scripts/vscode-bundle.sh compiles every bundled/py3XX with that Python, hash-checked without
    reading the source (the .vsix is unpacked with new modification times)."""
    import zipfile

    names = set(zipfile.ZipFile(vscode_e2e._bundled_vsix()).namelist())
    with zipfile.ZipFile(vscode_e2e._bundled_vsix()) as vsix:
        for tag in ("py311", "py312", "py313"):
            for module in ("autocode_lsp/__pycache__/server", "pygls/__pycache__/server", "autocode/settings/__pycache__/resolve"):
                pyc = f"extension/bundled/{tag}/{module}.cpython-{tag[2:]}.pyc"
                assert pyc in names, pyc
                flags = int.from_bytes(vsix.read(pyc)[4:8], "little")
                assert flags == 0b01, (pyc, flags)  # hash-based, source not checked
            # What only a rarer path imports stays uncompiled (the .vsix stays under 25 MB).
            assert not [n for n in names if n.startswith(f"extension/bundled/{tag}/git/") and n.endswith(".pyc")]
