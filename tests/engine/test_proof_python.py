"""Per-test results of pytest and unittest, run for real on small projects: exact ids and
outcomes, import failures as file-level errors, and the same exit code and output as the
command the person set."""

from __future__ import annotations

import sys
from pathlib import Path

from autocode.proof import frameworks
from support.proof import instrumented, outcomes, run, same_output, write

PY = sys.executable

PYTEST_PROJECT = {
    "pytest.ini": "[pytest]\n",
    "tests/test_a.py": """
        import pytest

        def test_passes():
            assert 1 + 1 == 2

        def test_fails():
            assert 1 + 1 == 3

        @pytest.fixture
        def broken():
            raise RuntimeError("fixture broke")

        def test_errors(broken):
            pass

        @pytest.mark.skip(reason="not today")
        def test_skipped():
            pass

        @pytest.mark.xfail(reason="known bug")
        def test_xfails():
            assert False

        class TestGroup:
            def test_inside(self):
                pass

        @pytest.mark.parametrize("value", [1, 2])
        def test_param(value):
            assert value == 1
    """,
}
BROKEN = {"tests/test_broken.py": "import no_such_module_here\n\ndef test_never():\n    pass\n"}
QUIET = {"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}  # the venv's own plugins only slow these runs


def test_pytest_ids_and_outcomes_match_what_ran(tmp_path: Path) -> None:
    project = write(tmp_path / "p", PYTEST_PROJECT)
    argv = [PY, "-m", "pytest", "-q"]
    plain = run(argv, project, env=QUIET)
    report, outcome, inst = instrumented(argv, project, tmp_path / "report", env=QUIET)
    assert outcomes(report) == {
        "tests/test_a.py::test_passes": "passed",
        "tests/test_a.py::test_fails": "failed",
        "tests/test_a.py::test_errors": "error",
        "tests/test_a.py::test_skipped": "skipped",
        "tests/test_a.py::test_xfails": "skipped",
        "tests/test_a.py::TestGroup::test_inside": "passed",
        "tests/test_a.py::test_param[1]": "passed",
        "tests/test_a.py::test_param[2]": "failed",
    }
    by_id = report.by_id()
    assert by_id["tests/test_a.py::test_fails"].file == "tests/test_a.py"
    assert "assert (1 + 1) == 3" in (by_id["tests/test_a.py::test_fails"].message or "")
    assert by_id["tests/test_a.py::test_passes"].message is None
    assert inst.framework == "pytest" and report.reason is None
    assert outcome.exit_code == plain.exit_code == 1
    assert same_output(plain.output, outcome.output)
    assert sorted(p.name for p in project.rglob("*") if p.is_file() and "__pycache__" not in p.parts and
                  ".pytest_cache" not in p.parts) == ["pytest.ini", "test_a.py"]


def test_pytest_file_that_fails_to_import_is_a_file_level_error(tmp_path: Path) -> None:
    project = write(tmp_path / "p", {**PYTEST_PROJECT, **BROKEN})
    argv = [PY, "-m", "pytest"]
    plain = run(argv, project, env=QUIET)
    report, outcome, _ = instrumented(argv, project, tmp_path / "report", env=QUIET)
    # pytest stops before running anything when a file fails to collect
    assert outcomes(report) == {"tests/test_broken.py": "error"}
    broken = report.by_id()["tests/test_broken.py"]
    assert broken.file == "tests/test_broken.py" and "no_such_module_here" in (broken.message or "")
    assert outcome.exit_code == plain.exit_code == 2
    assert same_output(plain.output, outcome.output)


def test_pytest_from_a_subfolder_names_files_from_the_project_root(tmp_path: Path) -> None:
    project = write(tmp_path / "p", {"pkg/pytest.ini": "[pytest]\n", "pkg/tests/test_x.py": "def test_one():\n    pass\n"})
    report, outcome, _ = instrumented([PY, "-m", "pytest"], project, tmp_path / "r", cwd=project / "pkg", env=QUIET)
    assert outcome.exit_code == 0
    assert [(r.id, r.file) for r in report.results or ()] == [("tests/test_x.py::test_one", "pkg/tests/test_x.py")]


def test_pytest_src_layout_with_non_ascii_names_round_trips(tmp_path: Path) -> None:
    project = write(tmp_path / "p", {
        "pyproject.toml": "[tool.pytest.ini_options]\npythonpath = ['src']\n",
        "src/café/__init__.py": "def add(a, b):\n    return a + b\n",
        "tests/tëst_ünï.py": "from café import add\n\ndef test_sümme():\n    assert add(2, 3) == 5\n\n"
                              "def test_naïve():\n    assert add(2, 3) == -1\n",
    })
    argv = [PY, "-m", "pytest", "tests/tëst_ünï.py"]
    first, outcome, _ = instrumented(argv, project, tmp_path / "r1", env=QUIET)
    second, _, _ = instrumented(argv, project, tmp_path / "r2", env=QUIET)
    assert outcome.exit_code == 1
    assert outcomes(first) == {"tests/tëst_ünï.py::test_sümme": "passed", "tests/tëst_ünï.py::test_naïve": "failed"}
    assert first.results == second.results
    assert {r.file for r in first.results or ()} == {"tests/tëst_ünï.py"}


def test_pytest_with_an_isolated_interpreter_is_not_instrumented(tmp_path: Path) -> None:
    project = write(tmp_path / "p", PYTEST_PROJECT)
    assert frameworks.instrument([PY, "-I", "-m", "pytest"], framework="pytest", report_dir=tmp_path / "r",
                                 project=project) is None
    assert "cannot add its reporter" in frameworks.why_not([PY, "-I", "-m", "pytest"], project=project)


UNITTEST_PROJECT = {
    "tests/__init__.py": "",
    "tests/test_a.py": """
        import unittest

        class TestA(unittest.TestCase):
            def test_passes(self):
                self.assertEqual(1 + 1, 2)

            def test_fails(self):
                self.assertEqual(1 + 1, 3)

            def test_errors(self):
                raise RuntimeError("boom")

            @unittest.skip("not today")
            def test_skipped(self):
                pass

            @unittest.expectedFailure
            def test_expected(self):
                self.assertTrue(False)

            def test_subtests(self):
                for n in (1, 2):
                    with self.subTest(n=n):
                        self.assertEqual(n, 1)

        class TestBrokenSetup(unittest.TestCase):
            @classmethod
            def setUpClass(cls):
                raise RuntimeError("class setup broke")

            def test_never_runs(self):
                pass
    """,
    "tests/test_broken.py": "import no_such_module_here\n",
}


def test_unittest_discover_ids_outcomes_exit_code_and_output(tmp_path: Path) -> None:
    project = write(tmp_path / "p", UNITTEST_PROJECT)
    argv = [PY, "-m", "unittest", "discover", "-s", "tests", "-t", "."]
    plain = run(argv, project)
    report, outcome, inst = instrumented(argv, project, tmp_path / "report")
    assert outcomes(report) == {
        "tests.test_a.TestA.test_passes": "passed",
        "tests.test_a.TestA.test_fails": "failed",
        "tests.test_a.TestA.test_errors": "error",
        "tests.test_a.TestA.test_skipped": "skipped",
        "tests.test_a.TestA.test_expected": "skipped",
        "tests.test_a.TestA.test_subtests": "failed",
        "tests.test_a.TestBrokenSetup": "error",
        "tests.test_broken": "error",
    }
    by_id = report.by_id()
    assert by_id["tests.test_broken"].file == "tests/test_broken.py"
    assert "no_such_module_here" in (by_id["tests.test_broken"].message or "")
    assert by_id["tests.test_a.TestA.test_passes"].file == "tests/test_a.py"
    assert by_id["tests.test_a.TestBrokenSetup"].file == "tests/test_a.py"
    assert inst.argv[0] == PY and inst.argv[2:] == argv[3:]
    assert outcome.exit_code == plain.exit_code == 1
    assert same_output(plain.output, outcome.output)


def test_unittest_by_name_and_usage_errors_behave_like_python_m_unittest(tmp_path: Path) -> None:
    project = write(tmp_path / "p", UNITTEST_PROJECT)
    report, outcome, _ = instrumented([PY, "-m", "unittest", "tests.test_a.TestA.test_passes"], project, tmp_path / "r")
    assert outcome.exit_code == 0 and outcomes(report) == {"tests.test_a.TestA.test_passes": "passed"}
    bad = [PY, "-m", "unittest", "--no-such-flag"]
    plain = run(bad, project)
    _, outcome, _ = instrumented(bad, project, tmp_path / "r2")
    assert outcome.exit_code == plain.exit_code == 2
    assert same_output(plain.output, outcome.output)


def test_unittest_src_layout_with_non_ascii_names_round_trips(tmp_path: Path) -> None:
    project = write(tmp_path / "p", {
        "src/café/__init__.py": "def add(a, b):\n    return a + b\n",
        "tests/__init__.py": "",
        "tests/test_ünï.py": "import sys, unittest\nsys.path.insert(0, 'src')\nfrom café import add\n\n"
                             "class TestSümme(unittest.TestCase):\n    def test_grün(self):\n"
                             "        self.assertEqual(add(2, 3), 5)\n",
    })
    argv = [PY, "-m", "unittest", "discover", "-s", "tests", "-t", ".", "-p", "test_*.py"]
    first, outcome, _ = instrumented(argv, project, tmp_path / "r1")
    second, _, _ = instrumented(argv, project, tmp_path / "r2")
    assert outcome.exit_code == 0
    assert outcomes(first) == {"tests.test_ünï.TestSümme.test_grün": "passed"}
    assert first.results == second.results and first.results[0].file == "tests/test_ünï.py"  # type: ignore[index]


def test_a_run_that_dies_midway_keeps_the_results_it_reached_and_says_so(tmp_path: Path) -> None:
    project = write(tmp_path / "p", {
        "pytest.ini": "[pytest]\n",
        "tests/test_dies.py": "import os, signal\n\ndef test_a():\n    pass\n\ndef test_b():\n    assert False\n\n"
                              "def test_c():\n    os.kill(os.getpid(), signal.SIGKILL)\n\ndef test_d():\n    pass\n",
    })
    report, outcome, inst = instrumented([PY, "-m", "pytest"], project, tmp_path / "r", env=QUIET)
    # bubblewrap exits as its child did, a signal as 128 + its number (SIGKILL: 137)
    assert outcome.exit_code == (137 if outcome.sandbox == "bwrap" else -9)
    assert outcomes(report) == {"tests/test_dies.py::test_a": "passed", "tests/test_dies.py::test_b": "failed",
                                "tests/test_dies.py::test_c": "error"}
    assert "did not finish" in (report.by_id()["tests/test_dies.py::test_c"].message or "")
    assert "stopped before it finished" in (report.reason or "")
    assert frameworks.progress(inst, report_dir=tmp_path / "r") == 2


def test_unittest_module_that_skips_itself_and_progress(tmp_path: Path) -> None:
    project = write(tmp_path / "p", {
        "tests/__init__.py": "",
        "tests/test_later.py": "import unittest\nraise unittest.SkipTest('needs a database')\n",
        "tests/test_ok.py": "import unittest\n\nclass T(unittest.TestCase):\n    def test_ok(self):\n        pass\n",
    })
    report, outcome, inst = instrumented([PY, "-m", "unittest"], project, tmp_path / "r")
    assert outcome.exit_code == 0 and report.reason is None
    assert outcomes(report) == {"tests.test_later": "skipped", "tests.test_ok.T.test_ok": "passed"}
    assert report.by_id()["tests.test_later"].file == "tests/test_later.py"
    assert frameworks.progress(inst, report_dir=tmp_path / "r") == 2


def test_pytest_with_a_broken_conftest_says_it_ran_nothing(tmp_path: Path) -> None:
    project = write(tmp_path / "p", {**PYTEST_PROJECT, "conftest.py": "import no_such_plugin_module\n"})
    plain = run([PY, "-m", "pytest"], project, env=QUIET)
    report, outcome, _ = instrumented([PY, "-m", "pytest"], project, tmp_path / "r", env=QUIET)
    assert outcome.exit_code == plain.exit_code != 0
    assert report.results is None and "conftest.py" in (report.reason or "")
    assert same_output(plain.output, outcome.output)
