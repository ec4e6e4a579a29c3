"""The one text an engine is given: the brief, the approved plan, this task's answers, the
project's conventions and recalled memories, and the rules of the copy it works in.

An engine is another agent, not a model behind AutoCode's loop: it gets plain instructions,
not JSON, and AutoCode checks its work afterwards (the proof, the review, the person's
approval), so the text says what comes after it too.
"""

from __future__ import annotations

from autocode.providers.base import Plan, ProviderContext

# An argument of one command line may hold at most 128 KiB on Linux.
MAX_CHARS = 100_000

RULES = """\
You are the implementer of an AutoCode task. The folder you are in is a private copy of the
repository; the person's own files change only after they approve your change. Make the change
the approved plan describes, and nothing else: keep it small and follow the project's
conventions. Do not commit, do not run git, do not ask questions (nobody can answer them here:
if something is unclear, choose the reading the brief and the answers support and say so at the
end). AutoCode runs the project's tests itself afterwards and shows your change to the person."""


def instructions(ctx: ProviderContext, plan: Plan, test_command: str | None = None) -> str:
    parts = [RULES, f"Brief:\n{ctx.brief.strip()}"]
    steps = "\n".join(f"{n}. {s}" for n, s in enumerate(plan.steps, 1))
    parts.append(f"Approved plan: {plan.summary.strip()}\n{steps}")
    if plan.acceptance_criteria:
        parts.append("Acceptance criteria:\n" + "\n".join(f"- {c}" for c in plan.acceptance_criteria))
    cited = list(dict.fromkeys([*plan.citations, *ctx.citations]))[:40]
    if cited:
        parts.append("Files the plan and the investigation cite:\n" + "\n".join(f"- {c}" for c in cited))
    if ctx.answers:
        parts.append("The person's answers to this task's questions:\n"
                     + "\n".join(f"- {a['question_id']}: {a['text']}" for a in ctx.answers))
    if ctx.project_conventions:
        parts.append("Project conventions (answers from earlier tasks; the brief and this task's answers win):\n"
                     + "\n".join(f"- {c.get('question')} {c.get('answer')}" for c in ctx.project_conventions))
    for section, items in ctx.recalled.items():
        if items:
            parts.append(f"Recalled {section} memories:\n" + "\n".join(f"- {m}" for m in items))
    if ctx.feedback:
        parts.append("The person's feedback on earlier plans:\n" + "\n".join(f"- {f}" for f in ctx.feedback))
    if test_command:
        parts.append(f"The project's tests run with: {test_command}")
    text = "\n\n".join(parts)
    if len(text) > MAX_CHARS:
        text = text[: MAX_CHARS - 60] + "\n\n[instructions cut at AutoCode's limit]"
    return text
