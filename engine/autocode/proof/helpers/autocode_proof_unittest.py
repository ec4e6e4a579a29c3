"""`python -m unittest` with a result class that also writes each test's id, outcome and file
as JSON lines (to AUTOCODE_PROOF_REPORT).

Run as `<python> autocode_proof_unittest.py <unittest arguments>`: the arguments, the
output and the exit code are those of `python -m unittest` with the same arguments.
Written for any Python 3 a project may use: nothing evaluated at import needs 3.10+.
"""

from __future__ import annotations

import json
import os
import sys
import traceback
import unittest
from typing import IO, Any

_LIMIT = 4000


class _Sink:
    def __init__(self, path: str | None) -> None:
        self.stream: IO[str] | None = open(path, "a", encoding="utf-8") if path else None  # noqa: SIM115

    def write(self, record: dict[str, Any]) -> None:
        if self.stream is not None:
            self.stream.write(json.dumps(record, ensure_ascii=True) + "\n")
            self.stream.flush()


_SINK = _Sink(os.environ.get("AUTOCODE_PROOF_REPORT"))


def _module_file(module: str) -> str | None:
    found = sys.modules.get(module)
    path = getattr(found, "__file__", None)
    if isinstance(path, str):
        return os.path.abspath(path)
    # a module that failed to import: where it would have been, from the import path
    tail = module.replace(".", os.sep)
    for base in sys.path:
        for candidate in (tail + ".py", os.path.join(tail, "__init__.py")):
            full = os.path.join(base or os.getcwd(), candidate)
            if os.path.isfile(full):
                return os.path.abspath(full)
    return None


def _describe(test: Any) -> tuple[str, str | None, bool]:
    """The test's id, its module and whether it stands for a whole module or class."""
    if isinstance(test, unittest.case._SubTest):  # type: ignore[attr-defined]
        test = test.test_case
    name = type(test).__name__
    if name in ("_FailedTest", "ModuleImportFailure", "ModuleSkipped"):
        method = getattr(test, "_testMethodName", "") or test.id()
        return method, method, True
    if name == "_ErrorHolder":
        # "setUpClass (pkg.mod.Class)" / "setUpModule (pkg.mod)"
        text = str(getattr(test, "description", test.id()))
        inner = text[text.find("(") + 1 : text.rfind(")")] if "(" in text else text
        module = inner
        if "setUpModule" not in text and "tearDownModule" not in text and "." in inner:
            module = inner.rsplit(".", 1)[0]
        return inner, module, True
    return test.id(), type(test).__module__, False


class RecordingResult(unittest.TextTestResult):
    def _record(self, test: Any, outcome: str, err: Any = None, reason: str | None = None) -> None:
        test_id, module, whole = _describe(test)
        message = reason
        if err is not None and err[0] is not None:
            message = "".join(traceback.format_exception(err[0], err[1], err[2]))
        _SINK.write(
            {
                "event": "test",
                "id": test_id,
                "outcome": outcome,
                "file": _module_file(module) if module else None,
                "whole": whole,
                "message": message[-_LIMIT:] if message else None,
            }
        )

    def addSuccess(self, test: Any) -> None:
        super().addSuccess(test)
        self._record(test, "passed")

    def addFailure(self, test: Any, err: Any) -> None:
        super().addFailure(test, err)
        self._record(test, "failed", err)

    def addError(self, test: Any, err: Any) -> None:
        super().addError(test, err)
        self._record(test, "error", err)

    def addSkip(self, test: Any, reason: str) -> None:
        super().addSkip(test, reason)
        self._record(test, "skipped", reason=reason)

    def addExpectedFailure(self, test: Any, err: Any) -> None:
        super().addExpectedFailure(test, err)
        self._record(test, "skipped", reason="expected failure")

    def addUnexpectedSuccess(self, test: Any) -> None:
        super().addUnexpectedSuccess(test)
        self._record(test, "failed", reason="unexpected success")

    def addSubTest(self, test: Any, subtest: Any, err: Any) -> None:
        super().addSubTest(test, subtest, err)
        if err is not None:
            failed = issubclass(err[0], test.failureException)
            self._record(test, "failed" if failed else "error", err)


class RecordingRunner(unittest.TextTestRunner):
    resultclass = RecordingResult  # type: ignore[assignment]


def main() -> None:
    # what `python -m unittest` does: the current folder first on the import path (unless
    # -P or -I told the interpreter not to put any folder there)
    if not (getattr(sys.flags, "safe_path", False) or sys.flags.isolated):
        sys.path[0] = os.getcwd()
    sys.argv[0] = os.path.basename(sys.executable) + " -m unittest"
    _SINK.write({"event": "start", "cwd": os.getcwd()})
    try:
        unittest.main(module=None, testRunner=RecordingRunner)
    finally:
        _SINK.write({"event": "finish"})


if __name__ == "__main__":
    main()
