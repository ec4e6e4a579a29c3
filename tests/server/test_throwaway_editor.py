"""Adding an editor is one module: a throwaway one drives a whole task from the schema alone.

`tests/throwaway/mini_editor.py` is an editor written only against
`docs/protocol.schema.json` (no AutoCode code, no casing tolerance, no
normaliser). It runs a task on a real repository through the real server
process: the question is answered by typing, the plan approved, the
completion approved, and every message both ways is checked against the
schema. A snapshot field the schema does not declare fails the test.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from test_server_tasks_flow import BRIEF, NAMING_ANSWER, TEST_COMMAND, build_repo

from support.lsp import child_env, server_command
from throwaway.mini_editor import MiniEditor, SchemaError, Shapes

pytest.importorskip("jsonschema", reason="the throwaway editor checks shapes with jsonschema (the dev extra)")


async def test_a_schema_only_editor_runs_a_whole_task(tmp_path: Path) -> None:
    repo = build_repo(tmp_path / "project")
    questions: list[dict[str, Any]] = []
    reviews: list[dict[str, Any]] = []

    def answer(params: dict[str, Any]) -> dict[str, Any]:
        questions.append(params)
        return {"answer": NAMING_ANSWER, "how": "typed"}

    def review(params: dict[str, Any]) -> dict[str, Any]:
        reviews.append(params)
        return {"decision": "approve"}

    editor = await MiniEditor.open(server_command(tmp_path / "lsp.log"), child_env(), repo, answer, review)
    try:
        started = await editor.command("autocode.task.start", {
            "brief": BRIEF, "workspace": str(repo), "testCommand": TEST_COMMAND})
        task_id = started["id"]
        for _ in range(1200):
            if any(s["needs"]["kind"] == "approve_completion" for s in editor.snapshots) or editor.problems:
                break
            await asyncio.sleep(0.1)
        assert editor.problems == []
        assert [q["question"]["id"] for q in questions] == ["test-naming"]
        assert len(reviews) == 1 and reviews[0]["taskId"] == task_id
        done = await editor.command("autocode.task.approveCompletion", {"taskId": task_id})
        assert done["state"] == "COMPLETED" and done["result"] is not None
        assert "goodbye" in (repo / "greet.py").read_text(encoding="utf-8")
        # The completed snapshot, phase results included, is exactly what the schema declares.
        assert editor.problems == []
        listed = await editor.command("autocode.task.list", {"workspace": str(repo)})
        assert task_id in [t["id"] for t in listed["tasks"]]
    finally:
        await editor.close()


def test_the_editor_refuses_a_field_the_schema_does_not_declare() -> None:
    """The check the editor relies on fails on a stray (snake_case) key: it cannot pass vacuously."""
    shapes = Shapes()
    params = {"taskId": "t-1", "revision": 1, "planRevision": 1, "plan": "# Plan", "planUri": None}
    shapes.method("autocode/task/reviewPlan", "params", params)
    with pytest.raises(SchemaError, match="plan_revision"):
        shapes.method("autocode/task/reviewPlan", "params", {**params, "plan_revision": 1})
    with pytest.raises(SchemaError):
        shapes.command("autocode.task.start", "arguments", {"brief": 3})
