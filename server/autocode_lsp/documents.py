"""Files a person reads or fills in from any editor: the plan, the change, the doctor report,
and the forms (answers, plan feedback, a new task's brief, a memory search) that an editor
without a free-text prompt can still offer, because every editor can open and save a file.

Task files live in the task's run folder (`.autocode/runs/<id>/`); the others in
`.autocode/runs/` itself. Both are ignored by the generated `.autocode/.gitignore`.
A form is plain Markdown: a heading per field and, under an HTML comment saying
what to write, the person's text. Only text the person wrote counts: an empty
field (or one left as the comment) is no answer.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from autocode.errors import SetupError
from autocode.record import ensure_gitignore
from autocode.record.location import AUTOCODE_DIR, checked_folder
from autocode.tasks import store
from autocode.tasks.models import AnswerQuestions, ApprovePlan, TaskSnapshot

RUNS_DIR = "runs"
ANSWERS = "answers.md"
FEEDBACK = "feedback.md"
PLAN = "plan.md"
CHANGES = "changes.diff"
NEW_TASK = "new-task.md"
DOCTOR = "doctor.md"
MEMORY_SEARCH = "memory-search.md"
MEMORY_RESULTS = "memory-results.md"
FORM_LIMIT = 64 * 1024
"""A form larger than this is not a person's answer; it is refused whole."""

_FIELD = re.compile(r"^## (?P<title>.*?)\s*$\n(?P<body>.*?)(?=^## |\Z)", re.M | re.S)
_COMMENT = re.compile(r"<!--.*?-->", re.S)
_KEY = re.compile(r"<!--\s*autocode:(?P<key>[A-Za-z0-9_.-]+)")


def runs_folder(workspace: Path) -> Path:
    """`.autocode/runs` of the workspace, made when missing; refuses a `.autocode` that is a
    link or not a plain folder (AutoCode never writes through one)."""
    auto = workspace / AUTOCODE_DIR
    try:
        mode = os.lstat(auto).st_mode
    except FileNotFoundError:
        mode = None
    if mode is not None and not stat.S_ISDIR(mode):
        raise SetupError(
            f"{auto} is a link or a file, not a folder; AutoCode writes only into a plain "
            ".autocode folder: move it away and try again",
            kind="setupError",
        )
    # `.autocode` as a shared folder, `runs` its owner's alone (0700) whatever the umask.
    folder = checked_folder(workspace, RUNS_DIR, create=True)
    ensure_gitignore(workspace, check_hidden=False)
    return folder


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    store.write_text_atomic(path, text, durable=False)
    return path


# ---------------------------------------------------------------------- forms


@dataclass(frozen=True)
class Field:
    key: str
    title: str
    hint: str
    """What to write (shown as a comment under the heading)."""


def render_form(title: str, intro: str, fields: Sequence[Field]) -> str:
    lines = [f"# {title}", "", intro, ""]
    for f in fields:
        lines += [f"## {f.title}", f"<!-- autocode:{f.key} -- {_safe_comment(f.hint)} -->", "", ""]
    return "\n".join(lines)


def read_form(path: Path) -> dict[str, str]:
    """Each field's text as the person wrote it (comments removed, outer blank lines trimmed);
    fields left empty are absent."""
    raw = path.read_bytes()
    if len(raw) > FORM_LIMIT:
        raise SetupError(f"{path.name} is larger than {FORM_LIMIT // 1024} KiB; keep only the answers")
    text = raw.decode("utf-8", errors="replace").replace("\r\n", "\n")
    found: dict[str, str] = {}
    for match in _FIELD.finditer(text):
        body = match.group("body")
        key = _KEY.search(body)
        if key is None:
            continue
        value = _COMMENT.sub("", body).strip("\n").strip()
        if value:
            found[key.group("key")] = value
    return found


def _safe_comment(text: str) -> str:
    return text.replace("--", "- -").replace("\n", " ")


def answers_form(snapshot: TaskSnapshot) -> str:
    questions = snapshot.needs.questions if isinstance(snapshot.needs, AnswerQuestions) else []
    fields = []
    for q in questions:
        hint = "write your answer below this line, then save the file"
        if q.default:
            hint += f" (proposed default: {q.default}; it is not taken unless you write it)"
        fields.append(Field(q.id, q.text, hint))
    intro = (
        f"AutoCode task {snapshot.id} asks what only you can answer. Write each answer under "
        "its question and save; answers you write are recorded as yours and conventions are "
        "remembered verbatim. Leave a question empty to answer it later."
    )
    return render_form(f"Questions: {snapshot.brief}".strip(), intro, fields)


def feedback_form(snapshot: TaskSnapshot) -> str:
    revision = snapshot.needs.plan_revision if isinstance(snapshot.needs, ApprovePlan) else None
    intro = (
        f"Say what should change in plan revision {revision} of task {snapshot.id} and save; "
        "the plan goes back to be planned again with your words. The plan itself is in plan.md "
        "next to this file."
    )
    return render_form(f"Changes to the plan: {snapshot.brief}".strip(), intro, [
        Field("feedback", "What should change", "write your feedback below this line"),
    ])


def new_task_form() -> str:
    intro = (
        "Describe the task and save this file to start it in this repository. AutoCode will ask "
        "what it needs to know and show you a plan before it changes anything."
    )
    return render_form("New AutoCode task", intro, [
        Field("brief", "Brief", "what should be done, in your words"),
    ])


def memory_search_form() -> str:
    intro = "Write what you are looking for and save; the results open in memory-results.md."
    return render_form("Search AutoCode memories", intro, [
        Field("query", "Query", "a few words, e.g. database tests"),
    ])


def memory_results(query: str, memories: Sequence[Mapping[str, Any]]) -> str:
    lines = [f"# Memories for: {query}", ""]
    if not memories:
        lines.append("Nothing found.")
    for m in memories:
        where = m.get("scope", "")
        owner = "team" if m.get("shared") else (m.get("owner") or "you")
        lines += [f"- {m.get('content', '')}", f"  <!-- id {m.get('id')} · {where} · {owner} -->"]
    return "\n".join(lines) + "\n"


def kind_of(workspace: Path, path: Path) -> tuple[str, str | None] | None:
    """Which form `path` is (its file name) and its task id, when it is one of the workspace's
    AutoCode forms; None for any other file."""
    runs = workspace / AUTOCODE_DIR / RUNS_DIR
    try:
        rel = path.relative_to(runs)
    except ValueError:
        return None
    parts = rel.parts
    if len(parts) == 1 and parts[0] in (NEW_TASK, MEMORY_SEARCH):
        return parts[0], None
    if len(parts) == 2 and parts[1] in (ANSWERS, FEEDBACK, PLAN, CHANGES):
        return parts[1], parts[0]
    return None
