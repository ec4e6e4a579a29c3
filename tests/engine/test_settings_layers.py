"""Settings layers: precedence shown by doctor's origins, file errors, immutability, --package."""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from autocode.doctor import build_report
from autocode.errors import UsageError
from autocode.settings import SettingsError, resolve_settings, trust_repository
from support import write_files

# test_command can come from every layer; each writer puts a distinct value in one layer.
LAYERS = ("flag", "config", "pyproject", "learned", "detected")
VALUES = {
    "flag": "make check-flag",
    "config": "make check-config",
    "pyproject": "make check-pyproject",
    "learned": "python3 -m unittest discover -s tests -t .",
    "detected": "python3 -m pytest",
}
SOURCES = {
    "flag": "--test-command",
    "config": ".autocode/config.toml",
    "pyproject": "pyproject.toml",
    "learned": ".autocode/project.json",
    "detected": "pytest.ini",
}


def _build(root: Path, layers: set[str]) -> dict[str, str | None]:
    files: dict[str, str] = {}
    if "config" in layers:
        files[".autocode/config.toml"] = f'test_command = "{VALUES["config"]}"\n'
    if "pyproject" in layers:
        files["pyproject.toml"] = f'[project]\nname = "x"\n\n[tool.autocode]\ntest_command = "{VALUES["pyproject"]}"\n'
    if "learned" in layers:
        record = {"version": 1, "framework": "unittest", "test_command": VALUES["learned"]}
        files[".autocode/project.json"] = json.dumps(record)
    if "detected" in layers:
        files["pytest.ini"] = "[pytest]\n"
    write_files(root, files)
    return {"test_command": VALUES["flag"] if "flag" in layers else None}


@pytest.mark.parametrize(("high", "low"), list(itertools.combinations(LAYERS, 2)))
def test_higher_layer_wins_for_every_pair(tmp_path: Path, high: str, low: str) -> None:
    flags = _build(tmp_path, {high, low})
    item = build_report(tmp_path, flags=flags)["settings"]["test_command"]
    assert (item["origin"], item["source"], item["value"]) == (high, SOURCES[high], VALUES[high])
    assert item["shadowed"] == [{"value": VALUES[low], "origin": low, "source": SOURCES[low]}]


@pytest.mark.parametrize("high", ["flag", "config", "pyproject"])
def test_explicit_layers_win_over_the_default(tmp_path: Path, high: str) -> None:
    write_files(
        tmp_path,
        {
            ".autocode/config.toml": "test_timeout = 30\n" if high == "config" else "",
            "pyproject.toml": "[tool.autocode]\ntest_timeout = 40\n" if high == "pyproject" else "",
        },
    )
    flags = {"test_timeout": "20"} if high == "flag" else None
    item = build_report(tmp_path, flags=flags)["settings"]["test_timeout"]
    assert item["origin"] == high
    assert item["value"] == {"flag": 20, "config": 30, "pyproject": 40}[high]
    assert item["shadowed"] == [{"value": 600, "origin": "default", "source": "built-in"}]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sets(st.sampled_from(LAYERS)))
def test_highest_present_layer_wins_property(layers: set[str]) -> None:
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        flags = _build(root, layers)
        snapshot = resolve_settings(root, flags=flags)
        item = snapshot["test_command"]
        present = [layer for layer in LAYERS if layer in layers]
        if not present:
            assert (item.value, item.origin) == (None, "default")
            return
        assert (item.origin, item.value) == (present[0], VALUES[present[0]])
        assert [s.origin for s in item.shadowed] == present[1:]
        assert [s.value for s in item.shadowed] == [VALUES[p] for p in present[1:]]


def test_snapshot_is_immutable_and_unaffected_by_later_edits(tmp_path: Path) -> None:
    write_files(tmp_path, {".autocode/config.toml": 'test_command = "make a"\n[routes]\nplanner = "fixture:m1"\n'})
    snapshot = resolve_settings(tmp_path)
    (tmp_path / ".autocode/config.toml").write_text('test_command = "make b"\n')
    assert snapshot.value("test_command") == "make a"
    with pytest.raises(TypeError):
        snapshot.value("routes")["planner"] = "other:m2"  # type: ignore[index]
    with pytest.raises(AttributeError):
        snapshot.warnings = ()  # type: ignore[misc]
    with pytest.raises(TypeError):
        snapshot.values["model"] = None  # type: ignore[index]
    assert snapshot.to_dict()["routes"]["value"] == {"planner": "fixture:m1"}
    with pytest.raises(KeyError, match="unknown setting"):
        snapshot["no_such_setting"]


def test_every_declared_setting_is_resolved(tmp_path: Path) -> None:
    names = set(resolve_settings(tmp_path).to_dict())
    assert names == {
        "test_command", "framework", "test_timeout", "provider", "model", "base_url", "api_key_env",
        "routes", "agent", "memory_max_count", "database_url", "memory_path", "embedding_provider",
        "embedding_model", "embedding_base_url", "embedding_api_key_env", "keep_prep_copies",
        "max_turns", "token_budget", "time_budget", "edit_format", "reading_roles", "api_version", "deployment",
        "request_timeout", "endpoint_family", "temperature", "response_format", "max_output_tokens",
        "context_window", "stream",
        "engine", "engine_model", "engine_base_url", "engine_api_key_env", "engine_idle_timeout",
        "sandbox", "sandbox_network", "sandbox_env",
    }  # fmt: skip


def test_learned_record_supplies_only_framework_and_test_command(tmp_path: Path) -> None:
    record = {
        "version": 1,
        "framework": "unittest",
        "test_command": "python3 -m unittest discover -s tests -t .",
        "routes": [{"role": "planner", "provider": "openai", "model": "m"}],
    }
    write_files(tmp_path, {".autocode/project.json": json.dumps(record)})
    snapshot = resolve_settings(tmp_path)
    assert snapshot["framework"].origin == "learned"
    assert snapshot["test_command"].origin == "learned"
    assert snapshot["provider"].origin == "default"
    assert snapshot["routes"].value == {}


def test_invalid_record_is_ignored_with_a_warning(tmp_path: Path) -> None:
    write_files(tmp_path, {".autocode/project.json": '{"version": 1, "test_command": 5}', "pytest.ini": ""})
    snapshot = resolve_settings(tmp_path)
    assert snapshot["test_command"].origin == "detected"
    assert snapshot.record is not None and snapshot.record.status == "invalid"
    assert any("invalid and was ignored" in w for w in snapshot.warnings)


def test_package_run_ignores_learned_command_and_detects_in_the_package(tmp_path: Path) -> None:
    record = {"version": 1, "framework": "unittest", "test_command": "python3 -m unittest discover -s tests -t ."}
    write_files(
        tmp_path,
        {
            ".autocode/project.json": json.dumps(record),
            ".autocode/config.toml": "test_timeout = 9\n",
            "packages/web/package.json": json.dumps({"scripts": {"test": "vitest run"}}),
        },
    )
    snapshot = resolve_settings(tmp_path, package="packages/web")
    assert snapshot["test_command"].value == "npm test"
    assert snapshot["test_command"].origin == "detected"
    assert snapshot["test_command"].source == "packages/web/package.json"
    assert all(s.origin != "learned" for s in snapshot["test_command"].shadowed)
    assert snapshot["test_timeout"].origin == "config"  # explicit project files still apply
    whole = resolve_settings(tmp_path)
    assert whole["test_command"].origin == "learned"


def test_package_outside_the_workspace_is_refused(tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir()
    (tmp_path / "other").mkdir()
    with pytest.raises(UsageError, match="outside the workspace"):
        resolve_settings(tmp_path / "ws", package="../other")
    with pytest.raises(UsageError, match="not a directory"):
        resolve_settings(tmp_path / "ws", package="missing")


def _doctor(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "autocode", "doctor", *args], capture_output=True, text=True)


def test_malformed_toml_names_file_and_line(tmp_path: Path) -> None:
    write_files(tmp_path, {".autocode/config.toml": 'provider = "fixture"\ntest_timeout = \n'})
    proc = _doctor("--workspace", str(tmp_path))
    assert proc.returncode == 2
    assert ".autocode/config.toml" in proc.stderr and "line 2" in proc.stderr
    with pytest.raises(SettingsError) as info:
        resolve_settings(tmp_path)
    assert info.value.data == {"file": ".autocode/config.toml", "line": 2}


def test_malformed_pyproject_names_file_and_line(tmp_path: Path) -> None:
    write_files(tmp_path, {"pyproject.toml": "[project]\nname = 'x'\n[tool.autocode\n"})
    proc = _doctor("--workspace", str(tmp_path), "--json")
    assert proc.returncode == 2
    assert "pyproject.toml: line 3" in proc.stderr
    assert json.loads(proc.stdout)["error"]["kind"] == "settingsError"


@pytest.mark.parametrize(
    ("content", "key", "expected"),
    [
        ('test_timeout = "ten"\n', "test_timeout", "an integer"),
        ("test_command = 3\n", "test_command", "a string"),
        ('embedding_provider = "magic"\n', "embedding_provider", "one of 'auto', 'none', 'static' or 'openai'"),
        ("memory_max_count = 0\n", "memory_max_count", "greater than 0"),
        ('[routes]\nplanner = "no-colon"\n', "routes.planner", '"provider:model"'),
        ("test_timeout = true\n", "test_timeout", "an integer"),
        ('test_command = ""\n', "test_command", "a non-empty string"),
    ],
)
def test_wrong_type_names_file_key_and_expected_type(tmp_path: Path, content: str, key: str, expected: str) -> None:
    write_files(tmp_path, {".autocode/config.toml": content})
    proc = _doctor("--workspace", str(tmp_path))
    assert proc.returncode == 2
    assert ".autocode/config.toml" in proc.stderr
    assert f"'{key}'" in proc.stderr
    assert expected in proc.stderr


def test_wrong_type_in_pyproject_names_the_table(tmp_path: Path) -> None:
    write_files(tmp_path, {"pyproject.toml": "[tool.autocode]\nmodel = 4\n"})
    with pytest.raises(SettingsError, match=r"pyproject.toml \[tool.autocode\]: setting 'model' must be a string"):
        resolve_settings(tmp_path)


def test_unknown_key_is_a_doctor_warning_not_a_crash(tmp_path: Path) -> None:
    write_files(
        tmp_path,
        {
            ".autocode/config.toml": 'test_comand = "typo"\ntest_command = "make t"\n',
            "pyproject.toml": "[tool.autocode]\nflavour = 1\n",
        },
    )
    proc = _doctor("--workspace", str(tmp_path), "--json")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["settings"]["test_command"]["value"] == "make t"
    assert any("test_comand" in w and ".autocode/config.toml" in w for w in report["warnings"])
    assert any("flavour" in w and "pyproject.toml" in w for w in report["warnings"])
    text = _doctor("--workspace", str(tmp_path)).stdout
    assert "Warning:" in text and "test_comand" in text


def test_flag_values_are_typed_and_unknown_flags_refused(tmp_path: Path) -> None:
    with pytest.raises(SettingsError, match="command line: setting 'test_timeout'"):
        resolve_settings(tmp_path, flags={"test_timeout": "soon"})
    with pytest.raises(UsageError, match="unknown setting"):
        resolve_settings(tmp_path, flags={"colour": "red"})


def test_url_passwords_are_masked_in_reports_but_usable(tmp_path: Path) -> None:
    url = "postgresql://team:" + "hunter" + "2x@127.0.0.1:5432/memories"
    write_files(tmp_path, {".autocode/config.toml": f'database_url = "{url}"\n'})
    untrusted = resolve_settings(tmp_path)
    assert untrusted.value("database_url") is None
    assert [i.to_dict()["value"] for i in untrusted.ignored] == ["postgresql://team:***@127.0.0.1:5432/memories"]
    trust_repository(tmp_path)
    snapshot = resolve_settings(tmp_path)
    assert snapshot.value("database_url") == url
    assert snapshot.to_dict()["database_url"]["value"] == "postgresql://team:***@127.0.0.1:5432/memories"


def _files(root: Path) -> list[tuple[str, bytes]]:
    return sorted((p.relative_to(root).as_posix(), p.read_bytes() if p.is_file() else b"") for p in root.rglob("*"))


@pytest.mark.parametrize(
    ("files", "words"),
    [
        ({"pyproject.toml": "[tool]\nautocode = 5\n"}, "pyproject.toml [tool.autocode] must be a table of settings"),
        ({".autocode/config.toml": b"model = '\xff'\n"}, ".autocode/config.toml is not UTF-8 text"),
        ({".autocode/config.toml/x": ""}, ".autocode/config.toml is a directory"),
    ],
    ids=["tool.autocode not a table", "config not UTF-8", "config is a folder"],
)
def test_unusable_settings_files_are_named_and_left_alone(
    tmp_path: Path, files: dict[str, str | bytes], words: str
) -> None:
    write_files(tmp_path, files)
    before = _files(tmp_path)
    proc = _doctor("--workspace", str(tmp_path))
    assert proc.returncode == 2
    assert words in proc.stderr
    assert _files(tmp_path) == before


def test_a_provider_timeout_by_another_name_points_at_request_timeout(tmp_path: Path) -> None:
    write_files(tmp_path, {".autocode/config.toml": "timeout = 180\n"})
    snapshot = resolve_settings(tmp_path)
    assert any("unknown setting 'timeout' is ignored; did you mean request_timeout?" in w for w in snapshot.warnings)
    assert snapshot.value("request_timeout") == 120.0
    write_files(tmp_path, {".autocode/config.toml": "request_timeout = 180\n"})
    assert resolve_settings(tmp_path).value("request_timeout") == 180.0
