"""`autocode verify`: the proof for a change AutoCode did not make, through the real CLI, on real
repositories: the work tree against HEAD, a commit range and a branch, in a fresh copy only."""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

from support import git, make_repo, write_files
from support.tasks import autocode

PYTEST = f"env PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 {sys.executable} -m pytest -q"
CALC = "def add(a, b):\n    return a - b\n"
FIXED = "def add(a, b):\n    return a + b\n"
TEST = "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
BASE = {"calc.py": CALC, "tests/__init__.py": "", "conftest.py": "", "pytest.ini": "[pytest]\ntestpaths = tests\n",
        ".gitignore": "__pycache__/\n.pytest_cache/\n"}


def _tree_hash(root: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.is_file() and not {".autocode", ".git"} & set(p.parts)):
        digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def _verify(repo: Path, *args: str) -> tuple[int, dict]:  # type: ignore[type-arg]
    proc = autocode("verify", "--workspace", str(repo), "--test-command", PYTEST, "--json", *args, timeout=300)
    return proc.returncode, json.loads(proc.stdout)


def test_the_work_tree_against_head_is_proved_in_a_copy_and_left_as_it_was(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "proj", BASE)
    write_files(repo, {"calc.py": FIXED, "tests/test_calc.py": TEST})  # uncommitted fix, untracked test
    before, status = _tree_hash(repo), git(repo, "status", "--porcelain")
    rc, data = _verify(repo)
    assert rc == 0 and data["status"] == "verified", data
    assert data["proofs"] == ["tests/test_calc.py::test_add"]
    assert sorted(data["files"]) == ["calc.py", "tests/test_calc.py"]
    # Only the generated .autocode/.gitignore is new to git (as after any task); runs and cache stay ignored.
    assert _tree_hash(repo) == before and sorted(git(repo, "status", "--porcelain").splitlines()) == sorted([*status.splitlines(), "?? .autocode/"])
    assert git(repo, "status", "--porcelain", "--untracked-files=all", "--", ".autocode") == "?? .autocode/.gitignore\n"
    assert (Path(data["evidence"]) / "proof.json").is_file()


def test_a_commit_range_and_a_branch_are_proved_from_git_objects(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "proj", BASE)
    base = git(repo, "rev-parse", "HEAD").strip()
    git(repo, "checkout", "-q", "-b", "fix")
    write_files(repo, {"calc.py": FIXED, "tests/test_calc.py": TEST})
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "fix add")
    git(repo, "checkout", "-q", "main")
    rc, data = _verify(repo, "--range", f"{base}..fix")
    assert rc == 0 and data["status"] == "verified", data
    rc, data = _verify(repo, "--branch", "fix")
    assert rc == 0 and data["proofs"] == ["tests/test_calc.py::test_add"], data
    assert (repo / "calc.py").read_text() == CALC  # main's work tree was never touched


def test_a_test_only_change_is_unproven_and_exits_1(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "proj", BASE)
    write_files(repo, {"tests/test_calc.py": TEST.replace("== 5", "== -1")})
    rc, data = _verify(repo)
    assert rc == 1 and data["status"] == "unproven", data
    assert "testOnlyChange" in {c["kind"] for c in data["concerns"]}


def test_no_change_and_bad_ranges_are_clear_errors(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "proj", BASE)
    proc = autocode("verify", "--workspace", str(repo), "--test-command", PYTEST)
    assert proc.returncode == 2 and "no change to verify" in proc.stderr
    proc = autocode("verify", "--workspace", str(repo), "--range", "nope..HEAD", "--test-command", PYTEST)
    assert proc.returncode == 2 and "'nope' is not a commit" in proc.stderr
    proc = autocode("verify", "--workspace", str(repo), "--range", "HEAD", "--test-command", PYTEST)
    assert proc.returncode == 2 and "A..B" in proc.stderr
    assert not list((repo / ".autocode" / "runs").glob("verify-*")) if (repo / ".autocode" / "runs").exists() else True
