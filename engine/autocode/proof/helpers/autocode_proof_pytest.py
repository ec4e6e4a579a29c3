"""A pytest plugin that writes each test's nodeid, outcome and file as JSON lines.

Loaded with `-p autocode_proof_pytest` from a folder holding only this file; the output
path comes from AUTOCODE_PROOF_REPORT. It changes nothing of what pytest collects or runs.
"""

from __future__ import annotations

import json
import os
from typing import IO, Any

_LIMIT = 4000
_stream: IO[str] | None = None
_active = False  # set once pytest is configured in the process that reports (not an xdist worker)


def _write(record: dict[str, Any]) -> None:
    global _stream
    if not _active:
        return
    path = os.environ.get("AUTOCODE_PROOF_REPORT")
    if not path:
        return
    if _stream is None:
        _stream = open(path, "a", encoding="utf-8")  # noqa: SIM115 - kept open for the session
    _stream.write(json.dumps(record, ensure_ascii=True) + "\n")
    _stream.flush()


def _is_worker(config: Any) -> bool:
    # pytest-xdist workers send their reports to the controller, which writes them
    return hasattr(config, "workerinput")


def _message(report: Any) -> str | None:
    text = getattr(report, "longreprtext", None) or ""
    if not text and getattr(report, "wasxfail", None):
        text = f"xfail: {report.wasxfail}"
    if not text and report.skipped and isinstance(report.longrepr, tuple) and len(report.longrepr) == 3:
        text = str(report.longrepr[2])
    return text[-_LIMIT:] or None


def pytest_configure(config: Any) -> None:
    global _active
    _active = not _is_worker(config)
    _write({"event": "start", "rootdir": str(config.rootpath), "cwd": os.getcwd()})


def pytest_runtest_logreport(report: Any) -> None:
    fspath = report.location[0] if getattr(report, "location", None) else None
    _write(
        {
            "event": "test",
            "nodeid": report.nodeid,
            "when": report.when,
            "outcome": report.outcome,
            "xfail": bool(getattr(report, "wasxfail", None) is not None and report.when == "call"),
            "file": fspath,
            "message": _message(report) if report.outcome != "passed" else None,
        }
    )


def pytest_collectreport(report: Any) -> None:
    if report.outcome == "passed":
        return
    _write(
        {
            "event": "collect",
            "nodeid": report.nodeid,
            "outcome": report.outcome,
            "file": report.nodeid.split("::")[0] or None,
            "message": _message(report),
        }
    )


def pytest_sessionfinish(session: Any, exitstatus: Any) -> None:
    _write({"event": "finish", "exitstatus": int(exitstatus)})
