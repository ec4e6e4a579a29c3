"""Proving a change: the candidate run, the baseline on the base (cached per base tree and
command) and the probe (the change's tests over the base source), all through the task's one
runner (`autocode.sandbox.run`), then the verdict with its evidence.

The caller hands over the changed copy and, for each path the change touches, the base's
bytes (None: the path did not exist on the base). The base tree is that copy with those paths
put back; it is made next to the copy and removed afterwards. Nothing here runs in, or writes
to, the person's work tree.
"""

from __future__ import annotations

import concurrent.futures
import os
import shlex
import shutil
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from autocode.errors import UsageError
from autocode.proof import frameworks, weakening
from autocode.proof.results import Report
from autocode.proof.suite import (
    Progress,
    RunRecord,
    cache_read,
    cache_write,
    copy_tree,
    run_suite,
    tree_key,
)
from autocode.proof.verdict import Change, Verdict, decide

if TYPE_CHECKING:
    from autocode.sandbox.policy import Policy

# How long stopping the early base waits for its copy to finish and its processes to go (the run
# itself notices a stop within the runner's poll and is killed at once).
EARLY_STOP_WAIT_S = 60.0
# A top-level definition on an added line: Python's def/class/assignment, Go's func (or
# method), type, var and const.
_ADDED_NAME = (
    r"^\+\s*(?:async\s+)?(?:def|class)\s+([A-Za-z_]\w*)|^\+([A-Za-z_]\w*)\s*[:=]"
    r"|^\+func\s+(?:\([^)]*\)\s*)?([A-Za-z_]\w*)|^\+(?:type|var|const)\s+([A-Za-z_]\w*)"
)


@dataclass
class Proof:
    """The verdict and every run behind it."""

    verdict: Verdict
    candidate: RunRecord
    base: RunRecord | None = None
    probe: RunRecord | None = None
    concerns: list[dict[str, Any]] = field(default_factory=list)
    change: Change | None = None

    def to_dict(self) -> dict[str, Any]:
        runs = [r.summary() for r in (self.candidate, self.base, self.probe) if r is not None]
        return {
            **self.verdict.to_dict(),
            "concerns": list(self.concerns),
            "test_files": sorted(self.change.test_files) if self.change else [],
            "runs": runs,
        }

    def results(self) -> dict[str, Any]:
        """Every named test of every run (evidence/tests.json)."""
        out: dict[str, Any] = {}
        for run in (self.candidate, self.base, self.probe):
            if run is not None and run.report.results is not None:
                out[run.role] = [
                    {"id": r.id, "outcome": r.outcome, "file": r.file, "message": (r.message or "")[:2000] or None}
                    for r in run.report.results
                ]
        return out


def _text(data: bytes | None) -> str | None:
    return None if data is None else data.decode("utf-8", "replace")


def _put(tree: Path, rel: str, data: bytes | None) -> None:
    target = tree / rel
    if data is None:
        if target.is_symlink() or target.is_file():
            target.unlink()
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    if target.is_symlink():
        target.unlink()
    target.write_bytes(data)


class EarlyBase:
    """The base run started from the prep copy before the change is made, so it runs while the
    implementer works instead of after it (`start_base`). The proof takes it when its own base tree
    turns out the same (same key); otherwise it runs the base itself, as without one."""

    def __init__(self, key: concurrent.futures.Future[str], future: concurrent.futures.Future[RunRecord],
                 stop: threading.Event) -> None:
        self._key = key
        self.future = future
        self._stop = stop

    def runs(self, key: str) -> bool:
        """Whether this run is of the tree `key` names (waits for its copy to be made)."""
        return self._key.result() == key

    def stop(self) -> None:
        """Ends the run if it is still going (the task paused, failed or was cancelled first), and
        waits until it has ended: no process it started outlives the call that stops it."""
        self._stop.set()
        concurrent.futures.wait([self.future], timeout=EARLY_STOP_WAIT_S)


def start_base(
    command: str,
    *,
    copy: Path,
    workspace: Path,
    cwd_rel: str = "",
    framework: str | None = None,
    timeout: float = 600,
    cancelled: Callable[[], bool] = lambda: False,
    policy: Policy | None = None,
    cache_dir: Path | None = None,
) -> EarlyBase | None:
    """Copy the unchanged prep copy and run the suite on it in a thread of its own; the result is
    cached like any base run. None when the command cannot be split; a base already cached is
    found by the thread, which then runs nothing (the proof reads the cache as it always did)."""
    try:
        argv = shlex.split(command)
    except ValueError:
        return None
    if not argv:
        return None
    tree = copy.parent / f"base-early-{os.getpid()}-{time.monotonic_ns()}"
    stop = threading.Event()
    future: concurrent.futures.Future[RunRecord] = concurrent.futures.Future()
    keyed: concurrent.futures.Future[str] = concurrent.futures.Future()

    def work() -> None:
        # The copy is made here, beside the implementer: should the implementer write while it
        # is copied, this tree is simply not the proof's base (another key) and is not taken.
        # The tree is gone and the cache written before the result is handed over, so a proof
        # that waited for it leaves nothing behind.
        try:
            copy_tree(copy, tree)
            key = tree_key(tree, argv, cwd_rel, framework)
            if cache_read(cache_dir, key) is not None or stop.is_set():
                raise _NotNeeded
            keyed.set_result(key)  # from here on the run is there to be taken
            record = run_suite("base", argv, framework=framework, tree=tree, workspace=workspace, cwd_rel=cwd_rel,
                                timeout=timeout, cancelled=lambda: stop.is_set() or cancelled(), policy=policy,
                                output_file=None, progress=None, on_output=None)
            if record.status == "finished":
                cache_write(cache_dir, key, record.report)
        except BaseException as exc:  # handed to whoever waits for the run
            shutil.rmtree(tree, ignore_errors=True)
            if not keyed.done():
                keyed.set_result("")
            future.set_exception(exc)
            return
        shutil.rmtree(tree, ignore_errors=True)
        future.set_result(record)

    threading.Thread(target=work, name="autocode-early-base", daemon=True).start()
    return EarlyBase(keyed, future, stop)


class _NotNeeded(Exception):
    """The base is cached already, or the task stopped before the run began."""


def _resolution_problems(
    command: str, *, copy: Path, workspace: Path, cwd_rel: str, timeout: float,
    cancelled: Callable[[], bool], policy: Policy | None,
) -> list[str]:
    """Why the copy's tests would not test the copy (its packages resolve into the work tree or
    an installed copy), asked of the test command's own interpreter, in the same sandbox."""
    # lazy: the resolution probes, only for a verification
    from autocode import sandbox
    from autocode.proof import resolution

    cwd = copy / cwd_rel if cwd_rel else copy
    found = []
    for probe in resolution.probes(cwd, command):
        outcome = sandbox.run(probe.argv, copy=copy, workspace=workspace, cwd=cwd, timeout=min(timeout, 60),
                              cancelled=cancelled, policy=policy)
        found.append(resolution.classify_output(
            probe, outcome.output, copy_seen_at=sandbox.seen_at(copy, workspace, copy, policy=policy), workspace=workspace,
        ))
    judged = resolution.merge(found) if found else None
    if judged is None or judged.ok:
        return []
    return [f"{judged.reason} ({judged.remedy})" if judged.remedy else str(judged.reason)]


def added_names(changes: Mapping[str, tuple[bytes | None, bytes | None]]) -> frozenset[str]:
    """Top-level names the change's source files define that their base did not."""
    # lazy: a regular expression only a verification needs
    import re

    pattern = re.compile(_ADDED_NAME)
    found: set[str] = set()
    for rel, (old, new) in changes.items():
        if weakening.is_test_path(rel) or new is None:
            continue
        before = set((old or b"").decode("utf-8", "replace").splitlines())
        for line in new.decode("utf-8", "replace").splitlines():
            if line in before:
                continue
            match = pattern.match("+" + line.strip())
            if match:
                found.add(next(g for g in match.groups() if g))
    stems = {Path(rel).stem for rel, (old, new) in changes.items() if old is None and new is not None}
    return frozenset(found | stems)


def prove(
    command: str,
    *,
    copy: Path,
    workspace: Path,
    base_files: Mapping[str, bytes | None],
    cwd_rel: str = "",
    framework: str | None = None,
    timeout: float = 600,
    cancelled: Callable[[], bool] = lambda: False,
    policy: Policy | None = None,
    output_file: Path | None = None,
    cache_dir: Path | None = None,
    blockers: Sequence[str] = (),
    progress: Progress | None = None,
    on_output: Callable[[str], None] | None = None,
    early_base: EarlyBase | None = None,
) -> Proof:
    """Run the candidate, the base (or its cache) and the probe, and decide.

    `progress` gets a sentence as each run starts; `on_output` each line the tests print;
    `early_base` is a base run `start_base` began before the change, taken when its tree is this
    proof's base tree."""
    try:
        argv = shlex.split(command)
    except ValueError as exc:
        raise UsageError(f"the test command {command!r} cannot be split into words: {exc}") from exc
    if not argv:
        raise UsageError("the test command is empty; set test_command in .autocode/config.toml")
    changes: dict[str, tuple[bytes | None, bytes | None]] = {}
    for rel, old in base_files.items():
        target = copy / rel
        new = target.read_bytes() if target.is_file() and not target.is_symlink() else None
        if new != old:
            changes[rel] = (old, new)
    test_files = frozenset(r for r in changes if weakening.is_test_path(r))
    change = Change(
        test_files=test_files,
        source_files=frozenset(r for r in changes if not weakening.is_test_path(r)),
        added_names=added_names(changes),
    )
    concerns = [
        {"kind": c.kind, "path": c.path, "sentence": c.detail, "line": c.line}
        for c in weakening.weakening_concerns([(rel, _text(old), _text(new)) for rel, (old, new) in changes.items()])
    ]
    blockers = [*blockers, *_resolution_problems(command, copy=copy, workspace=workspace, cwd_rel=cwd_rel,
                                                  timeout=timeout, cancelled=cancelled, policy=policy)]
    common: dict[str, Any] = {"framework": framework, "workspace": workspace, "cwd_rel": cwd_rel, "timeout": timeout,
              "cancelled": cancelled, "policy": policy}
    stamp = f"{os.getpid()}-{time.monotonic_ns()}"
    base_tree, probe_tree = copy.parent / f"base-{stamp}", copy.parent / f"probe-{stamp}"
    try:
        # The base (before the change) and the probe (the change's tests over the base source)
        # are trees of their own, so the three runs can go side by side.
        copy_tree(copy, base_tree)
        for rel, (old, _new) in changes.items():
            _put(base_tree, rel, old)
        key = tree_key(base_tree, argv, cwd_rel, framework)
        early = early_base.future if early_base is not None and early_base.runs(key) else None
        if early_base is not None and early is None:
            early_base.stop()  # it ran a tree that is not this base (the copy changed under it)
        cached = None if early is not None else cache_read(cache_dir, key)
        present = sorted(r for r in test_files if changes[r][1] is not None)
        if present:
            copy_tree(base_tree, probe_tree)
            for rel in test_files:
                _put(probe_tree, rel, changes[rel][1])
        if progress:
            progress(f"running {command} on the change"
                     + ("" if cached or early else ", and on the base before it (cached for the next task)")
                     + (", and the change's tests over the base source" if present else ""))
        with concurrent.futures.ThreadPoolExecutor(max_workers=3) as pool:
            runs = {"candidate": pool.submit(run_suite, "candidate", argv, tree=copy, output_file=output_file,
                                             progress=progress, on_output=on_output, **common)}
            if early is not None:
                runs["base"] = early  # started before the change was made; may still be running
            elif cached is None:
                runs["base"] = pool.submit(run_suite, "base", argv, tree=base_tree, output_file=None,
                                           progress=None, on_output=None, **common)
            if present:
                narrowed = frameworks.narrow(argv, test_files=present, project=probe_tree, cwd=probe_tree / cwd_rel)
                runs["probe"] = pool.submit(run_suite, "probe", narrowed or argv, tree=probe_tree, output_file=None,
                                            progress=None, on_output=None, **common)
            done = {role: future.result() for role, future in runs.items()}
    finally:
        shutil.rmtree(base_tree, ignore_errors=True)
        shutil.rmtree(probe_tree, ignore_errors=True)
    candidate = done["candidate"]
    if candidate.status != "finished" or candidate.report.results is None or cancelled():
        verdict = decide(candidate=candidate.report, base=None, probe=None, change=change,
                         blockers=blockers, finished=candidate.status == "finished", exit_code=candidate.exit_code)
        return Proof(verdict, candidate, concerns=concerns, change=change)
    if cached is not None:
        base = RunRecord("base", argv, "finished", 0, 0.0, candidate.sandbox, cached, cached=True)
    else:
        base = done["base"]
        if base.status == "finished" and early is None:  # the early run cached itself
            cache_write(cache_dir, key, base.report)
    probe = done.get("probe")
    # A change of tests alone is said once, by the verdict's own reason; it is a concern to show,
    # not a way the tests were weakened.
    weak = [str(c["sentence"]) for c in concerns if c["kind"] != "testOnlyChange" or change.source_files]
    verdict = decide(
        candidate=candidate.report,
        base=base.report if base.status == "finished" else Report(base.report.framework, None, f"the base run {base.status}"),
        probe=probe.report if probe is not None else None,
        change=change,
        weakening=weak,
        blockers=blockers,
        exit_code=candidate.exit_code,
    )
    return Proof(verdict, candidate, base, probe, concerns, change)
