"""bubblewrap on Linux: whether it can make a sandbox here, and the command line for one.

Inside: the whole file system read-only, `/dev`, a fresh `/proc`, a private `/tmp`, the
caller's home (and /root) hidden behind an empty writable folder with the toolchains that
live there (pyenv, nvm, ~/.local ...) shown read-only, the copy read-write at the workspace's
own path (which hides the work tree and its `.git`), the dependency folders read-only, the
caller's writable folders, no capabilities, its own pid/ipc/uts (and network) namespaces.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from autocode.sandbox.placement import inside

# Names the program the person may point at another bubblewrap (tests use it to make one absent).
PROGRAM_ENV = "AUTOCODE_BWRAP"
# Toolchain folders below a home folder, shown read-only when the home is hidden.
HOME_TOOLCHAINS = (
    ".pyenv", ".nvm", ".volta", ".asdf", ".cargo", ".rustup", ".rbenv", ".sdkman", ".deno", ".bun",
    "go", "miniconda3", "anaconda3", "miniforge3", "mambaforge", ".conda", ".local/bin", ".local/lib",
    ".local/share/uv", ".local/share/pipx", ".virtualenvs",
)


@dataclass(frozen=True)
class Probe:
    ok: bool
    program: str | None
    reason: str  # why not, or what works


def program() -> str | None:
    named = os.environ.get(PROGRAM_ENV)
    if named:
        return named if os.path.isfile(named) and os.access(named, os.X_OK) else None
    return shutil.which("bwrap")


@functools.lru_cache(maxsize=4)
def _probe(found: str | None, platform: str) -> Probe:
    if not platform.startswith("linux"):
        return Probe(False, None, f"bubblewrap is Linux only; this is {platform} (see docs/security.md for macOS)")
    if found is None:
        return Probe(
            False, None,
            "bubblewrap (bwrap) is not installed; install it (Debian/Ubuntu: apt-get install bubblewrap, "
            "Fedora: dnf install bubblewrap)",
        )
    argv = [found, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--unshare-pid",
            "--unshare-net", "--die-with-parent", "--cap-drop", "ALL", "true"]
    try:
        proc = subprocess.run(argv, capture_output=True, timeout=10, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return Probe(False, found, f"{found} could not start: {exc}")
    if proc.returncode != 0:
        detail = proc.stderr.decode("utf-8", "replace").strip() or f"exit code {proc.returncode}"
        return Probe(
            False, found,
            f"{found} cannot make a sandbox here ({detail}); user namespaces may be disabled "
            "(sysctl kernel.unprivileged_userns_clone=1, or user.max_user_namespaces > 0)",
        )
    return Probe(True, found, f"{found} works (user and pid namespaces)")


def probe() -> Probe:
    return _probe(program(), sys.platform)


def caller_home() -> Path | None:
    home = os.environ.get("HOME") or os.path.expanduser("~")
    path = Path(home)
    return path if path.is_absolute() and path != Path("/") else None


def hidden_homes() -> list[Path]:
    """The folders whose contents the program never sees: the caller's home and root's."""
    found = [h for h in (caller_home(), Path("/root")) if h is not None and h.is_dir()]
    return list(dict.fromkeys(found))


def program_home() -> Path:
    """The program's HOME: the caller's home path, hidden behind an empty writable folder
    (so `~` means what it means outside), or a fresh /tmp/home when there is none."""
    homes = hidden_homes()
    return homes[0] if homes else Path("/tmp/home")


def toolchains(homes: Sequence[Path], workspace: Path) -> list[Path]:
    """Folders below a hidden home to show read-only: the known toolchains, and the
    folders of PATH entries there (never the workspace or a folder above it)."""
    shown: list[Path] = []
    for home in homes:
        for name in HOME_TOOLCHAINS:
            shown.append(home / name)
        for entry in os.environ.get("PATH", "").split(os.pathsep):
            path = Path(entry)
            if not entry or not path.is_absolute() or not inside(path, home) or path == home:
                continue
            top = home / path.relative_to(home).parts[0]
            # ~/.local/bin and the like: the entry itself (and its parent when it is a bin folder).
            shown.append(path.parent if path.name == "bin" and top != path.parent else path)
    out: list[Path] = []
    for path in sorted(dict.fromkeys(shown), key=lambda p: len(p.parts)):
        if not path.is_dir() or inside(workspace, path) or any(inside(path, kept) for kept in out):
            continue  # (a folder inside one already shown needs no mount of its own)
        out.append(path)
    return out


def programs_in_tmp(argv: Sequence[str], workspace: Path) -> list[Path]:
    """Folders under the hidden /tmp that hold the programs the run names: an interpreter
    named by its path, a PATH entry there or AutoCode's own environment (a virtual environment
    made in /tmp, shown read-only whole, so its packages come with it)."""
    tmp = Path("/tmp")
    words = [w for w in argv if w.startswith("/")]
    words += [e for e in os.environ.get("PATH", "").split(os.pathsep) if e.startswith("/")]
    words.append(sys.prefix)  # the environment AutoCode runs from (its helpers name it)
    shown: list[Path] = []
    # A program named through a link (node_modules/.bin/x -> ../pkg/bin/x.js) is shown where
    # the link points too.
    paths = [p for w in words for p in dict.fromkeys((Path(w), Path(os.path.realpath(w))))]
    for path in paths:
        if not inside(path, tmp) or path == tmp or not path.exists():
            continue
        folder = path if path.is_dir() else path.parent
        # A venv's bin folder: show the whole environment (pyvenv.cfg marks its root); a program
        # of an npm install: its whole node_modules (its packages and their dependencies).
        root = next((p for p in (folder, *folder.parents) if (p / "pyvenv.cfg").is_file() and p != tmp), None)
        modules = [p for p in (folder, *folder.parents) if p.name == "node_modules" and p != tmp]
        shown.append(root or (modules[-1] if modules else folder))
    out: list[Path] = []
    for path in sorted(dict.fromkeys(shown), key=lambda p: len(p.parts)):
        if inside(workspace, path) or inside(path, workspace) or any(inside(path, kept) for kept in out):
            continue  # the workspace's own folders are shown as the copy or its dependencies
        out.append(path)
    return out


def command(
    program_path: str,
    argv: Sequence[str],
    *,
    copy: Path,
    workspace: Path,
    cwd_seen: Path,
    home: Path,
    dependencies: Sequence[Path],
    writable: Sequence[Path],
    network: bool,
) -> list[str]:
    """The bwrap command line that runs `argv` (already translated to the paths it sees)."""
    args = [program_path, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]
    homes = hidden_homes()
    for hidden in homes:
        args += ["--tmpfs", str(hidden)]
    for path in [*toolchains(homes, workspace), *programs_in_tmp(argv, workspace)]:
        args += ["--ro-bind", str(path), str(path)]
    if home not in homes:
        args += ["--dir", str(home)]
    args += ["--bind", str(copy), str(workspace)]
    for rel in dependencies:
        args += ["--ro-bind", str(workspace / rel), str(workspace / rel)]
    for folder in writable:
        args += ["--bind", str(folder), str(folder)]
    args += [
        "--cap-drop", "ALL",
        "--unshare-pid", "--unshare-ipc", "--unshare-uts",
        "--die-with-parent", "--new-session",
        "--hostname", "autocode-sandbox",
    ]
    if not network:
        args.append("--unshare-net")
    args += ["--chdir", str(cwd_seen), "--", *argv]
    return args
