"""The proof's base run starts from the unchanged prep copy when the implementer starts, so it
runs while the change is being made instead of after it; the proof takes that run when its base
tree is the same, and a task that stops before its proof stops the run too. Real git
repositories, real pytest runs, a provider registered as any provider is."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from autocode.errors import AutoCodeError
from autocode.providers import (
    Implementation,
    Plan,
    Provider,
    ProviderConfig,
    ProviderContext,
    ProviderKind,
    RequirementsReport,
    Review,
)
from autocode.providers import register as register_provider
from autocode.providers import unregister as unregister_provider
from autocode.providers.fixture import scripted_diff
from autocode.tasks import Source, TaskOptions, TaskRun
from support import make_repo

CLI = Source("cli", "tester")
PYTEST = f"env PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 {sys.executable} -m pytest -q -p no:cacheprovider"
CALC = "def add(a, b):\n    return a - b\n"
FIXED = "def add(a, b):\n    return a + b\n"
TESTS = "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
# How long the implementer waits for the base run before it gives up and changes the copy anyway:
# only a bound for the case the behaviour is missing, never a measured time.
WAIT_FOR_BASE_S = 120.0


class _Seen:
    """What the implementer saw of the base run while it worked."""

    def __init__(self) -> None:
        self.base_cached_while_implementing = False


class _WaitingProvider:
    """Implements by waiting until the base run has cached its results (it has run while the
    implementer worked), then fixing calc.py; or fails at once when `fail` is set."""

    name = "waiting"
    model: str | None = None

    def __init__(self, seen: _Seen, fail: bool) -> None:
        self.seen = seen
        self.fail = fail

    def requirements(self, ctx: ProviderContext) -> RequirementsReport:
        return RequirementsReport(summary=ctx.brief, questions=[], acceptance_criteria=[], citations=["brief"],
                                  machine_decisions=[])

    def plan(self, ctx: ProviderContext, requirements: RequirementsReport) -> Plan:
        return Plan(summary=ctx.brief, steps=["Fix add in calc.py."], citations=["brief"], acceptance_criteria=[])

    def implement(self, ctx: ProviderContext, plan: Plan) -> Implementation:
        if self.fail:
            raise AutoCodeError("the implementer gave up", kind="providerError")
        cache = ctx.workspace / ".autocode" / "cache" / "baseline"
        deadline = time.monotonic() + WAIT_FOR_BASE_S
        while time.monotonic() < deadline:
            if any(cache.glob("*.json")):
                self.seen.base_cached_while_implementing = True
                break
            time.sleep(0.05)
        return Implementation(diff=scripted_diff(ctx.copy, [{"path": "calc.py", "content": FIXED}]),
                              summary="fixed add")

    def investigate(self, ctx: ProviderContext) -> list[str]:
        return []

    def review(self, ctx: ProviderContext, diff: str, test_exit_code: int | None) -> Review:
        return Review(summary="fine", concerns=[], lessons=[])


@pytest.fixture
def waiting() -> Iterator[tuple[_Seen, dict[str, bool]]]:
    seen, mode = _Seen(), {"fail": False}

    def build(settings: object, config: ProviderConfig, role: str) -> Provider:
        return _WaitingProvider(seen, mode["fail"])

    kind = register_provider(ProviderKind("waiting", lambda config, role, model: None, build))
    yield seen, mode
    unregister_provider(kind)


def _start(tmp_path: Path, tests: str = TESTS) -> TaskRun:
    repo = make_repo(tmp_path / "proj", {
        "calc.py": CALC,
        "tests/__init__.py": "",
        "tests/test_calc.py": tests,
        "pytest.ini": "[pytest]\ntestpaths = tests\n",
        ".gitignore": "__pycache__/\n.pytest_cache/\n",
    })
    run = TaskRun.start(repo, "Fix add", TaskOptions(provider="waiting", test_command=PYTEST))
    snap = run.snapshot()
    assert snap.needs.kind == "approve_plan", snap
    return run


def _early_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "autocode-early-base"]


def test_the_base_runs_while_the_implementer_works_and_the_proof_takes_it(
        tmp_path: Path, waiting: tuple[_Seen, dict[str, bool]]) -> None:
    seen, _mode = waiting
    run = _start(tmp_path)
    run.approve_plan(run.snapshot().plan_revision, CLI)
    assert seen.base_cached_while_implementing, "the base run had not finished while the implementer worked"
    snap = run.snapshot()
    assert snap.needs.kind == "approve_completion", snap
    proof = snap.needs.proof
    assert proof is not None and proof.status == "verified", proof
    assert proof.proofs == ["tests/test_calc.py::test_add"]
    base = next(r for r in proof.runs if r.role == "base")
    # The base ran for this task (not a cache from an earlier one), and it ran the unchanged code.
    assert base.cached is False and base.status == "finished", base
    leftovers = list((run.workspace / ".autocode" / "prep").glob("*/base-early-*"))
    assert leftovers == []


def test_a_task_that_stops_before_its_proof_stops_the_base_run(
        tmp_path: Path, waiting: tuple[_Seen, dict[str, bool]]) -> None:
    _seen, mode = waiting
    mode["fail"] = True
    # The base suite would run for ten minutes: only a stop ends it in time.
    slow = TESTS + "\n\ndef test_slow():\n    import time\n    time.sleep(600)\n"
    run = _start(tmp_path, tests=slow)
    run.approve_plan(run.snapshot().plan_revision, CLI)
    snap = run.snapshot()
    assert snap.state == "FAILED" and snap.error is not None and "gave up" in snap.error.message, snap
    # The base tree goes only once its run has ended (its processes killed and reaped): gone when
    # the call returns, not some time after.
    assert list((run.workspace / ".autocode" / "prep").glob("*/base-early-*")) == [], \
        "the base run outlived the call that failed the task"
    for thread in _early_threads():
        thread.join(timeout=WAIT_FOR_BASE_S)
    assert _early_threads() == []
