"""The learned record's version 1 schema: every field bounded, unknown fields refused.

`Convention` and `Route` are plain frozen dataclasses so that building one
never raises in a caller's code; their bounds apply when a `ProjectRecord`
validates them (on load and before every write). The JSON Schema in
`docs/record.schema.json` and the bounds table in `docs/record.md` are
generated from these declarations (`python -m autocode.record.docs`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictStr, StringConstraints, with_config

RECORD_VERSION = 1

# Bounds. Large enough for real projects (and for many concurrent writers
# adding distinct conventions), small enough that the file stays reviewable.
MAX_FILE_BYTES = 8 * 1024 * 1024
MAX_FRAMEWORK = 64
MAX_TEST_COMMAND = 1000
MAX_CONVENTIONS = 1000
MAX_QUESTION = 1000
MAX_ANSWER = 4000
MAX_ROUTES = 32
MAX_ROLE = 64
MAX_PROVIDER = 64
MAX_MODEL = 200
MAX_PAUSE_STATES = 32
MAX_PAUSE_STATE = 64


Framework = Annotated[StrictStr, StringConstraints(min_length=1, max_length=MAX_FRAMEWORK)]
TestCommand = Annotated[StrictStr, StringConstraints(min_length=1, max_length=MAX_TEST_COMMAND)]
Question = Annotated[StrictStr, StringConstraints(min_length=1, max_length=MAX_QUESTION)]
Answer = Annotated[StrictStr, StringConstraints(min_length=1, max_length=MAX_ANSWER)]
Role = Annotated[StrictStr, StringConstraints(min_length=1, max_length=MAX_ROLE)]
ProviderName = Annotated[StrictStr, StringConstraints(min_length=1, max_length=MAX_PROVIDER)]
ModelName = Annotated[StrictStr, StringConstraints(min_length=1, max_length=MAX_MODEL)]
PauseState = Annotated[StrictStr, StringConstraints(min_length=1, max_length=MAX_PAUSE_STATE)]


@with_config(ConfigDict(extra="forbid"))
@dataclass(frozen=True)
class Convention:
    """A question a person answered, with their answer, both verbatim."""

    question: Question
    answer: Answer

    def to_dict(self) -> dict[str, str]:
        return {"question": self.question, "answer": self.answer}


@with_config(ConfigDict(extra="forbid"))
@dataclass(frozen=True)
class Route:
    """A model route observed in a run: which provider and model served a role."""

    role: Role
    provider: ProviderName
    model: ModelName

    def to_dict(self) -> dict[str, str]:
        return {"role": self.role, "provider": self.provider, "model": self.model}


class ProjectRecord(BaseModel):
    """`.autocode/project.json`, version 1. Unknown facts are null or empty."""

    model_config = ConfigDict(extra="forbid", frozen=True, title="AutoCode learned project record")

    version: Literal[1] = Field(description="schema version; only 1 is supported")
    framework: Framework | None = Field(
        default=None, description="test framework observed in a completed task"
    )
    test_command: TestCommand | None = Field(
        default=None, description="shareable command that runs the whole repository's tests"
    )
    conventions: tuple[Convention, ...] = Field(
        default=(),
        max_length=MAX_CONVENTIONS,
        description="questions a person answered, saved verbatim for later tasks",
    )
    routes: tuple[Route, ...] = Field(
        default=(), max_length=MAX_ROUTES, description="model routes observed in runs"
    )
    human_pause_states: tuple[PauseState, ...] = Field(
        default=(), max_length=MAX_PAUSE_STATES, description="pause states that needed a person"
    )

    def to_json_dict(self) -> dict[str, Any]:
        """The record as written to disk: every key present, in schema order."""
        return {
            "version": self.version,
            "framework": self.framework,
            "test_command": self.test_command,
            "conventions": [c.to_dict() for c in self.conventions],
            "routes": [r.to_dict() for r in self.routes],
            "human_pause_states": list(self.human_pause_states),
        }


def record_json_schema() -> dict[str, Any]:
    """The JSON Schema of the record, as published in docs/record.schema.json."""
    schema = ProjectRecord.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["description"] = (
        "Facts a completed AutoCode task learned about a repository; "
        f"the file may be at most {MAX_FILE_BYTES} bytes."
    )
    return schema


BOUNDS: tuple[tuple[str, str], ...] = (
    ("file size", f"at most {MAX_FILE_BYTES} bytes of UTF-8 JSON"),
    ("`version`", "the integer 1; any other version is reported as unsupported"),
    ("`framework`", f"null or 1 to {MAX_FRAMEWORK} characters"),
    ("`test_command`", f"null or 1 to {MAX_TEST_COMMAND} characters"),
    ("`conventions`", f"at most {MAX_CONVENTIONS} entries"),
    ("`conventions[].question`", f"1 to {MAX_QUESTION} characters"),
    ("`conventions[].answer`", f"1 to {MAX_ANSWER} characters"),
    ("`routes`", f"at most {MAX_ROUTES} entries"),
    ("`routes[].role`", f"1 to {MAX_ROLE} characters"),
    ("`routes[].provider`", f"1 to {MAX_PROVIDER} characters"),
    ("`routes[].model`", f"1 to {MAX_MODEL} characters"),
    ("`human_pause_states`", f"at most {MAX_PAUSE_STATES} entries of 1 to {MAX_PAUSE_STATE} characters"),
)


def bounds_table() -> str:
    """Markdown table of the bounds, as published in docs/record.md."""
    lines = ["| field | bound |", "| --- | --- |"]
    lines += [f"| {field} | {bound} |" for field, bound in BOUNDS]
    return "\n".join(lines) + "\n"
