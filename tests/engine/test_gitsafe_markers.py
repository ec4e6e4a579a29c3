"""The marker matrix: no program a repository (or the person's git configuration) names ever runs.

Every configuration key that names a program is set, in the workspace's own
`.git/config`, in a nested repository, in a submodule, in `$GIT_CONFIG_GLOBAL`
and in the system file (`$GIT_CONFIG_SYSTEM`), to a script that leaves a
marker file named after the key and the place. Every autocode command then
runs against that workspace: not one marker may appear. A control run of
plain git on the same setup shows the markers are live.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from autocode import gitsafe
from support import git, make_repo
from support.tasks import answers_file, autocode, build_sample, cli_env

HOOKS = (
    "pre-commit", "post-commit", "post-checkout", "post-merge", "pre-push", "post-rewrite", "post-index-change",
    "pre-auto-gc", "reference-transaction", "fsmonitor-watchman", "prepare-commit-msg", "commit-msg",
)


def _marker_script(folder: Path) -> Path:
    script = folder / "mark"
    script.write_text('#!/bin/sh\n: > "$MARKERS/$1"\nexit 0\n', encoding="utf-8")
    script.chmod(0o755)
    return script


def hostile_config(script: Path, place: str) -> str:
    """A configuration in which every program key runs `script <place>-<key>`."""

    def run(key: str) -> str:
        return f'"{script} {place}-{key}"'

    bang = f'"!{script} {place}-%s"'
    return "\n".join([
        '[filter "evil"]',
        f"\tclean = {run('filter.clean')}", f"\tsmudge = {run('filter.smudge')}",
        f"\tprocess = {run('filter.process')}", "\trequired = true",
        '[diff "evil"]', f"\tcommand = {run('diff.command')}", f"\ttextconv = {run('diff.textconv')}",
        '[merge "evil"]', f"\tdriver = {run('merge.driver')}",
        "[diff]", f"\texternal = {run('diff.external')}",
        "[core]",
        f"\tfsmonitor = {run('core.fsmonitor')}", f"\thooksPath = {script.parent / 'hooks'}",
        f"\tsshCommand = {run('core.sshCommand')}", f"\tpager = {run('core.pager')}",
        f"\teditor = {run('core.editor')}", f"\taskPass = {run('core.askPass')}",
        f"\tgitProxy = {run('core.gitProxy')}", f"\talternateRefsCommand = {run('core.alternateRefsCommand')}",
        "[sequence]", f"\teditor = {run('sequence.editor')}",
        "[gpg]", f"\tprogram = {run('gpg.program')}",
        '[gpg "openpgp"]', f"\tprogram = {run('gpg.openpgp.program')}",
        '[gpg "x509"]', f"\tprogram = {run('gpg.x509.program')}",
        '[gpg "ssh"]', f"\tprogram = {run('gpg.ssh.program')}", f"\tdefaultKeyCommand = {run('gpg.ssh.defaultKeyCommand')}",
        "[commit]", "\tgpgSign = true", "[tag]", "\tgpgSign = true", "[log]", "\tshowSignature = true",
        "[credential]", f"\thelper = {run('credential.helper')}",
        '[credential "https://example.invalid"]', f"\thelper = {run('credential.url.helper')}",
        "[uploadpack]", f"\tpackObjectsHook = {run('uploadpack.packObjectsHook')}",
        '[submodule "libs/sub"]', f"\tupdate = {bang % 'submodule.update'}",
        '[remote "evil"]', "\turl = https://example.invalid/evil.git",
        f"\tuploadpack = {run('remote.uploadpack')}", f"\treceivepack = {run('remote.receivepack')}",
        "[alias]", f"\tst = {bang % 'alias'}", f"\tstatus = {bang % 'alias.builtin'}",
        "[pager]", f"\tdiff = {run('pager.diff')}", f"\tlog = {run('pager.log')}", f"\tshow = {run('pager.show')}",
        '[trailer "evil"]', f"\tcommand = {run('trailer.command')}",
        "",
    ])


ATTRIBUTES = "* filter=evil diff=evil merge=evil\n"


def _hooks(folder: Path, script: Path, place: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name in HOOKS:
        hook = folder / name
        hook.write_text(f"#!/bin/sh\n{script} {place}-hook-{name}\n", encoding="utf-8")
        hook.chmod(0o755)


def _git_dir(repo: Path) -> Path:
    return Path(git(repo, "rev-parse", "--absolute-git-dir").strip())


def _arm(repo: Path, script: Path, place: str) -> None:
    """Append the hostile configuration and hooks to `repo`'s own config (after it is built)."""
    git_dir = _git_dir(repo)
    with (git_dir / "config").open("a", encoding="utf-8") as handle:
        handle.write(hostile_config(script, place))
    _hooks(git_dir / "hooks", script, place)
    (git_dir / "info").mkdir(exist_ok=True)
    (git_dir / "info" / "attributes").write_text(ATTRIBUTES, encoding="utf-8")


@pytest.fixture
def hostile(tmp_path: Path) -> tuple[Path, str, dict[str, str], Path]:
    """A sample workspace with a nested repository and a submodule, every place armed."""
    markers = tmp_path / "markers"
    markers.mkdir()
    tools = tmp_path / "tools"
    tools.mkdir()
    script = _marker_script(tools)
    _hooks(tools / "hooks", script, "hooksPath")

    repo, patch = build_sample("pytest", tmp_path / "shop")
    sub = make_repo(tmp_path / "subsrc", {"s.py": "S = 1\n", ".gitattributes": ATTRIBUTES})
    git(repo, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(sub), "libs/sub")
    (repo / ".gitattributes").write_text(ATTRIBUTES, encoding="utf-8")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "attributes and a submodule")
    nested = make_repo(repo / "nested", {"n.py": "N = 1\n", ".gitattributes": ATTRIBUTES})

    _arm(repo, script, "local")
    _arm(repo / "libs" / "sub", script, "submodule")
    _arm(nested, script, "nested")
    # Uncommitted work everywhere: every content step has something to look at.
    with (repo / "README.md").open("a", encoding="utf-8") as handle:
        handle.write("A local note.\n")
    (repo / "libs" / "sub" / "s.py").write_text("S = 2\n", encoding="utf-8")
    (nested / "n.py").write_text("N = 2\n", encoding="utf-8")

    identity = "[user]\n\tname = T\n\temail = t@example.invalid\n"
    global_file = tmp_path / "global.gitconfig"
    global_file.write_text(identity + hostile_config(script, "global"), encoding="utf-8")
    system_file = tmp_path / "system.gitconfig"
    system_file.write_text(hostile_config(script, "system"), encoding="utf-8")
    env = cli_env(MARKERS=str(markers), GIT_CONFIG_GLOBAL=str(global_file), GIT_CONFIG_SYSTEM=str(system_file),
                  GIT_PAGER="", PAGER="")
    env.pop("GIT_CONFIG_NOSYSTEM", None)
    return repo, patch, env, markers


def _markers(folder: Path) -> list[str]:
    return sorted(os.listdir(folder))


def test_plain_git_runs_the_configured_programs(hostile: tuple[Path, str, dict[str, str], Path]) -> None:
    """The control: the same setup makes plain git run them, so a clean run below means something."""
    repo, _patch, env, markers = hostile
    # Git runs a clean filter only for files whose stat data no longer matches the index (or is
    # too recent to trust); on a slow machine nothing is recent any more, so every file is made
    # newer than the index, as an edit would.
    later = time.time() + 5
    for dirpath, dirnames, filenames in os.walk(repo):
        dirnames[:] = [d for d in dirnames if d != ".git"]
        for name in filenames:
            os.utime(os.path.join(dirpath, name), (later, later), follow_symlinks=False)
    for args in (["status"], ["diff"], ["stash", "create"], ["log", "-p", "-1"]):
        subprocess.run(["git", *args], cwd=repo, env=env, capture_output=True, timeout=60, check=False)
    found = _markers(markers)
    for key in ("local-filter.", "local-core.fsmonitor"):
        assert any(m.startswith(key) for m in found), (key, found)
    subprocess.run(["git", "status"], cwd=repo / "nested", env=env, capture_output=True, timeout=60, check=False)
    assert any(m.startswith("nested-") for m in _markers(markers))


def test_no_autocode_command_runs_a_configured_program(
    hostile: tuple[Path, str, dict[str, str], Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo, patch, env, markers = hostile
    ws = str(repo)

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        proc = autocode(*args, env=env, timeout=240)
        assert _markers(markers) == [], (args, _markers(markers), proc.stdout[-2000:], proc.stderr[-2000:])
        return proc

    assert run("doctor", "--workspace", ws).returncode == 0
    assert run("prep", "--workspace", ws, "--json").returncode == 0
    answers = answers_file(tmp_path / "answers.json")
    before = {rel: (repo / rel).read_bytes() for rel in ("shop/pricing.py", "tests/test_pricing.py")}
    started = run("task", "start", "--workspace", ws, "--brief", f"Add total_with_tax. Patch: {patch}",
                  "--answers", str(answers), "--json")
    assert started.returncode == 0, started.stderr
    snap = json.loads(started.stdout)
    assert snap["state"] == "COMPLETED", snap
    # The change reached the workspace through the hardened calls.
    assert "total_with_tax" in (repo / "shop" / "pricing.py").read_text()

    # The step-by-step path too, ending with approve-completion.
    for rel, data in before.items():
        (repo / rel).write_bytes(data)
    started = run("task", "start", "--workspace", ws, "--brief", f"Again: {patch}", "--json")
    snap = json.loads(started.stdout)
    task_id = snap["id"]
    for _ in range(4):
        kind = snap["needs"]["kind"] if snap.get("needs") else None
        if kind == "answer_questions":
            question = snap["needs"]["questions"][0]["id"]
            snap = json.loads(run("task", "answer", "--workspace", ws, task_id, question, "Descriptive names.",
                                  "--json").stdout)
        elif kind == "approve_plan":
            snap = json.loads(run("task", "approve", "--workspace", ws, task_id, "--revision",
                                  str(snap["needs"]["planRevision"]), "--json").stdout)
        elif kind == "approve_completion":
            snap = json.loads(run("task", "approve-completion", "--workspace", ws, task_id, "--json").stdout)
        else:
            break
    assert snap["state"] == "COMPLETED", snap

    saved = run("memory", "save", "--workspace", ws, "--category", "testing",
                "Run the shop tests with python -m pytest from the repository root.")
    assert saved.returncode in (0, 1, 4), saved.stderr
    run("forget", "--workspace", ws)

    brief = tmp_path / "brief.txt"
    brief.write_text(f"Add total_with_tax. Patch: {patch}\n", encoding="utf-8")
    manifest = tmp_path / "manifest.json"
    manifest.write_text(json.dumps({"inputs": []}), encoding="utf-8")
    piloted = run("pilot-prep", "--workspace", ws, "--manifest", str(manifest), "--brief", str(brief),
                  "--report", str(tmp_path / "report.json"))
    assert piloted.returncode == 0, piloted.stderr
    # Calls made inside the nested repository and the submodule read their own keys.
    for name in ("MARKERS", "GIT_CONFIG_GLOBAL", "GIT_CONFIG_SYSTEM"):
        monkeypatch.setenv(name, env[name])
    monkeypatch.delenv("GIT_CONFIG_NOSYSTEM", raising=False)
    for place in (repo, repo / "nested", repo / "libs" / "sub"):
        gitsafe.run(["status", "--porcelain"], place)
        gitsafe.run(["diff"], place)
        gitsafe.run(["stash", "create"], place)
    assert _markers(markers) == []
