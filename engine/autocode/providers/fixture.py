"""The offline, deterministic provider: a scenario script plays every role.

A scenario (JSON, see fixtures/providers/) lists the questions to ask, the
decisions the "model" takes on its own, the plan steps, an optional scripted
edit and optional memory saves. Reports cite the paths the prep part's
citations helper selects. The implementer applies the patch file the brief
names (any `*.patch`/`*.diff` path that exists in the copy) and falls back to
the scripted edit.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from autocode import diffnames
from autocode.providers.base import (
    Implementation,
    MachineDecision,
    Plan,
    ProviderContext,
    ProviderError,
    Question,
    RequirementsReport,
    Review,
    clean_lessons,
)
from autocode.remedy import Advice, Remedy, RemedyKind

TEST_NAMING_QUESTION = "Which naming convention should future repository tests follow?"

# The built-in scenario, used when none is named. It ships inside the package
# so an installed AutoCode works offline without the repository's fixtures/.
DEFAULT_SCENARIO: dict[str, Any] = {
    "name": "default",
    "questions": [
        {
            "id": "test-naming",
            "text": TEST_NAMING_QUESTION,
            "category": "other",
            "convention": "test-naming",
            "default": "Name tests after the behaviour they check.",
        }
    ],
    "plan_steps": [
        "Read the cited files and the brief.",
        "Make the change in the prep copy.",
        "Add or update tests following the project's test naming convention.",
        "Run the project's test command in the copy.",
    ],
}

# The pilot coordinator's default: it asks nothing, and its requirements cite
# the declared inputs and the brief, so a pilot run stops at plan approval.
PILOT_SCENARIO: dict[str, Any] = {
    "name": "pilot",
    "questions": [],
    "cite_inputs": True,
    "acceptance_criteria": [
        "The change does what the brief asks.",
        "Every declared input stays as the manifest records it.",
    ],
    "plan_steps": [
        "Read the brief, the declared inputs and the cited files.",
        "Make the change in the prep copy.",
        "Run the project's test command in the copy.",
    ],
}

BUILTIN_SCENARIOS = {"default": DEFAULT_SCENARIO, "pilot": PILOT_SCENARIO}

PATCH_PATH = re.compile(r"(?<![\w./-])([\w][\w./-]*\.(?:patch|diff))\b")


def scenario_dirs() -> list[Path]:
    """Where named scenarios are looked up: the repository's fixtures/providers/."""
    root = Path(__file__).resolve().parents[3]
    return [root / "fixtures" / "providers"]


def load_scenario(name_or_path: str | None) -> dict[str, Any]:
    """The scenario script for a name (fixtures/providers/<name>.json) or a path; None is the default."""
    if not name_or_path or name_or_path in BUILTIN_SCENARIOS:
        copied: dict[str, Any] = json.loads(json.dumps(BUILTIN_SCENARIOS[name_or_path or "default"]))
        return copied
    candidates = [Path(name_or_path)]
    candidates += [d / f"{name_or_path}.json" for d in scenario_dirs()]
    for path in candidates:
        if path.is_file():
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError) as exc:
                raise ProviderError(f"the fixture scenario {path} is not valid JSON: {exc}") from exc
            if not isinstance(data, dict):
                raise ProviderError(f"the fixture scenario {path} must be a JSON object")
            data.setdefault("name", path.stem)
            return data
    known = sorted(p.stem for d in scenario_dirs() if d.is_dir() for p in d.glob("*.json"))
    raise ProviderError(
        f"no fixture scenario named {name_or_path!r}; use a path to a JSON file or one of: "
        + ", ".join([*BUILTIN_SCENARIOS, *known])
    )


class FixtureProvider:
    """Plays a scenario script; never touches the network."""

    name = "fixture"

    def __init__(self, scenario: dict[str, Any], model: str | None = None) -> None:
        self.scenario = scenario
        self.model: str | None = model or f"scenario:{scenario.get('name', 'default')}"

    def _fail_if_scripted(self, role: str) -> None:
        if self.scenario.get("fail_role") == role:
            raise ProviderError(f"the fixture scenario fails the {role} role on purpose")

    def requirements(self, ctx: ProviderContext) -> RequirementsReport:
        self._fail_if_scripted("requirements")
        known = {c.get("question", "") for c in ctx.project_conventions}
        questions = [Question.from_dict(q) for q in self.scenario.get("questions", [])]
        # Questions the project data already answers are still returned: the
        # runner drops them from what is asked and records that it did.
        reused = [q.id for q in questions if q.convention and q.text in known]
        decisions = [MachineDecision.from_dict(d) for d in self.scenario.get("machine_decisions", [])]
        summary = f"Task: {ctx.brief.strip().splitlines()[0] if ctx.brief.strip() else '(empty brief)'}"
        if reused:
            summary += f" (project data already answers: {', '.join(reused)})"
        criteria = [str(c) for c in self.scenario.get("acceptance_criteria", [])]
        criteria.append("The project's test command passes in the copy.")
        cites = list(ctx.citations)
        if self.scenario.get("cite_inputs"):
            cites = list(dict.fromkeys([*ctx.inputs, "brief", *cites]))
        return RequirementsReport(
            summary=summary,
            questions=questions,
            acceptance_criteria=criteria,
            citations=cites,
            machine_decisions=decisions,
        )

    def plan(self, ctx: ProviderContext, requirements: RequirementsReport) -> Plan:
        self._fail_if_scripted("planner")
        steps = [str(s) for s in self.scenario.get("plan_steps", DEFAULT_SCENARIO["plan_steps"])]
        patch = self._declared_patch(ctx)
        if patch is not None:
            steps.insert(1, f"Apply the declared patch {patch}.")
        if ctx.feedback:
            steps.append(f"Address the reviewer's feedback: {ctx.feedback[-1]}")
        cites = list(requirements.citations)
        cites += [f"answer:{a['question_id']}" for a in ctx.answers]
        return Plan(
            summary=requirements.summary,
            steps=steps,
            citations=cites,
            acceptance_criteria=list(requirements.acceptance_criteria),
        )

    def implement(self, ctx: ProviderContext, plan: Plan) -> Implementation:
        self._fail_if_scripted("implementer")
        for item in self.scenario.get("save_memory", []):
            if ctx.save_memory is not None:
                ctx.save_memory(str(item["content"]), dict(item))
        patch = self._declared_patch(ctx)
        if patch is not None and ctx.copy is not None:
            diff = (ctx.copy / patch).read_text(encoding="utf-8")
            return Implementation(diff=diff, summary=f"applied the declared patch {patch}")
        edits = self.scenario.get("edits", [])
        if not edits:
            raise ProviderError(Advice(
                "the fixture provider has nothing to implement: name a .patch file that exists in the "
                "repository in the brief, ",
                Remedy(RemedyKind.USE_REAL_MODEL),
            ))
        return Implementation(diff=scripted_diff(ctx.copy, edits), summary="applied the scripted edit")

    def investigate(self, ctx: ProviderContext) -> list[str]:
        return list(ctx.citations)

    def review(self, ctx: ProviderContext, diff: str, test_exit_code: int | None) -> Review:
        files = diffnames.diff_paths(diff)
        verdict = "tests pass" if test_exit_code == 0 else "tests did not pass"
        lessons = clean_lessons(self.scenario.get("lessons") or [])
        return Review(summary=f"{len(files)} file(s) changed; {verdict}", concerns=[], lessons=lessons)

    def _declared_patch(self, ctx: ProviderContext) -> str | None:
        if ctx.copy is None:
            return None
        for match in PATCH_PATH.finditer(ctx.brief):
            rel = match.group(1)
            if ".." in Path(rel).parts:
                continue
            if (ctx.copy / rel).is_file() and not (ctx.copy / rel).is_symlink():
                return rel
        return None


def scripted_diff(copy: Path | None, edits: list[dict[str, Any]]) -> str:
    """A unified diff (git style headers) that turns each edited file into its scripted content."""
    chunks: list[str] = []
    for edit in edits:
        rel = str(edit["path"])
        target = copy / rel if copy is not None else None
        old = target.read_text(encoding="utf-8") if target is not None and target.is_file() else None
        if "content" in edit:
            new = str(edit["content"])
        else:
            new = (old or "") + str(edit.get("append", ""))
        chunks.append(diffnames.file_diff(rel, old, new))
    return "".join(chunks)
