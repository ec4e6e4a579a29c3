"""Report files written by an untrusted test process: huge, malformed, missing, a link, a
FIFO, XML with entities or deep nesting, names with line breaks and odd characters. Each
gives a clear Report(results=None, reason) or correctly escaped ids, never an exception."""

from __future__ import annotations

import json
import os
from pathlib import Path

from autocode.proof import frameworks
from autocode.proof.results import Report


def _pytest(tmp_path: Path) -> tuple[frameworks.Instrumented, Path, Path]:
    project = tmp_path / "p"
    project.mkdir(exist_ok=True)
    report_dir = tmp_path / "r"
    inst = frameworks.instrument(["pytest"], framework="pytest", report_dir=report_dir, project=project)
    assert inst is not None
    return inst, report_dir, project


def _read(inst: frameworks.Instrumented, report_dir: Path, project: Path, output: str = "") -> Report:
    return frameworks.read_report(inst, report_dir=report_dir, output=output, project=project)


START = json.dumps({"event": "start", "rootdir": "/nowhere", "cwd": "/nowhere"}) + "\n"


def test_missing_report(tmp_path: Path) -> None:
    inst, report_dir, project = _pytest(tmp_path)
    report = _read(inst, report_dir, project)
    assert report.results is None and (report.reason or "").startswith("pytest stopped before it ran any test")


def test_huge_report_is_refused_without_reading_it_all(tmp_path: Path) -> None:
    inst, report_dir, project = _pytest(tmp_path)
    with open(report_dir / "pytest.jsonl", "wb") as handle:
        handle.truncate(65 << 20)  # sparse: cheap to make, over the 64 MiB limit
    report = _read(inst, report_dir, project)
    assert report.results is None and "larger than 64 MiB" in (report.reason or "")


def test_malformed_line_is_refused_but_a_cut_last_line_is_dropped(tmp_path: Path) -> None:
    inst, report_dir, project = _pytest(tmp_path)
    good = json.dumps({"event": "test", "nodeid": "t.py::a", "when": "call", "outcome": "passed"}) + "\n"
    (report_dir / "pytest.jsonl").write_text(START + good + '{"event": "te', encoding="utf-8")
    report = _read(inst, report_dir, project)
    assert [(r.id, r.outcome) for r in report.results or ()] == [("t.py::a", "passed")]
    (report_dir / "pytest.jsonl").write_text(START + "not json\n" + good, encoding="utf-8")
    report = _read(inst, report_dir, project)
    assert report.results is None and "line 2 of the report pytest is not JSON" in (report.reason or "")
    (report_dir / "pytest.jsonl").write_text(good, encoding="utf-8")
    assert "did not load AutoCode's results plugin" in (_read(inst, report_dir, project).reason or "")


def test_names_with_line_breaks_controls_and_surrogates_are_escaped(tmp_path: Path) -> None:
    inst, report_dir, project = _pytest(tmp_path)
    lines = [START]
    for nodeid in ("t.py::test[a\nb]", "t.py::test[\x1b[31mred]", "t.py::tëst_ünï", "t.py::x\ud800y", "t.py::a\u2028b"):
        lines.append(json.dumps({"event": "test", "nodeid": nodeid, "when": "call", "outcome": "failed",
                                 "message": "line one\nline two\x07"}) + "\n")
    (report_dir / "pytest.jsonl").write_text("".join(lines), encoding="utf-8")
    report = _read(inst, report_dir, project)
    assert [r.id for r in report.results or ()] == [
        "t.py::test[a\\nb]", "t.py::test[\\x1b[31mred]", "t.py::tëst_ünï", "t.py::x\\ud800y", "t.py::a\\u2028b"]
    assert report.results is not None and report.results[0].message == "line one\nline two\\x07"
    for item in report.results:
        item.id.encode("utf-8")  # every id can be written as UTF-8


def test_report_path_that_is_a_link_or_a_fifo_is_not_followed(tmp_path: Path) -> None:
    inst, report_dir, project = _pytest(tmp_path)
    secret = tmp_path / "elsewhere.txt"
    secret.write_text(START, encoding="utf-8")
    (report_dir / "pytest.jsonl").symlink_to(secret)
    report = _read(inst, report_dir, project)
    assert report.results is None and "cannot be read" in (report.reason or "")
    (report_dir / "pytest.jsonl").unlink()
    os.mkfifo(report_dir / "pytest.jsonl")
    report = _read(inst, report_dir, project)  # would block forever if it waited for a writer
    assert report.results is None and "not a regular file" in (report.reason or "")


def _maven(tmp_path: Path, xml: bytes) -> Report:
    project = tmp_path / "m"
    reports = project / "target" / "surefire-reports"
    reports.mkdir(parents=True)
    inst = frameworks.instrument(["mvn", "test"], framework="maven", report_dir=tmp_path / "r", project=project)
    assert inst is not None
    (reports / "TEST-x.xml").write_bytes(xml)
    return frameworks.read_report(inst, report_dir=tmp_path / "r", output="", project=project)


def test_xml_with_entities_is_refused(tmp_path: Path) -> None:
    bomb = (b'<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;">]>'
            b'<testsuite><testcase classname="a" name="&lol2;"/></testsuite>')
    report = _maven(tmp_path, bomb)
    assert report.results is None and "DOCTYPE or entities" in (report.reason or "")


def test_xml_nested_too_deep_or_broken_is_refused(tmp_path: Path) -> None:
    report = _maven(tmp_path / "a", b"<a>" * 1000 + b"</a>" * 1000)
    assert report.results is None and "nests deeper than 64" in (report.reason or "")
    report = _maven(tmp_path / "b", b"<testsuite><testcase name='x'>")
    assert report.results is None and "not well-formed XML" in (report.reason or "")


def test_json_documents_of_the_wrong_shape_or_too_deep(tmp_path: Path) -> None:
    project = tmp_path / "p"
    project.mkdir()
    inst = frameworks.instrument(["jest"], framework="jest", report_dir=tmp_path / "r", project=project)
    assert inst is not None
    for text, reason in (("[1, 2]", "has no testResults list"), ("[" * 100000 + "]" * 100000, "not valid JSON"),
                         ('{"testResults": [{"name": 5, "assertionResults": "x"}, 7]}', "the run reported no tests")):
        (tmp_path / "r" / "jest.json").write_text(text, encoding="utf-8")
        report = frameworks.read_report(inst, report_dir=tmp_path / "r", output="", project=project)
        assert reason in (report.reason or ""), report


def test_stdout_readers_on_output_without_results(tmp_path: Path) -> None:
    project = tmp_path / "p"
    project.mkdir()
    for argv, reason in ((["go", "test", "./..."], "printed no JSON events"),
                         (["cargo", "test"], "printed no test results"), (["prove"], "no TAP test lines")):
        inst = frameworks.instrument(argv, framework=None, report_dir=tmp_path / "r", project=project)
        assert inst is not None
        report = frameworks.read_report(inst, report_dir=tmp_path / "r", output="error: it broke\n\x00\xff", project=project)
        assert report.results is None and reason in (report.reason or "")
