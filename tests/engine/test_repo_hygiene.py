"""The repository itself must hold no credential-shaped string and no path of a machine.

Test credentials are assembled at run time (see fixtures/scrub/); this test runs
the project's own scrub over every tracked text file to keep it that way.
"""

from __future__ import annotations

import os
import pwd
import subprocess
from pathlib import Path

from autocode.scrub import find_machine_paths, find_secrets

ROOT = Path(__file__).resolve().parents[2]
TEXT_SUFFIXES = {
    ".py", ".md", ".txt", ".toml", ".json", ".lua", ".ts", ".js", ".mjs", ".sh", ".cfg",
    ".ini", ".yml", ".yaml", ".patch", ".diff", "",
}
# Lock files hold registry URLs and integrity hashes, nothing written by hand.
SKIPPED_NAMES = {"package-lock.json"}


def _tracked_text_files() -> list[Path]:
    out = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True
    ).stdout
    files = []
    for raw in out.split(b"\0"):
        if not raw:
            continue
        path = ROOT / raw.decode("utf-8", "surrogateescape")
        if path.name in SKIPPED_NAMES or path.suffix not in TEXT_SUFFIXES:
            continue
        if path.is_file() and not path.is_symlink():
            files.append(path)
    return files


def test_no_credential_shaped_strings_are_committed() -> None:
    found = []
    for path in _tracked_text_files():
        text = path.read_text(encoding="utf-8", errors="replace")
        for finding in find_secrets(text, env={}):
            line = text.count("\n", 0, finding.start) + 1
            found.append(f"{path.relative_to(ROOT)}:{line} ({finding.kind})")
    assert not found, "assemble test credentials at run time instead:\n" + "\n".join(found)


def test_no_path_of_this_machine_is_committed() -> None:
    found = []
    # The account's real home (tests/conftest.py points HOME at a temp folder); `/root`
    # itself is a pattern scrub documents and detects, so only a personal home counts.
    home = pwd.getpwuid(os.getuid()).pw_dir
    needles = [str(ROOT)] + ([home] if home not in ("/", "/root") else [])
    for path in _tracked_text_files():
        text = path.read_text(encoding="utf-8", errors="replace")
        for needle in needles:
            if needle and needle != "/" and needle in text:
                found.append(f"{path.relative_to(ROOT)} contains {needle}")
    assert not found, "\n".join(found)


def test_the_scan_sees_the_whole_tree() -> None:
    # Guards the two tests above against silently scanning nothing.
    names = {p.relative_to(ROOT).as_posix() for p in _tracked_text_files()}
    assert {"pyproject.toml", "Makefile", "README.md", "engine/autocode/scrub.py"} <= names


def test_scan_would_notice_a_planted_path(tmp_path: Path) -> None:
    planted = f"see {ROOT}/engine for details"
    assert str(ROOT) in planted
    assert find_machine_paths("log at /home/alice/work/x.txt")


# Test files are named for the module they test, not for the round of work that wrote them.
HISTORY_PREFIXES = ("test_foundation_", "test_s1_", "test_s2_", "test_s3_", "test_round")


def test_test_files_are_not_named_for_project_history() -> None:
    named = [
        str(p.relative_to(ROOT))
        for p in (ROOT / "tests").rglob("test_*.py")
        if p.name.startswith(HISTORY_PREFIXES)
    ]
    assert named == [], f"rename these after the module they test: {named}"
