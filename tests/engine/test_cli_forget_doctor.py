"""`autocode forget` and `autocode doctor` through the real CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from autocode.doctor import CORE_SECTIONS, build_report
from autocode.record import Convention, ObservedFacts, forget_record, merge_record, workspace_root
from autocode.workspace import WorkspaceInvalid
from support import git, make_repo, write_files


def autocode(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "autocode", *args],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
    )


def _project(tmp_path: Path) -> Path:
    repo = make_repo(
        tmp_path / "repo",
        {".autocode/config.toml": 'test_command = "make check"\n', "pytest.ini": "[pytest]\n"},
    )
    result = merge_record(repo, ObservedFacts("pytest", "python3 -m pytest"), [Convention("Q?", "A")])
    assert result.written
    write_files(repo, {".autocode/runs/t1/evidence.json": "{}", ".autocode/runs/t1/approvals.json": "[]"})
    return repo


def _kept(repo: Path) -> list[str]:
    return sorted(p.relative_to(repo).as_posix() for p in (repo / ".autocode").rglob("*") if p.is_file())


def test_forget_removes_only_the_record_and_is_idempotent(tmp_path: Path) -> None:
    repo = _project(tmp_path)
    before = _kept(repo)
    first = autocode("forget", "--workspace", str(repo), "--json")
    assert first.returncode == 0, first.stderr
    assert json.loads(first.stdout) == {"removed": True, "path": str(repo / ".autocode/project.json")}
    assert _kept(repo) == [p for p in before if p != ".autocode/project.json"]
    assert ".autocode/config.toml" in _kept(repo) and ".autocode/runs/t1/approvals.json" in _kept(repo)
    second = autocode("forget", "--workspace", str(repo), "--json")
    assert second.returncode == 0
    assert json.loads(second.stdout)["removed"] is False
    text = autocode("forget", "--workspace", str(repo))
    assert text.returncode == 0 and "nothing to remove" in text.stdout


def test_forget_from_a_prep_copy_removes_the_workspace_record(tmp_path: Path) -> None:
    repo = _project(tmp_path)
    copy = repo / ".autocode" / "prep" / "20260101-abc" / "source"
    write_files(copy, {".autocode/project.json": "{}", "README.md": "copy\n"})
    assert workspace_root(copy / "sub" / "..") == repo
    result = autocode("forget", "--workspace", str(copy), "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == {"removed": True, "path": str(repo / ".autocode/project.json")}
    assert not (repo / ".autocode/project.json").exists()
    assert (copy / ".autocode/project.json").exists()  # the copy is not the project


def test_forget_from_a_linked_worktree_removes_the_main_record(tmp_path: Path) -> None:
    repo = _project(tmp_path)
    worktree = tmp_path / "task-worktree"
    git(repo, "worktree", "add", "-q", "--detach", str(worktree))
    assert workspace_root(worktree) == repo
    result = forget_record(worktree)
    assert (result.removed, result.path) == (True, repo / ".autocode/project.json")
    assert forget_record(worktree).removed is False
    assert (repo / ".autocode/config.toml").exists()


@pytest.mark.parametrize("how", ["wrapper", "env", "wrapper-json"])
def test_forget_is_refused_unattended(tmp_path: Path, how: str) -> None:
    repo = _project(tmp_path)
    if how == "env":
        proc = autocode("forget", "--workspace", str(repo), env={"AUTOCODE_UNATTENDED": "1"})
    elif how == "wrapper":
        proc = autocode("unattended", "--", "forget", "--workspace", str(repo))
    else:
        proc = autocode("unattended", "--", "forget", "--workspace", str(repo), "--json")
        assert json.loads(proc.stdout)["error"]["kind"] == "refused"
    assert proc.returncode == 3
    assert "operator-only" in proc.stderr
    assert (repo / ".autocode/project.json").exists()


def test_unattended_wrapper_runs_other_commands(tmp_path: Path) -> None:
    repo = _project(tmp_path)
    proc = autocode("unattended", "--", "doctor", "--workspace", str(repo), "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["record"]["status"] == "valid"
    empty = autocode("unattended")
    assert empty.returncode == 2 and "name the command" in empty.stderr


@pytest.mark.parametrize("command", ["doctor", "forget"])
def test_missing_workspace_or_a_file_exits_2(tmp_path: Path, command: str) -> None:
    a_file = tmp_path / "file.txt"
    a_file.write_text("x")
    for path, words in ((tmp_path / "nope", "does not exist"), (a_file, "not a directory")):
        proc = autocode(command, "--workspace", str(path))
        assert proc.returncode == 2
        assert words in proc.stderr
    assert a_file.read_text() == "x"
    assert not (tmp_path / "nope").exists()


def test_doctor_json_shape(tmp_path: Path) -> None:
    repo = _project(tmp_path)
    proc = autocode("doctor", "--workspace", str(repo), "--json", "--test-command", "tox -e py")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert list(report)[:1] == ["workspace"]
    for key in ("settings", "record", "conventions", "gitignore", "git"):
        assert key in report
    item = report["settings"]["test_command"]
    assert set(item) == {"value", "origin", "source", "shadowed"}
    assert (item["value"], item["origin"], item["source"]) == ("tox -e py", "flag", "--test-command")
    assert [s["origin"] for s in item["shadowed"]] == ["config", "learned", "detected"]
    assert item["shadowed"][-1] == {"value": "python3 -m pytest", "origin": "detected", "source": "pytest.ini"}
    for setting in report["settings"].values():
        assert set(setting) == {"value", "origin", "source", "shadowed"}
        assert setting["origin"] in ("flag", "user", "config", "pyproject", "learned", "detected", "default")
        assert all(set(s) == {"value", "origin", "source"} for s in setting["shadowed"])
    # tests/conftest.py writes a user config (~/.config/autocode/config.toml) naming sandbox_env.
    assert report["settings"]["sandbox_env"]["origin"] == "user"
    # The record holds a learned test command written by hand: no task of this machine learned it.
    assert set(report["record"]) == {"status", "path", "problems", "data", "test_command_origin"}
    assert report["record"]["test_command_origin"] is None
    assert report["record"]["status"] == "valid" and report["record"]["problems"] == []
    assert report["record"]["data"]["conventions"] == [{"question": "Q?", "answer": "A"}]
    assert report["conventions"] == [{"question": "Q?", "answer": "A"}]
    assert report["git"]["floor"] == "2.39.4" and report["git"]["ok"] is True
    assert report["gitignore"]["state"] == "current"


@pytest.mark.parametrize(
    ("content", "status"),
    [(b"{oops", "invalid"), (b'{"version": 3}', "unsupported"), (None, "missing"), ("dir", "unavailable")],
)
def test_doctor_exits_0_whatever_the_record_state(tmp_path: Path, content: bytes | str | None, status: str) -> None:
    repo = make_repo(tmp_path / "repo")
    path = repo / ".autocode" / "project.json"
    path.parent.mkdir()
    if content == "dir":
        path.mkdir()
    elif isinstance(content, bytes):
        path.write_bytes(content)
    proc = autocode("doctor", "--workspace", str(repo), "--json")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["record"]["status"] == status
    assert report["record"]["data"] is None and report["conventions"] == []
    text = autocode("doctor", "--workspace", str(repo))
    assert text.returncode == 0 and f"Learned record: {status}" in text.stdout


def test_doctor_text_lists_conventions_origins_and_omitted_fields(tmp_path: Path) -> None:
    repo = _project(tmp_path)
    merge_record(repo, ObservedFacts(test_command="pytest --rootdir /home/alice/project"), [])
    proc = autocode("doctor", "--workspace", str(repo))
    assert proc.returncode == 0
    out = proc.stdout
    assert "Q: Q?" in out and "A: A" in out
    assert "make check" in out and "config" in out and ".autocode/config.toml" in out
    assert "shadows" in out and "(detected, pytest.ini)" in out  # the deciding file is shown
    assert "test_command: machine-specific path" in out
    assert "/home/alice" not in out
    report = build_report(repo)
    assert report["omitted"]["fields"] == ["test_command: machine-specific path"]


def test_doctor_package_flag(tmp_path: Path) -> None:
    repo = _project(tmp_path)
    write_files(repo, {"svc/go.mod": "module x\n"})
    report = json.loads(autocode("doctor", "--workspace", str(repo), "--package", "svc", "--json").stdout)
    assert report["package"] == str(repo / "svc")
    assert report["settings"]["framework"]["value"] == "go"
    assert report["settings"]["framework"]["source"] == "svc/go.mod"  # the deciding file, inside the package
    assert all(s["origin"] != "learned" for s in report["settings"]["test_command"]["shadowed"])
    assert report["settings"]["test_command"]["origin"] == "config"
    bad = autocode("doctor", "--workspace", str(repo), "--package", "nope")
    assert bad.returncode == 2 and "package nope" in bad.stderr


def test_doctor_sections_are_a_registry(tmp_path: Path) -> None:
    from autocode import doctor

    names = [s.name for s in CORE_SECTIONS]
    assert names[:1] == ["settings"] and "git" in names
    doctor.SECTION_PROVIDERS.append("autocode.no_such_part:section")
    try:
        report = build_report(tmp_path)
    finally:
        doctor.SECTION_PROVIDERS.pop()
    assert "cannot load this section" in report["no_such_part"]["error"]
    with pytest.raises(WorkspaceInvalid):
        build_report(tmp_path / "absent")


def test_forget_refuses_a_directory_in_place_of_the_record(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    (repo / ".autocode" / "project.json").mkdir(parents=True)
    (repo / ".autocode" / "project.json" / "keep.txt").write_text("mine")
    proc = autocode("forget", "--workspace", str(repo))
    assert proc.returncode == 2
    assert "is a directory" in proc.stderr and "remove or rename it yourself" in proc.stderr
    assert (repo / ".autocode" / "project.json" / "keep.txt").read_text() == "mine"


def test_merge_reports_an_autocode_file_instead_of_folder_and_touches_nothing(tmp_path: Path) -> None:
    (tmp_path / ".autocode").write_text("not a folder")
    result = merge_record(tmp_path, ObservedFacts("pytest"), [Convention("Q?", "A")])
    assert not result.written and result.errors
    assert (tmp_path / ".autocode").read_text() == "not a folder"


def _tree(root: Path) -> dict[str, tuple[int, bytes]]:
    """Every file and folder under `root` (the git folder too) with its change time and content."""
    tree: dict[str, tuple[int, bytes]] = {}
    for path in sorted(root.rglob("*")):
        info = path.lstat()
        tree[path.relative_to(root).as_posix()] = (info.st_mtime_ns, path.read_bytes() if path.is_file() else b"")
    return tree


@pytest.mark.parametrize(
    "config", ["test_timeout = 5\n", 'test_timeout = "soon"\n', "test_timeout = \n", "colour = 'red'\n"]
)
def test_doctor_writes_nothing_in_the_workspace(tmp_path: Path, config: str) -> None:
    repo = make_repo(tmp_path / "repo", {".autocode/config.toml": config, "pytest.ini": "[pytest]\n"})
    before = _tree(repo)
    for extra in ([], ["--json"], ["--package", "."]):
        proc = autocode("doctor", "--workspace", str(repo), *extra)
        assert proc.returncode in (0, 2), proc.stderr
    assert _tree(repo) == before
