"""Leftovers of a new-user trial of the CLI, each through the real CLI on a real sample repository."""

from __future__ import annotations

from pathlib import Path

from support.tasks import NAMING_ANSWER, autocode, autocode_json, build_sample


def _awaiting_completion(tmp_path: Path) -> tuple[str, str]:
    repo, patch = build_sample("pytest", tmp_path / "shop")
    ws = str(repo)
    rc, snap = autocode_json("task", "start", "--workspace", ws, "--brief", f"Add total_with_tax. Patch: {patch}")
    assert rc == 0, snap
    task_id = snap["id"]
    rc, snap = autocode_json("task", "answer", "--workspace", ws, task_id, "test-naming", NAMING_ANSWER)
    rc, snap = autocode_json("task", "approve", "--workspace", ws, task_id, "--revision", str(snap["needs"]["planRevision"]))
    assert rc == 0 and snap["needs"]["kind"] == "approve_completion", snap
    return ws, task_id


def test_approving_completion_without_a_terminal_shows_the_diff_first(tmp_path: Path) -> None:
    ws, task_id = _awaiting_completion(tmp_path)
    proc = autocode("task", "approve-completion", "--workspace", ws, task_id)  # stdin is not a terminal
    assert proc.returncode == 0, proc.stderr
    assert "Approving this change" in proc.stderr and "Verdict:" in proc.stderr
    assert "+def total_with_tax" in proc.stderr or "total_with_tax" in proc.stderr.split("Changes:", 1)[1]
    assert f"autocode task show --workspace {ws} {task_id}" in proc.stderr
    assert "COMPLETED" in proc.stdout


def test_resolving_with_conflict_markers_names_the_files_and_how_to_finish(tmp_path: Path) -> None:
    repo, patch = build_sample("unittest", tmp_path / "textkit")
    ws, words = str(repo), "textkit/words.py"
    rc, snap = autocode_json("task", "start", "--workspace", ws, "--brief", f"via {patch}", "--scenario", "no-questions")
    assert rc == 0, snap
    task_id = snap["id"]
    rc, snap = autocode_json("task", "approve", "--workspace", ws, task_id, "--revision", str(snap["needs"]["planRevision"]))
    assert snap["needs"]["kind"] == "approve_completion", snap
    path = repo / words
    path.write_text(path.read_text() + "\n\ndef longest_word(text):\n    return 'mine'\n")
    rc, snap = autocode_json("task", "approve-completion", "--workspace", ws, task_id)
    assert snap["needs"]["kind"] == "resolve_conflicts", snap
    proc = autocode("task", "resolve", "--workspace", ws, task_id, f"{words}=markers")
    assert proc.returncode == 0, proc.stderr
    assert "<<<<<<< mine" in path.read_text()
    assert f"conflict markers left in: {words}" in proc.stdout, proc.stdout
    assert f"autocode verify --workspace {ws}" in proc.stdout


def test_a_typo_in_config_toml_is_named_at_task_start_with_the_closest_key(tmp_path: Path) -> None:
    import json

    repo, patch = build_sample("pytest", tmp_path / "shop")
    (repo / ".autocode").mkdir(exist_ok=True)
    (repo / ".autocode" / "config.toml").write_text('modle = "x"\n', encoding="utf-8")
    ws = str(repo)
    proc = autocode("task", "start", "--workspace", ws, "--brief", f"Add total_with_tax. Patch: {patch}", "--json")
    assert proc.returncode == 0, proc.stderr
    snap = json.loads(proc.stdout)
    [warning] = [w for w in snap["warnings"] if "modle" in w]
    assert "did you mean model?" in warning
    assert "unknown setting 'modle'" in proc.stderr and "did you mean model?" in proc.stderr
    text = autocode("task", "start", "--workspace", ws, "--brief", f"Again. Patch: {patch}")
    assert text.returncode == 0, text.stderr
    assert "warning:" in text.stderr and "'modle'" in text.stderr and "did you mean model?" in text.stderr


def test_verify_json_uses_the_same_camel_case_as_task_show(tmp_path: Path) -> None:
    import json

    repo, _patch = build_sample("pytest", tmp_path / "shop")
    pricing = repo / "shop" / "pricing.py"
    pricing.write_text(pricing.read_text() + "# a note\n", encoding="utf-8")
    proc = autocode("verify", "--workspace", str(repo), "--json", timeout=300)
    data = json.loads(proc.stdout)
    assert "alreadyFailing" in data and "testFiles" in data and "already_failing" not in data, data
    assert data["runs"] and "exitCode" in data["runs"][0] and "perTest" in data["runs"][0]

    def snake(value: object) -> list[str]:
        if isinstance(value, dict):
            return [k for k in value if "_" in k and k != "counts"] + [s for v in value.values() for s in snake(v)]
        return [s for v in value for s in snake(v)] if isinstance(value, list) else []

    assert snake({k: v for k, v in data.items() if k != "runs"} | {"runs": [
        {k: v for k, v in run.items() if k != "counts"} for run in data["runs"]]}) == []
