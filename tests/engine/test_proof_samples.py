"""Readers of runners not installed here (jest, vitest, mocha, node-tap, Maven, Gradle),
tested on report samples in each tool's format (fixtures/proof), through the same
instrument -> read_report path a task uses."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

from autocode.proof import frameworks
from support.proof import outcomes, write

SAMPLES = Path(__file__).resolve().parents[2] / "fixtures" / "proof"


def sample(name: str, project: Path) -> str:
    return (SAMPLES / name).read_text(encoding="utf-8").replace("ROOT", str(project))


def _instrument(argv: list[str], project: Path, report_dir: Path) -> frameworks.Instrumented:
    inst = frameworks.instrument(argv, framework=None, report_dir=report_dir, project=project)
    assert inst is not None
    return inst


def test_jest_json_report(tmp_path: Path) -> None:
    project = tmp_path / "p"
    project.mkdir()
    inst = _instrument(["npx", "jest", "--ci"], project, tmp_path / "r")
    assert inst.argv == ["npx", "jest", "--ci", "--json", f"--outputFile={tmp_path / 'r' / 'jest.json'}"]
    (tmp_path / "r" / "jest.json").write_text(sample("jest.json", project), encoding="utf-8")
    report = frameworks.read_report(inst, report_dir=tmp_path / "r", output="", project=project)
    assert outcomes(report) == {
        "src/sum.test.js::sum > adds": "passed",
        "src/sum.test.js::sum > edge > overflows": "failed",
        "src/sum.test.js::later": "skipped",
        "src/sum.test.js::some day": "skipped",
        "src/sum.test.js::naïve ünï": "passed",
        "src/broken.test.js": "error",
    }
    assert "Cannot find module" in (report.by_id()["src/broken.test.js"].message or "")
    assert report.by_id()["src/sum.test.js::sum > adds"].file == "src/sum.test.js"


def test_npm_test_with_a_jest_script_passes_the_reporter_after_dashes(tmp_path: Path) -> None:
    project = write(tmp_path / "p", {"package.json": '{"scripts": {"test": "eslint . && jest --coverage"}}'})
    inst = _instrument(["npm", "test"], project, tmp_path / "r")
    assert inst.framework == "jest"
    assert inst.argv[:5] == ["npm", "test", "--", "--json", f"--outputFile={tmp_path / 'r' / 'jest.json'}"]
    other = write(tmp_path / "q", {"package.json": '{"scripts": {"test": "jest && eslint ."}}'})
    assert frameworks.instrument(["npm", "test"], framework="jest", report_dir=tmp_path / "r", project=other) is None
    custom = write(tmp_path / "c", {"package.json": '{"scripts": {"test": "./run-tests.sh"}}'})
    assert frameworks.instrument(["yarn", "test"], framework="yarn", report_dir=tmp_path / "r", project=custom) is None
    assert frameworks.instrument(["make", "test"], framework="make", report_dir=tmp_path / "r", project=custom) is None
    assert "not a test runner" in frameworks.why_not(["make", "test"], project=custom)


def test_vitest_json_report(tmp_path: Path) -> None:
    project = tmp_path / "p"
    project.mkdir()
    inst = _instrument(["vitest", "run"], project, tmp_path / "r")
    assert inst.argv[:4] == ["vitest", "run", "--reporter=default", "--reporter=json"]
    (tmp_path / "r" / "vitest.json").write_text(sample("vitest.json", project), encoding="utf-8")
    report = frameworks.read_report(inst, report_dir=tmp_path / "r", output="", project=project)
    assert outcomes(report) == {
        "test/math.test.ts::math > adds": "passed",
        "test/math.test.ts::math > subtracts": "failed",
        "test/math.test.ts::math > skipped": "skipped",
        "test/broken.test.ts": "error",
    }


def test_mocha_json_from_its_file_or_from_stdout(tmp_path: Path) -> None:
    project = tmp_path / "p"
    project.mkdir()
    inst = _instrument(["mocha", "test/"], project, tmp_path / "r")
    assert inst.argv[2:5] == ["--reporter", "json", "--reporter-option"]
    expected = {
        "test/calc.js::calc adds": "passed",
        "test/calc.js::calc breaks": "failed",
        "test/calc.js::calc waits": "skipped",
        'test/db.js::db "before all" hook for "connects"': "error",
    }
    (tmp_path / "r" / "mocha.json").write_text(sample("mocha.json", project), encoding="utf-8")
    assert outcomes(frameworks.read_report(inst, report_dir=tmp_path / "r", output="", project=project)) == expected
    # an older mocha without the output option prints the document to stdout, after any console output
    (tmp_path / "r" / "mocha.json").unlink()
    printed = "connecting...\n" + sample("mocha.json", project)
    assert outcomes(frameworks.read_report(inst, report_dir=tmp_path / "r", output=printed, project=project)) == expected
    assert frameworks.instrument(["mocha", "-R", "dot"], framework="mocha", report_dir=tmp_path / "r", project=project) is None


def test_node_tap_nested_subtests(tmp_path: Path) -> None:
    project = tmp_path / "p"
    project.mkdir()
    inst = _instrument(["tap"], project, tmp_path / "r")
    assert inst.argv == ["tap", "--reporter=tap"]
    report = frameworks.read_report(inst, report_dir=tmp_path / "r", output=sample("node-tap.txt", project),
                                    project=project)
    assert outcomes(report) == {
        "test/calc.js::adds > should be equal": "passed",
        "test/calc.js::adds > should be equal (2)": "passed",
        "test/calc.js::breaks > should be equal": "failed",
        "test/calc.js::waits": "skipped",
    }
    assert {r.file for r in report.results or ()} == {"test/calc.js"}


def _surefire(project: Path, module: str, folder: str) -> Path:
    target = project / module / folder
    target.mkdir(parents=True)
    shutil.copyfile(SAMPLES / "TEST-com.example.CalcTest.xml", target / "TEST-com.example.CalcTest.xml")
    build_file = "pom.xml" if folder.startswith("target") else "build.gradle"
    (project / module / build_file).write_text("", encoding="utf-8")
    source = project / module / "src/test/java/com/example/CalcTest.java"
    source.parent.mkdir(parents=True)
    source.write_text("class CalcTest {}\n", encoding="utf-8")
    return target


def test_maven_and_gradle_read_the_reports_of_this_run_only(tmp_path: Path) -> None:
    expected = {
        "com.example.CalcTest#adds": "passed",
        "com.example.CalcTest#breaks": "failed",
        "com.example.CalcTest#explodes": "error",
        "com.example.CalcTest#waits": "skipped",
        "com.example.CalcTest$Inner#inner works": "passed",
    }
    for argv, folder in ((["mvn", "-q", "test"], "target/surefire-reports"), (["./gradlew", "test"], "build/test-results/test")):
        project = tmp_path / argv[0].strip("./")
        project.mkdir()
        stale = _surefire(project, "old", folder) / "TEST-com.example.CalcTest.xml"
        os.utime(stale, (time.time() - 3600, time.time() - 3600))  # left by an earlier build
        inst = _instrument(argv, project, tmp_path / "r")
        assert inst.argv == argv
        _surefire(project, "core", folder)
        report = frameworks.read_report(inst, report_dir=tmp_path / "r", output="", project=project)
        assert outcomes(report) == expected
        assert {r.file for r in report.results or ()} == {"core/src/test/java/com/example/CalcTest.java"}
        assert "but was: <5>" in (report.by_id()["com.example.CalcTest#breaks"].message or "")
    empty = tmp_path / "empty"
    empty.mkdir()
    inst = _instrument(["mvn", "test"], empty, tmp_path / "r")
    report = frameworks.read_report(inst, report_dir=tmp_path / "r", output="", project=empty)
    assert report.results is None and "wrote no test report" in (report.reason or "")


def _real(argv: list[str], name: str, tmp_path: Path, *, stdout: bool = False) -> dict[str, str]:
    project = tmp_path / "p"
    project.mkdir(exist_ok=True)
    inst = _instrument(argv, project, tmp_path / "r")
    text = sample(name, project)
    if not stdout:
        (tmp_path / "r" / frameworks.REPORT_FILES[inst.framework]).write_text(text, encoding="utf-8")
    report = frameworks.read_report(inst, report_dir=tmp_path / "r", output=text if stdout else "", project=project)
    assert {r.file for r in report.results or ()} <= {None, *(r.id.split("::")[0] for r in report.results or ())}
    return outcomes(report)


def test_real_jest_30_output(tmp_path: Path) -> None:
    # src/sum.test.js: describe('sum') { adds; describe('edge') { overflows (fails) } }, test.skip,
    # test.todo, a non-ASCII name, a name with a line break; src/broken.test.js requires a missing module
    assert _real(["jest"], "jest-30.json", tmp_path) == {
        "src/sum.test.js::sum > adds": "passed",
        "src/sum.test.js::sum > edge > overflows": "failed",
        "src/sum.test.js::later": "skipped",
        "src/sum.test.js::some day": "skipped",
        "src/sum.test.js::naïve ünï": "passed",
        "src/sum.test.js::with\\nnewline": "passed",
        "src/broken.test.js": "error",
    }


def test_real_vitest_4_output(tmp_path: Path) -> None:
    assert _real(["vitest", "run"], "vitest-4.json", tmp_path) == {
        "test/broken.test.js": "error",
        "test/math.test.js::math > adds": "passed",
        "test/math.test.js::math > subtracts": "failed",
        "test/math.test.js::math > skipped": "skipped",
        "test/math.test.js::math > later": "skipped",
        "test/math.test.js::math > inner > naïve ünï": "passed",
    }


def test_real_mocha_12_output(tmp_path: Path) -> None:
    assert _real(["mocha"], "mocha-12.json", tmp_path) == {
        "test/calc.js::calc adds": "passed",
        "test/calc.js::calc breaks": "failed",
        "test/calc.js::calc waits": "skipped",
        "test/calc.js::calc naïve ünï": "passed",
        'test/db.js::db "before all" hook for "connects"': "error",
    }


def test_real_tap_21_output(tmp_path: Path) -> None:
    # YAML diagnostics quote the test's source (lines that look like TAP); test/broken.js fails to load
    assert _real(["tap"], "tap-21.txt", tmp_path, stdout=True) == {
        "test/broken.js": "error",
        "test/calc.js::adds > should be equal": "passed",
        "test/calc.js::adds > should be equal (2)": "passed",
        "test/calc.js::breaks > should be equal": "failed",
        "test/calc.js::waits": "skipped",
    }
