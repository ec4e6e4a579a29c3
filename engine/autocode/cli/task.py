"""`autocode task`: start a coding task and drive it (answers, plan approval, completion).

Only the standard library is imported at module level; the engine is
imported inside `run` so `autocode --help` stays fast.

Kept whole: the `task` subcommand is one face (its arguments, driving a task
from a file or the terminal, and rendering what it shows); each part is a few
short functions that share the rendering.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from autocode.cli._common import add_json_flag, emit

VERBS = (
    "start", "status", "show", "list", "answer", "approve", "reject", "approve-completion", "resolve",
    "cancel", "resume", "retry", "transcript",
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="verb", metavar="VERB", required=True)

    start = sub.add_parser("start", help="start a task and run it until it needs you")
    _workspace(start)
    brief = start.add_mutually_exclusive_group(required=True)
    brief.add_argument("--brief", metavar="TEXT", help="what the task should do")
    brief.add_argument("--brief-file", metavar="FILE", help="read the brief from a file")
    start.add_argument("--test-command", metavar="CMD", help="the command that runs the tests (overrides settings)")
    start.add_argument("--package", metavar="DIR", help="work on one package of a monorepo (a folder in the workspace)")
    start.add_argument("--manifest", metavar="FILE", help="JSON manifest of declared public inputs for the prep copy")
    start.add_argument("--provider", choices=("fixture", "openai", "azure", "anthropic"), help="model provider for every role")
    start.add_argument("--model", help="model name for the provider")
    start.add_argument("--base-url", help="OpenAI-compatible endpoint, e.g. http://127.0.0.1:8000/v1")
    start.add_argument("--api-key-env", metavar="VAR", help="name of the environment variable holding the API key")
    start.add_argument("--engine", metavar="NAME",
                       help="an agent CLI as the implementer: claude-code, codex, aider, opencode or gemini")
    start.add_argument("--scenario", metavar="NAME|FILE", help="fixture provider scenario (fixtures/providers/)")
    start.add_argument(
        "--answers",
        metavar="FILE",
        help="JSON file with answers and approvals, used when there is no terminal "
        '({"answers": {"QUESTION_ID": "text"}, "approve_plan": true, "approve_completion": true})',
    )
    mode = start.add_mutually_exclusive_group()
    mode.add_argument("--interactive", dest="interactive", action="store_true", default=None,
                      help="ask questions and approvals in the terminal (default when there is one)")
    mode.add_argument("--no-interactive", dest="interactive", action="store_false",
                      help="stop at the first pause and print what it needs")
    add_json_flag(start)

    for verb, text in (
        ("status", "show where a task is and what it needs"),
        ("show", "show everything recorded about a task"),
        ("approve-completion", "apply the change to the workspace (an unproven one needs --confirm unproven)"),
        ("cancel", "cancel a task"),
        ("resume", "continue a task whose process stopped while it was working, or that failed on the endpoint or a budget"),
        ("retry", "prove the task's change again (after you fixed the test command or the environment its tests need)"),
        ("transcript", "print the model's work as Markdown (also written to transcript.md in the run folder)"),
    ):
        p = sub.add_parser(verb, help=text)
        _workspace(p)
        p.add_argument("task_id", metavar="TASK")
        if verb == "approve-completion":
            p.add_argument(
                "--confirm", metavar="WORD",
                help="apply a change nothing proves (or that weakens the tests): type the word the task names (unproven)",
            )
        add_json_flag(p)

    lister = sub.add_parser("list", help="list the workspace's tasks")
    _workspace(lister)
    add_json_flag(lister)

    answer = sub.add_parser("answer", help="answer a question the task asked")
    _workspace(answer)
    answer.add_argument("task_id", metavar="TASK")
    answer.add_argument("question_id", metavar="QUESTION")
    answer.add_argument("text", metavar="TEXT", nargs="?", help="your answer (omit with --accept-default or --delegate)")
    how = answer.add_mutually_exclusive_group()
    how.add_argument("--accept-default", action="store_true",
                     help="take the question's proposed default (recorded as acceptedDefault, never learned)")
    how.add_argument("--delegate", action="store_true",
                     help="let the task decide (recorded as delegated, never learned)")
    how.add_argument("--chosen", action="store_true",
                     help="TEXT is one of the offered choices you picked (recorded as chosen)")
    add_json_flag(answer)

    approve = sub.add_parser("approve", help="approve the current plan revision")
    _workspace(approve)
    approve.add_argument("task_id", metavar="TASK")
    approve.add_argument("--revision", type=int, required=True, help="the plan revision you reviewed")
    add_json_flag(approve)

    resolve = sub.add_parser("resolve", help="choose, per conflicted file, how the change is applied")
    _workspace(resolve)
    resolve.add_argument("task_id", metavar="TASK")
    resolve.add_argument(
        "choices", metavar="PATH=CHOICE", nargs="+",
        help="mine (keep your file), theirs (take the task's) or markers (write conflict markers)",
    )
    add_json_flag(resolve)

    reject = sub.add_parser("reject", help="send the plan back with feedback")
    _workspace(reject)
    reject.add_argument("task_id", metavar="TASK")
    reject.add_argument("--feedback", required=True, metavar="TEXT", help="what to change")
    reject.add_argument("--revision", type=int, help="the plan revision you reviewed")
    add_json_flag(reject)


def _workspace(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--workspace", default=".", metavar="PATH", help="the repository (default: .)")


def run(args: argparse.Namespace) -> int:
    # lazy: not needed by `autocode --help`, which imports this module
    from autocode.tasks import Source, TaskRun, list_tasks

    source = Source("cli", _actor())
    verb = args.verb
    if verb == "start":
        return _start(args, source)
    if verb == "list":
        tasks = list_tasks(args.workspace)
        # lazy: not needed by `autocode --help`, which imports this module
        from autocode.tasks.models import TaskList

        emit(args, TaskList(tasks=tasks).wire(), _render_list)
        return 0
    task = TaskRun.load(args.workspace, args.task_id)
    snap: dict[str, Any]
    if verb == "status":
        snap = task.snapshot().wire()
    elif verb == "show":
        details = task.details()
        emit(args, details, _render_details)
        return 0
    elif verb == "transcript":
        path, text = task.transcript()
        emit(args, {"path": str(path), "markdown": text}, lambda d: str(d["markdown"]).rstrip("\n"))
        return 0
    elif verb == "answer":
        snap = _answer_from_args(task, args, source)
    elif verb == "approve":
        snap = task.approve_plan(args.revision, source).wire()
    elif verb == "reject":
        snap = task.reject_plan(args.feedback, source, revision=args.revision).wire()
    elif verb == "approve-completion":
        _show_what_is_approved(task, args)
        snap = task.approve_completion(source, confirm=args.confirm).wire()
    elif verb == "resolve":
        snap = task.resolve_conflicts(_choices(args.choices), source).wire()
    elif verb == "cancel":
        snap = task.cancel().wire()
    elif verb == "retry":
        snap = task.retry_verification(source).wire()
    else:
        snap = task.resume().wire()
    emit(args, snap, lambda s: _render(s, args.workspace))
    return _exit_code(snap)


def _show_what_is_approved(task: Any, args: argparse.Namespace) -> None:
    """Before applying, say what is applied: the verdict and the diff (or where the whole diff is),
    on stderr so a person approving from a script or a pipe still sees it; --json keeps stderr quiet."""
    if args.json:
        return
    snap: dict[str, Any] = task.snapshot().wire()
    if snap["needs"].get("kind") != "approve_completion":
        return  # not awaiting completion approval: the engine's error says so
    _say("Approving this change (see it again with: "
         f"autocode task show --workspace {args.workspace} {snap['id']}):\n" + _completion_text(snap))


def _choices(items: list[str]) -> dict[str, str]:
    # lazy: not needed by `autocode --help`, which imports this module
    from autocode.errors import UsageError

    out: dict[str, str] = {}
    for item in items:
        path, sep, choice = item.rpartition("=")
        if not sep or not path or choice not in ("mine", "theirs", "markers"):
            raise UsageError(f"{item!r} is not PATH=mine, PATH=theirs or PATH=markers")
        out[path] = choice
    return out


def _answer_from_args(task: Any, args: argparse.Namespace, source: Any) -> dict[str, Any]:
    # lazy: not needed by `autocode --help`, which imports this module
    from autocode.errors import UsageError

    if args.accept_default or args.delegate:
        if args.text:
            raise UsageError("give either an answer TEXT or --accept-default/--delegate, not both")
        how = "acceptedDefault" if args.accept_default else "delegated"
        answered: dict[str, Any] = task.answer(args.question_id, "", source, how=how).wire()
        return answered
    if not args.text:
        raise UsageError("give the answer TEXT (or --accept-default or --delegate)")
    # The one answer rule: a TEXT equal to the proposed default is an accepted default.
    snap: dict[str, Any] = task.answer(args.question_id, args.text, source, how="chosen" if args.chosen else None).wire()
    return snap


def _start(args: argparse.Namespace, source: Any) -> int:
    # lazy: not needed by `autocode --help`, which imports this module
    from autocode.errors import UsageError
    from autocode.tasks import TaskOptions, TaskRun

    if args.brief_file:
        path = Path(args.brief_file)
        if not path.is_file():
            raise UsageError(f"the brief file {path} does not exist")
        try:
            brief = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise UsageError(f"cannot read the brief file {path} as UTF-8 text: {exc}") from None
    else:
        brief = args.brief
    answers = _read_answers(args.answers) if args.answers else None
    tty = sys.stdin.isatty() and sys.stdout.isatty()
    interactive = args.interactive if args.interactive is not None else (tty and answers is None and not args.json)
    if interactive and not sys.stdin.isatty():
        raise UsageError("--interactive needs a terminal; without one pass --answers FILE")
    if answers is not None:
        sys.stderr.write(f"autocode: no terminal prompts; taking answers from {args.answers}\n")
    quiet = args.json

    def progress(phase: str, message: str) -> None:
        if not quiet:
            sys.stderr.write(f"  [{phase}] {message}\n")

    warnings: list[str] = []

    def warn(message: str) -> None:
        # Shown whatever the mode (a typo'd key is silent otherwise); never fails the task.
        warnings.append(message)
        sys.stderr.write(f"autocode: warning: {message}\n")

    options = TaskOptions(
        test_command=args.test_command,
        package=args.package,
        manifest=args.manifest,
        provider=args.provider,
        model=args.model,
        base_url=args.base_url,
        api_key_env=args.api_key_env,
        engine=args.engine,
        scenario=args.scenario,
        progress=progress,
        warn=warn,
    )
    # lazy: not needed by `autocode --help`, which imports this module
    from autocode.settings import TrustRequired

    try:
        task = TaskRun.start(args.workspace, brief, options)
    except TrustRequired as exc:
        if not (tty and args.interactive is not False and not args.json and _trusted_on_terminal(args, exc)):
            raise  # unattended: the error names the command that trusts
        task = TaskRun.start(args.workspace, brief, options)
    if interactive:
        snap = _drive_interactively(task, source)
    elif answers is not None:
        snap = _drive_from_file(task, source, answers, args.answers)
    else:
        snap = task.snapshot().wire()
    if args.json and warnings:
        snap = {**snap, "warnings": warnings}
    emit(args, snap, lambda s: _render(s, args.workspace))
    return _exit_code(snap)


def _trusted_on_terminal(args: argparse.Namespace, exc: Any) -> bool:
    """Ask the person at the terminal whether to trust what the repository asks for; record a yes."""
    # lazy: not needed by `autocode --help`, which imports this module
    from autocode.cli.unattended import is_unattended
    from autocode.settings import trust_repository

    if is_unattended():
        return False
    changed = " (its values changed since you trusted it)" if exc.data.get("status") == "changed" else ""
    _say(f"\nThis repository's settings{changed} ask to:")
    _say("\n".join(f"  - {sentence}" for sentence in exc.data.get("says", [])))
    answer = _input("Trust exactly these values for this repository? [y/N] ").strip().lower()
    if answer not in ("y", "yes"):
        return False
    trust_repository(args.workspace, digest=exc.data.get("digest"))
    _say(f"trusted; `autocode trust --revoke --workspace {args.workspace}` forgets it")
    return True


def _read_answers(path_text: str) -> dict[str, Any]:
    # lazy: not needed by `autocode --help`, which imports this module
    from autocode.errors import UsageError

    path = Path(path_text)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UsageError(f"the answers file {path} does not exist") from None
    except ValueError as exc:
        raise UsageError(f"the answers file {path} is not valid JSON: {exc}") from None
    if not isinstance(data, dict) or not isinstance(data.get("answers", {}), dict):
        raise UsageError(
            f"the answers file {path} must be an object like "
            '{"answers": {"QUESTION_ID": "text"}, "approve_plan": true, "approve_completion": true}'
        )
    return data


def _drive_from_file(task: Any, source: Any, answers: dict[str, Any], name: str) -> dict[str, Any]:
    given: dict[str, str] = {str(k): str(v) for k, v in (answers.get("answers") or {}).items()}
    used: set[str] = set()
    snap: dict[str, Any] = task.snapshot().wire()
    while not snap["done"]:
        kind = snap["needs"]["kind"]
        if kind == "answer_questions":
            missing = [q["id"] for q in snap["needs"]["questions"] if q["id"] not in given]
            if missing:
                sys.stderr.write(f"autocode: {name} has no answer for {', '.join(missing)}; stopping here\n")
                break
            for question in snap["needs"]["questions"]:
                _say(f"Q [{question['id']}] {question['text']}\nA ({name}) {given[question['id']]}")
                snap = task.answer(question["id"], given[question["id"]], source).wire()
                used.add(question["id"])
        elif kind == "approve_plan":
            _say(snap["needs"]["markdown"])
            if answers.get("approve_plan") is not True:
                break
            _say(f"plan revision {snap['needs']['planRevision']} approved ({name})")
            snap = task.approve_plan(snap["needs"]["planRevision"], source).wire()
        elif kind == "approve_completion":
            _say(_completion_text(snap))
            if answers.get("approve_completion") is not True:
                break
            needed = snap["needs"].get("confirmation")
            if needed and answers.get("confirm") != needed:
                sys.stderr.write(
                    f"autocode: the change is not proved; {name} must say \"confirm\": \"{needed}\" to apply it\n"
                )
                break
            _say(f"completion approved ({name})")
            snap = task.approve_completion(source, confirm=needed).wire()
            if snap["needs"].get("apply"):
                break  # not applied (said in the snapshot): a person decides what next
        else:
            break
    unused = sorted(set(given) - used)
    if unused:
        sys.stderr.write(f"autocode: not asked this time (already known or not needed): {', '.join(unused)}\n")
    return snap


def _drive_interactively(task: Any, source: Any) -> dict[str, Any]:
    snap: dict[str, Any] = task.snapshot().wire()
    while not snap["done"]:
        kind = snap["needs"]["kind"]
        if kind == "answer_questions":
            for question in snap["needs"]["questions"]:
                default = question.get("default")
                prompt = f"\n{question['text']}" + (f"\n  (Enter accepts: {default})" if default else "") + "\n> "
                text = _input(prompt).strip()
                while not text and not default:
                    text = _input("An answer is needed; type it:\n> ").strip()
                if text:
                    snap = task.answer(question["id"], text, source, how="typed" if text != default else None).wire()
                else:
                    snap = task.answer(question["id"], "", source, how="acceptedDefault").wire()
        elif kind == "approve_plan":
            _say("\n" + snap["needs"]["markdown"])
            choice = _input("Approve this plan? [y]es, [n]o with feedback, [c]ancel: ").strip().lower()
            if choice.startswith("y"):
                snap = task.approve_plan(snap["needs"]["planRevision"], source).wire()
            elif choice.startswith("n"):
                feedback = _input("What should change?\n> ").strip() or "Please revise the plan."
                snap = task.reject_plan(feedback, source, revision=snap["needs"]["planRevision"]).wire()
            elif choice.startswith("c"):
                snap = task.cancel().wire()
        elif kind == "approve_completion":
            _say("\n" + _completion_text(snap))
            needed = snap["needs"].get("confirmation")
            if needed:
                choice = _input(
                    f"Nothing proves this change. Type {needed} to apply it anyway, [n]ot now, [c]ancel: "
                ).strip()
                if choice == needed:
                    snap = task.approve_completion(source, confirm=needed).wire()
                elif choice.lower().startswith("c"):
                    snap = task.cancel().wire()
                else:
                    break
                continue
            choice = _input("Apply these changes to your workspace? [y]es, [n]ot now, [c]ancel: ").strip().lower()
            if choice.startswith("y"):
                snap = task.approve_completion(source).wire()
            elif choice.startswith("c"):
                snap = task.cancel().wire()
            else:
                break
        elif kind == "resolve_conflicts":
            _say("\n" + snap["needs"]["apply"]["message"])
            choices: dict[str, str] = {}
            for conflict in snap["needs"]["conflicts"]:
                answer = _input(
                    f"{conflict['path']} ({conflict['reason']}): keep [m]ine, take [t]heirs, write "
                    "conflict ma[r]kers, or Enter to decide later: "
                ).strip().lower()
                picked = {"m": "mine", "t": "theirs", "r": "markers"}.get(answer[:1])
                if picked:
                    choices[conflict["path"]] = picked
            if not choices:
                break
            snap = task.resolve_conflicts(choices, source).wire()
            if snap["needs"]["kind"] == "resolve_conflicts" and set(choices) >= {
                c["path"] for c in snap["needs"]["conflicts"]
            }:
                break
        else:
            break
    return snap


def _input(prompt: str) -> str:
    sys.stderr.write(prompt)
    sys.stderr.flush()
    line = sys.stdin.readline()
    if not line:
        raise KeyboardInterrupt
    return line.rstrip("\n")


def _say(text: str) -> None:
    sys.stderr.write(text.rstrip("\n") + "\n")


def _actor() -> str:
    return os.environ.get("USER") or os.environ.get("USERNAME") or "person"


def _exit_code(snap: dict[str, Any]) -> int:
    """1 when the task failed or its change is not (yet) applied: conflicts to choose, or refused."""
    if snap["state"] in ("FAILED", "WAITING_FOR_CONFLICT_RESOLUTION"):
        return 1
    return 1 if (snap["needs"].get("apply") or {}).get("status") == "not_applied" else 0


def _completion_text(snap: dict[str, Any]) -> str:
    needs = snap["needs"]
    tests = needs.get("tests") or {}
    lines = [_headMoved_text(needs.get("headMoved"))] if needs.get("headMoved") else []
    lines += [
        f"Tests: `{tests.get('command')}` exited {tests.get('exitCode')} in {tests.get('seconds')} s",
        *proof_lines(needs.get("proof")),
        f"Review: {(needs.get('review') or {}).get('summary', '')}",
        "Changes:",
        diff_for_terminal(needs.get("diff", ""), Path(snap.get("runDir") or ".") / "evidence" / "changes.diff"),
    ]
    return "\n".join(lines)


def proof_lines(proof: dict[str, Any] | None) -> list[str]:
    """The verdict and the tests behind it, for a person reading the terminal."""
    if not proof:
        return ["Verdict: unproven (the tests did not run through the proof)"]
    lines = [f"Verdict: {proof.get('summary') or proof.get('status')}"]
    for concern in proof.get("concerns") or []:
        lines.append(f"  concern: {concern.get('sentence')}")
    for run in proof.get("runs") or []:
        counts = ", ".join(f"{n} {k}" for k, n in sorted((run.get("counts") or {}).items())) or "no per-test results"
        cached = " (cached)" if run.get("cached") else ""
        lines.append(f"  {run.get('role')}: {counts}{cached}, sandbox {run.get('sandbox')}")
    return lines


DIFF_LINES_SHOWN = 200
"""A longer diff is paged ($PAGER, on a terminal) or summarised with the path of the whole."""
DIFF_CHARS_SHOWN = 20_000


def diff_for_terminal(diff: str, full: Path) -> str:
    """The diff as the terminal shows it: whole when short; else through $PAGER when stdout is a
    terminal and PAGER is set, else its first lines and where the whole diff is."""
    lines = diff.splitlines()
    try:
        size = full.stat().st_size
    except OSError:
        size = len(diff.encode("utf-8", "surrogateescape"))
    if len(lines) <= DIFF_LINES_SHOWN and len(diff) <= DIFF_CHARS_SHOWN and size <= DIFF_CHARS_SHOWN * 4:
        return diff
    pager = os.environ.get("PAGER", "").strip()
    if pager and sys.stdout.isatty() and full.is_file():
        # lazy: only when a long diff is paged
        import shlex
        import subprocess

        try:
            if subprocess.run([*shlex.split(pager), str(full)], check=False).returncode == 0:
                return f"(the whole diff, {size:,} bytes, was shown in {pager}; it is in {full})"
        except (OSError, ValueError):
            pass  # a PAGER that cannot run: summarise instead
    shown = "\n".join(lines[:DIFF_LINES_SHOWN])[:DIFF_CHARS_SHOWN]
    return (
        f"{shown}\n... the diff is {size:,} bytes; the first {DIFF_LINES_SHOWN} lines are above and "
        f"the whole diff is in {full} (read it with: less {full})"
    )


def _headMoved_text(moved: dict[str, Any]) -> str:
    return (
        f"Note: HEAD moved since the task started ({str(moved.get('from'))[:12]} -> {str(moved.get('to'))[:12]}); "
        "the change is merged into your files as they are now."
    )


def _next_step(snap: dict[str, Any], workspace: str) -> list[str]:
    kind = snap["needs"]["kind"]
    base = f"autocode task {{}} --workspace {workspace} {snap['id']}"
    if kind == "answer_questions":
        out = []
        for q in snap["needs"]["questions"]:
            out.append(base.format("answer") + f" {q['id']} \"your answer\"")
            if q.get("default"):
                out.append(base.format("answer") + f" {q['id']} --accept-default")
            out.append(base.format("answer") + f" {q['id']} --delegate")
        return out
    if kind == "approve_plan":
        return [
            base.format("approve") + f" --revision {snap['needs']['planRevision']}",
            base.format("reject") + ' --feedback "what to change"',
        ]
    if kind == "approve_completion":
        confirm = snap["needs"].get("confirmation")
        return [base.format("show"), base.format("approve-completion") + (f" --confirm {confirm}" if confirm else "")]
    if kind == "resolve_conflicts":
        paths = " ".join(f"{c['path']}=mine|theirs|markers" for c in snap["needs"].get("conflicts", []))
        return [base.format("resolve") + f" {paths}"]
    if kind == "save_files":
        return [f"save {', '.join(snap['needs'].get('paths', []))} in your editor: the task completes once they are on disk"]
    state = snap["state"]
    if state == "INTERRUPTED":
        steps = [base.format("resume")]
        return [*steps, base.format("retry")] if snap.get("interruptedIn") == "VERIFYING" else steps
    if state == "FAILED" and (snap.get("error") or {}).get("phase") == "verifying":
        return [base.format("retry") + "   (once the test command or its environment is fixed)"]
    if state in ("REQUIREMENTS", "PLANNING", "IMPLEMENTING", "VERIFYING", "APPLYING"):
        return [base.format("resume")]
    return []


def _render(snap: dict[str, Any], workspace: str = ".") -> str:
    lines = [f"task {snap['id']}: {snap['state']} (phase {snap['phase']}, revision {snap['revision']})"]
    kind = snap["needs"]["kind"]
    if kind == "answer_questions":
        lines.append("needs answers:")
        for q in snap["needs"]["questions"]:
            extra = f" (default: {q['default']})" if q.get("default") else ""
            lines.append(f"  [{q['id']}] {q['text']}{extra}")
    elif kind == "approve_plan":
        lines.append(f"needs plan approval (plan revision {snap['needs']['planRevision']}):")
        lines.append(snap["needs"]["markdown"])
    elif kind == "approve_completion":
        proof = snap["needs"].get("proof") or {}
        lines.append(f"needs completion approval: {proof.get('status') or 'unproven'}")
        lines += proof_lines(proof)
        lines.append("changed: " + ", ".join(snap["needs"].get("files", [])))
        if snap["needs"].get("headMoved"):
            lines.append(_headMoved_text(snap["needs"]["headMoved"]))
        if snap["needs"].get("apply"):
            lines.append(f"last apply: {snap['needs']['apply'].get('message')}")
    elif kind == "resolve_conflicts":
        lines.append("needs a choice per conflicted file (nothing was written yet):")
        for c in snap["needs"].get("conflicts", []):
            where = ", ".join(
                f"your lines {h['mineStart']}-{h['mineStart'] + max(h['mineLines'], 1) - 1}"
                for h in c.get("hunks", [])
            )
            lines.append(f"  {c['path']}: {c['reason']}" + (f" ({where})" if where else ""))
        if snap["needs"].get("headMoved"):
            lines.append(_headMoved_text(snap["needs"]["headMoved"]))
    result = snap.get("result") or {}
    if result:
        lines.append(f"result: {result.get('status')}")
        if result.get("error"):
            lines.append(f"  {result['error'].get('message')}")
        if result.get("status") == "completed":
            lines += proof_lines(result.get("proof"))
        apply = result.get("apply") or {}
        if apply:
            lines.append(f"  apply: {apply.get('status')} ({apply.get('via')}) — {apply.get('message')}")
            lines += _markers_left(apply, workspace)
    learning = snap.get("learning") or {}
    if snap["state"] == "COMPLETED" and learning.get("status") != "pending":
        learned = ", ".join(learning.get("conventions") or []) or "no new conventions"
        lines.append(f"learned: {learned} ({learning.get('status')})")
    nxt = _next_step(snap, workspace)
    if nxt:
        lines.append("next:")
        lines += [f"  {cmd}" for cmd in nxt]
    lines.append(f"run directory: {snap['runDir']}")
    return "\n".join(lines)


def _markers_left(apply: dict[str, Any], workspace: str) -> list[str]:
    """The files the person chose to settle with conflict markers, and how to finish them."""
    marked = sorted(path for path, choice in (apply.get("choices") or {}).items() if choice == "markers")
    if not marked:
        return []
    return [
        f"conflict markers left in: {', '.join(marked)}",
        "  to finish: edit each file, keep the lines you want and delete the <<<<<<< / ======= / >>>>>>> lines;",
        f"  then prove the result with: autocode verify --workspace {workspace}",
    ]


def _render_list(data: dict[str, Any]) -> str:
    tasks = data["tasks"]
    if not tasks:
        return "no tasks in this workspace"
    rows = []
    for snap in tasks:
        first = (snap.get("brief") or "").strip().splitlines()
        rows.append(f"{snap['id']}  {snap['state']:<32} {first[0][:60] if first else ''}")
    return "\n".join(rows)


def _render_details(data: dict[str, Any]) -> str:
    snap = data["snapshot"]
    lines = [_render(snap)]
    ledger = data["ledger"]
    if ledger["questions"]:
        lines.append("ledger:")
        for q in ledger["questions"]:
            asked = "asked" if q["asked"] else "not asked"
            lines.append(f"  [{q['id']}] {q['text']} ({q['category']}, {asked})")
            for a in ledger["answers"]:
                if a["question_id"] == q["id"]:
                    how = a.get("how") or a["kind"]
                    learnable = "may be learned" if how in ("typed", "chosen") else "never learned"
                    lines.append(f"    -> {a['text']} ({how}, {learnable}; {a['source'].get('channel')})")
    tests = data.get("tests")
    if tests:
        lines.append(f"tests: {tests['command']} -> exit {tests['exitCode']} ({tests['status']})")
    lines += _render_agent(snap.get("agent"))
    lines.append(f"events: {len(data['events'])}")
    return "\n".join(lines)


def _render_agent(agent: dict[str, Any] | None) -> list[str]:
    """The model's work: per role its mode, requests, tool calls, tokens and why a loop stopped."""
    if not agent:
        return []
    usage = agent["usage"]
    lines = [f"model usage: {usage['totalTokens']} tokens "
             f"({usage['promptTokens']} prompt, {usage['completionTokens']} completion)"]
    for role, item in agent["roles"].items():
        text = f"  {role}: {item['mode']}, {item['turns']} request(s), {item['toolCalls']} tool call(s), " \
               f"{item['usage']['totalTokens']} tokens"
        if item["mode"] == "engine":  # an agent CLI played the role
            cost = f", ${item['costUsd']:.4f}" if item.get("costUsd") is not None else ""
            text = f"  {role}: the {item.get('engine')} engine {item.get('engineVersion') or ''}".rstrip() + \
                   f", {item['turns']} request(s), {item['toolCalls']} tool call(s), " \
                   f"{item['usage']['totalTokens']} tokens{cost}"
        if item["stopped"] not in (None, "answered"):
            text += f", stopped: {item['stopped']} reached"
        if item["mode"] == "edit_blocks":
            text += " (the endpoint takes no tools: edit blocks)"
        lines.append(text)
        if item.get("summary") and role == "implementer":
            lines.append("    summary: " + " ".join(str(item["summary"]).split())[:500])
    return lines
