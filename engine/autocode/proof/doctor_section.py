"""doctor's `test_interpreter` section: the test command that will run, its interpreter
and whether that has the test framework. The registry in `autocode.doctor` loads it
when a report is built."""

from __future__ import annotations

from typing import Any

from autocode.doctor import DoctorContext, Section
from autocode.proof.interpreter import interpreter_report

Json = Any


def _test_interpreter(ctx: DoctorContext) -> Json:
    item = ctx.snapshot["test_command"]
    cwd = ctx.package if ctx.package is not None else ctx.workspace
    return interpreter_report(item.value, origin=item.origin, cwd=cwd)


def _render_test_interpreter(data: Json) -> list[str]:
    if not data.get("test_command"):
        return [f"Tests: {data['message']}"]
    lines = [f"Tests: {data['test_command']}  ({data['origin']})"]
    if data["python_based"]:
        lines.append(f"  interpreter: {data['interpreter'] or '(not found)'}")
    if data["framework"]:
        state = {True: "installed", False: "NOT INSTALLED", None: "not checked"}[data["framework_installed"]]
        lines.append(f"  {data['framework']}: {state}")
    if data["framework_installed"] is False or not data["python_based"]:
        lines.append(f"  {data['message']}")
    return lines


def test_interpreter_section() -> Section:
    return Section("test_interpreter", _test_interpreter, _render_test_interpreter)
