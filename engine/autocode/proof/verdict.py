"""The verdict on a change, from three runs of the project's own tests:

- `base`: the suite on the base (the copy before the change);
- `probe`: the change's test files over the base source (may be narrowed to those files);
- `candidate`: the suite on the changed copy.

A proof is a named test that ran and passed on the candidate and ran and failed (or errored)
before the change: in the probe when the change wrote or edited the test, on the base when the
change left the test alone (a test the person already had). A test that passed on the base must still run and pass on the
candidate (pass-to-pass). Missing evidence never counts as a pass: it makes the verdict
`unproven`, with the reason.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from autocode.proof.results import Report, TestResult

Status = Literal["verified", "unproven", "regressed", "failed"]
STATUSES: tuple[Status, ...] = ("verified", "unproven", "regressed", "failed")

# How a module that fails to import names what it misses (Python's own wording).
_MISSING_NAME = (
    re.compile(r"cannot import name '([A-Za-z_][\w]*)'"),
    re.compile(r"has no attribute '([A-Za-z_][\w]*)'"),
    re.compile(r"No module named '([\w.]+)'"),
    re.compile(r"name '([A-Za-z_][\w]*)' is not defined"),
    re.compile(r"undefined: ([A-Za-z_][\w.]*)"),  # go: the package does not build
)
_LISTED = 20  # names listed in a sentence before "and N more"


@dataclass(frozen=True)
class Change:
    """What the change touches: its test files and the names its source files add."""

    test_files: frozenset[str]
    source_files: frozenset[str]
    added_names: frozenset[str] = frozenset()


@dataclass
class Verdict:
    status: Status
    proofs: list[str] = field(default_factory=list)
    regressions: list[dict[str, str]] = field(default_factory=list)
    failing: list[str] = field(default_factory=list)
    already_failing: list[str] = field(default_factory=list)
    reasons: list[str] = field(default_factory=list)

    @property
    def verified(self) -> bool:
        return self.status == "verified"

    def summary(self) -> str:
        """One sentence a person can read: the verdict and the tests that decide it."""
        if self.status == "verified":
            return f"verified: {_names(self.proofs)} failed before the change and passed with it"
        if self.status == "regressed":
            broke = [f"{r['id']} ({r['now']})" for r in self.regressions]
            # A file or package that no longer loads comes first: it is why its tests are missing.
            first = "".join(f"{r}; " for r in self.reasons)
            return f"regressed: {first}{_names(broke)} passed before the change and no longer {_verb(broke, 'pass')}"
        if self.status == "failed":
            if self.failing:
                return f"failed: {_names(self.failing)} {_verb(self.failing, 'fail')} with the change{_because(self.reasons)}"
            return "failed: " + ("; ".join(self.reasons) or "the tests did not pass")
        return "unproven: " + ("; ".join(self.reasons) or "no test shows that the change does what it should")

    def to_dict(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "verified": self.verified,
            "summary": self.summary(),
            "proofs": list(self.proofs),
            "regressions": [dict(r) for r in self.regressions],
            "failing": list(self.failing),
            "already_failing": list(self.already_failing),
            "reasons": list(self.reasons),
        }


def _names(ids: Sequence[str]) -> str:
    shown = ", ".join(ids[:_LISTED])
    return shown + (f" and {len(ids) - _LISTED} more" if len(ids) > _LISTED else "")


def _verb(ids: Sequence[str], verb: str) -> str:
    """`fails` for one test, `fail` for several (`pass` takes -es)."""
    if len(ids) != 1:
        return verb
    return verb + ("es" if verb.endswith("s") else "s")


def _first_line(message: str | None) -> str:
    lines = [line.strip() for line in (message or "").splitlines() if line.strip()]
    return lines[0] if lines else "no message"


def _because(reasons: Sequence[str]) -> str:
    return f" ({'; '.join(reasons)})" if reasons else ""


def _by_id(report: Report | None) -> dict[str, TestResult]:
    if report is None or report.results is None:
        return {}
    return {r.id: r for r in report.results}


def _of_change(result: TestResult, change: Change, base_ids: Mapping[str, TestResult]) -> bool:
    """A test the change added or whose file it changed."""
    if result.file is not None and result.file in change.test_files:
        return True
    return bool(base_ids) and result.id not in base_ids and result.file is None


def _fails(result: TestResult | None) -> bool:
    return result is not None and result.outcome in ("failed", "error")


def _import_failure_names(result: TestResult) -> set[str]:
    found: set[str] = set()
    for pattern in _MISSING_NAME:
        for name in pattern.findall(result.message or ""):
            found.add(name)
            found.add(name.rsplit(".", 1)[-1])
    return found


def _loads(error: TestResult, result: TestResult) -> bool:
    """Whether `error` (a file or module that failed to load) is where `result` lives."""
    if error.file is not None and error.file == result.file:
        return True
    # A module named by the runner (unittest's `tests.test_x`, or just `test_x`): a dotted part of the id.
    dotted = f".{result.id}."
    return f".{error.id}." in dotted or result.id.startswith(f"{error.id}::")


def _probe_failed(result: TestResult, probe: Mapping[str, TestResult], load_errors: Sequence[TestResult],
                  change: Change, *, was_passing: bool) -> bool:
    """Whether the test is shown failing over the base source (the half of a proof before the change)."""
    before = probe.get(result.id)
    if before is not None:
        return before.outcome in ("failed", "error")
    if was_passing:
        return False  # it passed on the base and the probe never ran it on its own: nothing flipped
    # Not run on its own: only a whole-file import failure that names what the change adds counts.
    return any(_loads(e, result) and _import_failure_names(e) & change.added_names for e in load_errors)


def _proves(result: TestResult, before: Mapping[str, TestResult], probe: Mapping[str, TestResult],
            load_errors: Sequence[TestResult], change: Change) -> bool:
    """Whether a test that passes with the change shows the change is what made it pass."""
    if _of_change(result, change, before):
        # The change wrote or edited this test: only the probe (its code over the base source) counts.
        passed = result.id in before and before[result.id].outcome == "passed"
        return _probe_failed(result, probe, load_errors, change, was_passing=passed)
    # A test the change left alone that failed on the base: the change made it pass.
    was = before.get(result.id)
    return was is not None and was.outcome in ("failed", "error")


def decide(
    *,
    candidate: Report,
    base: Report | None,
    probe: Report | None,
    change: Change,
    weakening: Iterable[str] = (),
    blockers: Iterable[str] = (),
    finished: bool = True,
    exit_code: int | None = 0,
) -> Verdict:
    """The one verdict. `weakening`: sentences naming how the change weakens the tests (they
    cap the verdict at unproven); `blockers`: reasons the runs did not test the change at all
    (the copy imports the work tree...), which make the verdict unproven whatever the runs said; `finished`/`exit_code`: how the candidate run ended."""
    reasons = list(blockers)
    if reasons:
        # The runs did not test the change (the copy imports the work tree...): whatever they
        # said, pass or fail, is not about the change.
        failing = [r.id for r in candidate.results or () if r.outcome in ("failed", "error")]
        return Verdict("unproven", failing=failing, reasons=reasons)
    if not finished:
        return Verdict("failed", reasons=["the candidate run did not finish", *reasons])
    now = _by_id(candidate)
    if candidate.results is None:
        if exit_code != 0:
            return Verdict("failed", reasons=[f"the test command exited {exit_code}", *reasons])
        reason = candidate.reason or "the test command gives no per-test results"
        return Verdict("unproven", reasons=[f"{reason}; its exit code alone proves nothing", *reasons])
    before = _by_id(base)
    failing = [r.id for r in now.values() if r.outcome in ("failed", "error")]
    regressions = [
        {"id": test_id, "base": "passed", "now": now[test_id].outcome if test_id in now else "missing"}
        for test_id, was in before.items()
        if was.outcome == "passed" and (test_id not in now or now[test_id].outcome != "passed")
    ]
    if regressions:
        # An error under a name the base never ran is a file or package that no longer loads
        # (go's "undefined: X", a SyntaxError): its tests are all missing, and this is why.
        broken = [r for r in now.values() if r.outcome == "error" and r.id not in before]
        loads = [f"{r.id} does not load: {_first_line(r.message)}" for r in broken[:3]]
        return Verdict("regressed", regressions=regressions, failing=failing, reasons=[*reasons, *loads])
    old_failures = {i for i, r in before.items() if r.outcome in ("failed", "error")}
    probe_ids = _by_id(probe)
    # A test that failed on the base is the change's failure only when the change's test files,
    # run over the base source (the probe), do not fail it as well: a failure the change's own
    # version of the file shows without the change is one the project already had.
    new_failing = [
        i for i in failing
        if i not in old_failures
        or (_of_change(now[i], change, before) and not _fails(probe_ids.get(i)))
    ]
    already = sorted(set(failing) - set(new_failing))
    if new_failing:
        return Verdict("failed", failing=new_failing, already_failing=already, reasons=reasons)
    if exit_code != 0 and not already:
        return Verdict("failed", reasons=[f"the test command exited {exit_code} with no test failing", *reasons])
    if base is None or base.results is None:
        why = (base.reason if base is not None else None) or "the base run gave no per-test results"
        return Verdict("unproven", already_failing=already, reasons=[why, *reasons])
    # An error for a name the candidate never reports is a whole file or module that failed to load.
    load_errors = [r for r in probe_ids.values() if r.outcome == "error" and r.id not in now]
    proofs = sorted(r.id for r in now.values() if r.outcome == "passed" and _proves(r, before, probe_ids, load_errors, change))
    weak = list(weakening)
    if weak:
        reasons = [*reasons, *(f"the change weakens the tests: {w}" for w in weak)]
    if not proofs:
        if not change.test_files:
            reasons.insert(0, "the change adds or changes no test, so no test shows the change does what it should")
        elif not change.source_files:
            reasons.insert(0, "the change touches only tests: no source changed, so passing tests prove nothing about the code")
        else:
            reasons.insert(0, "the change's tests also pass without the change")
        return Verdict("unproven", already_failing=already, reasons=reasons)
    if reasons:
        return Verdict("unproven", proofs=proofs, already_failing=already, reasons=reasons)
    return Verdict("verified", proofs=proofs, already_failing=already)
