"""Doctor sections are a registry; an extension module adds one (one module, one entry).

The throwaway section (tests/throwaway/doctor_section.py) is loaded into the
real CLI by `AUTOCODE_EXTENSIONS` and appears in `autocode doctor`'s JSON and
text after the built-in sections, which keep their order and shapes. A module
that cannot be imported is a clear exit 2.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from support import make_repo

TESTS = Path(__file__).resolve().parents[1]


def _doctor(repo: Path, *args: str, extensions: str | None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")])}
    env.pop("AUTOCODE_EXTENSIONS", None)
    if extensions is not None:
        env["AUTOCODE_EXTENSIONS"] = extensions
    return subprocess.run(
        [sys.executable, "-m", "autocode", "doctor", "--workspace", str(repo), *args],
        capture_output=True, text=True, check=False, env=env,
    )


def test_an_extension_adds_a_doctor_section_to_the_cli(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"README.md": "one\ntwo\nthree\n"})
    plain = json.loads(_doctor(repo, "--json", extensions=None).stdout)
    proc = _doctor(repo, "--json", extensions="throwaway.doctor_section")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["line_count"] == {"ok": True, "lines": 3}
    assert list(report) == [*plain, "line_count"]  # the built-in sections keep their order
    assert list(plain)[-5:] == ["memory", "autocode_folder", "prep", "sandbox", "engines"]
    text = _doctor(repo, extensions="throwaway.doctor_section").stdout
    assert "README.md: 3 lines" in text and "\nMemory: " in text


def test_an_extension_that_cannot_be_imported_is_exit_2(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    proc = _doctor(repo, extensions="throwaway.no_such_module")
    assert proc.returncode == 2
    assert "AUTOCODE_EXTENSIONS names the module 'throwaway.no_such_module'" in proc.stderr
    assert not (repo / ".autocode").exists()


def test_in_process_registration(tmp_path: Path) -> None:
    from autocode import doctor

    repo = make_repo(tmp_path / "repo", {"README.md": "x\n"})
    from throwaway import doctor_section

    try:
        assert doctor.build_report(repo)["line_count"]["lines"] == 1
    finally:
        doctor.unregister_section(doctor_section.line_count_section)
    assert "line_count" not in doctor.build_report(repo)


def test_the_report_is_a_typed_model_whose_dump_is_the_json(tmp_path: Path) -> None:
    from autocode.doctor import DoctorReport, build_report, doctor_report, render_text

    repo = make_repo(tmp_path / "repo", {"pkg/a.py": "x = 1\n"})
    report = doctor_report(repo, package="pkg")
    assert isinstance(report, DoctorReport)
    assert report.workspace == str(repo) and report.package == str(repo / "pkg")
    assert list(report.to_dict())[:3] == ["workspace", "package", "settings"]
    assert report.to_dict() == build_report(repo, package="pkg")
    assert DoctorReport.model_validate(report.model_dump()).to_dict() == report.to_dict()
    assert render_text(report) == render_text(report.to_dict())
    whole = json.loads(_doctor(repo, "--json", "--package", "pkg", extensions=None).stdout)
    assert list(whole) == list(report.to_dict())
