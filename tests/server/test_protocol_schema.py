"""One schema for the editors: docs/protocol.schema.json, the extension's TypeScript types and
the Neovim plugin's LuaLS classes are generated from the protocol's models (its dataclasses
and the engine's typed task results), are not
stale, agree with what the server accepts, and are used by both editors.

Regenerate with `.venv/bin/python scripts/gen_protocol_types.py`.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from autocode_lsp import protocol
from autocode_lsp.protocol import schema

ROOT = Path(__file__).resolve().parents[2]
GENERATED = schema.generated()


@pytest.mark.parametrize("rel", sorted(GENERATED))
def test_generated_file_is_current(rel: str) -> None:
    path = ROOT / rel
    assert path.read_text(encoding="utf-8") == GENERATED[rel], (
        f"{rel} is stale: run .venv/bin/python scripts/gen_protocol_types.py"
    )


def test_generator_check_mode_reports_a_stale_file(tmp_path: Path) -> None:
    script = ROOT / "scripts" / "gen_protocol_types.py"
    ok = subprocess.run([sys.executable, str(script), "--check"], capture_output=True, text=True, cwd=ROOT)
    assert ok.returncode == 0, ok.stderr
    # A copy of the script in a tree without the generated files: every file is stale.
    (tmp_path / "scripts").mkdir()
    (tmp_path / "scripts" / "gen_protocol_types.py").write_text(script.read_text(encoding="utf-8"))
    stale = subprocess.run([sys.executable, str(tmp_path / "scripts" / "gen_protocol_types.py"), "--check"],
                           capture_output=True, text=True)
    assert stale.returncode == 1 and "docs/protocol.schema.json" in stale.stderr
    assert not (tmp_path / "docs").exists()  # --check writes nothing


# --------------------------------------------------------------------------- the schema says what the server accepts

DOC = schema.json_schema()


def _errors(value: Any, node: dict[str, Any], where: str = "$") -> list[str]:
    """A validator for the subset of JSON Schema the generator writes."""
    if "$ref" in node:
        return _errors(value, DOC["$defs"][node["$ref"].rsplit("/", 1)[1]], where)
    if "anyOf" in node:
        options = [_errors(value, n, where) for n in node["anyOf"]]
        return [] if any(not o for o in options) else [f"{where}: matches no alternative"]
    if "oneOf" in node:
        options = [_errors(value, n, where) for n in node["oneOf"]]
        fits = [o for o in options if not o]
        return [] if len(fits) == 1 else [f"{where}: matches {len(fits)} alternatives, not one"]
    if "enum" in node:
        return [] if value in node["enum"] else [f"{where}: {value!r} not in {node['enum']}"]
    kind = node.get("type")
    checks = {"string": str, "boolean": bool, "array": list, "object": dict}
    if kind == "null" and value is not None:
        return [f"{where}: not null"]
    if kind in ("integer", "number"):
        ok = isinstance(value, int) if kind == "integer" else isinstance(value, (int, float))
        return [] if ok and not isinstance(value, bool) else [f"{where}: not a {kind}"]
    if kind in checks and not isinstance(value, checks[kind]):
        return [f"{where}: not a {kind}"]
    out: list[str] = []
    if kind == "array":
        for i, item in enumerate(value):
            out += _errors(item, node["items"], f"{where}[{i}]")
    if kind == "object":
        props = node.get("properties")
        if props is not None:
            out += [f"{where}.{k}: required" for k in node["required"] if k not in value]
            out += [f"{where}.{k}: unknown" for k in value if k not in props]
            for k, v in value.items():
                if k in props:
                    out += _errors(v, props[k], f"{where}.{k}")
        elif "additionalProperties" in node:
            for k, v in value.items():
                out += _errors(v, node["additionalProperties"], f"{where}.{k}")
    return out


def test_every_example_of_the_protocol_fits_its_schema_and_is_accepted() -> None:
    checked = 0
    for spec in protocol.COMMANDS:
        if spec.example is not None:
            assert _errors(dict(spec.example), DOC["commands"][spec.name]["arguments"]) == [], spec.name
            protocol.parse_arguments(spec, [dict(spec.example)])
            checked += 1
    for method in protocol.METHODS:
        if method.example is not None:
            assert _errors(dict(method.example), DOC["methods"][method.name]["params"]) == [], method.name
            protocol.structure(dict(method.example), method.params, what=method.name)
            checked += 1
    assert checked >= 3


def _snapshot(needs: Any, state: str) -> Any:
    return protocol.TaskSnapshot(
        id="t-1", workspace="/w", brief="b", state=state, phase="requirements", revision=2,
        needs=needs, done=False, result=None, error=None, learning=None, run_dir="/w/.autocode/runs/t-1",
        copy_=None, plan_revision=1, human_pause_states=[], created="2026-01-01T00:00:00Z",
        updated="2026-01-01T00:00:00Z",
    )


NEEDS = {
    "WORKING": lambda: protocol.NoNeeds(),
    "WAITING_FOR_USER": lambda: protocol.AnswerQuestions(questions=[protocol.Question(
        id="q1", text="Which style?", category=None, convention="naming", default="snake", choices=["snake"])]),
    "WAITING_FOR_PLAN_APPROVAL": lambda: protocol.ApprovePlan(
        plan_revision=1, plan=protocol.Plan(summary="s", steps=["one"]), markdown="# Plan", plan_uri=None),
    "WAITING_FOR_COMPLETION_APPROVAL": lambda: protocol.ApproveCompletion(
        diff="", files=["a.py"], tests=None, review=None,
        head_moved=protocol.HeadMoved(from_="a", to="b"),
        apply=protocol.ApplyResult(status="not_applied", applied=False, message="refused")),
    "WAITING_FOR_CONFLICT_RESOLUTION": lambda: protocol.ResolveConflicts(
        conflicts=[protocol.Conflict(path="a.py", reason="overlap", hunks=[protocol.ConflictHunk(
            mine_start=1, mine_lines=1, theirs_start=1, theirs_lines=1)])],
        files=["a.py"], apply=protocol.ApplyResult(status="conflicts", applied=False, conflicts=["a.py"], message="m")),
}


@pytest.mark.parametrize("state", sorted(NEEDS))
def test_what_the_server_sends_fits_the_schema(state: str) -> None:
    snap = _snapshot(NEEDS[state](), state)
    wire = protocol.to_wire(protocol.TaskDidChangeParams(task=snap, revision=2))
    assert _errors(wire, DOC["methods"][protocol.TASK_DID_CHANGE]["params"]) == []
    assert "headMoved" not in json.dumps(wire) or state == "WAITING_FOR_COMPLETION_APPROVAL" or \
        state == "WAITING_FOR_CONFLICT_RESOLUTION"
    # and the validator is not blind: the snake_case spelling the editors used to accept is not the wire's
    wire["task"]["plan_revision"] = 1
    assert _errors(wire, DOC["methods"][protocol.TASK_DID_CHANGE]["params"]) == ["$.task.plan_revision: unknown"]


def test_a_needs_of_one_kind_with_another_kinds_field_fits_no_alternative() -> None:
    wire = protocol.to_wire(_snapshot(NEEDS["WAITING_FOR_USER"](), "WAITING_FOR_USER"))
    wire["needs"]["planRevision"] = 1
    assert _errors(wire, DOC["$defs"]["TaskSnapshot"]) == ["$.needs: matches 0 alternatives, not one"]
    wire = protocol.to_wire(_snapshot(NEEDS["WAITING_FOR_USER"](), "WAITING_FOR_USER"))
    assert wire["needs"]["questions"][0]["choices"] == ["snake"] and "plan_revision" not in json.dumps(wire)
    assert wire["planRevision"] == 1 and wire["copy"] is None and wire["runDir"]


def test_the_cli_json_is_the_same_snapshot_the_editors_get(tmp_path: Path) -> None:
    """`autocode task ... --json` prints the engine's model dump: at each pause it fits the
    schema's TaskSnapshot (camelCase, the needs of its kind and nothing else)."""
    from support.tasks import NAMING_ANSWER, autocode_json, build_sample

    repo, patch = build_sample("unittest", tmp_path / "textkit")
    ws = str(repo)
    rc, snap = autocode_json("task", "start", "--workspace", ws, "--brief", f"Add longest_word via {patch}")
    seen = []
    for _ in range(3):
        assert rc == 0, snap
        assert _errors(snap, DOC["$defs"]["TaskSnapshot"]) == [], snap["needs"]["kind"]
        kind = snap["needs"]["kind"]
        seen.append(kind)
        if kind == "answer_questions":
            rc, snap = autocode_json("task", "answer", "--workspace", ws, snap["id"], "test-naming", NAMING_ANSWER)
        elif kind == "approve_plan":
            assert set(snap["needs"]) == {"kind", "planRevision", "plan", "markdown", "planUri"}
            rc, snap = autocode_json("task", "approve", "--workspace", ws, snap["id"],
                                     "--revision", str(snap["needs"]["planRevision"]))
    assert seen == ["answer_questions", "approve_plan", "approve_completion"]
    rc, listed = autocode_json("task", "list", "--workspace", ws)
    assert _errors(listed, DOC["commands"][protocol.TASK_LIST]["result"]) == []


def test_schema_names_every_command_method_and_error_kind() -> None:
    assert list(DOC["commands"]) == [c.name for c in protocol.COMMANDS]
    assert list(DOC["methods"]) == [m.name for m in protocol.METHODS]
    assert set(DOC["$defs"]["ErrorKind"]["enum"]) == {
        e.kind for e in (*protocol.ERROR_KINDS, *protocol.REMOTE_ERROR_KINDS)
    }
    start = DOC["$defs"]["TaskStartArgs"]
    assert start["required"] == ["brief"] and "testCommand" in start["properties"]


# --------------------------------------------------------------------------- the editors use them


def test_vscode_task_model_imports_the_generated_types() -> None:
    text = (ROOT / "editors/vscode/src/model/tasks.ts").read_text(encoding="utf-8")
    assert re.search(r"import type \{[^}]*\bTaskSnapshot\b[^}]*\} from '\.\./generated/protocol'", text)


def test_nvim_annotations_name_generated_classes() -> None:
    defined = set(re.findall(r"---@(?:class|alias) (autocode\.\w+)",
                             GENERATED[schema.LUA_PATH]))
    used: set[str] = set()
    for path in (ROOT / "editors/nvim/lua/autocode").glob("*.lua"):
        if path.name != "protocol_types.lua":
            used |= set(re.findall(r"---@(?:param|return|type)[^\n]*?(autocode\.[A-Z]\w+)",
                                   path.read_text(encoding="utf-8")))
    assert "autocode.TaskSnapshot" in used
    assert used <= defined, sorted(used - defined)


def test_schema_file_is_json() -> None:
    assert json.loads((ROOT / schema.SCHEMA_PATH).read_text(encoding="utf-8"))["protocolVersion"] == \
        protocol.PROTOCOL_VERSION
