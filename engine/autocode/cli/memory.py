"""`autocode memory`: save, find, list, delete and recall agent and team memories; skills, reflection, promotion.

Every verb takes --json, --agent (whose memories; none = the team's) and
--workspace (the repository in context; none = global memories only). For
save, search and plan-promotion, --json prints the engine's typed result as the
language server sends it (camelCase, `wire()`).
Engine modules are imported inside `run` so `autocode --help` stays light.
"""

from __future__ import annotations

import argparse
from typing import Any

from autocode.cli._common import emit
from autocode.cli.unattended import refuse_if_unattended

# `memory save` tells scripts when nothing was saved as a memory; --json still
# prints the answer. 0 saved (also when saved beside a similar one), 2 bad input.
EXIT_REFUSED = 3  # refused: tied to one task, a credential or a machine path
EXIT_DUPLICATE = 5  # an earlier memory in the same bucket already says it
EXIT_SKILL = 6  # reusable know-how, kept as a skill instead

VERBS: dict[str, str] = {
    "save": "save one durable fact (refused when tied to one task; know-how becomes a skill). "
    "Exit 0 saved, 3 refused, 5 duplicate, 6 kept as a skill",
    "search": "find memories you can see, by meaning when embeddings are on, else by keywords",
    "list": "list memories you can see, newest first",
    "delete": "delete one memory by id",
    "skills": "list skills (know-how routed from saves or promoted from team memories)",
    "recall": "what a run on BRIEF would be given: up to 8 project and 8 global memories",
    "reflect": "propose global memories from completed runs' lessons; apply with --approve",
    "plan-promotion": "propose skills from team memories (writes nothing)",
    "apply-promotion": "turn chosen candidates into skills and remove their memories (all or nothing)",
}


def _common(parser: argparse.ArgumentParser, *, verb: bool = False) -> None:
    # On a verb the defaults are suppressed, so `memory --agent x list` and `memory list --agent x` agree.
    default: Any = argparse.SUPPRESS if verb else None
    parser.add_argument(
        "--json",
        action="store_true",
        default=argparse.SUPPRESS if verb else False,
        help="print one JSON object instead of text",
    )
    parser.add_argument("--agent", metavar="NAME", default=default, help="act as this agent (default: none, the team)")
    parser.add_argument(
        "--workspace",
        metavar="PATH",
        default=default,
        help="repository in context (default: none, so only global memories are reachable)",
    )


def add_arguments(parser: argparse.ArgumentParser) -> None:
    _common(parser)
    verbs = parser.add_subparsers(dest="verb", metavar="VERB")
    for verb, help_text in VERBS.items():
        sub = verbs.add_parser(verb, help=help_text, description=help_text)
        _common(sub, verb=True)
        if verb == "save":
            sub.add_argument("content", help="the fact, true beyond the current task")
            sub.add_argument("--category", help="a short label, e.g. testing, ci, conventions")
            sub.add_argument(
                "--scope",
                choices=("project", "global"),
                help="default: project with --workspace, global without",
            )
            sub.add_argument("--shared", action="store_true", help="a team memory rather than the agent's own")
            sub.add_argument("--run-id", help="the run saving it (kept apart from the content)")
        elif verb in ("search", "list"):
            if verb == "search":
                sub.add_argument("query")
                sub.add_argument(
                    "--mode",
                    choices=("auto", "keyword", "recent", "semantic", "hybrid"),
                    default="auto",
                    help="ranking (default: hybrid with embeddings, else keyword matches newest first)",
                )
            sub.add_argument("--scope", choices=("all", "project", "global"), default="all")
            sub.add_argument("--owner", choices=("all", "self", "team"), default="all")
            sub.add_argument("--limit", type=int, default=10 if verb == "search" else None)
        elif verb == "delete":
            sub.add_argument("id")
        elif verb == "recall":
            sub.add_argument("brief", nargs="?", default="", help="the task brief (empty: by recency)")
        elif verb == "reflect":
            sub.add_argument("--approve", nargs="+", default=[], metavar="ID", help="apply these proposals")
            sub.add_argument("--reject", nargs="+", default=[], metavar="ID", help="drop these proposals")
        elif verb == "apply-promotion":
            sub.add_argument("ids", nargs="+", metavar="ID", help="candidate ids from plan-promotion")
        sub.set_defaults(verb=verb)


def _person_required(what: str) -> None:
    refuse_if_unattended(what)


def run(args: argparse.Namespace) -> int:
    # lazy: not needed by `autocode --help`, which imports this module
    from autocode.errors import UsageError
    from autocode.memory import MemoryContext
    from autocode.memory.model import MemoryDeleteResult, MemoryList, SkillList
    from autocode.memory.pool import lease_for
    from autocode.workspace import folder

    verb = getattr(args, "verb", None)
    if not verb:
        raise UsageError("say what to do: autocode memory {" + ",".join(VERBS) + "} (see --help)")
    workspace = folder(args.workspace).resolve() if args.workspace else None
    ctx = MemoryContext(agent=args.agent or None, repository=workspace, run_id=getattr(args, "run_id", None))
    # The engine's pool (one store per configuration, closed when the process exits).
    with lease_for(workspace) as memory:
        if verb == "save":
            result = memory.save(ctx, args.content, category=args.category, scope=args.scope, shared=args.shared)
            emit(args, result.wire(), _render_save)
            return save_status(result)
        if verb == "search":
            found = memory.search(ctx, args.query, scope=args.scope, owner=args.owner, limit=args.limit, mode=args.mode)
            emit(args, found.wire(), _render_search)
            return 0
        if verb == "list":
            items = memory.list(ctx, scope=args.scope, owner=args.owner, limit=args.limit)
            emit(args, MemoryList.of(items).wire(), _render_list)
            return 0
        if verb == "delete":
            removed = memory.delete(ctx, args.id)
            emit(args, MemoryDeleteResult.of(removed).wire(), lambda d: f"deleted {d['deleted']['id']}")
            return 0
        if verb == "skills":
            emit(args, SkillList.of(memory.skills(ctx)).wire(), _render_skills)
            return 0
        if verb == "recall":
            receipt = memory.recall(ctx, args.brief)
            emit(args, receipt.view().wire(), lambda d: d["text"])
            return 0
        if verb == "reflect":
            if args.approve:
                _person_required("memory reflect --approve")
            # lazy: not needed by `autocode --help`, which imports this module
            import getpass

            reflection = memory.reflect(
                ctx, approve=args.approve, reject=args.reject, approved_by=getpass.getuser() if args.approve else None
            )
            emit(args, reflection.wire(), _render_reflect)
            return 0
        if verb == "plan-promotion":
            emit(args, memory.plan_promotion(ctx).wire(), _render_plan)
            return 0
        if verb == "apply-promotion":
            _person_required("memory apply-promotion")
            applied = memory.apply_promotion(ctx, args.ids)
            emit(args, applied.view().wire(), _render_applied)
            return 0
    raise UsageError(f"unknown memory verb {verb!r}")  # pragma: no cover - argparse limits choices


def save_status(result: Any) -> int:
    """The exit status of `memory save` for a SaveResult (docs/memory.md)."""
    if result.saved:
        return 0
    if result.refused is not None:
        return EXIT_REFUSED
    if result.skill is not None:
        return EXIT_SKILL
    return EXIT_DUPLICATE


def _render_save(d: dict[str, Any]) -> str:
    if d["saved"]:
        lines = [f"saved {d['id']} ({d['scope']})"]
        if d.get("similarTo"):
            lines.append(f"close to memory {d['similarTo']}, kept both: they differ in a detail")
        lines += [f"evicted {e['id']} (oldest over the cap): {e['excerpt']}" for e in d["evicted"]]
        return "\n".join(lines)
    if d["refused"]:
        r = d["refused"]
        text = f"not saved: {r['reason']}.\nIt belongs in {r['belongs']}."
        if r["suggestion"]:
            text += f"\nDurable version you could save instead: {r['suggestion']}"
        return text
    if d["skill"]:
        return f"not saved as a memory: this is reusable know-how, kept as skill {d['skill']!r}"
    return f"not saved: it duplicates memory {d['duplicateOf']} ({d['duplicateMethod']})"


def _line(m: dict[str, Any]) -> str:
    who = m["owner"] or "team"
    where = m["repository"] or "global"
    return f"{m['id']}  [{who}, {where}]  {' '.join(m['content'].split())}"


def _render_search(d: dict[str, Any]) -> str:
    if not d["memories"]:
        return f"no memories match ({d['method']})"
    return "\n".join(f"{h['score']:.3f}  {_line(h)}" for h in d["memories"])


def _render_list(d: dict[str, Any]) -> str:
    return "\n".join(_line(m) for m in d["memories"]) or "no memories here"


def _render_skills(d: dict[str, Any]) -> str:
    lines = [f"{s['name']}  [{s['owner'] or 'team'}, {s['repository'] or 'global'}]  {s['description']}" for s in d["skills"]]
    return "\n".join(lines) or "no skills yet"


def _render_reflect(d: dict[str, Any]) -> str:
    lines = [f"applied: {a['id'] or a['duplicateOf'] or a['skill']}" for a in d["applied"]]
    for p in d["proposals"]:
        lines.append(f"{p['id']}  {p['verdict']}  (global)  {p['content']}")
    if d["proposals"]:
        lines.append("apply with: autocode memory reflect --approve ID ...")
    return "\n".join(lines) or "no lessons waiting for reflection"


def _render_plan(d: dict[str, Any]) -> str:
    if not d["candidates"]:
        return f"no promotion candidates among {d['scanned']} team memories"
    lines = []
    for c in d["candidates"]:
        lines.append(f"{c['memoryId']}  skill {c['name']!r} -> {', '.join(c['agents'])}\n    {c['description']}")
    lines.append("apply with: autocode memory apply-promotion ID ...")
    return "\n".join(lines)


def _render_applied(d: dict[str, Any]) -> str:
    lines = [f"skill {s['name']!r} on {s['owner']}" for s in d["skills"]]
    lines.append(f"removed memories: {', '.join(d['removed'])}")
    return "\n".join(lines)
