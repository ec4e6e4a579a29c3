"""The VS Code extension in a real VS Code: code-server 4.100.3 with the built
.vsix installed, driven by Playwright and Debian's Chromium
(editors/vscode/test/e2e/run.mjs), plus the extension's own node unit tests.

`make editors` (scripts/vscode-setup.sh) installs code-server, Chromium and the
npm packages and builds the .vsix before these run. Screenshots of every step
land in artifacts/vscode/<scenario>/.
"""

from __future__ import annotations

import atexit
import contextlib
import dataclasses
import fcntl
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from support import make_repo

ROOT = Path(__file__).resolve().parents[2]
EXT = ROOT / "editors" / "vscode"
VSIX = EXT / "dist" / "autocode.vsix"
CODE_SERVER = ROOT / ".tools" / "code-server-entry.js"
CHROMIUM = Path(os.environ.get("CHROMIUM", "/usr/bin/chromium"))
ARTIFACTS = ROOT / "artifacts" / "vscode"

pytestmark = pytest.mark.editor


def _require_setup() -> None:
    missing = [str(p.relative_to(ROOT)) if p.is_relative_to(ROOT) else str(p)
               for p in (VSIX, CODE_SERVER, EXT / "node_modules" / "playwright-core", CHROMIUM)
               if not p.exists()]
    if missing:
        pytest.fail(f"VS Code test setup is missing {', '.join(missing)}: run `bash scripts/vscode-setup.sh` "
                    "(`make editors` does it).")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


_INSTALLED: dict[tuple[str, int], Path] = {}
"""Each .vsix installed once per run by code-server itself, by path and modification time."""


def _install(vsix: Path, extensions: Path) -> None:
    """The .vsix installed into `extensions`: by `code-server --install-extension` the first time
    (about 1.2 s of a scenario), then as a copy of that installation with its listing's folder
    names moved (a scenario's own installation is not what its test is about)."""
    key = (str(vsix), vsix.stat().st_mtime_ns)
    template = _INSTALLED.get(key)
    if template is None:
        base = Path(tempfile.mkdtemp(prefix="vsix-installed-"))
        atexit.register(shutil.rmtree, base, True)
        template = base / "extensions"
        done = subprocess.run(["node", str(CODE_SERVER), "--user-data-dir", str(base / "user-data"),
                               "--extensions-dir", str(template), "--install-extension", str(vsix)],
                              capture_output=True, text=True, timeout=120)
        assert "successfully installed" in done.stdout, done.stdout + done.stderr
        _INSTALLED[key] = template
    shutil.copytree(template, extensions, symlinks=True, dirs_exist_ok=True)
    listing = extensions / "extensions.json"
    text = listing.read_text(encoding="utf-8")
    assert str(template) in text, text
    listing.write_text(text.replace(str(template), str(extensions)), encoding="utf-8")


class CodeServer:
    """One code-server process in its own process group, with its own user data and extensions."""

    def __init__(self, base: Path, settings: dict[str, Any], vsix: Path = VSIX) -> None:
        self.base = base
        self.vsix = vsix
        self.port = _free_port()
        self.user_data = base / "user-data"
        self.extensions = base / "extensions"
        (self.user_data / "User").mkdir(parents=True)
        self.extensions.mkdir()
        defaults = {
            "workbench.startupEditor": "none",
            "security.workspace.trust.enabled": False,
            "telemetry.telemetryLevel": "off",
            "workbench.tips.enabled": False,
            "extensions.ignoreRecommendations": True,
            "extensions.autoCheckUpdates": False,
            "update.mode": "none",
            "git.openRepositoryInParentFolders": "never",
        }
        (self.user_data / "User" / "settings.json").write_text(json.dumps({**defaults, **settings}))
        self.config = base / "config.yaml"
        self.config.write_text(f"bind-addr: 127.0.0.1:{self.port}\nauth: none\ncert: false\n")
        self.log = base / "code-server.log"
        self.proc: subprocess.Popen[bytes] | None = None
        self.tmp: Path | None = None

    def _args(self) -> list[str]:
        return ["node", str(CODE_SERVER), "--config", str(self.config), "--user-data-dir", str(self.user_data),
                "--extensions-dir", str(self.extensions), "--disable-telemetry", "--disable-update-check",
                "--disable-workspace-trust"]

    def start(self, install: bool = True) -> None:
        """Installs the .vsix (unless `install` is False: started again after stop()) and starts."""
        if install:
            _install(self.vsix, self.extensions)
        # A temporary folder of its own, removed at stop(): VS Code's git extension leaves its
        # `vscode-git-*.sock` there when the window is ended (about 30 a run were left in /tmp).
        self.tmp = Path(tempfile.mkdtemp(prefix="acs-"))
        with self.log.open("wb") as log:
            self.proc = subprocess.Popen(self._args(), stdout=log, stderr=subprocess.STDOUT,
                                         start_new_session=True, env={**os.environ, "TMPDIR": str(self.tmp)})
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{self.port}/healthz", timeout=2).read()
                return
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"code-server did not start:\n{self.log.read_text()}") from None
                time.sleep(0.3)

    def url(self, folder: Path | None) -> str:
        """The workbench on a folder, on a .code-workspace file, or on nothing."""
        if folder is None:
            return f"http://127.0.0.1:{self.port}/?ew=true"
        kind = "workspace" if folder.suffix == ".code-workspace" else "folder"
        return f"http://127.0.0.1:{self.port}/?{kind}={folder}"

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            # code-server forks extension hosts and the language server: end the whole group.
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=10)
        if self.tmp is not None:
            shutil.rmtree(self.tmp, ignore_errors=True)


@pytest.fixture
def code_server(tmp_path: Path) -> Iterator[Callable[[dict[str, Any]], CodeServer]]:
    _require_setup()
    started: list[CodeServer] = []

    def start(settings: dict[str, Any], vsix: Path = VSIX) -> CodeServer:
        server = CodeServer(tmp_path / f"cs{len(started)}", settings, vsix)
        started.append(server)
        server.start()
        return server

    yield start
    for server in started:
        server.stop()


def run_scenario(scenario: str, url: str, *, shots: str | None = None, **extra: str) -> dict[str, Any]:
    """Runs one e2e scenario; its screenshots go to artifacts/vscode/<shots or scenario>/."""
    artifacts = ARTIFACTS / (shots or scenario)
    shutil.rmtree(artifacts, ignore_errors=True)
    env = {**os.environ, "AUTOCODE_E2E_URL": url, "AUTOCODE_E2E_SCENARIO": scenario,
           "AUTOCODE_E2E_ARTIFACTS": str(artifacts), "CHROMIUM": str(CHROMIUM), **extra}
    proc = subprocess.run(["node", "test/e2e/run.mjs"], cwd=EXT, env=env, capture_output=True, text=True,
                          timeout=540)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    assert lines, f"the e2e script printed no result (exit {proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
    result: dict[str, Any] = json.loads(lines[-1][len("RESULT "):])
    assert proc.returncode == 0, f"scenario {scenario} failed: {result.get('error')}\n" \
        f"notifications: {result.get('notifications')}\nquick input: {result.get('quickInput')}\n" \
        f"steps: {result.get('steps')}\nkeys pressed with the focus outside the pick: {result.get('defaultEnterFocus')}\n" \
        f"screenshots in {artifacts}"
    for shot in result["screenshots"]:
        assert Path(shot).stat().st_size > 10_000, f"screenshot {shot} looks blank"
    return result


def test_vscode_extension_typechecks() -> None:
    _require_setup()
    proc = subprocess.run([str(EXT / "node_modules" / ".bin" / "tsc"), "--noEmit", "-p", "."], cwd=EXT,
                          capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_vscode_unit_tests_pass() -> None:
    _require_setup()
    proc = subprocess.run(["npm", "test", "--silent"], cwd=EXT, capture_output=True, text=True, timeout=180)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    passed = re.search(r"^# pass (\d+)$", out, re.M)
    failed = re.search(r"^# fail (\d+)$", out, re.M)
    assert passed and failed, out
    assert int(failed.group(1)) == 0 and int(passed.group(1)) >= 25, out


def test_activates_in_repositories_and_on_use_not_in_every_window() -> None:
    """Activation events: a folder with `.git`, each view, each command and the walkthrough; never
    `*` or `onStartupFinished` (which start the extension, and its server, in every window)."""
    manifest = json.loads((EXT / "package.json").read_text())
    events = manifest["activationEvents"]
    assert "*" not in events and "onStartupFinished" not in events, events
    assert "workspaceContains:.git" in events
    contributes = manifest["contributes"]
    views = [v["id"] for group in contributes["views"].values() for v in group]
    assert views and all(f"onView:{v}" in events for v in views), (views, events)
    # VS Code (1.74 on) also activates on any contributed command; the ones listed must still exist.
    commands = {c["command"] for c in contributes["commands"]}
    listed = [e.removeprefix("onCommand:") for e in events if e.startswith("onCommand:")]
    assert listed and not set(listed) - commands, set(listed) - commands
    assert {"autocode.startTask", "autocode.showOutput", "autocode.restartServer"} <= set(listed)
    assert all(f"onWalkthrough:{w['id']}" in events for w in contributes.get("walkthroughs", []))
    # Nothing else: each event is one of those kinds.
    kinds = ("workspaceContains:", "onView:", "onCommand:", "onWalkthrough:")
    assert all(e.startswith(kinds) for e in events), events


def test_vsix_holds_the_bundle_and_no_sources() -> None:
    _require_setup()
    import zipfile

    names = set(zipfile.ZipFile(VSIX).namelist())
    assert "extension/dist/extension.js" in names
    assert "extension/package.json" in names
    assert not [n for n in names if n.startswith("extension/src/") or "node_modules" in n], sorted(names)
    manifest = json.loads(zipfile.ZipFile(VSIX).read("extension/package.json"))
    assert manifest["engines"]["vscode"] == "^1.100.0"


def test_the_bundle_scan_finds_a_secret_or_an_env_file_and_scans_each_content_once(tmp_path: Path) -> None:
    """scripts/vscode-scan-secrets.cjs, the scan vscode-bundle.sh runs instead of vsce's own."""
    _require_setup()
    key = "-----BEGIN RSA PRIVATE KEY-----\n" + "A" * 64 + "\n-----END RSA PRIVATE KEY-----\n"
    files = {"clean/a.py": "print('hello')\n", "clean/b.py": "print('hello')\n",
             "leak/key.pem": key, "env/.env": "TOKEN=x\n"}
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)

    def scan(*names: str, known: Path | None = None) -> subprocess.CompletedProcess[str]:
        args = ["node", str(ROOT / "scripts" / "vscode-scan-secrets.cjs"), *(["--known", str(known)] if known else [])]
        return subprocess.run(args, input="\n".join(str(tmp_path / n) for n in names), cwd=EXT,
                              capture_output=True, text=True, timeout=120)

    known = tmp_path / "known"
    clean = scan("clean/a.py", "clean/b.py", known=known)
    assert clean.returncode == 0 and "2 files (1 contents not scanned before)" in clean.stdout, clean
    again = scan("clean/a.py", known=known)
    assert again.returncode == 0 and "(0 contents not scanned before)" in again.stdout, again
    leak = scan("clean/a.py", "leak/key.pem")
    assert leak.returncode == 1 and "secrets found" in leak.stderr, leak
    env = scan("clean/a.py", "env/.env")
    assert env.returncode == 1 and ".env files must not be packaged" in env.stderr, env


def test_views_and_palette_commands_without_autocode_installed(tmp_path: Path, code_server: Any) -> None:
    """An interpreter without AutoCode: the views still exist and the person is told how to install it."""
    bare = tmp_path / "bare-venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(bare)], check=True, timeout=120)
    python = bare / "bin" / "python"
    repo = make_repo(tmp_path / "repo", {"README.md": "hello\n"})
    server = code_server({"autocode.python": str(python)})
    url = server.url(repo)

    # The install hint first; then changing autocode.python while the window is open restarts the
    # server with the new interpreter (one window for both).
    result = run_scenario("missing-server", url, AUTOCODE_E2E_FIXED_PYTHON=sys.executable)
    assert f"{python} -m pip install autocode-lsp" in result["notification"].replace("\n", " ")
    assert "Install in Terminal" in result["notification"]
    assert result["steps"][-1]["step"] == "server restarted after the setting changed"
    assert "project: repo" in result["memoryAfterFix"]
    server_settings = json.loads((server.user_data / "User" / "settings.json").read_text())
    server_settings["autocode.python"] = str(python)
    (server.user_data / "User" / "settings.json").write_text(json.dumps(server_settings))

    result = run_scenario("palette", url)
    assert [t.lower() for t in result["viewTitles"][:3]] == ["tasks", "memory", "team memory promotion"]
    assert result["commands"] == result["expectedCommands"]
    assert "AutoCode: Search Memory" in result["commands"]


NAMING_ANSWER = "Name unittest methods after the behaviour they check."
SECOND_ANSWER = "Start every test method name with test_ and the function under test."


def _build_sample(name: str, dest: Path) -> str:
    """A sample repository from fixtures/samples; returns its declared patch path."""
    proc = subprocess.run([sys.executable, str(ROOT / "fixtures" / "samples" / "build.py"), name, str(dest)],
                          capture_output=True, text=True, check=True, timeout=60)
    match = re.search(r"declared patch: (\S+)\)", proc.stdout)
    assert match, proc.stdout
    return match.group(1)


def _server_knows_answer_kinds() -> bool:
    """Whether this checkout's server takes `how` on autocode.task.answer (issue 14, engine side)."""
    from autocode_lsp.protocol import spec

    return "how" in {f.name for f in dataclasses.fields(spec.TaskAnswerArgs)}


def _ledger(run_dir: Path) -> list[dict[str, Any]]:
    answers: list[dict[str, Any]] = json.loads((run_dir / "ledger.json").read_text())["answers"]
    return answers


@pytest.mark.timeout(900)
def test_whole_task_in_vscode(tmp_path: Path, code_server: Any) -> None:
    """Start Task from the palette; the question is announced (no prompt opens by itself) and
    answered in the QuickPick; the plan is approved from its editor's title bar (no dialog); the
    change is applied from the diff's title bar; Doctor shows the learned convention; Forget
    removes it. A second task offers the default and delegation, then plan lens and Apply."""
    repo = tmp_path / "textkit"
    patch = _build_sample("unittest", repo)
    server = code_server({"autocode.python": sys.executable})
    knows_how = _server_knows_answer_kinds()

    result = run_scenario("flow", server.url(repo), AUTOCODE_E2E_BRIEF=f"Add longest_word(): apply {patch}",
                          AUTOCODE_E2E_ANSWER=NAMING_ANSWER,
                          AUTOCODE_E2E_SECOND_BRIEF="Add shortest_word(): apply patches/add-shortest-word.patch",
                          AUTOCODE_E2E_SECOND_ANSWER=SECOND_ANSWER,
                          AUTOCODE_E2E_SERVER_KNOWS_HOW="1" if knows_how else "0",
                          AUTOCODE_E2E_REPO=str(repo))

    assert "webview" not in result["focusAfterDoctor"], result["focusAfterDoctor"]  # the report took the keys
    assert [s["step"] for s in result["steps"]][:5] == [
        "workbench open", "task started", "question answered", "plan approved", "completion applied from the diff"]
    # Announced, not opened: the keyboard stayed with the person until they chose Answer.
    assert "Which naming convention" in result["questionToast"]
    assert result["quickInputWhileAnnounced"] is False
    rows = result["questionRows"]
    assert "accept the proposed default (not remembered)" in rows[0]
    assert any("Type an answer" in r for r in rows) and any("Let AutoCode decide" in r for r in rows)
    # The plan in an editor with Approve / Request Changes in its title bar and as lenses; no modal.
    assert any(t.startswith("plan-revision-") for t in result["planTabs"])
    assert {"Approve Plan", "Request Plan Changes"} <= {a.split(" (")[0] for a in result["planTitleActions"] if a}
    assert any("Approve plan" in lens and "Request changes" in lens for lens in result["planLenses"])
    # The change as a diff titled for the task, Apply / Discard in its title bar, no dialog over it.
    assert any(t.startswith("AutoCode: ") and "after Apply" in t for t in result["diffTabs"]), result["diffTabs"]
    assert {"Apply Changes", "Discard Changes"} <= {a.split(" (")[0] for a in result["diffTitleActions"] if a}
    assert result["dialogDuringReview"] is False
    assert not any("after Apply" in t for t in result["diffTabsAfter"])
    assert "completed" in result["tasksView"].lower()
    assert "AutoCode" in result["statusBar"]
    assert "def longest_word" in (repo / "textkit" / "words.py").read_text()
    assert NAMING_ANSWER in result["doctorBefore"]
    assert "valid" in result["doctorBefore"]
    run_dirs = sorted(p for p in (repo / ".autocode" / "runs").iterdir() if p.is_dir())
    # The typed answer went through VS Code, recorded as the person's with the lsp: source.
    assert [(a["text"], a["kind"], a["source"]["channel"]) for a in _ledger(run_dirs[0])] == [
        (NAMING_ANSWER, "human", "lsp:code-server")]
    assert "Forget what AutoCode learned" in result["forgetDialog"]
    assert "forgot" in result["forgetNotification"]
    assert NAMING_ANSWER not in result["doctorAfter"]
    assert "missing" in result["doctorAfter"]
    assert "naming convention" in result["secondWaiting"]
    assert re.search(r"waiting for (plan approval|your review)", result["secondPlanWaiting"])
    # The status bar says the state in under 30 characters (the brief is in its tooltip).
    assert "AutoCode" in result["secondStatusBar"] and len(result["secondStatusBar"].strip()) < 30
    # The second change on disk once saved (the third task takes it out and applies it again; what
    # it leaves is checked through its run's state below).
    assert "def shortest_word" in result["wordsAfterSecond"]
    second = _ledger(run_dirs[1])
    # What project.json held as learned answers once each completed task had finished learning:
    # the typed answer verbatim and nothing else after the first task.
    assert result["learnedAfterFirst"] == [NAMING_ANSWER]
    if knows_how:
        # Enter on the default: recorded as an accepted default; the third task delegated. Both
        # tasks completed and learned, and neither answer was learned (the record was forgotten
        # before them, so any learned answer would show here).
        assert [a.get("how") for a in second] == ["acceptedDefault"]
        assert [a.get("how") for a in _ledger(run_dirs[2])] == ["delegated"]
        for run_dir in run_dirs[1:3]:
            state = json.loads((run_dir / "state.json").read_text())
            assert state["state"] == "COMPLETED" and state["learning"]["status"] == "done", state["learning"]
        assert result["learnedAfterSecond"] == []
        assert result["learnedAfterThird"] == []
        record = json.loads((repo / ".autocode" / "project.json").read_text())
        assert record["conventions"] == []
    else:
        # An older server refuses `how`: the editor never lets it record the default or a delegation
        # as the person's own answer; the typed answer goes through and is learned.
        assert "does not know answer kinds" in result["refusedDefault"]
        assert "does not know answer kinds" in result["refusedDelegated"]
        assert [(a["text"], a["kind"]) for a in second] == [(SECOND_ANSWER, "human")]
        assert SECOND_ANSWER in result["doctorSecond"]
        assert result["learnedAfterSecond"] == [SECOND_ANSWER]
    # What the editor sent, from its own log: each answer with how it was given.
    logs = "\n".join(p.read_text(errors="replace") for p in server.user_data.rglob("*.log"))
    for how in ("typed", "acceptedDefault"):
        assert f"(how: {how})" in logs


def test_start_task_asks_trust_for_the_committed_endpoint_and_key_variable(
    tmp_path: Path, code_server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One non-modal warning names the variable and the URL; Not now trusts and starts nothing,
    Trust this repository records the trust and starts the task (docs/editors.md, The trust prompt)."""
    repo = tmp_path / "textkit"
    patch = _build_sample("unittest", repo)
    url = "http://127.0.0.1:9/v1"  # never contacted: the fixture provider stays in use
    (repo / ".autocode").mkdir(exist_ok=True)
    (repo / ".autocode" / "config.toml").write_text(f'base_url = "{url}"\napi_key_env = "GITHUB_TOKEN"\n')
    subprocess.run(["git", "add", "-A"], cwd=repo, check=True)
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", "commit", "-qm", "endpoint"],
                   cwd=repo, check=True)
    state = tmp_path / "state"
    monkeypatch.setenv("XDG_STATE_HOME", str(state))  # the server's trust records land here
    server = code_server({"autocode.python": sys.executable})
    result = run_scenario("trust", server.url(repo), AUTOCODE_E2E_BRIEF=f"Add longest_word(): apply {patch}",
                          AUTOCODE_E2E_REPO=str(repo), AUTOCODE_E2E_TRUST_DIR=str(state / "autocode" / "trust"))
    assert [s["step"] for s in result["steps"]] == ["declined", "trusted and started"]
    assert f"send the variable GITHUB_TOKEN to {url}" in result["prompt"]
    assert result["afterNo"] == {"records": [], "runs": []}
    assert "longest_word" in result["tasksView"]
    assert len(result["afterYes"]["records"]) == 1 and result["afterYes"]["runs"]
    assert result["promptsAfterYes"] == 0


def _server_has_three_way_apply() -> bool:
    """Whether this checkout's server has the three-way apply with `resolve_conflicts` (issue 14)."""
    from autocode_lsp import protocol

    return hasattr(protocol, "TASK_RESOLVE_CONFLICTS")


@pytest.mark.skipif(not _server_has_three_way_apply(),
                    reason="needs the server's three-way apply: the resolve_conflicts need and "
                           "autocode.task.resolveConflicts (issue 14 engine side)")
@pytest.mark.timeout(600)
def test_conflict_choice_per_file(tmp_path: Path, code_server: Any) -> None:
    """The person's own edit where the task adds its function: Apply leaves the file alone and
    asks, per file, mine / theirs / markers; markers are written for them to resolve."""
    repo = tmp_path / "textkit"
    patch = _build_sample("unittest", repo)
    mine = "\n\ndef first_word(text):\n    return text.split()[0]\n"
    server = code_server({"autocode.python": sys.executable})
    result = run_scenario("conflicts", server.url(repo), AUTOCODE_E2E_BRIEF=f"Add longest_word(): apply {patch}",
                          AUTOCODE_E2E_ANSWER=NAMING_ANSWER, AUTOCODE_E2E_REPO=str(repo),
                          AUTOCODE_E2E_EDIT_FILE="textkit/words.py", AUTOCODE_E2E_EDIT_TEXT=mine)
    assert "textkit/words.py" in result["conflictPick"]
    rows = " ".join(result["conflictRows"])
    assert "Keep mine" in rows and "Take theirs" in rows and "Write conflict markers" in rows
    text = (repo / "textkit" / "words.py").read_text()
    assert "<<<<<<<" in text and "def first_word" in text and "def longest_word" in text
    assert "words.py" in result["tabsAfter"]


@pytest.mark.skipif(not _server_has_three_way_apply(),
                    reason="needs the server's apply through workspace/applyEdit (issue 14 engine side)")
@pytest.mark.timeout(600)
def test_unsaved_edits_are_kept_and_undo_takes_the_change_back(tmp_path: Path, code_server: Any) -> None:
    """An open editor of a file the task changes holds the person's unsaved line: Apply merges the
    change into that editor (workspace/applyEdit), both are there and nothing is written to disk;
    the editor's undo leaves the person's line alone, still unsaved. One notice says the task waits
    for the save; cancelled through the CLI while the editor is still dirty, the task's notice
    closes by itself (no refresh)."""
    repo = tmp_path / "textkit"
    patch = _build_sample("unittest", repo)
    words = repo / "textkit" / "words.py"
    original = words.read_text()
    mine = "# my own note, not saved"
    # VS Code's default; code-server saves after a delay unless told not to.
    server = code_server({"autocode.python": sys.executable, "files.autoSave": "off"})
    result = run_scenario("unsaved", server.url(repo), AUTOCODE_E2E_BRIEF=f"Add longest_word(): apply {patch}",
                          AUTOCODE_E2E_ANSWER=NAMING_ANSWER, AUTOCODE_E2E_EDIT_FILE="textkit/words.py",
                          AUTOCODE_E2E_EDIT_TEXT=mine, AUTOCODE_E2E_REPO=str(repo),
                          AUTOCODE_E2E_CLI=json.dumps([sys.executable, "-m", "autocode"]))
    about_words = [t for t in result["centerAfterApply"] if "words.py" in t]
    assert len(about_words) == 1, result["centerAfterApply"]
    assert "is waiting for you to save" in about_words[0] and "unsaved edits kept" in about_words[0], about_words
    assert "cancelled" in result["tasksViewAfterCancel"].lower()
    assert not [t for t in result["centerAfterCancel"] if "words.py" in t], result["centerAfterCancel"]
    before = result["bufferBefore"].splitlines()
    assert before[0] == mine and "def count_words(text):" in before
    # The change went into a buffer with unsaved edits: not on disk yet, so not COMPLETED.
    assert "save them to complete" in result["tasksView"].lower()
    merged = result["bufferAfterApply"]
    assert merged.splitlines()[0] == mine and "def longest_word(text):" in merged, merged
    assert result["dirtyAfterApply"] is True
    # Applied through the editor: the file on disk is as the person last saved it.
    assert words.read_text() == original
    # Undo: the person's edit alone, still unsaved.
    assert result["bufferAfterUndo"] == result["bufferBefore"], result
    assert result["dirtyAfterUndo"] is True


def test_walkthrough_opens_and_its_steps_run_commands(tmp_path: Path, code_server: Any) -> None:
    """The getting-started walkthrough (contributes.walkthroughs) is offered by "Welcome: Open
    Walkthrough...", shows its three steps and its media, and a step's button runs the command."""
    repo = make_repo(tmp_path / "repo", {"README.md": "hello\n"})
    manifest = json.loads((EXT / "package.json").read_text())
    (walkthrough,) = manifest["contributes"]["walkthroughs"]
    server = code_server({"autocode.python": sys.executable})
    result = run_scenario("walkthrough", server.url(repo), AUTOCODE_E2E_WALKTHROUGH=walkthrough["title"])
    assert any(walkthrough["title"] in row for row in result["walkthroughRows"])
    for step in walkthrough["steps"]:
        assert step["title"] in result["walkthrough"], step["title"]
    assert "python -m pip install autocode-lsp" in result["walkthroughMedia"]
    assert "What should AutoCode do" in result["startPrompt"]


def test_window_without_folder_has_global_memory_only(tmp_path: Path, code_server: Any) -> None:
    """No folder: Start Task says a folder is needed; memories are global only and can be
    added, searched, edited and deleted from the Memory view."""
    server = code_server({"autocode.python": sys.executable})
    result = run_scenario("no-folder", server.url(None))
    assert "AutoCode works inside a folder" in result["tasksView"] and "Open Folder" in result["tasksView"]
    # Still there once the extension is active (its server listed the global memories).
    assert "Open Folder" in result["tasksViewActive"] and "only global memory" in result["tasksViewActive"]
    assert "Open the repository folder first" in result["startNotification"]
    assert "this project" not in result["memoryBefore"]
    assert result["memoryTargets"] == ["Agent · global", "Team · global"]
    assert "Release notes are written in the past tense." in result["memoryAdded"]
    assert "1 result" in result["memorySearch"]
    assert "Keep them short" in result["memoryEdited"]
    assert "Delete this team memory?" in result["deleteDialog"]
    assert "past tense" not in result["memoryAfter"]
    assert "prefer-small-focused-commits" in result["promotionView"].lower() or "Prefer small" in result["promotionView"]
    assert result["promotionCheckboxes"] >= 1
    assert "Promote 1 memory into skills?" in result["promotionDialog"]
    assert "will be deleted" in result["promotionDialog"] and "Prefer small focused commits." in result["promotionDialog"]
    assert "promoted 1 memory into the skill" in result["promotionNotification"]


def test_multi_root_commands_act_on_the_chosen_folder(tmp_path: Path, code_server: Any) -> None:
    first = make_repo(tmp_path / "alpha", {"README.md": "alpha\n"})
    second = make_repo(tmp_path / "beta", {"README.md": "beta\n"})
    workspace = tmp_path / "both.code-workspace"
    workspace.write_text(json.dumps({"folders": [{"path": str(first)}, {"path": str(second)}]}))
    server = code_server({"autocode.python": sys.executable})
    result = run_scenario("multi-root", server.url(workspace), AUTOCODE_E2E_FOLDERS="alpha,beta")
    assert "alpha" in result["tasksView"] and "beta" in result["tasksView"]
    assert "no tasks" in result["tasksView"]
    assert str(second) in result["doctor"]
    assert str(first) not in result["doctor"]


def _listening_server(tmp_path: Path, *flags: str) -> tuple[subprocess.Popen[bytes], Any]:
    """A server started as a person would (`autocode-lsp --tcp/--socket ...`), once it listens."""
    log = (tmp_path / "lsp-remote.log").open("wb")
    lsp = subprocess.Popen([sys.executable, "-m", "autocode_lsp", *flags], stdout=log,
                           stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.monotonic() + 30
    while "listening on" not in (tmp_path / "lsp-remote.log").read_text(errors="replace"):
        assert lsp.poll() is None and time.monotonic() < deadline, (tmp_path / "lsp-remote.log").read_text()
        time.sleep(0.2)
    return lsp, log


def _token_file(tmp_path: Path) -> Path:
    import secrets

    path = tmp_path / "lsp.token"
    path.write_text(secrets.token_urlsafe(32) + "\n")
    path.chmod(0o600)
    return path


def test_a_listening_server_without_the_token_is_explained(tmp_path: Path, code_server: Any) -> None:
    repo = make_repo(tmp_path / "delta", {"README.md": "delta\n"})
    port = _free_port()
    lsp, log = _listening_server(tmp_path, "--tcp", f"127.0.0.1:{port}")
    try:
        server = code_server({"autocode.server.tcp": f"127.0.0.1:{port}",
                              "autocode.python": str(tmp_path / "no-such-python")})
        result = run_scenario("refused", server.url(repo))
        assert "asks for its token" in result["notification"]
        assert "autocode.server.tokenFile" in result["notification"]
        assert len([n for n in result["allNotifications"] if "AutoCode" in n]) == 1, result["allNotifications"]
    finally:
        os.killpg(lsp.pid, signal.SIGTERM)
        lsp.wait(timeout=10)
        log.close()


def _listen_on(tmp_path: Path, transport: str, *flags: str) -> tuple[subprocess.Popen[bytes], Any, str]:
    """`autocode-lsp --tcp 127.0.0.1:0` / `--ws 127.0.0.1:0` / `--socket PATH` started as a person
    would; returns it, its log and the autocode.server.connect value for where it listens."""
    address = str(tmp_path / "sock" / "lsp.sock") if transport == "unix" else "127.0.0.1:0"
    option = {"tcp": "--tcp", "ws": "--ws", "unix": "--socket"}[transport]
    lsp, log = _listening_server(tmp_path, option, address, *flags)
    line = (tmp_path / "lsp-remote.log").read_text(errors="replace")
    match = re.search(r"listening on \w+ (\S+) ", line)
    assert match, line
    where = match.group(1).rstrip(",")
    return lsp, log, {"tcp": f"tcp://{where}", "ws": f"ws://{where}", "unix": f"unix:{where}"}[transport]


@pytest.mark.timeout(600)
@pytest.mark.parametrize("transport", ["tcp", "ws", "unix"])
def test_task_flow_over_each_remote_transport(transport: str, tmp_path: Path, code_server: Any) -> None:
    """autocode.server.connect = tcp:// / ws:// / unix: and the server's token file: the server
    'in another container' is started first with a token, the extension starts none, and a whole
    task (start, answer, approve the plan, apply) changes the workspace (docs/editors.md,
    Remote containers)."""
    repo = tmp_path / "textkit"
    patch = _build_sample("unittest", repo)
    token = _token_file(tmp_path)
    lsp, log, connect = _listen_on(tmp_path, transport, "--token-file", str(token))
    try:
        # A Python that does not exist proves the extension did not start a server of its own. The
        # socket is named with the older autocode.server.socket (its own wiring; connect's unix: gives
        # the same endpoint, test/unit/remote.test.ts); the older autocode.server.tcp is the one
        # test_a_listening_server_without_the_token_is_explained connects with.
        where = ({"autocode.server.socket": connect.removeprefix("unix:")} if transport == "unix"
                 else {"autocode.server.connect": connect})
        server = code_server({**where, "autocode.server.tokenFile": str(token),
                              "autocode.python": str(tmp_path / "no-such-python")})
        result = run_scenario(f"remote-flow-{transport}", server.url(repo), AUTOCODE_E2E_SCENARIO="remote-flow",
                              AUTOCODE_E2E_BRIEF=f"Add longest_word(): apply {patch}",
                              AUTOCODE_E2E_ANSWER=NAMING_ANSWER)
    finally:
        os.killpg(lsp.pid, signal.SIGTERM)
        lsp.wait(timeout=10)
        log.close()
    assert [s["step"] for s in result["steps"]] == [
        "workbench open", "task started", "question answered", "plan approved",
        "completion applied from the diff", "task completed"]
    assert "completed" in result["tasksView"].lower()
    assert "def longest_word" in (repo / "textkit" / "words.py").read_text()
    run_dirs = sorted(p for p in (repo / ".autocode" / "runs").iterdir() if p.is_dir())
    assert [a["text"] for a in _ledger(run_dirs[0])] == [NAMING_ANSWER]
    # The extension's log says where it connected: nothing was started here.
    logs = "\n".join(p.read_text(errors="replace") for p in server.user_data.rglob("*.log"))
    assert f"connecting to the language server {'on the unix socket' if transport == 'unix' else 'at'}" in logs
    assert "-m autocode_lsp" not in logs


@pytest.mark.parametrize("transport", ["ws", "tcp"])
def test_a_wrong_token_is_explained_once(transport: str, tmp_path: Path, code_server: Any) -> None:
    """A stale token in autocode.server.token: over WebSocket the handshake is refused, over TCP
    initialize is; either way one notification names the setting and what to do."""
    repo = make_repo(tmp_path / "epsilon", {"README.md": "epsilon\n"})
    token = _token_file(tmp_path)
    lsp, log, connect = _listen_on(tmp_path, transport, "--token-file", str(token))
    try:
        server = code_server({"autocode.server.connect": connect, "autocode.server.token": "stale-" + "x" * 40,
                              "autocode.python": str(tmp_path / "no-such-python")})
        result = run_scenario(f"refused-{transport}", server.url(repo), AUTOCODE_E2E_SCENARIO="refused")
    finally:
        os.killpg(lsp.pid, signal.SIGTERM)
        lsp.wait(timeout=10)
        log.close()
    assert 'refused the token in "autocode.server.token"' in result["notification"]
    assert connect in result["notification"]
    # Nothing else from AutoCode about it: no "couldn't create connection", no failed restarts.
    ours = [n for n in result["allNotifications"] if "AutoCode" in n]
    assert len(ours) == 1, ours
    assert "stale-" not in (tmp_path / "lsp-remote.log").read_text(errors="replace")


def test_nothing_listening_at_the_websocket_address_is_said(tmp_path: Path, code_server: Any) -> None:
    """autocode.server.connect = ws://... where nothing listens: one notification with the reason
    and the command that starts the server, not a word about the token."""
    repo = make_repo(tmp_path / "zeta", {"README.md": "zeta\n"})
    port = _free_port()
    server = code_server({"autocode.server.connect": f"ws://127.0.0.1:{port}",
                          "autocode.python": str(tmp_path / "no-such-python")})
    result = run_scenario("unreachable-ws", server.url(repo), AUTOCODE_E2E_SCENARIO="refused",
                          AUTOCODE_E2E_EXPECT="Could not connect")
    assert "ECONNREFUSED" in result["notification"]
    assert f"autocode-lsp --ws 127.0.0.1:{port}" in result["notification"]
    assert "token" not in result["notification"]
    assert len([n for n in result["allNotifications"] if "AutoCode" in n]) == 1, result["allNotifications"]


BUNDLED_VSIX = EXT / "dist" / "autocode-linux-x64.vsix"


def _ready_after_activation(server: CodeServer) -> int | None:
    """The extension's own figure from its output channel: ms from activation to a running client."""
    for log in server.user_data.rglob("*AutoCode*.log"):
        found = re.findall(r"language client ready (\d+) ms after activation", log.read_text(errors="replace"))
        if found:
            return int(found[0])
    return None


def _bundled_vsix() -> Path:
    """The linux-x64 build carrying the server (scripts/vscode-bundle.sh), built when missing or older than the sources."""
    sources = [*(ROOT / "engine").rglob("*.py"), *(ROOT / "server").rglob("*.py"), *(EXT / "src").rglob("*.ts"),
               EXT / "package.json", ROOT / "pyproject.toml"]
    newest = max(p.stat().st_mtime for p in sources)
    BUNDLED_VSIX.parent.mkdir(parents=True, exist_ok=True)
    # Tests in other workers may ask at the same time: one builds, the others wait and find it built.
    with (BUNDLED_VSIX.parent / ".bundle.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not BUNDLED_VSIX.exists() or BUNDLED_VSIX.stat().st_mtime < newest:
            subprocess.run(["bash", str(ROOT / "scripts" / "vscode-bundle.sh"), "linux-x64"], check=True,
                           timeout=1500)
    return BUNDLED_VSIX


def _bare_python(where: Path) -> Path:
    """A virtual environment with nothing of AutoCode (not even pip)."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(where)], check=True, timeout=120)
    python = where / "bin" / "python"
    probe = subprocess.run([str(python), "-c", "import autocode_lsp"], capture_output=True, timeout=60)
    assert probe.returncode != 0, "the bare environment must not see an installed AutoCode"
    return python


@pytest.mark.timeout(1500)  # the first to ask for the bundle builds it (minutes under load)
def test_the_bundled_vsix_holds_the_server_for_each_python() -> None:
    import zipfile

    names = zipfile.ZipFile(_bundled_vsix()).namelist()
    for tag in ("py311", "py312", "py313"):
        assert f"extension/bundled/{tag}/autocode_lsp/__main__.py" in names, tag
        assert any(n.startswith(f"extension/bundled/{tag}/pydantic_core/") and n.endswith(".so") for n in names), tag
    assert "extension/python/launch.py" in names
    assert BUNDLED_VSIX.stat().st_size < 25 * 1024 * 1024


@pytest.mark.timeout(1500)
def test_whole_task_with_the_bundled_server_and_a_bare_python(tmp_path: Path, code_server: Any) -> None:
    """The platform .vsix in an editor whose Python has nothing of AutoCode: the whole task flow works."""
    vsix = _bundled_vsix()
    python = _bare_python(tmp_path / "bare-venv")
    repo = tmp_path / "textkit"
    patch = _build_sample("unittest", repo)
    server = code_server({"autocode.python": str(python)}, vsix)
    result = run_scenario("flow", server.url(repo), shots="flow-bundled", AUTOCODE_E2E_BRIEF=f"Add longest_word(): apply {patch}",
                          AUTOCODE_E2E_ANSWER=NAMING_ANSWER,
                          AUTOCODE_E2E_SECOND_BRIEF="Add shortest_word(): apply patches/add-shortest-word.patch",
                          AUTOCODE_E2E_SECOND_ANSWER=SECOND_ANSWER)
    assert [s["step"] for s in result["steps"]][:4] == [
        "workbench open", "task started", "question answered", "plan approved"]
    assert "def longest_word" in (repo / "textkit" / "words.py").read_text()
    ready = _ready_after_activation(server)
    print(f"bundled server: language client ready {ready} ms after activation")


@pytest.mark.timeout(1500)  # the first to ask for the bundle builds it (minutes under load)
def test_from_environment_without_a_server_gives_the_install_command(tmp_path: Path, code_server: Any) -> None:
    """importStrategy fromEnvironment on the platform .vsix, interpreter without AutoCode: the install command."""
    vsix = _bundled_vsix()
    python = _bare_python(tmp_path / "bare-venv")
    repo = make_repo(tmp_path / "repo", {"README.md": "hello\n"})
    server = code_server({"autocode.python": str(python), "autocode.importStrategy": "fromEnvironment"}, vsix)
    result = run_scenario("missing-server", server.url(repo), shots="missing-server-bundled")
    assert f"{python} -m pip install autocode-lsp" in result["notification"].replace("\n", " ")


def _autocode_servers(group: int) -> list[int]:
    """Pids of language servers that code-server's process group started."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ")
            if b"autocode_lsp" in cmdline and os.getpgid(int(entry.name)) == group:
                found.append(int(entry.name))
        except (OSError, ProcessLookupError):
            continue
    return found


@pytest.mark.timeout(900)
def test_a_killed_server_is_shown_in_every_view_and_restart_recovers(tmp_path: Path, code_server: Any) -> None:
    """The running server is killed until the extension stops restarting it: every view says so,
    with Restart Server and Show Output, one notification; Restart starts one fresh server (no
    "command ... already exists", no server left over from the restarts) and the task is listed again."""
    from autocode.tasks import TaskOptions, TaskRun

    repo = make_repo(tmp_path / "repo", {"README.md": "hello\n"})
    brief = "Start the project with a README."
    TaskRun.start(repo, brief, TaskOptions(scenario="no-questions"))
    server = code_server({"autocode.python": sys.executable})
    assert server.proc is not None
    artifacts = ARTIFACTS / "server-killed"
    shutil.rmtree(artifacts, ignore_errors=True)
    artifacts.mkdir(parents=True)
    env = {**os.environ, "AUTOCODE_E2E_URL": server.url(repo), "AUTOCODE_E2E_SCENARIO": "server-killed",
           "AUTOCODE_E2E_ARTIFACTS": str(artifacts), "CHROMIUM": str(CHROMIUM), "AUTOCODE_E2E_TASK": brief}
    proc = subprocess.Popen(["node", "test/e2e/run.mjs"], cwd=EXT, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    kills = 0
    after_restart: list[int] | None = None
    deadline = time.monotonic() + 600
    while proc.poll() is None and time.monotonic() < deadline:
        # Killed once the client runs (not during the first start), until the views say it is down.
        if (artifacts / "ready").exists() and _ready_after_activation(server) is not None \
                and not (artifacts / "down-seen").exists():
            for pid in _autocode_servers(server.proc.pid):  # the client restarts it a few times, then gives up
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
                    kills += 1
        if after_restart is None and (artifacts / "restarted").exists():
            # Counted while the browser is still open: closing it ends the extension host and its
            # server. A server left behind stays, so waiting until one is left is a fair count: it
            # fails only when an extra one is still there at the deadline, and a killed one that
            # is still going away is not counted against it.
            count_by = time.monotonic() + 30
            after_restart = _autocode_servers(server.proc.pid)
            while len(after_restart) != 1 and time.monotonic() < count_by:
                time.sleep(0.25)
                after_restart = _autocode_servers(server.proc.pid)
            (artifacts / "counted").write_text("")
        time.sleep(0.5)
    out, err = proc.communicate(timeout=60)
    lines = [line for line in out.splitlines() if line.startswith("RESULT ")]
    assert lines, out + err
    result = json.loads(lines[-1][len("RESULT "):])
    assert proc.returncode == 0, f"{result.get('error')}\nnotifications: {result.get('notifications')}"
    assert kills >= 1
    # Every view says the server is down and offers both ways on, even the one that listed a task.
    assert brief in result["tasksBefore"]
    for view in ("tasksDown", "memoryDown", "promotionDown"):
        assert "not running" in result[view] and "Restart Server" in result[view] and "Show Output" in result[view], \
            (view, result[view])
    assert brief not in result["tasksDown"] and "No AutoCode tasks yet" not in result["tasksDown"]
    ours = [n for n in result["notificationsDown"] if "AutoCode" in n and "not running" in n]
    assert len(ours) <= 1, result["notificationsDown"]
    # The language client's own toasts for each failed start do not pile up beside it.
    assert not [n for n in result["notificationsDown"] if "couldn't create connection" in n or "Pending response" in n], \
        result["notificationsDown"]
    assert "not running" not in result["tasksAfter"] and brief in result["tasksAfter"]
    assert "Team · this project" in result["memoryAfter"]
    seen = " ".join(result["notificationsDown"] + result["notificationsAfter"])
    assert "already exists" not in seen, seen
    log = "".join(p.read_text(errors="replace") for p in server.user_data.rglob("*AutoCode*.log"))
    assert "already exists" not in log
    assert "starting it again (restart 1 of 3)" in log
    # One server after Restart: none of the given-up restarts left a process behind.
    assert after_restart is not None and len(after_restart) == 1, log[-3000:]
    print(f"interpreter's server: language client ready {_ready_after_activation(server)} ms after activation")


@pytest.mark.skipif(not _server_has_three_way_apply(),
                    reason="needs the server's apply through workspace/applyEdit (issue 14 engine side)")
@pytest.mark.timeout(600)
def test_the_review_shows_the_merge_against_the_buffer_and_applies_the_kept_hunks(
    tmp_path: Path, code_server: Any
) -> None:
    """The diff's right side is what Apply leaves in the person's editor (their unsaved line in it,
    not shown as deleted); one hunk unticked in Choose Hunks is left out; the task completes
    once the person saves."""
    repo = tmp_path / "textkit"
    patch = _build_sample("unittest", repo)
    tests_file = repo / "tests" / "test_words.py"
    tests_before = tests_file.read_text()
    mine = "# my own note, not saved"
    server = code_server({"autocode.python": sys.executable, "files.autoSave": "off"})
    result = run_scenario("hunks", server.url(repo), AUTOCODE_E2E_BRIEF=f"Add longest_word(): apply {patch}",
                          AUTOCODE_E2E_ANSWER=NAMING_ANSWER, AUTOCODE_E2E_EDIT_FILE="textkit/words.py",
                          AUTOCODE_E2E_EDIT_TEXT=mine, AUTOCODE_E2E_UNDO_HUNK="tests/test_words.py: lines 3")
    sides = result["wordsDiff"]
    assert sides["original"].splitlines()[0] == mine, sides  # the person's editor, unsaved line in it
    assert sides["modified"].splitlines()[0] == mine and "def longest_word(text):" in sides["modified"], sides
    rows = " ".join(result["hunkRows"])
    assert "textkit/words.py" in rows and "tests/test_words.py: lines 3" in rows
    assert "completed" in result["tasksView"].lower()
    words = (repo / "textkit" / "words.py").read_text()
    assert words.startswith(mine + "\n") and "def longest_word(text):" in words  # on disk, after the save
    tests_after = tests_file.read_text()
    assert tests_after.splitlines()[2] == tests_before.splitlines()[2]  # the unticked import hunk
    assert "def test_longest_word_picks_the_longest" in tests_after  # the kept hunk
