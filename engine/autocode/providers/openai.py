"""A provider for any OpenAI-compatible chat-completions endpoint, over urllib.

Each role but the implementer sends one chat request asking for a JSON object
of a fixed shape and checks what comes back; a malformed answer is a clear
`ProviderError`, never a half-filled plan. The implementer works through the
agent loop (`providers.agent`): tools in the prep copy, budgets, a transcript.
Requests go through `agent.http.ChatClient` (streamed, one kept connection,
retries with backoff, the endpoint's own error message) and are shaped for
the endpoint's family (`agent.families`: temperature, response_format and
the output limit only where the model takes them). The API key is read from
the environment variable the settings name and is never stored, logged or
put in an error message.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

from autocode import scrub
from autocode.providers import repomap
from autocode.providers.agent import session
from autocode.providers.agent.families import RequestShape, family_of
from autocode.providers.agent.http import ChatClient
from autocode.providers.agent.loop import Budgets
from autocode.providers.agent.reply import turn_of
from autocode.providers.base import (
    Implementation,
    Plan,
    ProviderContext,
    ProviderError,
    RequirementsReport,
    Review,
)
from autocode.providers.excerpts import file_excerpts, strip_fence
from autocode.remedy import Advice, Remedy, RemedyKind

SYSTEM = (
    "You are the {role} of a coding assistant working in a git repository. "
    "Answer with one JSON object only, of this shape: {shape}"
)

SHAPES = {
    "requirements": (
        '{"summary": str, "questions": [{"id": str, "text": str, "category": '
        '"permission"|"spending"|"quota"|"external_side_effect"|"task_outcome"|"other", '
        '"convention": str|null, "default": str|null}], "acceptance_criteria": [str], '
        '"citations": [str], "machine_decisions": [{"question_id": str, "text": str, "answer": str}]}. '
        "Ask only what you cannot know. Tag a question with a convention name only when its answer "
        "is a lasting project preference. Do not ask again what the project data already answers."
    ),
    "planner": '{"summary": str, "steps": [str], "citations": [str], "acceptance_criteria": [str]}',
    "implementer": (
        '{"summary": str, "diff": str} where diff is a unified diff (git style, a/ and b/ prefixes) '
        "against the files as they are in the repository"
    ),
    "investigator": '{"citations": [str]} naming repository paths relevant to the task',
    "reviewer": '{"summary": str, "concerns": [str]}',
}


class OpenAIProvider:
    """Every role over one chat-completions endpoint (OpenAI, Azure OpenAI, local servers).

    The implementer runs the agent loop (`providers.agent`); a role named in
    `reading_roles` may read the copy with read-only tools before its JSON answer.
    """

    def __init__(
        self,
        *,
        base_url: str,
        model: str,
        api_key_env: str | None = None,
        timeout: float = 60.0,
        retries: int = 3,
        backoff: float = 0.5,
        sleep: Callable[[float], None] = time.sleep,
        budgets: Budgets | None = None,
        edit_format: str = "auto",
        reading: bool = False,
        azure_api_version: str | None = None,
        azure_deployment: str | None = None,
        name: str = "openai",
        shape: RequestShape | None = None,
        client_class: type[ChatClient] = ChatClient,
    ) -> None:
        if not base_url:
            raise ProviderError(Advice("the openai provider needs base_url; ", Remedy(RemedyKind.SET_SETTINGS, keys=("base_url",))))
        if not model:
            raise ProviderError(Advice("the openai provider needs a model; ", Remedy(RemedyKind.SET_SETTINGS, keys=("model",))))
        self.name = name
        self.base_url = base_url.rstrip("/")
        self.model: str | None = model
        self.api_key_env = api_key_env
        self.timeout = timeout
        self.retries = retries
        self.backoff = backoff
        self.budgets = budgets or Budgets()
        self.edit_format = edit_format
        self.reading = reading
        self.shape = shape or RequestShape(family_of(name, self.base_url, model))
        self.client = client_class(
            base_url=self.base_url,
            api_key_env=api_key_env,
            timeout=timeout,
            retries=retries,
            backoff=backoff,
            sleep=sleep,
            azure_api_version=azure_api_version,
            azure_deployment=azure_deployment,
        )

    # -- roles -------------------------------------------------------------

    def requirements(self, ctx: ProviderContext) -> RequirementsReport:
        return RequirementsReport.from_dict(self._ask("requirements", _context_text(ctx), ctx))

    def plan(self, ctx: ProviderContext, requirements: RequirementsReport) -> Plan:
        text = _context_text(ctx) + "\n\nRequirements:\n" + json.dumps(requirements.to_dict(), indent=1)
        return Plan.from_dict(self._ask("planner", text, ctx))

    def implement(self, ctx: ProviderContext, plan: Plan) -> Implementation:
        if ctx.copy is not None and ctx.run_dir is not None:
            # A small window (Ollama's 4,096 tokens) gets a small map: about a seventh of it.
            limit = min(repomap.MAP_CHARS, self.shape.window // 2)
            text = _context_text(ctx, mapped=plan.citations, map_chars=limit)
            text += "\n\nApproved plan:\n" + json.dumps(plan.to_dict(), indent=1)
            return session.implement(
                self.client, str(self.model), ctx, text, self.budgets, self.edit_format, shape=self.shape
            )
        text = _context_text(ctx) + "\n\nApproved plan:\n" + json.dumps(plan.to_dict(), indent=1)
        text += "\n\nFiles:\n" + file_excerpts(ctx, plan.citations)
        return Implementation.from_dict(self._ask("implementer", text, ctx))

    def investigate(self, ctx: ProviderContext) -> list[str]:
        data = self._ask("investigator", _context_text(ctx), ctx)
        cites = data.get("citations", [])
        if not isinstance(cites, list):
            raise ProviderError("the investigator's answer has 'citations' that is not a list")
        return [str(c) for c in cites]

    def review(self, ctx: ProviderContext, diff: str, test_exit_code: int | None) -> Review:
        text = f"{_context_text(ctx)}\n\nTest exit code: {test_exit_code}\n\nDiff:\n{diff[:20000]}"
        return Review.from_dict(self._ask("reviewer", text, ctx))

    # -- transport ---------------------------------------------------------

    def _ask(self, role: str, user_text: str, ctx: ProviderContext | None = None) -> dict[str, Any]:
        system = SYSTEM.format(role=role, shape=SHAPES[role])
        content: Any = None
        if self.reading and ctx is not None and ctx.copy is not None and ctx.run_dir is not None:
            content = session.read_then_answer(
                self.client, str(self.model), ctx, role, system, user_text, self.budgets, shape=self.shape
            )
        if content is None:
            # The diff and excerpts are the code as it is; credentials in them never leave.
            messages = [
                {"role": "system", "content": system},
                {"role": "user", "content": scrub.redact(user_text, paths=False)},
            ]
            body = self.shape.body(str(self.model), messages, json_answer=True)
            reply = self._post("/chat/completions", body, ctx)
            if ctx is not None and ctx.run_dir is not None:
                session.record_request(ctx.run_dir, role, reply.get("usage"))
            turn = turn_of(reply, self.base_url)
            if turn.finish_reason == "length":
                limit = self.shape.output_limit()
                raise ProviderError(
                    f"the {role} answer from model {self.model} was cut at the output limit (finish_reason: length); "
                    "raise max_output_tokens" + (f" (now {limit})" if limit else " (unset: the server's own limit)")
                )
            content = turn.content
        if not content.strip():
            raise ProviderError(f"the {role} answer from {self.base_url} has no text content")
        try:
            data = json.loads(strip_fence(content))
        except ValueError as exc:
            raise ProviderError(
                f"the {role} answer from model {self.model} is not valid JSON ({exc}); "
                "use a model that supports JSON responses"
            ) from exc
        if not isinstance(data, dict):
            raise ProviderError(f"the {role} answer from model {self.model} is not a JSON object")
        return data

    def _post(self, path: str, body: dict[str, Any], ctx: ProviderContext | None = None) -> dict[str, Any]:
        def notice(text: str) -> None:
            if ctx is not None:
                ctx.emit("agent_notice", {"text": text})
                if ctx.say is not None:
                    ctx.say(text)

        return self.client.chat(
            body,
            cancelled=ctx.cancelled if ctx is not None else None,
            progress=self._progress(ctx),
            notice=notice,
        )

    def _progress(self, ctx: ProviderContext | None) -> Any:
        say = ctx.say if ctx is not None else None
        if say is None:
            return None
        return lambda chars, seconds: say(f"the model is answering ({chars:,} characters in {seconds:.0f} s)")


def _context_text(ctx: ProviderContext, mapped: list[str] | None = None, map_chars: int = repomap.MAP_CHARS) -> str:
    """The task's context for a role; with `mapped` (the plan's citations) a repository map of the
    copy, those and the task's citations first, instead of the bare list of paths."""
    parts = [f"Brief:\n{ctx.brief}"]
    if mapped is not None and ctx.copy is not None:
        cited = [*ctx.citations, *mapped]
        parts.append(
            "Repository map (files, the ones this task cites first, with their top-level definitions):\n"
            + repomap.render(ctx.copy, cited, ctx.map_paths, map_chars)
        )
    elif ctx.citations:
        parts.append("Repository paths:\n" + "\n".join(ctx.citations))
    if ctx.project_conventions:
        lines = [f"- Q: {c.get('question')}\n  A: {c.get('answer')}" for c in ctx.project_conventions]
        parts.append(
            "Project data (answers a person gave in earlier tasks; the brief and this task's "
            "answers take precedence):\n" + "\n".join(lines)
        )
    if ctx.answers:
        lines = [f"- {a['question_id']}: {a['text']}" for a in ctx.answers]
        parts.append("Answers to this task's questions:\n" + "\n".join(lines))
    for section, items in ctx.recalled.items():
        if items:
            parts.append(f"Recalled {section} memories:\n" + "\n".join(f"- {m}" for m in items))
    if ctx.feedback:
        parts.append("Feedback on earlier plans:\n" + "\n".join(f"- {f}" for f in ctx.feedback))
    return "\n\n".join(parts)
