"""The verdict through a real TaskRun: a real fix is `verified` naming the test it flipped; the
same task with its test rewritten to expect the bug, deleted, skipped, weakened, or with the
test command changed in the change is never `verified`, each with its concern; a fix that
breaks another test is `regressed`. Real git repositories, real pytest and unittest runs."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from autocode.tasks import Source, TaskOptions, TaskRun
from autocode.tasks.errors import ConfirmationRequired
from support import git, make_repo, write_files

CLI = Source("cli", "tester")
PY = sys.executable
# The suites here are tiny: without the plugins of this venv (pytest-lsp, hypothesis...) each
# run takes a tenth of the time.
PYTEST = f"env PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 {PY} -m pytest -q"

CALC = "def add(a, b):\n    return a - b\n\n\ndef sub(a, b):\n    return a - b\n"
FIXED = "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n"
TESTS = (
    "from calc import add, sub\n\n\n"
    "def test_sub():\n    assert sub(5, 3) == 2\n\n\n"
    "def test_add():\n    assert add(2, 3) == 5\n"
)
BASE = {
    "calc.py": CALC,
    "tests/__init__.py": "",
    "tests/test_calc.py": TESTS,
    "conftest.py": "",
    "pytest.ini": "[pytest]\ntestpaths = tests\n",
    ".gitignore": "__pycache__/\n.pytest_cache/\n",
}


def _repo(tmp_path: Path, after: dict[str, str | None], base: dict[str, str] | None = None) -> Path:
    """A repository at `base` with a committed patch (patches/change.patch) that makes `after`."""
    repo = make_repo(tmp_path / "proj", base or BASE)
    for rel, text in after.items():
        if text is None:
            (repo / rel).unlink()
        else:
            write_files(repo, {rel: text})
    git(repo, "add", "-A")
    patch = git(repo, "diff", "--cached", "--binary")
    git(repo, "reset", "-q", "--hard")
    write_files(repo, {"patches/change.patch": patch})
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "the change to try")
    return repo


def _verify(repo: Path, command: str = PYTEST) -> TaskRun:
    run = TaskRun.start(
        repo, "Fix add. Patch: patches/change.patch",
        TaskOptions(test_command=command, scenario="no-questions"),
    )
    snap = run.snapshot()
    assert snap.needs.kind == "approve_plan", snap
    run.approve_plan(snap.plan_revision, CLI)
    return run


def _proof(run: TaskRun) -> dict[str, Any]:
    snap = run.snapshot()
    if snap.needs.kind == "approve_completion":
        assert snap.needs.proof is not None
        return snap.needs.proof.model_dump()
    assert snap.result is not None and snap.result.proof is not None, snap
    return snap.result.proof.model_dump()


def _kinds(proof: dict[str, Any]) -> set[str]:
    return {c["kind"] for c in proof["concerns"]}


def test_a_real_fix_is_verified_naming_the_test_it_flipped(tmp_path: Path) -> None:
    repo = _repo(tmp_path, {"calc.py": FIXED})
    run = _verify(repo)
    proof = _proof(run)
    assert proof["status"] == "verified" and proof["verified"] is True, proof
    assert proof["proofs"] == ["tests/test_calc.py::test_add"]
    assert "tests/test_calc.py::test_add" in proof["summary"]
    snap = run.snapshot()
    assert snap.needs.kind == "approve_completion" and snap.needs.confirmation is None
    done = run.approve_completion(CLI)
    assert done.state == "COMPLETED" and done.result is not None and done.result.verified is True
    evidence = json.loads((run.run_dir / "evidence" / "tests.json").read_text())
    assert {"id": "tests/test_calc.py::test_add", "outcome": "failed"}.items() <= next(
        r for r in evidence["results"]["base"] if r["id"].endswith("test_add")
    ).items()


def test_a_new_test_that_fails_to_import_on_the_base_proves_the_name_the_change_adds(tmp_path: Path) -> None:
    after = {
        "calc.py": FIXED + "\n\ndef mul(a, b):\n    return a * b\n",
        "tests/test_mul.py": "from calc import mul\n\n\ndef test_mul():\n    assert mul(2, 3) == 6\n",
    }
    proof = _proof(_verify(_repo(tmp_path, after)))
    assert proof["status"] == "verified", proof
    assert "tests/test_mul.py::test_mul" in proof["proofs"]


def test_rewriting_the_failing_test_to_expect_the_bug_is_never_verified(tmp_path: Path) -> None:
    run = _verify(_repo(tmp_path, {"tests/test_calc.py": TESTS.replace("== 5", "== -1")}))
    proof = _proof(run)
    assert proof["status"] == "unproven" and proof["verified"] is False, proof
    assert "expectationChanged" in _kinds(proof) or "testOnlyChange" in _kinds(proof), proof
    snap = run.snapshot()
    assert snap.needs.kind == "approve_completion" and snap.needs.confirmation == "unproven"
    with pytest.raises(ConfirmationRequired) as refused:
        run.approve_completion(CLI)
    assert "unproven" in refused.value.message
    assert (repo_file := run.workspace / "tests" / "test_calc.py").read_text() == TESTS, repo_file
    done = run.approve_completion(CLI, confirm="unproven")
    assert done.state == "COMPLETED" and done.result is not None and done.result.verified is False
    assert done.learning is not None and done.learning.written is False


@pytest.mark.parametrize(
    ("name", "tests", "concern"),
    [
        ("deleted", TESTS.split("\n\n\ndef test_add")[0] + "\n", "testDeleted"),
        ("skipped", "import pytest\n" + TESTS.replace("def test_add", "@pytest.mark.skip\ndef test_add"), "skipAdded"),
        ("weakened", TESTS.replace("assert add(2, 3) == 5", "assert add(2, 3) is not None"), "assertionLoosened"),
    ],
)
def test_a_fix_whose_failing_test_was_weakened_is_never_verified(
    tmp_path: Path, name: str, tests: str, concern: str
) -> None:
    proof = _proof(_verify(_repo(tmp_path, {"tests/test_calc.py": tests})))
    assert proof["status"] == "unproven", (name, proof)
    kinds = _kinds(proof)
    assert concern in kinds or (concern == "assertionLoosened" and "assertionRemoved" in kinds), (name, proof)


def test_a_change_to_the_test_command_is_a_concern_and_caps_the_verdict(tmp_path: Path) -> None:
    after = {"calc.py": FIXED, ".autocode/config.toml": 'test_command = "true"\n'}
    proof = _proof(_verify(_repo(tmp_path, after)))
    assert proof["status"] == "unproven", proof
    assert "testConfigChanged" in _kinds(proof)
    assert proof["proofs"] == ["tests/test_calc.py::test_add"]


def test_a_fix_that_breaks_another_test_is_regressed_naming_it(tmp_path: Path) -> None:
    broken = FIXED.replace("return a - b", "return a + b")
    run = _verify(_repo(tmp_path, {"calc.py": broken}))
    snap = run.snapshot()
    assert snap.state == "FAILED" and snap.error is not None and snap.error.kind == "testsRegressed", snap
    assert "tests/test_calc.py::test_sub" in snap.error.message
    proof = _proof(run)
    assert proof["status"] == "regressed"
    assert proof["regressions"] == [{"id": "tests/test_calc.py::test_sub", "base": "passed", "now": "failed"}]


def test_a_command_without_per_test_output_is_at_best_unproven(tmp_path: Path) -> None:
    repo = _repo(tmp_path, {"calc.py": FIXED})
    write_files(repo, {"check.sh": f"#!/bin/sh\nexec {PYTEST}\n"})
    (repo / "check.sh").chmod(0o755)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "script")
    proof = _proof(_verify(repo, "./check.sh"))
    assert proof["status"] == "unproven", proof
    assert "per-test" in " ".join(proof["reasons"])


def test_the_baseline_is_cached_per_base_tree_and_command(tmp_path: Path) -> None:
    repo = _repo(tmp_path, {"calc.py": FIXED})
    first = _proof(_verify(repo))
    second = _proof(_verify(repo))
    assert first["status"] == second["status"] == "verified"
    [base1] = [r for r in first["runs"] if r["role"] == "base"]
    [base2] = [r for r in second["runs"] if r["role"] == "base"]
    assert base1["cached"] is False and base2["cached"] is True


def test_unittest_projects_are_proved_by_named_tests(tmp_path: Path) -> None:
    base = {
        "calc.py": CALC,
        "tests/__init__.py": "",
        "tests/test_calc.py": (
            "import unittest\n\nfrom calc import add, sub\n\n\n"
            "class CalcTest(unittest.TestCase):\n"
            "    def test_sub(self):\n        self.assertEqual(sub(5, 3), 2)\n\n"
            "    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n"
        ),
    }
    proof = _proof(_verify(_repo(tmp_path, {"calc.py": FIXED}, base), f"{PY} -m unittest discover -s tests -t ."))
    assert proof["status"] == "verified", proof
    assert proof["proofs"] == ["tests.test_calc.CalcTest.test_add"]


def test_a_flag_test_command_is_never_learned(tmp_path: Path) -> None:
    repo = _repo(tmp_path, {"calc.py": FIXED})
    run = _verify(repo, f"{PYTEST} tests/test_calc.py")
    done = run.approve_completion(CLI)
    assert done.state == "COMPLETED"
    record = repo / ".autocode" / "project.json"
    learned = json.loads(record.read_text())["test_command"] if record.exists() else None
    assert learned is None


SRC_LAYOUT = {
    "pyproject.toml": (
        '[build-system]\nrequires = ["setuptools"]\nbuild-backend = "setuptools.build_meta"\n\n'
        '[project]\nname = "calcpkg"\nversion = "0.1"\n\n[tool.setuptools.packages.find]\nwhere = ["src"]\n\n'
        '[tool.pytest.ini_options]\ntestpaths = ["tests"]\n'
    ),
    "src/calcpkg/__init__.py": CALC,
    "tests/test_calc.py": TESTS.replace("from calc import", "from calcpkg import"),
    ".gitignore": ".venv/\n__pycache__/\n*.egg-info/\n",
}


def test_an_editable_src_layout_tests_the_copy_not_the_work_tree(tmp_path: Path) -> None:
    """`pip install -e .` points the venv at the work tree's src/: the proof must still see the
    copy's code (the real fix verified), and a change that breaks the code must not pass."""
    import subprocess
    import sysconfig

    repo = _repo(tmp_path, {"src/calcpkg/__init__.py": FIXED}, SRC_LAYOUT)
    venv = repo / ".venv"
    subprocess.run([PY, "-m", "venv", "--without-pip", str(venv)], check=True)
    found = subprocess.run([str(venv / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                           check=True, capture_output=True, text=True)
    site = Path(found.stdout.strip())
    # What `pip install -e .` leaves for a src/ layout: a .pth naming the work tree's src/
    # (and, here, this venv's packages so pytest is importable).
    (site / "__editable__.calcpkg-0.1.pth").write_text(f"{repo / 'src'}\n")
    (site / "deps.pth").write_text(sysconfig.get_path("purelib") + "\n")
    command = f"env PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 {venv / 'bin' / 'python'} -m pytest -q"
    proof = _proof(_verify(repo, command))
    assert proof["status"] == "verified", proof
    assert proof["proofs"] == ["tests/test_calc.py::test_add"]
    assert (repo / "src" / "calcpkg" / "__init__.py").read_text() == CALC  # the work tree untouched


def test_without_the_sandbox_an_editable_install_of_the_work_tree_makes_the_verdict_unproven(tmp_path: Path) -> None:
    """sandbox = "off": the copy sits at its own path and the editable .pth still names the work
    tree's src/, so the copy's tests would import the work tree. The verdict says so, with a remedy."""
    import shutil
    import subprocess
    import sysconfig

    from autocode.proof.run import prove
    from autocode.sandbox import Policy

    repo = make_repo(tmp_path / "proj", SRC_LAYOUT)
    venv = repo / ".venv"
    subprocess.run([PY, "-m", "venv", "--without-pip", str(venv)], check=True)
    found = subprocess.run([str(venv / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                           check=True, capture_output=True, text=True)
    site = Path(found.stdout.strip())
    (site / "__editable__.calcpkg-0.1.pth").write_text(f"{repo / 'src'}\n")
    (site / "deps.pth").write_text(sysconfig.get_path("purelib") + "\n")
    copy = tmp_path / "copy"
    shutil.copytree(repo, copy, ignore=shutil.ignore_patterns(".git", ".venv"))
    (copy / "src" / "calcpkg" / "__init__.py").write_text(FIXED)
    command = f"env PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 {venv / 'bin' / 'python'} -m pytest -q"
    proof = prove(command, copy=copy, workspace=repo, base_files={"src/calcpkg/__init__.py": CALC.encode()},
                  policy=Policy(enabled=False))
    assert proof.verdict.status == "unproven", proof.to_dict()
    why = " ".join(proof.verdict.reasons)
    assert "calcpkg resolves to" in why and "editable install" in why and "sandbox" in why, why
