"""The provider interface: what each task role asks of a model, as plain data.

A provider turns the task's context into structured outputs (questions, a
plan, a unified diff, a review). Outputs are plain dataclasses with
`to_dict`/`from_dict` so they can be stored in the run directory and checked
when they come back from a remote model.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Protocol

from autocode.errors import AutoCodeError

ROLES: tuple[str, ...] = ("requirements", "planner", "implementer", "investigator", "reviewer")

# Questions in these categories are decisions about this one task; a person's
# answer to them is never reusable, whatever tag the question carries.
CATEGORIES: tuple[str, ...] = (
    "permission",
    "spending",
    "quota",
    "external_side_effect",
    "task_outcome",
    "other",
)


class ProviderError(AutoCodeError):
    """A provider could not produce a usable answer (network, HTTP status, malformed output)."""

    kind = "providerError"
    exit_code = 1


@dataclass(frozen=True)
class Question:
    id: str
    text: str
    category: str = "other"
    convention: str | None = None
    default: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Question:
        qid = _text(data, "id")
        text = _text(data, "text")
        category = str(data.get("category") or "other")
        if category not in CATEGORIES:
            raise ProviderError(
                f"question {qid!r} has category {category!r}; use one of {', '.join(CATEGORIES)}"
            )
        convention = data.get("convention")
        default = data.get("default")
        return cls(
            id=qid,
            text=text,
            category=category,
            convention=str(convention) if convention else None,
            default=str(default) if default is not None else None,
        )


@dataclass(frozen=True)
class MachineDecision:
    """A choice the model made itself instead of asking (never learned)."""

    question_id: str
    text: str
    answer: str
    category: str = "other"
    convention: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> MachineDecision:
        q = Question.from_dict({**data, "id": data.get("question_id", data.get("id"))})
        return cls(q.id, q.text, _text(data, "answer"), q.category, q.convention)


@dataclass(frozen=True)
class RequirementsReport:
    summary: str
    questions: list[Question] = field(default_factory=list)
    acceptance_criteria: list[str] = field(default_factory=list)
    citations: list[str] = field(default_factory=list)
    machine_decisions: list[MachineDecision] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "summary": self.summary,
            "questions": [q.to_dict() for q in self.questions],
            "acceptance_criteria": list(self.acceptance_criteria),
            "citations": list(self.citations),
            "machine_decisions": [d.to_dict() for d in self.machine_decisions],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RequirementsReport:
        return cls(
            summary=_text(data, "summary"),
            questions=[Question.from_dict(q) for q in _list(data, "questions")],
            acceptance_criteria=[str(x) for x in _list(data, "acceptance_criteria")],
            citations=[str(x) for x in _list(data, "citations")],
            machine_decisions=[MachineDecision.from_dict(d) for d in _list(data, "machine_decisions")],
        )


@dataclass(frozen=True)
class Plan:
    summary: str
    steps: list[str]
    citations: list[str] = field(default_factory=list)
    acceptance_criteria: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Plan:
        steps = [str(x) for x in _list(data, "steps")]
        if not steps:
            raise ProviderError("the plan has no steps; the planner must return at least one step")
        return cls(
            summary=_text(data, "summary"),
            steps=steps,
            citations=[str(x) for x in _list(data, "citations")],
            acceptance_criteria=[str(x) for x in _list(data, "acceptance_criteria")],
        )


@dataclass(frozen=True)
class Implementation:
    """The implementer's change as one unified diff against the copy."""

    diff: str
    summary: str = ""
    # True when the implementer already made the change in the copy (the agent loop's tools);
    # the diff is then the record of it, not something still to apply.
    applied: bool = False

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Implementation:
        diff = data.get("diff")
        if not isinstance(diff, str):
            raise ProviderError("the implementer's answer has no 'diff' string (a unified diff)")
        return cls(diff=diff, summary=str(data.get("summary") or ""))


@dataclass(frozen=True)
class Review:
    """The reviewer's verdict. `lessons` are durable, repository-independent lessons the
    run taught (offered to memory reflection at completion; never this task's details)."""

    summary: str
    concerns: list[str] = field(default_factory=list)
    lessons: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Review:
        raw = data.get("lessons")
        lessons = clean_lessons(raw) if isinstance(raw, list) else []
        return cls(summary=_text(data, "summary"), concerns=[str(x) for x in _list(data, "concerns")], lessons=lessons)


MAX_LESSONS = 5


def clean_lessons(raw: Sequence[Any]) -> list[str]:
    """At most MAX_LESSONS non-empty one-paragraph texts; anything else is dropped."""
    texts = [" ".join(x.split()) for x in raw if isinstance(x, str)]
    return [t for t in dict.fromkeys(texts) if t][:MAX_LESSONS]


class RunTests(Protocol):
    """The project's tests in the copy; `limit` caps the run's seconds below its own timeout."""

    def __call__(self, limit: float | None = None) -> dict[str, Any]: ...


@dataclass
class ProviderContext:
    """Everything a role may look at. Project data is history, not this task's answers."""

    task_id: str
    brief: str
    workspace: Path
    copy: Path | None
    citations: list[str]
    inputs: list[str] = field(default_factory=list)  # paths the manifest declares, checked in the copy
    project_conventions: list[dict[str, str]] = field(default_factory=list)
    answers: list[dict[str, str]] = field(default_factory=list)
    recalled: dict[str, list[str]] = field(default_factory=dict)
    feedback: list[str] = field(default_factory=list)
    save_memory: Callable[[str, dict[str, Any]], dict[str, Any]] | None = None
    note: Callable[[str, dict[str, Any]], None] | None = None
    # For roles that work in the copy (the agent loop): where the transcript goes, the
    # task's cancel flag, a progress line, the project's tests run in the copy, the agent name.
    run_dir: Path | None = None
    cancelled: Callable[[], bool] | None = None
    say: Callable[[str], None] | None = None
    run_tests: RunTests | None = None
    agent: str = "implementer"
    map_paths: list[str] = field(default_factory=list)  # the repository map's files, in inventory order

    def emit(self, event: str, data: dict[str, Any]) -> None:
        if self.note is not None:
            self.note(event, data)


class Provider(Protocol):
    """One model provider. A route picks a provider (and model) per role."""

    name: str
    model: str | None

    def requirements(self, ctx: ProviderContext) -> RequirementsReport: ...

    def plan(self, ctx: ProviderContext, requirements: RequirementsReport) -> Plan: ...

    def implement(self, ctx: ProviderContext, plan: Plan) -> Implementation: ...

    def investigate(self, ctx: ProviderContext) -> list[str]: ...

    def review(self, ctx: ProviderContext, diff: str, test_exit_code: int | None) -> Review: ...


def _text(data: Mapping[str, Any], key: str) -> str:
    value = data.get(key)
    if not isinstance(value, str) or not value.strip():
        raise ProviderError(f"the provider's answer is missing the text field {key!r}")
    return value


def _list(data: Mapping[str, Any], key: str) -> Sequence[Any]:
    value = data.get(key, [])
    if value is None:
        return []
    if not isinstance(value, list):
        raise ProviderError(f"the provider's answer has {key!r} that is not a list")
    return value
