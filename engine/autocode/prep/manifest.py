"""The manifest of declared inputs: strict parsing, path rules, and the preflight check.

A manifest names the few public files a task depends on, each with its type,
mode, size and SHA-256. Everything here only reads: it is safe to call before
deciding whether a task may start.

Kept whole: parsing, the path rules and the preflight are one strict reading
of one file format; apart, the rules would sit away from the parser that
applies them.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from autocode import gitsafe
from autocode.errors import SetupError
from autocode.prep import fsutil
from autocode.prep.inventory import Inventory, inventory

MAX_MANIFEST_BYTES = 1 << 20
MAX_INPUTS = 1000
MAX_COMPONENT_BYTES = 255
MAX_SIZE = 1 << 40
ENTRY_KEYS = ("path", "type", "mode", "size", "sha256")
_MODE = re.compile(r"0[0-7]{3}")
_DIGEST = re.compile(r"[0-9a-f]{64}")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_DRIVE = re.compile(r"[A-Za-z]:")
EXAMPLE = "pilot-public/PUBLIC-PROOF.md"


@dataclass(frozen=True)
class DeclaredInput:
    path: str
    type: str
    mode: int
    size: int
    sha256: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "type": self.type,
            "mode": f"{self.mode:04o}",
            "size": self.size,
            "sha256": self.sha256,
        }


@dataclass(frozen=True)
class Problem:
    kind: str
    text: str
    missing: bool = False


class _DuplicateKey(ValueError):
    pass


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise _DuplicateKey(key)
        result[key] = value
    return result


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _invalid(manifest: Path, text: str) -> SetupError:
    return SetupError(f"manifest {manifest}: {text}", kind="manifestInvalid")


def read_manifest_text(manifest_path: Path | str) -> str:
    """The manifest's text; refuses links, non-files and anything over 1 MiB without reading it."""
    path = Path(manifest_path)
    try:
        st = os.lstat(path)
    except OSError as exc:
        raise _invalid(path, f"cannot be read ({exc.strerror}); pass the path of the JSON manifest") from exc
    if stat.S_ISLNK(st.st_mode):
        raise _invalid(path, "is a symbolic link; pass the real file, not a link to it")
    if not stat.S_ISREG(st.st_mode):
        raise _invalid(path, "is not a regular file; pass the JSON manifest file")
    if st.st_size > MAX_MANIFEST_BYTES:
        raise _invalid(
            path,
            f"is {st.st_size} bytes, over the {MAX_MANIFEST_BYTES} byte limit; "
            "a manifest lists only the few public files a task needs",
        )
    try:
        fd = os.open(path, fsutil.O_FILE)
    except OSError as exc:
        raise _invalid(path, f"cannot be opened ({exc.strerror}); pass the real file") from exc
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise _invalid(path, "is not a regular file; pass the JSON manifest file")
        data = b""
        while len(data) <= MAX_MANIFEST_BYTES:
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                break
            data += chunk
    finally:
        os.close(fd)
    if len(data) > MAX_MANIFEST_BYTES:
        raise _invalid(path, f"grew past the {MAX_MANIFEST_BYTES} byte limit while it was read")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _invalid(path, f"is not UTF-8 ({exc.reason} at byte {exc.start}); save it as UTF-8 JSON") from exc


# A manifest is {"inputs": [{...}]}: three levels. Anything far deeper is refused before
# parsing, so no input can exhaust the parser's recursion.
MAX_DEPTH = 16
_JSON_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
_BRACKET = re.compile(r"[\[\]{}]")


def nesting_depth(text: str) -> int:
    """How deep the objects and lists of a JSON text nest (brackets inside strings not counted)."""
    depth = deepest = 0
    for match in _BRACKET.finditer(_JSON_STRING.sub("", text)):
        if match.group() in "[{":
            depth += 1
            deepest = max(deepest, depth)
        else:
            depth -= 1
    return deepest


def load_manifest(manifest_path: Path | str) -> list[DeclaredInput]:
    """Parse and check a manifest on its own (schema and path rules), or raise `manifestInvalid`."""
    path = Path(manifest_path)
    text = read_manifest_text(path)
    depth = nesting_depth(text)
    if depth > MAX_DEPTH:
        raise _invalid(
            path,
            f"nests objects and lists {depth} levels deep, over the limit of {MAX_DEPTH} (a manifest needs 3: "
            '{"inputs": [{...}]}); write one flat entry per input',
        )
    try:
        doc = json.loads(text, object_pairs_hook=_no_duplicate_keys, parse_constant=_reject_constant)
    except _DuplicateKey as exc:
        raise _invalid(path, f"the key {exc.args[0]!r} appears twice in one object; keep one") from exc
    except ValueError as exc:
        raise _invalid(path, f"is not valid JSON ({exc}); fix the syntax") from exc
    if not isinstance(doc, dict) or set(doc) != {"inputs"} or not isinstance(doc["inputs"], list):
        raise _invalid(
            path,
            'must be one object with exactly one key, "inputs", holding a list of entries '
            '{"path", "type": "file", "mode", "size", "sha256"}',
        )
    entries = doc["inputs"]
    if len(entries) > MAX_INPUTS:
        raise _invalid(path, f"declares {len(entries)} inputs, over the limit of {MAX_INPUTS}")
    problems: list[str] = []
    result: list[DeclaredInput] = []
    seen: dict[str, int] = {}
    folded: dict[str, int] = {}
    for index, raw in enumerate(entries):
        label = f"inputs[{index}]"
        entry_problems = _entry_problems(raw)
        if entry_problems:
            shown = json.dumps(raw.get("path")) if isinstance(raw, dict) and "path" in raw else ""
            problems += [f"{label} {shown}: {p}".replace("  ", " ") for p in entry_problems]
            continue
        item = DeclaredInput(
            raw["path"], raw["type"], int(raw["mode"], 8), raw["size"], raw["sha256"]
        )
        if item.path in seen:
            problems.append(
                f"{label} {json.dumps(item.path)}: declared twice (also inputs[{seen[item.path]}]). "
                "Remedy: keep one entry per file."
            )
            continue
        key = item.path.casefold()
        if key in folded:
            problems.append(
                f"{label} {json.dumps(item.path)}: differs from inputs[{folded[key]}] only by letter case, "
                "which names one file on case-insensitive systems. Remedy: keep one entry, spelled exactly as on disk."
            )
            continue
        seen[item.path] = index
        folded[key] = index
        result.append(item)
    if problems:
        raise SetupError(
            f"manifest {path} has invalid entries:\n" + "\n".join("  " + p for p in problems),
            kind="manifestInvalid",
            data={"problems": problems},
        )
    return result


_PATH_REMEDY = (
    "Remedy: give the file's path relative to the workspace top, with '/' between plain names "
    f"(for example {EXAMPLE})."
)


def path_problem(path: str) -> str | None:
    """Why `path` cannot name a declared input, with the remedy; None when it can."""
    if path == "":
        return f"the path is empty. {_PATH_REMEDY}"
    if "\x00" in path:
        return f"the path contains a NUL character. {_PATH_REMEDY}"
    if _CONTROL.search(path):
        return f"the path contains a control character (such as a newline). {_PATH_REMEDY}"
    if "\\" in path:
        return f"the path contains a backslash; write '/' between folders. {_PATH_REMEDY}"
    if path.startswith("/"):
        return f"the path is absolute; inputs must live inside the workspace. {_PATH_REMEDY}"
    if _DRIVE.match(path):
        return f"the path starts with a drive letter; inputs must live inside the workspace. {_PATH_REMEDY}"
    if path.endswith("/"):
        return "the path ends with '/', which names a folder; only files can be declared. Remedy: declare each file in it."
    try:
        encoded = [part.encode("utf-8") for part in path.split("/")]
    except UnicodeEncodeError:
        return f"the path is not valid Unicode text. {_PATH_REMEDY}"
    parts = path.split("/")
    if "" in parts:
        return f"the path has an empty part ('//'). {_PATH_REMEDY}"
    if ".." in parts:
        return f"the path contains '..'; parent folders cannot be named. {_PATH_REMEDY}"
    if "." in parts:
        return f"the path contains '.' as a part. {_PATH_REMEDY}"
    if any(part.lower() == ".git" for part in parts):
        return (
            "the path goes through a .git folder, which is never copied. "
            f"Remedy: declare a file of the work tree (for example {EXAMPLE})."
        )
    if parts[0] == ".autocode":
        return (
            "the path is inside .autocode, which is never copied. "
            f"Remedy: move the file to a non-ignored project path (for example {EXAMPLE})."
        )
    if any(len(part) > MAX_COMPONENT_BYTES for part in encoded):
        return f"a part of the path is longer than {MAX_COMPONENT_BYTES} bytes. Remedy: use a shorter name."
    return None


def _entry_problems(raw: Any) -> list[str]:
    if not isinstance(raw, dict):
        return ['is not an object. Remedy: write {"path", "type": "file", "mode", "size", "sha256"}.']
    problems: list[str] = []
    unknown = sorted(set(raw) - set(ENTRY_KEYS))
    if unknown:
        problems.append(f"unknown key(s) {', '.join(map(repr, unknown))}. Remedy: use only {', '.join(ENTRY_KEYS)}.")
    missing = [k for k in ENTRY_KEYS if k not in raw]
    if missing:
        problems.append(f"missing key(s) {', '.join(map(repr, missing))}. Remedy: give all of {', '.join(ENTRY_KEYS)}.")
    if "path" in raw:
        if not isinstance(raw["path"], str):
            problems.append(f"the path is not a string. {_PATH_REMEDY}")
        else:
            problem = path_problem(raw["path"])
            if problem:
                problems.append(problem)
    if "type" in raw and raw["type"] != "file":
        problems.append(
            f"type {json.dumps(raw['type'])} is not supported; only \"file\" can be declared. "
            "Remedy: declare each file of a folder as its own entry."
        )
    if "mode" in raw and not (isinstance(raw["mode"], str) and _MODE.fullmatch(raw["mode"])):
        problems.append(
            f"mode {json.dumps(raw['mode'])} is malformed. Remedy: give the permission bits as a string "
            "of four octal digits starting with 0, such as \"0644\" (setuid/setgid bits are never copied)."
        )
    if "size" in raw:
        size = raw["size"]
        if isinstance(size, bool) or not isinstance(size, int) or size < 0 or size > MAX_SIZE:
            problems.append(
                f"size {json.dumps(size)} is not a whole number of bytes. "
                "Remedy: give the file's byte count as a non-negative integer (what `stat -c %s` prints)."
            )
    if "sha256" in raw and not (isinstance(raw["sha256"], str) and _DIGEST.fullmatch(raw["sha256"])):
        problems.append(
            "sha256 is malformed. Remedy: give the 64 lowercase hex digits `sha256sum` prints for the file."
        )
    return problems


# --- the preflight: one declared input against one tree -------------------------------------


def check_input(root_fd: int, item: DeclaredInput, where: str) -> Problem | None:
    """Check type, mode, size and SHA-256 of `item` below `root_fd` (no link followed)."""
    parts = item.path.split("/")
    label = f"{json.dumps(item.path)} in the {where}"
    fd = os.dup(root_fd)
    try:
        for depth, part in enumerate(parts[:-1]):
            try:
                child = os.open(part, fsutil.O_DIR, dir_fd=fd)
            except OSError as exc:
                ancestor = "/".join(parts[: depth + 1])
                return _ancestor_problem(fd, part, ancestor, label, exc)
            os.close(fd)
            fd = child
        try:
            st = os.stat(parts[-1], dir_fd=fd, follow_symlinks=False)
        except FileNotFoundError:
            return Problem(
                "preflightFailed",
                f"{label} is missing (names are compared byte for byte, without Unicode normalization). "
                "Remedy: create the file there or correct the path in the manifest and the brief.",
                missing=True,
            )
        kind = _type_problem(st.st_mode)
        if kind:
            return Problem("manifestInvalid", f"{label} is {kind}. Remedy: declare the regular file itself.")
        try:
            leaf = os.open(parts[-1], fsutil.O_FILE, dir_fd=fd)
        except OSError as exc:
            return Problem("preflightFailed", f"{label} cannot be opened ({exc.strerror}). Remedy: make it readable.")
        try:
            opened = os.fstat(leaf)
            if (opened.st_dev, opened.st_ino) != (st.st_dev, st.st_ino) or not stat.S_ISREG(opened.st_mode):
                return Problem("preflightFailed", f"{label} changed while it was checked. Remedy: run prep again.")
            mismatches = []
            mode = stat.S_IMODE(opened.st_mode) & 0o777
            if mode != item.mode:
                mismatches.append(f"mode is {mode:04o}, the manifest says {item.mode:04o}")
            if opened.st_size != item.size:
                mismatches.append(f"size is {opened.st_size}, the manifest says {item.size}")
            else:
                digest = _sha256(leaf)
                if digest != item.sha256:
                    mismatches.append(f"sha256 is {digest}, the manifest says {item.sha256}")
        finally:
            os.close(leaf)
        if mismatches:
            return Problem(
                "preflightFailed",
                f"{label} does not match the manifest: {'; '.join(mismatches)}. "
                "Remedy: restore the intended public file, or recompute the entry from it "
                "(stat -c '%a %s' and sha256sum) and update the manifest.",
            )
        return None
    finally:
        os.close(fd)


def _ancestor_problem(parent_fd: int, name: str, ancestor: str, label: str, exc: OSError) -> Problem:
    if exc.errno in (errno.ELOOP, errno.ENOTDIR):
        try:
            st = os.stat(name, dir_fd=parent_fd, follow_symlinks=False)
        except OSError:
            st = None
        if st is not None and stat.S_ISLNK(st.st_mode):
            return Problem(
                "manifestInvalid",
                f"{label} is reached through the symbolic link {json.dumps(ancestor)}; "
                "inputs must be stored directly, not behind links. Remedy: move the file to a real folder "
                "and update the manifest and the brief.",
            )
        return Problem(
            "manifestInvalid", f"{label}: {json.dumps(ancestor)} is not a folder. Remedy: correct the path."
        )
    if exc.errno == errno.ENOENT:
        return Problem(
            "preflightFailed",
            f"{label} is missing (the folder {json.dumps(ancestor)} does not exist). "
            "Remedy: create the file there or correct the path in the manifest and the brief.",
            missing=True,
        )
    return Problem("preflightFailed", f"{label}: {json.dumps(ancestor)} cannot be opened ({exc.strerror}).")


def _type_problem(mode: int) -> str | None:
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISLNK(mode):
        return "a symbolic link; a leaf link is not accepted even when it points inside the workspace"
    if stat.S_ISDIR(mode):
        return "a folder; only files can be declared"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "a device"


def _sha256(fd: int) -> str:
    digest = hashlib.sha256()
    while True:
        chunk = os.read(fd, 1 << 20)
        if not chunk:
            return digest.hexdigest()
        digest.update(chunk)


_PRIORITY = {"manifestInvalid": 0, "inputIgnored": 1, "preflightFailed": 2}


def raise_problems(problems: list[Problem], heading: str, data: dict[str, Any] | None = None) -> None:
    """One SetupError listing every problem; its kind is the most basic one found."""
    if not problems:
        return
    kind = min((p.kind for p in problems), key=lambda k: _PRIORITY.get(k, 9))
    raise SetupError(
        heading + ":\n" + "\n".join("  " + p.text for p in problems),
        kind=kind,
        data={**(data or {}), "problems": [p.text for p in problems]},
    )


def validate_manifest(
    workspace: Path | str, manifest_path: Path | str, inv: Inventory | None = None
) -> list[DeclaredInput]:
    """Load the manifest and check every input in the workspace; only reads, never writes.

    Raises `SetupError` with kind `manifestInvalid`, `inputIgnored` or `preflightFailed`.
    """
    items = load_manifest(manifest_path)
    check_declared(inventory(workspace) if inv is None else inv, items, manifest_path)
    return items


def check_declared(inv: Inventory, items: list[DeclaredInput], manifest_path: Path | str) -> None:
    """The workspace half of the preflight: file types, git visibility, mode, size, digest."""
    listed = {e.path for e in inv.entries if e.kind == "file"}
    root_fd = os.open(inv.root, fsutil.O_DIR & ~os.O_NOFOLLOW)
    try:
        found = [(item, check_input(root_fd, item, "workspace")) for item in items]
    finally:
        os.close(root_fd)
    # A file git does not list is reported as such even when its bytes also differ:
    # moving it is the first thing to do.
    unlisted = [
        item.path
        for item, problem in found
        if item.path not in listed and (problem is None or (problem.kind == "preflightFailed" and not problem.missing))
    ]
    rules = ignore_rules_in(inv, unlisted)
    problems = [
        _ignored_problem(item.path, rules.get(item.path)) if item.path in unlisted else problem
        for item, problem in found
        if problem is not None or item.path in unlisted
    ]
    raise_problems([p for p in problems if p], f"declared inputs of {manifest_path} failed the workspace check")


def ignore_rules_in(inv: Inventory, paths: list[str]) -> dict[str, str]:
    """gitsafe.ignore_rules, asked of the innermost nested repository holding each path."""
    by_component: dict[str, list[str]] = {}
    for path in paths:
        owner = max((c for c in inv.components if path.startswith(c + "/")), key=len, default="")
        by_component.setdefault(owner, []).append(path)
    rules: dict[str, str] = {}
    for component, group in by_component.items():
        prefix = component + "/" if component else ""
        found = gitsafe.ignore_rules(inv.root / component, [p[len(prefix):] for p in group])
        rules.update({prefix + p: f"{prefix}{rule}" for p, rule in found.items()})
    return rules


def _ignored_problem(path: str, rule: str | None) -> Problem:
    why = f"git ignores it ({rule})" if rule else "git does not list it (not tracked, and not an ordinary untracked file)"
    return Problem(
        "inputIgnored",
        f"{json.dumps(path)}: {why}, so it never enters a prep copy. Remedy: move only this public file "
        f"to a path git does not ignore (for example {EXAMPLE}), then update the manifest and the task brief "
        "to name the new path. Do not turn off git isolation or un-ignore whole folders.",
    )
