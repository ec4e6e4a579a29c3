"""A test command narrowed to a change's test files: the narrowed run names the same tests
as the full run (so base and candidate compare), and commands whose words cannot be told
apart are not narrowed at all."""

from __future__ import annotations

import sys
from pathlib import Path

from autocode.proof import frameworks
from support.proof import instrumented, outcomes, write

PY = sys.executable
QUIET = {"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
FILES = {
    "pytest.ini": "[pytest]\n",
    "tests/__init__.py": "",
    "tests/test_a.py": "import unittest\n\nclass TestA(unittest.TestCase):\n    def test_one(self):\n        pass\n",
    "tests/test_b.py": "import unittest\n\nclass TestB(unittest.TestCase):\n    def test_two(self):\n        pass\n",
}


def test_pytest_narrowed_ids_are_a_subset_of_the_full_run(tmp_path: Path) -> None:
    project = write(tmp_path / "p", FILES)
    argv = [PY, "-m", "pytest", "-q", "-k", "one or two", "tests"]
    narrowed = frameworks.narrow(argv, test_files=["tests/test_a.py"], project=project)
    assert narrowed == [PY, "-m", "pytest", "-q", "-k", "one or two", "tests/test_a.py"]
    full, _, _ = instrumented(argv, project, tmp_path / "r1", env=QUIET)
    part, _, _ = instrumented(narrowed, project, tmp_path / "r2", env=QUIET)
    assert outcomes(part) == {"tests/test_a.py::TestA::test_one": "passed"}
    assert set(outcomes(part)) < set(outcomes(full))


def test_unittest_discover_narrowed_to_module_names(tmp_path: Path) -> None:
    project = write(tmp_path / "p", FILES)
    argv = [PY, "-m", "unittest", "discover", "-s", "tests", "-t", ".", "-v"]
    narrowed = frameworks.narrow(argv, test_files=["tests/test_b.py"], project=project)
    assert narrowed == [PY, "-m", "unittest", "-v", "tests.test_b"]
    full, _, _ = instrumented(argv, project, tmp_path / "r1")
    part, _, _ = instrumented(narrowed, project, tmp_path / "r2")
    assert outcomes(part) == {"tests.test_b.TestB.test_two": "passed"}
    assert set(outcomes(part)) < set(outcomes(full))


def test_commands_that_cannot_be_narrowed(tmp_path: Path) -> None:
    project = write(tmp_path / "p", {**FILES, "package.json": '{"scripts": {"test": "jest tests/"}}'})
    one = ["tests/test_a.py"]
    # an option of unknown arity followed by a word that is no path
    assert frameworks.narrow([PY, "-m", "pytest", "--reruns", "3"], test_files=one, project=project) is None
    # discovery from a top folder other than the cwd names modules differently
    assert frameworks.narrow([PY, "-m", "unittest", "discover", "-s", "tests"], test_files=one, project=project) is None
    assert frameworks.narrow(["npm", "test"], test_files=one, project=project) is None  # the script picks files
    assert frameworks.narrow(["make", "test"], test_files=one, project=project) is None
    assert frameworks.narrow([PY, "-m", "pytest"], test_files=["../outside.py"], project=project) is None
    assert frameworks.narrow(["go", "test", "-count", "1", "./..."], test_files=["calc/calc_test.go"],
                             project=project) == ["go", "test", "-count", "1", "./calc"]
    assert frameworks.narrow(["node", "--test"], test_files=["test/a.test.js"], project=project) == [
        "node", "--test", "test/a.test.js"]


def test_launchers_and_prefixes_keep_their_words(tmp_path: Path) -> None:
    project = write(tmp_path / "p", FILES)
    report_dir = tmp_path / "r"

    def made(argv: list[str]) -> list[str] | None:
        inst = frameworks.instrument(argv, framework=None, report_dir=report_dir, project=project)
        return None if inst is None else inst.argv

    plugin = ["-p", "autocode_proof_pytest"]
    assert made(["uv", "run", "--frozen", "pytest", "-x"]) == ["uv", "run", "--frozen", "pytest", *plugin, "-x"]
    assert made(["poetry", "run", "python", "-m", "pytest"]) == ["poetry", "run", "python", "-m", "pytest", *plugin]
    assert made(["env", "DJANGO_SETTINGS_MODULE=x", "python3", "-m", "pytest"]) == [
        "env", "DJANGO_SETTINGS_MODULE=x", "python3", "-m", "pytest", *plugin]
    launcher = str(report_dir / "unittest" / "autocode_proof_unittest.py")
    assert made(["pipenv", "run", "python3", "-X", "dev", "-m", "unittest", "-v"]) == [
        "pipenv", "run", "python3", "-X", "dev", launcher, "-v"]
    assert made(["go", "test", "-run", "TestX", "./..."]) == ["go", "test", "-json", "-run", "TestX", "./..."]
    assert made(["uv", "run", "--with", "pytest", "pytest"]) is None  # the value of --with looks like the runner
    assert made(["python3", "run_tests.py"]) is None
    assert made(["bash", "-c", "pytest"]) is None
