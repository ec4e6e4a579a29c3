"""gitsafe: hardened calls, the version floor, and -z inventory helpers on odd names."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from autocode import gitsafe
from autocode.errors import SetupError
from autocode.prep import make_prep_copy
from support import git, make_repo, write_files

ODD = ["-rf", "new\nline", "tab\there", "spa ce", os.fsdecode(b"caf\xe9"), "ünï.txt", '"quoted"']


@pytest.fixture
def fake_git(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A `git` first on PATH that reports a given version (the version gate reads only that)."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    gitsafe.check_version.cache_clear()
    yield bindir / "git"
    gitsafe.check_version.cache_clear()


@pytest.mark.parametrize(
    ("reported", "ok"),
    [("git version 2.39.3", False), ("git version 2.30.2", False), ("git version 2.39.4", True),
     ("git version 2.43.0.windows.1", True), ("garbage", False)],
)
def test_version_floor(fake_git: Path, reported: str, ok: bool) -> None:
    fake_git.write_text(f"#!/bin/sh\necho '{reported}'\n")
    fake_git.chmod(0o755)
    check = gitsafe.check_version()
    assert check.ok is ok
    if not ok:
        with pytest.raises(SetupError) as info:
            gitsafe.require_supported_git()
        assert info.value.exit_code == 2
        if "2." in reported:
            assert "upgrade git to 2.39.4 or newer" in info.value.message


def test_prep_refuses_old_git(fake_git: Path, tmp_path: Path) -> None:
    fake_git.write_text("#!/bin/sh\necho 'git version 2.39.3'\n")
    fake_git.chmod(0o755)
    ws = tmp_path / "ws"
    ws.mkdir()
    with pytest.raises(SetupError) as info:
        make_prep_copy(ws)
    assert "security floor 2.39.4" in info.value.message
    assert not (ws / ".autocode").exists()


def test_repository_config_cannot_switch_hardening_off(tmp_path: Path) -> None:
    ws = make_repo(tmp_path / "ws", {"a": "a\n"})
    marker = tmp_path / "fsmonitor-ran"
    script = tmp_path / "fsmonitor.sh"
    script.write_text(f"#!/bin/sh\ntouch {marker}\n")
    script.chmod(0o755)
    git(ws, "config", "core.fsmonitor", str(script))
    git(ws, "config", "core.hooksPath", str(tmp_path))
    assert gitsafe.output(["config", "core.hooksPath"], ws).strip() == "/dev/null"
    assert gitsafe.output(["config", "core.fsmonitor"], ws).strip() == "false"
    gitsafe.tracked_files(ws)
    gitsafe.untracked_files(ws)
    gitsafe.ignored_paths(ws)
    assert not marker.exists()


def test_redirecting_environment_is_dropped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ws = make_repo(tmp_path / "ws", {"mine.txt": "m\n"})
    other = make_repo(tmp_path / "other", {"theirs.txt": "t\n"})
    monkeypatch.setenv("GIT_DIR", str(other / ".git"))
    monkeypatch.setenv("GIT_WORK_TREE", str(other))
    assert [p for _, p in gitsafe.tracked_files(ws)] == ["mine.txt"]


def test_odd_names_round_trip(tmp_path: Path) -> None:
    ws = make_repo(tmp_path / "ws", {f"t/{n}": "x\n" for n in ODD})
    write_files(ws, {f"u/{n}": "x\n" for n in ODD})
    write_files(ws, {".gitignore": "ign-*\n", **{f"ign-{n}": "x\n" for n in ODD}})
    tracked = gitsafe.tracked_files(ws)
    assert sorted(p for _, p in tracked) == sorted(f"t/{n}" for n in ODD)
    assert {m for m, _ in tracked} == {"100644"}
    assert sorted(gitsafe.untracked_files(ws)) == sorted([".gitignore", *(f"u/{n}" for n in ODD)])
    assert sorted(gitsafe.ignored_paths(ws)) == sorted(f"ign-{n}" for n in ODD)
    for name in ODD:
        assert os.path.exists(ws / f"t/{name}")
    rules = gitsafe.ignore_rules(ws, [f"ign-{n}" for n in ODD] + ["t/-rf"])
    assert set(rules) == {f"ign-{n}" for n in ODD}
    assert all(rule == ".gitignore:1: ign-*" for rule in rules.values())


def test_nested_repositories_and_gitlinks(tmp_path: Path) -> None:
    sub = make_repo(tmp_path / "subsrc", {"s.py": "s\n"})
    ws = make_repo(tmp_path / "ws", {"a.py": "a\n"})
    git(ws, "submodule", "add", "-q", str(sub), "libs/sub")
    git(ws, "commit", "-q", "-m", "sub")
    make_repo(ws / "nested", {"n.py": "n\n"})
    assert ("160000", "libs/sub") in gitsafe.tracked_files(ws)
    assert "nested/" in gitsafe.untracked_files(ws)
    assert gitsafe.untracked_files(ws, exclude=["/nested/"]) == []


def test_doctor_shows_the_git_floor(fake_git: Path, tmp_path: Path) -> None:
    import json
    import subprocess
    import sys

    ws = make_repo(tmp_path / "ws", {"a.py": "a\n"})
    real = subprocess.run(
        [sys.executable, "-m", "autocode", "doctor", "--workspace", str(ws)], capture_output=True, text=True, timeout=60
    )
    assert "git: git " in real.stdout and "meets the security floor 2.39.4" in real.stdout, real.stdout
    fake_git.write_text("#!/bin/sh\necho 'git version 2.39.3'\n")
    fake_git.chmod(0o755)
    old = subprocess.run(
        [sys.executable, "-m", "autocode", "doctor", "--workspace", str(ws), "--json"],
        capture_output=True, text=True, timeout=60,
    )
    report = json.loads(old.stdout)
    assert report["git"] == {
        "version": "2.39.3",
        "floor": "2.39.4",
        "ok": False,
        "message": "git 2.39.3 is older than the security floor 2.39.4; upgrade git to 2.39.4 or newer",
    }
    text = subprocess.run(
        [sys.executable, "-m", "autocode", "doctor", "--workspace", str(ws)], capture_output=True, text=True, timeout=60
    )
    assert "git: PROBLEM: git 2.39.3 is older than the security floor 2.39.4; upgrade git" in text.stdout


@pytest.mark.parametrize("name", ["plain", "new\nline", "-dash"])
def test_toplevel_and_head(tmp_path: Path, name: str) -> None:
    ws = make_repo(tmp_path / name, {"a.py": "a\n"})
    assert gitsafe.toplevel_and_head(ws / ".git" / "..") == (ws, git(ws, "rev-parse", "HEAD").strip())
    (ws / "sub").mkdir()
    assert gitsafe.toplevel_and_head(ws / "sub")[0] == ws
    unborn = make_repo(tmp_path / f"unborn-{name}", commit=False)
    assert gitsafe.toplevel_and_head(unborn) == (unborn, None)
    plain = tmp_path / f"plain-{name}"
    plain.mkdir()
    assert gitsafe.toplevel_and_head(plain) == (None, None)
    assert make_prep_copy(ws).head == git(ws, "rev-parse", "HEAD").strip()
