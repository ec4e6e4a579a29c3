"""The copy tests the copy (autocode.proof.resolution): real `src/` layout packages installed
into venvs made here, the resolution program run for real in a copy of the project, and its
answer judged; plus the interpreter doctor reports for a test command."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from autocode.proof import interpreter, resolution
from support import make_repo

MARKER = "package-code-ran"


def _venv(where: Path, *, outer: bool = True) -> Path:
    """A venv (system site packages on, no pip of its own). `outer`: it also sees this test run's
    own packages (pip, setuptools, wheel, pytest) through a .pth line, so an editable install
    can be built offline."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", *(["--system-site-packages"] if outer else []),
                    str(where)], check=True, capture_output=True)
    python = where / "bin" / "python"
    if outer:
        purelib = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                                 capture_output=True, text=True, check=True).stdout.strip()
        Path(purelib, "outer-test-run.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return python


def _project(root: Path, *, layout: str = "src", pytest_paths: bool = False) -> Path:
    """A package `clicky` whose code, if it ever ran, would leave a marker file and stop."""
    package = root / "src" / "clicky" if layout == "src" else root / "clicky"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(
        f"import pathlib\npathlib.Path({MARKER!r}).write_text('ran')\nraise SystemExit('clicky ran')\n"
    )
    (root / "tests").mkdir()
    (root / "tests" / "test_clicky.py").write_text("import clicky\n\n\ndef test_it():\n    assert clicky\n")
    pyproject = ('[build-system]\nrequires = ["setuptools>=61"]\nbuild-backend = "setuptools.build_meta"\n\n'
                 '[project]\nname = "clicky"\nversion = "0.1"\n')
    if pytest_paths:
        pyproject += '\n[tool.pytest.ini_options]\npythonpath = ["src"]\n'
    (root / "pyproject.toml").write_text(pyproject)
    return root


def _pip_install(python: Path, project: Path, *extra: str) -> None:
    proc = subprocess.run([str(python), "-m", "pip", "install", "-q", *extra, ".", "--no-deps", "--no-build-isolation"],
                          cwd=project, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def _probe_in(copy: Path, command: str) -> tuple[resolution.Probe, str]:
    [probe] = resolution.probes(copy, command)
    proc = subprocess.run(probe.argv, cwd=copy, capture_output=True, text=True, timeout=60,
                          env={"PATH": os.environ.get("PATH", "")})
    assert not (copy / MARKER).exists(), "the probe ran the package's code"
    return probe, proc.stdout


@pytest.fixture(scope="module")
def editable(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A workspace with a src/ layout package installed editable into a venv: (workspace, python)."""
    root = tmp_path_factory.mktemp("editable")
    workspace = _project(root / "workspace")
    python = _venv(root / "venv")
    _pip_install(python, workspace, "-e")
    return workspace, python


def test_an_editable_install_makes_the_copy_resolve_into_the_workspace(editable: tuple[Path, Path],
                                                                       tmp_path: Path) -> None:
    workspace, python = editable
    copy = tmp_path / "copy"
    shutil.copytree(workspace, copy)
    probe, output = _probe_in(copy, f"{python} -m pytest")
    assert probe.names == ["clicky"] and probe.argv[0] == str(python)
    verdict = resolution.classify_output(probe, output, copy_seen_at=copy, workspace=workspace)
    assert not verdict.ok
    [package] = verdict.packages
    assert package["where"] == "workspace" and package["path"] == str(workspace / "src" / "clicky")
    assert verdict.reason == (f"clicky resolves to {workspace / 'src' / 'clicky'} (an editable install of the "
                              "workspace); the copy's tests would import your work tree, not the change")
    assert verdict.remedy is not None and "sandbox on" in verdict.remedy and 'pythonpath = ["src"]' in verdict.remedy
    # In a sandbox that shows the copy at the workspace's own path, that same path IS the copy.
    seen = resolution.classify_output(probe, output, copy_seen_at=workspace, workspace=workspace)
    assert seen.ok and seen.packages[0]["where"] == "copy"


def test_the_pytest_pythonpath_setting_makes_the_copy_import_its_own_source(editable: tuple[Path, Path],
                                                                             tmp_path: Path) -> None:
    workspace, python = editable
    copy = tmp_path / "copy"
    shutil.copytree(workspace, copy)
    (copy / "pyproject.toml").write_text((copy / "pyproject.toml").read_text()
                                         + '\n[tool.pytest.ini_options]\npythonpath = ["src"]\n')
    probe, output = _probe_in(copy, f"{python} -m pytest")
    verdict = resolution.classify_output(probe, output, copy_seen_at=copy, workspace=workspace)
    assert verdict.ok, verdict
    assert verdict.packages[0]["path"] == str(copy / "src" / "clicky")


def test_a_flat_layout_resolves_inside_the_copy(tmp_path: Path) -> None:
    workspace = _project(tmp_path / "workspace", layout="flat")
    copy = tmp_path / "copy"
    shutil.copytree(workspace, copy)
    probe, output = _probe_in(copy, f"{sys.executable} -m pytest")
    verdict = resolution.classify_output(probe, output, copy_seen_at=copy, workspace=workspace)
    assert verdict.ok and verdict.packages == [
        {"name": "clicky", "language": "python", "where": "copy", "path": str(copy / "clicky")}
    ]


def test_a_flat_layout_installed_editable_reaches_the_workspace_only_through_a_pytest_script(tmp_path: Path) -> None:
    workspace = _project(tmp_path / "workspace", layout="flat")
    (workspace / "pyproject.toml").write_text((workspace / "pyproject.toml").read_text()
                                              + '\n[tool.setuptools]\npackages = ["clicky"]\n')
    python = _venv(tmp_path / "venv")
    _pip_install(python, workspace, "-e")  # a flat layout: setuptools installs a finder, not a path
    script = python.parent / "pytest"
    script.write_text(f"#!{python}\nimport sys, pytest\nsys.exit(pytest.console_main())\n")
    script.chmod(0o755)
    copy = tmp_path / "copy"
    shutil.copytree(workspace, copy)
    # `python -m pytest` puts the copy's own folder first on sys.path: the copy's clicky.
    probe, output = _probe_in(copy, f"{python} -m pytest")
    assert resolution.classify_output(probe, output, copy_seen_at=copy, workspace=workspace).ok
    # The pytest script does not, so the editable finder answers with the workspace's clicky.
    probe, output = _probe_in(copy, f"{script} -q")
    assert "--no-cwd" in probe.argv
    verdict = resolution.classify_output(probe, output, copy_seen_at=copy, workspace=workspace)
    assert not verdict.ok and verdict.packages[0]["path"] == str(workspace / "clicky")
    # ... unless a conftest.py at the root makes pytest put the root on sys.path.
    (copy / "conftest.py").write_text("")
    probe, output = _probe_in(copy, f"{script} -q")
    assert resolution.classify_output(probe, output, copy_seen_at=copy, workspace=workspace).ok


def test_a_regular_install_resolves_outside_the_copy(tmp_path: Path) -> None:
    workspace = _project(tmp_path / "workspace")
    python = _venv(tmp_path / "venv")
    _pip_install(python, workspace)
    copy = tmp_path / "copy"
    shutil.copytree(workspace, copy)
    probe, output = _probe_in(copy, f"{python} -m pytest")
    verdict = resolution.classify_output(probe, output, copy_seen_at=copy, workspace=workspace)
    assert not verdict.ok and verdict.packages[0]["where"] == "elsewhere"
    assert "site-packages" in str(verdict.packages[0]["path"]) and "outside the copy" in str(verdict.reason)


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_node_resolves_the_package_itself_and_sees_a_link_to_the_workspace(tmp_path: Path) -> None:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    (workspace / "package.json").write_text(json.dumps({"name": "expressish", "main": "index.js"}))
    (workspace / "index.js").write_text("module.exports = 1;\n")
    copy = tmp_path / "copy"
    shutil.copytree(workspace, copy)
    # `npm link` leaves node_modules/<name> as a link to the person's work tree.
    (copy / "node_modules").mkdir()
    (copy / "node_modules" / "expressish").symlink_to(workspace)
    [probe] = resolution.probes(copy, "npm test")
    out = subprocess.run(probe.argv, cwd=copy, capture_output=True, text=True, timeout=60).stdout
    linked = resolution.classify_output(probe, out, copy_seen_at=copy, workspace=workspace)
    assert not linked.ok and linked.packages[0]["where"] == "workspace" and "npm link" in str(linked.remedy)
    # With "exports", the package resolves to itself: the copy.
    (copy / "node_modules" / "expressish").unlink()
    (copy / "package.json").write_text(json.dumps({"name": "expressish", "exports": "./index.js"}))
    out = subprocess.run(probe.argv, cwd=copy, capture_output=True, text=True, timeout=60).stdout
    own = resolution.classify_output(probe, out, copy_seen_at=copy, workspace=workspace)
    assert own.ok and own.packages[0]["path"] == str(copy / "index.js")


def test_a_probe_that_answers_nothing_is_not_ok() -> None:
    probe = resolution.Probe("python", ["python3", "-c", "..."], ["clicky"])
    for output in ("", "Traceback (most recent call last):\nImportError: boom\n", resolution.MARK + "{not json"):
        verdict = resolution.classify_output(probe, output, copy_seen_at=Path("/c"), workspace=Path("/w"))
        assert not verdict.ok and "could not tell where clicky resolve" in str(verdict.reason)


def test_the_project_packages(tmp_path: Path) -> None:
    root = tmp_path / "p"
    for folder in ("src/alpha", "beta", "tests", "docs", ".hidden", "not-a-name"):
        (root / folder).mkdir(parents=True)
        (root / folder / "__init__.py").write_text("")
    (root / "src" / "single.py").write_text("")
    (root / "gamma").mkdir()  # no __init__.py: not a package
    (root / "pyproject.toml").write_text('[project]\nname = "Delta-Kit"\n[tool.setuptools]\npackages = ["omega.sub"]\n'
                                         'py-modules = ["solo"]\n')
    (root / "delta_kit.py").write_text("")
    assert resolution.python_packages(root) == ["omega", "solo", "alpha", "single", "beta", "delta_kit"]
    (root / "pyproject.toml").write_text("not [ toml")
    assert "alpha" in resolution.python_packages(root)
    (root / "package.json").write_text('{"name": "@scope/pkg"}')
    assert resolution.node_packages(root) == ["@scope/pkg"]
    (root / "package.json").write_text('{"name": "$(rm -rf)"}')
    assert resolution.node_packages(root) == []


def test_which_interpreter_a_test_command_runs(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    venv_python = tmp_path / "venv" / "bin" / "python"
    venv_python.parent.mkdir(parents=True)
    venv_python.symlink_to(sys.executable)
    script = bin_dir / "pytest"
    script.write_text(f"#!{venv_python}\nimport pytest\n")
    script.chmod(0o755)
    env_script = bin_dir / "mytests"
    env_script.write_text("#!/usr/bin/env python3\n")
    env_script.chmod(0o755)
    (bin_dir / "python3").symlink_to(sys.executable)
    path = str(bin_dir)
    assert interpreter.interpreter_for("pytest -q", path) == (str(venv_python), True)
    assert interpreter.interpreter_for("PYTHONHASHSEED=0 pytest", path) == (str(venv_python), True)
    assert interpreter.interpreter_for("mytests", path) == (str(bin_dir / "python3"), True)
    assert interpreter.interpreter_for("python3 -m unittest", path) == (str(bin_dir / "python3"), True)
    assert interpreter.interpreter_for("venv/bin/python -m pytest", path, tmp_path) == (str(venv_python), True)
    assert interpreter.interpreter_for("make test", path) == (str(bin_dir / "python3"), False)
    assert interpreter.interpreter_for("py.test", str(tmp_path / "nowhere")) == (None, True)
    assert interpreter.interpreter_for("python3.99 -m pytest", path) == (None, True)
    missing = interpreter.interpreter_report(f"{tmp_path / 'gone' / 'python'} -m pytest")
    assert missing["framework_installed"] is False and "its interpreter is not there" in missing["message"]
    assert interpreter.framework_of("python3 -m pytest -x") == "pytest"
    assert interpreter.framework_of("python -m unittest discover") == "unittest"
    assert interpreter.framework_of("npm test") is None


def test_interpreter_report_checks_the_framework_once(tmp_path: Path) -> None:
    with_pytest = interpreter.interpreter_report(f"{sys.executable} -m pytest", origin="flag")
    assert with_pytest["framework"] == "pytest" and with_pytest["framework_installed"] is True
    bare = _venv(tmp_path / "bare", outer=False)
    without = interpreter.interpreter_report(f"{bare} -m pytest", origin="config.toml")
    assert without["framework_installed"] is False
    assert f"{bare} (which {bare} -m pytest runs) cannot import pytest" in without["message"]
    assert "-m pip install pytest" in without["message"]
    assert interpreter.interpreter_report("python3 -m unittest")["framework_installed"] is True
    other = interpreter.interpreter_report("make test")
    assert other["python_based"] is False and other["framework_installed"] is None
    assert interpreter.interpreter_report(None)["message"].startswith("no test command is known")


def test_doctor_shows_the_interpreter_and_the_framework(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"README.md": "x\n"})
    bare = _venv(tmp_path / "bare", outer=False)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.run([sys.executable, "-m", "autocode", "doctor", "--workspace", str(repo), "--json",
                           "--test-command", f"{bare} -m pytest"], capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr
    section = json.loads(proc.stdout)["test_interpreter"]
    assert section["interpreter"] == str(bare) and section["origin"] == "flag"
    assert section["framework"] == "pytest" and section["framework_installed"] is False
    text = subprocess.run([sys.executable, "-m", "autocode", "doctor", "--workspace", str(repo),
                           "--test-command", f"{bare} -m pytest"], capture_output=True, text=True, env=env).stdout
    assert f"Tests: {bare} -m pytest  (flag)" in text and "pytest: NOT INSTALLED" in text
