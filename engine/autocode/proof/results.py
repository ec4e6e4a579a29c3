"""Per-test results as every framework's reader gives them: one `TestResult` per named test."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Outcome = Literal["passed", "failed", "error", "skipped"]


@dataclass(frozen=True)
class TestResult:
    """One named test and how it ended. `file` is the test file, relative to the project."""

    __test__ = False  # not a pytest test class, despite its name

    id: str
    outcome: Outcome
    file: str | None = None
    message: str | None = None


@dataclass(frozen=True)
class Report:
    """What one run said per test; `results` is None when the command gives no per-test output."""

    framework: str
    results: tuple[TestResult, ...] | None
    reason: str | None = None
