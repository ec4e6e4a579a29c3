"""The one type every proof module reports a weakened test with: `Concern`, and the finding
that both the `ast` and the line readers share (which tests of the base are gone, or renamed).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Concern:
    """One way the change weakens the tests. `path` is "" for the change as a whole; `line` is
    1-based, in the new file (in the base one for what the change removed)."""

    kind: str
    path: str
    detail: str
    line: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "path": self.path, "detail": self.detail, "line": self.line}


def vanished(path: str, old: dict[str, str], new: dict[str, str], others: dict[str, str],
              lines: dict[str, int]) -> list[Concern]:
    """Tests of the base that the new file no longer has: renamed (the same body under another
    name, maybe one the runner does not collect) or deleted. Bodies map name -> source."""
    out: list[Concern] = []
    appeared = {k: v for k, v in new.items() if k not in old}
    for name in old:
        if name in new:
            continue
        body = old[name]
        twin = next((k for k, v in appeared.items() if v == body and body.strip()), None)
        if twin is not None:
            appeared.pop(twin)
            out.append(Concern("testRenamed", path, f"{path}: {name} was renamed to {twin}", lines.get(name)))
            continue
        twin = next((k for k, v in others.items() if v == body and body.strip()), None)
        if twin is not None:
            out.append(Concern("testRenamed", path, f"{path}: {name} was renamed to {twin}, a name the test runner "
                               "does not collect, so it no longer runs", lines.get(name)))
            continue
        out.append(Concern("testDeleted", path, f"{path}: {name} was deleted", lines.get(name)))
    return out
