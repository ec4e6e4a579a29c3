"""`autocode verify`: the proof for a change AutoCode did not make, through the real CLI, on real
repositories: the work tree against HEAD, a commit range and a branch, in a fresh copy only."""

from __future__ import annotations

import hashlib
import json
import shutil
import sys
from pathlib import Path

import pytest

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


def test_the_base_run_is_reused_by_a_different_change_on_the_same_base(tmp_path: Path) -> None:
    # The candidate run writes into its copy (pytest's .pytest_cache records the test ids and
    # the failures); the base key must not depend on it, or a cache hit needs the same change.
    repo = make_repo(tmp_path / "proj", {**BASE, "tests/test_old.py": "def test_old():\n    assert True\n"})
    write_files(repo, {"calc.py": FIXED, "tests/test_calc.py": TEST})
    _, first = _verify(repo)
    git(repo, "checkout", "-q", "--", "calc.py")  # the same base, another change: the test alone, failing
    _, second = _verify(repo)
    assert first["status"] == "verified" and second["status"] == "failed", (first, second)
    [base1] = [r for r in first["runs"] if r["role"] == "base"]
    [base2] = [r for r in second["runs"] if r["role"] == "base"]
    assert base1["cached"] is False and base2["cached"] is True, (base1, base2)
    assert base2["counts"] == {"passed": 1}


def test_a_change_of_tests_alone_is_unproven_with_one_reason_that_says_so(tmp_path: Path) -> None:
    # On Python-Markdown a new test expecting the old output read "the change touches only tests;
    # the change weakens the tests: every file ... is a test": said twice, and wrongly as a weakening.
    repo = make_repo(tmp_path / "proj", {**BASE, "tests/test_old.py": "def test_old():\n    assert True\n"})
    write_files(repo, {"tests/test_calc.py": "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == -1\n"})
    rc, data = _verify(repo)
    assert rc == 1 and data["status"] == "unproven", data
    assert data["reasons"] == ["the change touches only tests: no source changed, so passing tests prove nothing about the code"]
    assert [c["kind"] for c in data["concerns"]] == ["testOnlyChange"]


GO_BASE = {"go.mod": "module example.com/calc\n\ngo 1.19\n", "calc.go": "package calc\n\nfunc Add(a, b int) int { return a + b }\n",
           "calc_test.go": 'package calc\n\nimport "testing"\n\nfunc TestAdd(t *testing.T) {\n\tif Add(2, 3) != 5 {\n\t\tt.Fatal("add")\n\t}\n}\n'}


def test_a_go_change_whose_test_does_not_build_on_the_base_is_proved_by_the_name_it_adds(tmp_path: Path) -> None:
    # google/uuid's "Validate" commit: the new test calls a new function, so on the base the
    # package does not build ("undefined: Validate"); that is the proof, as Python's ImportError is.
    if shutil.which("go") is None:
        pytest.skip("go is not installed (scripts/proof-tools-setup.sh installs it)")
    repo = make_repo(tmp_path / "proj", {**GO_BASE, ".gitignore": ""})
    write_files(repo, {
        "calc.go": GO_BASE["calc.go"] + "\nfunc Sub(a, b int) int { return a - b }\n",
        "calc_test.go": GO_BASE["calc_test.go"] + '\nfunc TestSub(t *testing.T) {\n\tif Sub(5, 3) != 2 {\n\t\tt.Fatal("sub")\n\t}\n}\n',
    })
    proc = autocode("verify", "--workspace", str(repo), "--test-command", "go test ./...", "--json", timeout=300)
    data = json.loads(proc.stdout)
    assert proc.returncode == 0 and data["status"] == "verified", data
    assert data["proofs"] == ["example.com/calc::TestSub"]


def test_a_go_package_that_no_longer_builds_is_named_first_in_the_regression(tmp_path: Path) -> None:
    # On google/uuid a test edit that left an unused import made every test "missing": the
    # summary listed 20 of 189 tests and never said the package did not build.
    if shutil.which("go") is None:
        pytest.skip("go is not installed (scripts/proof-tools-setup.sh installs it)")
    repo = make_repo(tmp_path / "proj", {**GO_BASE, ".gitignore": ""})
    write_files(repo, {"calc.go": GO_BASE["calc.go"] + "\nfunc Sub(a, b int) int { return a - b }\n",
                       "calc_test.go": GO_BASE["calc_test.go"].replace('import "testing"', 'import (\n\t"errors"\n\t"testing"\n)')})
    proc = autocode("verify", "--workspace", str(repo), "--test-command", "go test ./...", "--json", timeout=300)
    data = json.loads(proc.stdout)
    assert proc.returncode == 1 and data["status"] == "regressed", data
    assert data["regressions"] == [{"id": "example.com/calc::TestAdd", "base": "passed", "now": "missing"}]
    assert data["summary"].startswith('regressed: example.com/calc does not load: ./calc_test.go:'), data["summary"]
    assert '"errors"' in data["summary"] and "imported" in data["summary"]  # go's own words vary by version


# A stand-in for mocha (not installed here): it writes mocha's JSON report, naming each test
# file by its absolute path as the process sees it, as mocha does.
FAKE_MOCHA = '''import json, os, sys
out = next(a.split("=", 1)[1] for a in sys.argv if a.startswith("output="))
def case(path, title):
    return {"title": title, "fullTitle": title, "file": os.path.join(os.getcwd(), path), "err": {}}
tests, failures = [case("test/old.js", "calc exists")], []
if os.path.exists("test/calc.js"):
    tests.append(case("test/calc.js", "calc adds"))
    if "a + b" not in open("calc.js").read():
        failures.append(dict(case("test/calc.js", "calc adds"), err={"message": "expected 5"}))
json.dump({"stats": {}, "tests": tests, "failures": failures, "pending": []}, open(out, "w"))
sys.exit(len(failures))
'''


def test_mocha_test_ids_are_project_relative_even_though_the_sandbox_shows_the_copy_at_the_workspace(tmp_path: Path) -> None:
    # On expressjs/express the proofs read "/home/me/express/test/res.send.js::res ..." (the path
    # mocha saw inside the sandbox) instead of "test/res.send.js::res ...".
    repo = make_repo(tmp_path / "proj", {"calc.js": "exports.add = (a, b) => a - b\n", "test/old.js": "// old\n",
                                         "bin/mocha": f"#!{sys.executable}\n{FAKE_MOCHA}", ".gitignore": ""})
    (repo / "bin" / "mocha").chmod(0o755)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "runnable mocha")
    write_files(repo, {"calc.js": "exports.add = (a, b) => a + b\n", "test/calc.js": "// adds\n"})
    proc = autocode("verify", "--workspace", str(repo), "--test-command", "bin/mocha test/", "--json", timeout=300)
    data = json.loads(proc.stdout)
    assert proc.returncode == 0 and data["status"] == "verified", data
    assert data["proofs"] == ["test/calc.js::calc adds"]
