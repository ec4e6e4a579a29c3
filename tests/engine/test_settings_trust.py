"""The user config layer, the class of each setting, and trust records (engine level)."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from autocode.settings import (
    DESTINATION_SETTINGS,
    PERSON_SETTINGS,
    SETTING_CLASSES,
    TrustChanged,
    TrustRequired,
    repository_trust,
    require_trust,
    resolve_settings,
    revoke_trust,
    sandbox_relaxations,
    trust_repository,
    user_config_path,
)
from autocode.tasks import TaskOptions, TaskRun
from support import make_repo, write_files
from support.tasks import autocode, cli_env, run_dirs


@pytest.fixture(autouse=True)
def _own_folders(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Each test has its own user config and trust records."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "person-config"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "person-state"))
    yield


def _user_config(text: str) -> Path:
    path = user_config_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_the_classes_are_declared_once_on_the_fields() -> None:
    assert set(DESTINATION_SETTINGS) == {
        "provider", "base_url", "api_key_env", "routes", "database_url", "memory_path",
        "embedding_base_url", "embedding_api_key_env",
    }
    assert set(PERSON_SETTINGS) == {
        "sandbox", "sandbox_network", "sandbox_env", "engine", "engine_base_url", "engine_api_key_env",
    }
    assert SETTING_CLASSES["test_command"] == SETTING_CLASSES["test_timeout"] == "team"


def test_the_user_config_lives_under_xdg_config_home(tmp_path: Path) -> None:
    assert user_config_path() == tmp_path / "person-config" / "autocode" / "config.toml"


def test_team_settings_keep_the_spec_order_and_the_user_config_only_fills_in(tmp_path: Path) -> None:
    config = _user_config('test_command = "make mine"\ntest_timeout = 7\nmax_turns = 3\n')
    repo = make_repo(tmp_path / "repo", {".autocode/config.toml": "test_timeout = 30\n", "pytest.ini": "[pytest]\n"})
    snapshot = resolve_settings(repo)
    # The repository's config.toml beats the person's file for a team setting ...
    assert (snapshot["test_timeout"].origin, snapshot["test_timeout"].value) == ("config", 30)
    assert [(s.origin, s.value) for s in snapshot["test_timeout"].shadowed] == [("user", 7), ("default", 600)]
    # ... the person's file fills in what the repository leaves unset ...
    assert (snapshot["max_turns"].origin, snapshot["max_turns"].source) == ("user", str(config))
    # ... and never gives test_command: detection still wins, as the spec orders.
    assert snapshot["test_command"].origin == "detected"
    [ignored] = [i for i in snapshot.ignored if i.name == "test_command"]
    assert ignored.origin == "user" and "it is the repository's" in ignored.reason


def test_destination_settings_the_person_order_flag_user_then_trusted_files(tmp_path: Path) -> None:
    _user_config('base_url = "http://127.0.0.1:1111/v1"\n')
    repo = make_repo(tmp_path / "repo", {
        ".autocode/config.toml": 'base_url = "http://127.0.0.1:2222/v1"\napi_key_env = "GITHUB_TOKEN"\n',
        "pyproject.toml": '[tool.autocode]\nprovider = "openai"\n',
    })
    untrusted = resolve_settings(repo)
    assert untrusted["base_url"].origin == "user"
    assert (untrusted.value("api_key_env"), untrusted.value("provider")) == (None, "fixture")
    assert untrusted.trust is not None and untrusted.trust.status == "not-trusted"
    assert {(i.name, i.origin) for i in untrusted.ignored} == {
        ("base_url", "config"), ("api_key_env", "config"), ("provider", "pyproject"),
    }
    # The words use the endpoint that would be used: the person's own, which outranks the repository's.
    assert untrusted.trust.says == (
        "send task briefs, answers and code to the openai provider at http://127.0.0.1:1111/v1",
        "send the variable GITHUB_TOKEN to http://127.0.0.1:1111/v1",
    )
    trust_repository(repo)
    trusted = resolve_settings(repo)
    assert trusted["base_url"].origin == "user"  # the user config still outranks a trusted file
    assert [s.origin for s in trusted["base_url"].shadowed] == ["config"]
    assert (trusted["api_key_env"].origin, trusted["provider"].origin) == ("config", "pyproject")
    flagged = resolve_settings(repo, flags={"base_url": "http://127.0.0.1:3333/v1"})
    assert flagged["base_url"].origin == "flag"


def test_a_changed_value_needs_trust_again_and_revoking_forgets(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {".autocode/config.toml": 'api_key_env = "A_KEY"\n'})
    first = trust_repository(repo)
    assert first.status == "trusted" and resolve_settings(repo).value("api_key_env") == "A_KEY"
    write_files(repo, {".autocode/config.toml": 'api_key_env = "B_KEY"\n'})
    changed = repository_trust(repo)
    assert changed.status == "changed" and changed.digest != first.digest
    assert resolve_settings(repo).value("api_key_env") is None
    # A yes given to what was shown before does not cover the new value.
    with pytest.raises(TrustChanged, match="changed since they were shown"):
        trust_repository(repo, digest=first.digest)
    assert repository_trust(repo).status == "changed"
    trust_repository(repo, digest=changed.digest)
    assert resolve_settings(repo).value("api_key_env") == "B_KEY"
    assert revoke_trust(repo) is True and revoke_trust(repo) is False
    assert repository_trust(repo).status == "not-trusted"


def test_trust_is_per_workspace_and_outside_it(tmp_path: Path) -> None:
    files = {".autocode/config.toml": 'api_key_env = "A_KEY"\n'}
    one, two = make_repo(tmp_path / "one", files), make_repo(tmp_path / "two", files)
    before = sorted(p.relative_to(one).as_posix() for p in one.rglob("*") if ".git" not in p.parts)
    trust_repository(one)
    assert repository_trust(one).trusted and not repository_trust(two).trusted
    after = sorted(p.relative_to(one).as_posix() for p in one.rglob("*") if ".git" not in p.parts)
    assert before == after  # nothing written in the repository
    [record] = (tmp_path / "person-state" / "autocode" / "trust").iterdir()
    assert record.stat().st_mode & 0o077 == 0
    assert json.loads(record.read_text())["workspace"] == str(one.resolve())


def test_routes_to_the_offline_provider_are_team_settings(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {
        ".autocode/config.toml": 'provider = "fixture"\n[routes]\nplanner = "fixture:m1"\nreviewer = "openai:gpt"\n',
    })
    snapshot = resolve_settings(repo)
    assert snapshot.value("routes") == {"planner": "fixture:m1"}
    assert snapshot.trust is not None
    assert [(a.name, a.value) for a in snapshot.trust.asks] == [("routes", {"reviewer": "openai:gpt"})]
    assert snapshot["provider"].origin == "config"  # the offline provider sends nothing: no trust needed
    trust_repository(repo)
    assert resolve_settings(repo).value("routes") == {"planner": "fixture:m1", "reviewer": "openai:gpt"}


def test_sandbox_relaxations_come_only_from_the_person(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {
        "pyproject.toml": '[tool.autocode]\nsandbox = "off"\nsandbox_env = ["AWS_SECRET_ACCESS_KEY"]\n',
    })
    trust_repository(repo)
    relax = sandbox_relaxations(resolve_settings(repo))
    assert (relax.enabled, relax.network, relax.env, relax.relaxed) == (True, "deny", (), False)
    _user_config('sandbox_network = ["pypi.org", "files.pythonhosted.org"]\n')
    relax = sandbox_relaxations(resolve_settings(repo))
    assert relax.network == ("pypi.org", "files.pythonhosted.org") and relax.relaxed
    assert relax.origins["sandbox_network"].startswith("user")
    flagged = sandbox_relaxations(resolve_settings(repo, flags={"sandbox": "off"}))
    assert not flagged.enabled and flagged.origins["sandbox"] == "flag (--sandbox)"


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ('sandbox = "maybe"\n', "one of 'on' or 'off'"),
        ('sandbox_env = ["NOT A NAME"]\n', "sandbox_env"),
        ("colour = 1\n", None),
    ],
)
def test_a_bad_user_config_is_named(tmp_path: Path, text: str, words: str | None) -> None:
    config = _user_config(text)
    repo = make_repo(tmp_path / "repo")
    if words is None:
        assert any("unknown setting 'colour'" in w for w in resolve_settings(repo).warnings)
        return
    proc = autocode("doctor", "--workspace", str(repo), env=cli_env())
    assert proc.returncode == 2 and str(config) in proc.stderr and words in proc.stderr


def test_task_start_refuses_before_writing_anything(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {".autocode/config.toml": 'provider = "openai"\nbase_url = "http://127.0.0.1:9/v1"\n'})
    with pytest.raises(TrustRequired) as info:
        TaskRun.start(repo, "Do it.", TaskOptions(test_command="python3 -c pass"))
    assert info.value.exit_code == 3 and info.value.data["command"] == f"autocode trust --workspace {repo.resolve()}"
    assert run_dirs(repo) == [] and not (repo / ".autocode" / "prep").exists()
    snapshot = resolve_settings(repo)
    with pytest.raises(TrustRequired, match=re.escape("the openai provider at http://127.0.0.1:9/v1")):
        require_trust(snapshot, "task start")


def test_trust_on_the_command_line_refuses_unattended_and_needs_yes_without_a_terminal(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {".autocode/config.toml": 'api_key_env = "A_KEY"\n'})
    env = cli_env()
    unattended = autocode("unattended", "--", "trust", "--workspace", str(repo), "--yes", env=env)
    assert unattended.returncode == 3 and "operator-only" in unattended.stderr
    shown = autocode("trust", "--workspace", str(repo), env=env)
    assert shown.returncode == 1 and "--yes" in shown.stderr and "send the variable A_KEY" in shown.stdout
    assert not repository_trust(repo).trusted
    assert autocode("trust", "--workspace", str(repo), "--yes", env=env).returncode == 0
    assert repository_trust(repo).trusted
    revoked = autocode("unattended", "--", "trust", "--workspace", str(repo), "--revoke", "--json", env=env)
    assert revoked.returncode == 0 and json.loads(revoked.stdout) == {"revoked": True}
    assert not repository_trust(repo).trusted
    assert os.environ["XDG_STATE_HOME"] == str(tmp_path / "person-state")


def _on_terminal(args: list[str], replies: list[tuple[str, str]], env: dict[str, str]) -> tuple[int, str]:
    """Run the CLI on a pseudo-terminal; after each expected prompt text, type its reply."""
    import pty
    import select
    import subprocess
    import sys
    import time

    master, slave = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "autocode", *args], stdin=slave, stdout=slave, stderr=slave,
                            env=env, close_fds=True)
    os.close(slave)
    seen = ""
    pending = list(replies)
    deadline = time.monotonic() + 120
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 1.0)
            if ready:
                try:
                    chunk = os.read(master, 4096).decode(errors="replace")
                except OSError:
                    break  # the child closed the terminal
                seen += chunk
                if pending and pending[0][0] in seen:
                    os.write(master, (pending.pop(0)[1] + "\n").encode())
            elif proc.poll() is not None:
                break
        return proc.wait(timeout=60), seen
    finally:
        if proc.poll() is None:
            proc.kill()
        os.close(master)


def test_task_start_on_a_terminal_asks_and_a_no_starts_nothing(tmp_path: Path) -> None:
    store = tmp_path / "team" / "mem.sqlite3"
    repo = make_repo(tmp_path / "repo", {".autocode/config.toml": f'memory_path = "{store.as_posix()}"\n'})
    args = ["task", "start", "--workspace", str(repo), "--brief", "Do it.", "--test-command", "python3 -c pass",
            "--scenario", "no-questions"]
    code, seen = _on_terminal(args, [("Trust exactly these values", "n")], cli_env())
    assert code == 3, seen
    assert f"write memories to {store}" in seen and "autocode trust --workspace" in seen
    assert run_dirs(repo) == [] and not repository_trust(repo).trusted and not store.exists()

    code, seen = _on_terminal(args, [("Trust exactly these values", "y"), ("Approve this plan?", "c")], cli_env())
    assert "trusted; `autocode trust --revoke" in seen and "Approve this plan?" in seen, seen
    assert repository_trust(repo).trusted and store.is_file()  # the recall used the trusted store
