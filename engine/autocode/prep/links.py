"""Which symbolic links of the inventory a copy recreates, leaves out or refuses.

A link is resolved hop by hop inside the workspace (never by the operating
system, so nothing outside is read). It is recreated only when it ends at an
inventoried file or at a folder that holds inventoried content. A link that
ends outside the workspace, nowhere, or in a loop is left out. A link that
ends at content the copy deliberately omits (ignored files, `.git`,
`.autocode`) is refused: recreating it would materialize that content.
"""

from __future__ import annotations

import os
import posixpath
import stat
from dataclasses import dataclass

from autocode.errors import SetupError
from autocode.prep.copier import changed
from autocode.prep.entry import Entry
from autocode.prep.inventory import Inventory
from autocode.prep.manifest import ignore_rules_in

MAX_HOPS = 40


@dataclass(frozen=True)
class Resolution:
    status: str  # "file", "folder", "outside", "dangling", "loop"
    target: str  # workspace-relative final path ("" for the workspace itself)
    chain: tuple[str, ...]  # every link followed, in order


@dataclass
class LinkPlan:
    keep: dict[str, str]  # link path -> link text to write in the copy
    excluded: dict[str, str]  # link path -> reason
    refused: list[tuple[Entry, Resolution, str]]  # link, resolution, why


def resolve(root: str, link: str) -> Resolution:
    """Follow `link` (workspace-relative) to its end without leaving `root`."""
    resolved: list[str] = link.split("/")[:-1]
    chain: list[str] = []
    pending = _components(root, link, resolved, chain)
    if pending is None:
        return Resolution("outside", "", tuple(chain))
    while pending:
        part = pending.pop(0)
        if part in ("", "."):
            continue
        if part == "..":
            if not resolved:
                return Resolution("outside", "", tuple(chain))
            resolved.pop()
            continue
        candidate = [*resolved, part]
        rel = "/".join(candidate)
        try:
            st = os.lstat(os.path.join(root, rel))
        except OSError:
            return Resolution("dangling", rel, tuple(chain))
        if stat.S_ISLNK(st.st_mode):
            if len(chain) >= MAX_HOPS:
                return Resolution("loop", rel, tuple(chain))
            more = _components(root, rel, resolved, chain)
            if more is None:
                return Resolution("outside", "", tuple(chain))
            pending = more + pending
            continue
        if not stat.S_ISDIR(st.st_mode) and pending and any(p not in ("", ".") for p in pending):
            return Resolution("dangling", rel, tuple(chain))
        resolved = candidate
    final = "/".join(resolved)
    st = os.lstat(os.path.join(root, final)) if final else os.lstat(root)
    return Resolution("folder" if stat.S_ISDIR(st.st_mode) else "file", final, tuple(chain))


def _components(root: str, rel: str, resolved: list[str], chain: list[str]) -> list[str] | None:
    """Read the link at `rel`; return the parts still to walk, or None when it leaves `root`.

    An absolute target inside the workspace restarts the walk at the top (`resolved` is reset).
    """
    chain.append(rel)
    try:
        text = os.fsdecode(os.readlink(os.path.join(root, rel)))
    except OSError as exc:  # no longer a link: something replaced it after it was listed
        raise changed(rel, f"was replaced while the copy was made ({exc.strerror})") from exc
    if text.startswith("/"):
        real_root = os.path.realpath(root)
        for base in dict.fromkeys((root, real_root)):
            if text == base or text.startswith(base.rstrip("/") + "/"):
                resolved.clear()
                return text[len(base):].split("/")
        return None
    return text.split("/")


def plan_links(inv: Inventory) -> LinkPlan:
    """Decide every link of the inventory (reads the workspace, writes nothing)."""
    root = str(inv.root)
    plan = LinkPlan({}, {}, [])
    if not any(e.kind == "symlink" for e in inv.entries):
        return plan
    files = {e.path for e in inv.entries if e.kind == "file"}
    folders = inv.folders() | set(inv.components)
    unknown_folders: list[tuple[Entry, Resolution]] = []
    for entry in inv.entries:
        if entry.kind != "symlink":
            continue
        res = resolve(root, entry.path)
        if res.status in ("outside", "dangling", "loop"):
            plan.excluded[entry.path] = {
                "outside": "linkOutsideWorkspace",
                "dangling": "linkDangling",
                "loop": "linkLoop",
            }[res.status]
        elif res.target in (files if res.status == "file" else folders):
            plan.keep[entry.path] = _relative(entry.path, res.target)
        elif res.status == "folder" and not _never_copied(res.target):
            unknown_folders.append((entry, res))
        else:
            plan.refused.append((entry, res, _why(inv, res.target)))
    if unknown_folders:
        # A folder with nothing inventoried is either ignored (refuse) or simply empty (leave out).
        rules = ignore_rules_in(inv, [res.target + "/" for _, res in unknown_folders])
        for entry, res in unknown_folders:
            rule = rules.get(res.target + "/")
            if rule:
                plan.refused.append((entry, res, f"ignored by git ({rule})"))
            else:
                plan.excluded[entry.path] = "linkToEmptyFolder"
    return plan


def _never_copied(target: str) -> bool:
    parts = target.split("/")
    return parts[0] == ".autocode" or any(p.lower() == ".git" for p in parts)


def _why(inv: Inventory, target: str) -> str:
    if _never_copied(target):
        return "inside .git or .autocode, which are never copied"
    rules = ignore_rules_in(inv, [target])
    if target in rules:
        return f"ignored by git ({rules[target]})"
    return "not part of the copy (not tracked and not an ordinary untracked file)"


def _relative(link: str, target: str) -> str:
    start = posixpath.dirname(link) or "."
    return posixpath.relpath(target or ".", start)


def refusal_error(plan: LinkPlan) -> SetupError:
    lines = []
    for entry, res, why in plan.refused:
        chain = " -> ".join([*res.chain, res.target or "."])
        lines.append(
            f"  {entry.path!r}: the link {chain} ends at content that is {why}. "
            "Remedy: delete the link or point it at a tracked or ordinary untracked file; "
            "if the target is public, move it to a path git does not ignore. "
            "Do not turn off git isolation."
        )
    return SetupError(
        "the workspace has source links to content a prep copy never holds:\n" + "\n".join(lines),
        kind="aliasToIgnored",
        data={"links": [e.path for e, _, _ in plan.refused]},
    )
