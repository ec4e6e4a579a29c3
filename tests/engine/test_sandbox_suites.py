"""Real suites pass in the sandboxed copy: one that refuses dot segments in its paths (as
express's `send` does), a pytest suite that needs the workspace's ignored `.venv`, a node suite
that needs `node_modules`, and an editable `src/` install that imports the COPY's code."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from autocode import sandbox
from autocode.prep import make_prep_copy
from support.sandbox import make_workspace

pytestmark = pytest.mark.skipif(not sandbox.available(), reason="bubblewrap cannot make a sandbox here")


def _run(argv: list[str], copy: Path, workspace: Path, cwd: Path | None = None) -> sandbox.Outcome:
    return sandbox.run(argv, copy=copy, workspace=workspace, cwd=cwd or copy, timeout=120, cancelled=lambda: False,
                       env=QUIET)


def _venv(folder: Path) -> Path:
    """A venv in the workspace (no pip: fast) that also sees this interpreter's packages (pytest)."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", "--system-site-packages", str(folder)], check=True)
    site = next((folder / "lib").glob("python*/site-packages"))
    (site / "outer.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return site


PYTEST = ["-m", "pytest", "-q", "-p", "no:cacheprovider"]
# This interpreter's pytest plugins (LSP, asyncio...) only slow the small suites down.
QUIET = {"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
BARE_ENV = {**os.environ, **QUIET}


def test_a_suite_that_refuses_dot_segments_passes_in_the_copy(tmp_path: Path) -> None:
    check = (
        "import os\n\n"
        "def test_no_dot_segment_in_my_paths():\n"
        "    assert '/.' not in os.getcwd(), os.getcwd()\n"
        "    assert '/.' not in os.path.abspath(__file__), __file__\n"
    )
    workspace = make_workspace(tmp_path / "ws", {"tests/test_paths.py": check})
    copy = make_prep_copy(workspace).copy
    assert "/." in str(copy)  # the copy itself lives under .autocode/prep
    outcome = _run([sys.executable, *PYTEST, "tests"], copy, workspace)
    assert outcome.exit_code == 0, outcome.output
    assert outcome.sandbox == "bwrap" and "1 passed" in outcome.output
    # Outside the sandbox, at the copy's own path, the same suite fails: the placement is what fixes it.
    bare = subprocess.run([sys.executable, *PYTEST, "tests"], cwd=copy, capture_output=True, text=True, env=BARE_ENV)
    assert bare.returncode == 1


def test_a_pytest_suite_uses_the_workspace_venv(tmp_path: Path) -> None:
    suite = "import onlyinvenv\n\ndef test_module_from_the_venv():\n    assert onlyinvenv.VALUE == 42\n"
    workspace = make_workspace(tmp_path / "ws", {"tests/test_venv.py": suite})
    site = _venv(workspace / ".venv")
    (site / "onlyinvenv.py").write_text("VALUE = 42\n")
    copy = make_prep_copy(workspace).copy
    assert not (copy / ".venv").exists()  # prep leaves the ignored venv out
    outcome = _run([".venv/bin/python", *PYTEST, "tests"], copy, workspace)
    assert outcome.exit_code == 0, outcome.output
    assert "1 passed" in outcome.output
    assert any(".venv" in note for note in outcome.notes)
    # Read-only inside, and the mount point made in the copy is gone again.
    write = _run([".venv/bin/python", "-c", "open('.venv/planted', 'w')"], copy, workspace)
    assert write.exit_code == 1 and "Read-only file system" in write.output
    assert not (workspace / ".venv" / "planted").exists()
    assert not (copy / ".venv").exists()
    # A mount point a killed run left behind (an empty folder) does not hide the venv next time.
    (copy / ".venv").mkdir()
    again = _run([".venv/bin/python", *PYTEST, "tests"], copy, workspace)
    assert again.exit_code == 0, again.output
    assert (copy / ".venv").is_dir() and not any((copy / ".venv").iterdir())


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_a_node_suite_uses_the_workspace_node_modules(tmp_path: Path) -> None:
    suite = (
        "const test = require('node:test');\nconst assert = require('node:assert');\n"
        "const tiny = require('tinylib');\n"
        "test('the local package answers', () => { assert.strictEqual(tiny.answer(), 42); });\n"
    )
    workspace = make_workspace(tmp_path / "ws", {"test/tiny.test.js": suite, "package.json": '{"name": "t"}\n'})
    lib = workspace / "node_modules" / "tinylib"
    lib.mkdir(parents=True)
    (lib / "package.json").write_text('{"name": "tinylib", "main": "index.js"}\n')
    (lib / "index.js").write_text("exports.answer = () => 42;\n")
    copy = make_prep_copy(workspace).copy
    assert not (copy / "node_modules").exists()
    outcome = _run(["node", "--test", "test/"], copy, workspace)
    assert outcome.exit_code == 0, outcome.output
    assert "# pass 1" in outcome.output
    assert not (copy / "node_modules").exists()


def test_an_editable_src_install_imports_the_copy(tmp_path: Path) -> None:
    files = {
        "pyproject.toml": (
            '[build-system]\nrequires = ["setuptools>=61"]\nbuild-backend = "setuptools.build_meta"\n\n'
            '[project]\nname = "edpkg"\nversion = "0.1"\n'
        ),
        "src/edpkg/__init__.py": 'WHERE = "workspace"\n',
        "tests/test_where.py": (
            "import os\nimport edpkg\n\n"
            "def test_the_code_under_test_is_the_copy():\n"
            "    assert edpkg.WHERE == 'copy', edpkg.__file__\n"
            "    assert edpkg.__file__.startswith(os.getcwd())\n"
        ),
    }
    workspace = make_workspace(tmp_path / "ws", files, ignore="*.egg-info/\n")
    _venv(workspace / ".venv")
    python = workspace / ".venv" / "bin" / "python"
    install = subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "-e", ".", "--no-deps",
         "--no-build-isolation", "--disable-pip-version-check"],
        cwd=workspace, capture_output=True, text=True, env={**os.environ, "PIP_NO_INDEX": "1"},
    )
    assert install.returncode == 0, install.stderr
    copy = make_prep_copy(workspace).copy
    (copy / "src" / "edpkg" / "__init__.py").write_text('WHERE = "copy"\n')  # the change under test
    outcome = _run([str(python), *PYTEST, "tests"], copy, workspace)
    assert outcome.exit_code == 0, outcome.output
    # Without the sandbox the editable install points at the workspace: the trap this avoids.
    bare = subprocess.run([str(python), *PYTEST, "tests"], cwd=copy, capture_output=True, text=True, env=BARE_ENV)
    assert bare.returncode == 1 and "workspace" in bare.stdout
