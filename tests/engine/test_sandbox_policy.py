"""What the person allowed, and what happens where no sandbox can be made: the policy from the
settings (never relaxed by a repository's file), the environment's allow-list, the refusal with
its remedy (nothing written), `sandbox = "off"`, and doctor's sandbox section."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from autocode import sandbox
from autocode.doctor import build_report, render_text
from autocode.prep import make_prep_copy
from autocode.sandbox import environment
from autocode.settings import resolve_settings
from autocode.tasks import Source, TaskOptions, TaskRun
from support.sandbox import KEY_VALUE, git, make_workspace, tree_hash

CLI = Source("cli", "tester")
needs_bwrap = pytest.mark.skipif(not sandbox.available(), reason="bubblewrap cannot make a sandbox here")


def _policy(workspace: Path, **flags: object) -> sandbox.Policy:
    return sandbox.policy_from_settings(resolve_settings(workspace, flags=flags or None))


def _user_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str) -> None:
    """The person's own user config (`$XDG_CONFIG_HOME/autocode/config.toml`), with `text`."""
    folder = tmp_path / "person-config"
    (folder / "autocode").mkdir(parents=True)
    (folder / "autocode" / "config.toml").write_text(text)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(folder))


def test_the_default_policy_is_strict_and_a_repository_cannot_relax_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _user_config(tmp_path, monkeypatch, "")
    workspace = make_workspace(tmp_path / "ws")
    assert _policy(workspace) == sandbox.Policy()
    (workspace / ".autocode").mkdir()
    (workspace / ".autocode" / "config.toml").write_text(
        'sandbox = "off"\nsandbox_network = "allow"\nsandbox_env = ["DEPLOY_KEY_PATH"]\n'
    )
    snapshot = resolve_settings(workspace)
    policy = sandbox.policy_from_settings(snapshot)
    assert (policy.enabled, policy.network, policy.env_names) == (True, False, ())
    # The settings say why the repository's values are not used (doctor shows them).
    assert {"sandbox", "sandbox_network", "sandbox_env"} <= {i.name for i in snapshot.ignored}


def test_the_person_relaxes_it_in_their_user_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _user_config(tmp_path, monkeypatch, 'sandbox = "off"\nsandbox_network = "allow"\nsandbox_env = ["MY_FLAG"]\n')
    policy = _policy(make_workspace(tmp_path / "ws"))
    assert (policy.enabled, policy.network, policy.env_names) == (False, True, ("MY_FLAG",))


class _Resolved:
    def __init__(self, value: object, origin: str) -> None:
        self.value, self.origin, self.source = value, origin, f"a {origin} file"


class _Snapshot:
    """Resolved settings as an older resolver gave them: repository layers included."""

    def __init__(self, **items: _Resolved) -> None:
        self.items = items

    def __getitem__(self, name: str) -> _Resolved:
        return self.items[name]

    def value(self, name: str) -> object:
        return self.items[name].value


def test_a_repository_value_that_reaches_the_policy_is_still_ignored() -> None:
    snapshot = _Snapshot(sandbox=_Resolved("off", "config"), sandbox_network=_Resolved("allow", "pyproject"),
                         sandbox_env=_Resolved(["X"], "config"))
    policy = sandbox.policy_from_settings(snapshot)
    assert (policy.enabled, policy.network, policy.env_names) == (True, False, ())
    assert len(policy.notes) == 3 and all("only a flag or your user config" in n for n in policy.notes)
    # A snapshot without the keys at all keeps the strict default.
    assert sandbox.policy_from_settings(_Snapshot()) == sandbox.Policy()


def test_the_person_turns_it_off_allows_the_network_and_lists_names(tmp_path: Path) -> None:
    workspace = make_workspace(tmp_path / "ws")
    policy = _policy(workspace, sandbox="off", sandbox_network="allow", sandbox_env=["MY_FLAG"])
    assert (policy.enabled, policy.network, policy.env_names) == (False, True, ("MY_FLAG",))


def test_a_host_list_for_the_network_is_refused_and_the_network_stays_denied(tmp_path: Path) -> None:
    policy = _policy(make_workspace(tmp_path / "ws"), sandbox_network=["pypi.org"])
    assert policy.network is False
    assert any("not supported yet" in note for note in policy.notes)


def test_the_environment_is_an_allow_list_without_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in {"OPENAI_API_KEY": KEY_VALUE, "MY_PROVIDER_KEY": KEY_VALUE, "AWS_PROFILE": "prod",
                        "PYTHONSTARTUP": "/tmp/x.py", "MY_FLAG": "1", "UNLISTED": "1", "LC_TIME": "C",
                        "DEPLOY_TOKEN": KEY_VALUE, "NODE_OPTIONS": "--require ./mine.js"}.items():
        monkeypatch.setenv(name, value)
    reporter = "--test-reporter=spec --test-reporter-destination=stdout"
    env, notes = environment.build(
        listed=["MY_FLAG", "OPENAI_API_KEY", "PYTHONSTARTUP", "AWS_PROFILE", "MY_PROVIDER_KEY", "NODE_OPTIONS"],
        refused_names=["MY_PROVIDER_KEY"],
        extra={"DEPLOY_TOKEN": KEY_VALUE, "REPORT": "r.json", "NODE_OPTIONS": reporter},
        home="/tmp/home", git_ceiling="/tmp",
    )
    assert env["MY_FLAG"] == "1" and env["LC_TIME"] == "C" and env["REPORT"] == "r.json"
    # The proof's own reporter words pass (npm test running node --test); the person's never do.
    assert env["NODE_OPTIONS"] == reporter
    for name in ("OPENAI_API_KEY", "MY_PROVIDER_KEY", "AWS_PROFILE", "PYTHONSTARTUP", "UNLISTED", "DEPLOY_TOKEN"):
        assert name not in env, name
    assert KEY_VALUE not in "".join(env.values())
    assert env["HOME"] == "/tmp/home" and env["GIT_CEILING_DIRECTORIES"] == "/tmp"
    assert len(notes) == 6 and any("OPENAI_API_KEY" in n for n in notes)
    assert any("sandbox_env names NODE_OPTIONS" in n for n in notes)


def test_where_no_sandbox_can_be_made_a_task_refuses_and_writes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    workspace = make_workspace(tmp_path / "ws")
    before = (tree_hash(workspace, skip=()), sorted(p.name for p in workspace.iterdir()))
    monkeypatch.setenv("AUTOCODE_BWRAP", str(tmp_path / "no-bwrap-here"))
    assert not sandbox.available()
    options = TaskOptions(provider="fixture", test_command=f"{sys.executable} -m unittest")
    with pytest.raises(sandbox.SandboxUnavailable) as raised:
        TaskRun.start(workspace, "fix it", options)
    assert raised.value.kind == "sandboxUnavailable"
    assert "bubblewrap" in raised.value.message and 'sandbox = "off"' in raised.value.message
    assert (tree_hash(workspace, skip=()), sorted(p.name for p in workspace.iterdir())) == before
    # Doctor says so on a line of its own.
    report = build_report(workspace)
    assert report["sandbox"]["state"] == "unavailable" and report["sandbox"]["kind"] == "none"
    assert "Sandbox: PROBLEM: none can be made here" in render_text(report)
    # The runner refuses too, for callers that reach it without a task.
    copy = make_prep_copy(workspace).copy
    with pytest.raises(sandbox.SandboxUnavailable):
        sandbox.run(["true"], copy=copy, workspace=workspace, cwd=copy, timeout=5, cancelled=lambda: False)


def test_with_the_sandbox_off_a_run_says_none_and_git_still_stops_at_the_copy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    workspace = make_workspace(tmp_path / "ws")
    monkeypatch.setenv("OPENAI_API_KEY", KEY_VALUE)
    copy = make_prep_copy(workspace).copy
    before = (tree_hash(workspace), tree_hash(workspace / ".git", skip=()))
    off = sandbox.Policy(enabled=False)
    script = "import os, subprocess\nprint(os.environ.get('OPENAI_API_KEY'))\nsubprocess.run(['git', 'tag', 'off-tag'])\n"
    outcome = sandbox.run([sys.executable, "-c", script], copy=copy, workspace=workspace, cwd=copy, timeout=30,
                          cancelled=lambda: False, policy=off)
    assert outcome.sandbox == "none" and outcome.exit_code == 0
    assert KEY_VALUE not in outcome.output and "not a git repository" in outcome.output
    assert "off-tag" not in git(workspace, "tag")
    assert (tree_hash(workspace), tree_hash(workspace / ".git", skip=())) == before
    assert sandbox.seen_at(copy, workspace, copy / "r.xml", policy=off) == copy / "r.xml"
    report = build_report(workspace, flags={"sandbox": "off"})
    assert report["sandbox"]["state"] == "off" and report["sandbox"]["kind"] == "none"


@needs_bwrap
def test_doctor_shows_the_sandbox_and_seen_at_translates_copy_paths(tmp_path: Path) -> None:
    workspace = make_workspace(tmp_path / "ws")
    report = build_report(workspace, flags={"sandbox_env": ["MY_FLAG", "OPENAI_API_KEY"]})
    data = report["sandbox"]
    assert data["kind"] == "bwrap" and data["state"] == "on" and data["network"] == "denied"
    assert data["engine_network"].startswith("only its endpoint")
    assert "PATH" in data["env_names"] and "MY_FLAG" in data["env_names"]
    assert data["env_refused"] == ["OPENAI_API_KEY"]
    text = render_text(report)
    assert "Sandbox: bwrap" in text and "network: denied" in text
    copy = make_prep_copy(workspace).copy
    assert sandbox.seen_at(copy, workspace, copy / "pkg" / "r.xml") == workspace / "pkg" / "r.xml"
    assert sandbox.seen_at(copy, workspace, tmp_path / "report") == tmp_path / "report"


@needs_bwrap
def test_a_writable_report_folder_and_the_callers_variables_reach_the_program(tmp_path: Path) -> None:
    workspace = make_workspace(tmp_path / "ws")
    copy = make_prep_copy(workspace).copy
    reports = tmp_path / "reports"
    reports.mkdir()
    script = "import os, pathlib\npathlib.Path(os.environ['REPORT_DIR'], 'r.txt').write_text('ok')\n"
    outcome = sandbox.run([sys.executable, "-c", script], copy=copy, workspace=workspace, cwd=copy, timeout=30,
                          cancelled=lambda: False, env={"REPORT_DIR": str(reports)}, writable=[reports])
    assert outcome.exit_code == 0, outcome.output
    assert (reports / "r.txt").read_text() == "ok"
    # A folder that was not named stays read-only.
    other = tmp_path / "other"
    other.mkdir()
    denied = sandbox.run([sys.executable, "-c", f"open({str(other / 'x')!r}, 'w')"], copy=copy,
                         workspace=workspace, cwd=copy, timeout=30, cancelled=lambda: False)
    assert denied.exit_code == 1 and not (other / "x").exists()


@needs_bwrap
def test_a_tasks_test_output_streams_to_the_evidence_and_the_progress(tmp_path: Path) -> None:
    from support.tasks import build_sample

    repo, patch = build_sample("unittest", tmp_path / "textkit")
    # A wrapper prints a line of its own before the tests (not a shell: the command is split into words).
    command = f"{sys.executable} -c \"import sys, subprocess; print('suite starting', flush=True); " \
              f"sys.exit(subprocess.call([sys.executable, '-m', 'unittest']))\""
    run = TaskRun.start(repo, f"Add longest_word via {patch}", TaskOptions(scenario="no-questions", test_command=command))
    said: list[tuple[str, str]] = []
    run = TaskRun.load(repo, run.id, progress=lambda phase, message: said.append((phase, message)))
    snap = run.approve_plan(1, CLI).wire()
    assert snap["needs"]["kind"] == "approve_completion", snap["error"]
    assert ("verifying", "suite starting") in said
    evidence = (run.run_dir / "evidence" / "test-output.txt").read_text()
    assert evidence.startswith("suite starting\n") and "OK" in evidence
    assert (run.run_dir / "evidence" / "test-output.txt").stat().st_mode & 0o077 == 0  # the owner's alone
    assert run.details()["tests"]["sandbox"] == "bwrap"
