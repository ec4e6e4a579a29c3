"""The only code that runs git.

Every call is hardened so that no program a repository (or the person's
global or system git configuration) names can run because AutoCode looked
at it. Fixed overrides cover the keys with a known name (`core.fsmonitor`,
`core.hooksPath`, `core.pager`, `core.editor`, `gpg.program`...); the keys
under a name the configuration chooses (`filter.<driver>.clean`,
`diff.<driver>.textconv`, `merge.<driver>.driver`, `alias.<name>`...) are
listed with one `git config` read in the same place and with the same
environment as the call, and each is overridden to nothing. Overrides go
through `GIT_CONFIG_COUNT` (a key is never split at an `=` in its name) and
win over every configuration file. Submodules are never entered
(`diff.ignoreSubmodules=all`), so their own configuration is never consulted;
a nested repository is reached only by a call made inside it, which lists
that repository's keys. No shell, argument lists only, `-z` output parsed by
the callers. See docs/security.md, "Repository-configured commands".

Kept whole: it is the only code that runs git, and having every call in one
file is what lets a reviewer check that each one is hardened.
"""

from __future__ import annotations

import functools
import os
import re
import stat
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from autocode.errors import SetupError

GIT_FLOOR: tuple[int, int, int] = (2, 39, 4)

HARDENING: tuple[str, ...] = (
    "--no-pager",
    "-c", "core.fsmonitor=false",
    "-c", "core.hooksPath=/dev/null",
    "-c", "core.quotePath=false",
    "-c", "diff.external=",
    "-c", "core.untrackedCache=false",
    "--no-optional-locks",
)

# Keys with a fixed name that name a program (or make git start one), and the
# value that turns each off. An empty editor is `:` (git's "no editor");
# an empty pager or helper list means none.
FIXED_OVERRIDES: tuple[tuple[str, str], ...] = (
    ("core.pager", "cat"),
    ("core.editor", ":"),
    ("sequence.editor", ":"),
    ("core.askPass", ""),
    ("core.sshCommand", ""),
    ("core.gitProxy", ""),
    ("core.alternateRefsCommand", ""),
    ("credential.helper", ""),
    ("gpg.program", ""),
    ("gpg.openpgp.program", ""),
    ("gpg.x509.program", ""),
    ("gpg.ssh.program", ""),
    ("gpg.ssh.defaultKeyCommand", ""),
    ("commit.gpgSign", "false"),
    ("tag.gpgSign", "false"),
    ("log.showSignature", "false"),
    ("uploadpack.packObjectsHook", ""),
    ("protocol.allow", "never"),
    ("submodule.recurse", "false"),
    ("diff.ignoreSubmodules", "all"),
    ("status.submoduleSummary", "false"),
    ("gc.auto", "0"),
    ("maintenance.auto", "false"),
)

# Sections whose keys sit under a name the configuration chooses, and the
# value each program key of such a name is set to.
NAMED_OVERRIDES: dict[str, tuple[tuple[str, str], ...]] = {
    "filter": (("clean", ""), ("smudge", ""), ("process", ""), ("required", "false")),
    "diff": (("command", ""), ("textconv", ""), ("cachetextconv", "false")),
    "merge": (("driver", ""),),
    "remote": (("uploadpack", "git-upload-pack"), ("receivepack", "git-receive-pack")),
    "submodule": (("update", "none"),),
    "trailer": (("command", ""), ("cmd", "")),
    "mergetool": (("cmd", ""),),
    "difftool": (("cmd", ""),),
    "pager": (),
    "alias": (),
}
_NAMED_PATTERN = "^(" + "|".join(NAMED_OVERRIDES) + r")\."

# Diff-family commands take the flags that keep external diff and textconv
# drivers out even where a driver was left with an empty (failing) command.
_DIFF_COMMANDS = frozenset(
    {"diff", "diff-files", "diff-index", "diff-tree", "format-patch", "log", "show", "whatchanged"}
)
_DIFF_FLAGS = ("--no-ext-diff", "--no-textconv")

class GitError(SetupError):
    kind = "gitError"


def _environment(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_") or k in _KEPT_GIT_VARS}
    env["GIT_TERMINAL_PROMPT"] = "0"
    env["GIT_OPTIONAL_LOCKS"] = "0"
    # Environment variables win over configuration for these: none of them runs anything.
    env["GIT_ASKPASS"] = ""
    env["GIT_EDITOR"] = ":"
    env["GIT_SEQUENCE_EDITOR"] = ":"
    env["GIT_PAGER"] = "cat"
    env["GIT_PROTOCOL_FROM_USER"] = "0"
    env["LC_ALL"] = "C"
    if extra:
        env.update(extra)
    return env


# Identity and config-location variables are the person's; repository-
# redirecting ones (GIT_DIR, GIT_WORK_TREE, GIT_INDEX_FILE...) are dropped.
# The configuration files they name are read for program keys like any other.
_KEPT_GIT_VARS = frozenset(
    {
        "GIT_AUTHOR_NAME",
        "GIT_AUTHOR_EMAIL",
        "GIT_COMMITTER_NAME",
        "GIT_COMMITTER_EMAIL",
        "GIT_CONFIG_GLOBAL",
        "GIT_CONFIG_SYSTEM",
        "GIT_CONFIG_NOSYSTEM",
    }
)


def _config_overrides(names: Sequence[str]) -> list[tuple[str, str]]:
    """The override of every program key that can sit under the configured `names`."""
    pairs: list[tuple[str, str]] = list(FIXED_OVERRIDES)
    seen: set[tuple[str, str]] = set()
    for name in names:
        section, _, rest = name.partition(".")
        subsection, _, _key = rest.rpartition(".")
        if section not in NAMED_OVERRIDES:
            continue
        if section == "alias":
            # `alias.<name>` (no subsection): an empty alias is refused, never run.
            pairs.append((name, ""))
            continue
        if section == "pager":
            pairs.append((name, "false"))
            continue
        if not subsection or (section, subsection) in seen:
            continue
        seen.add((section, subsection))
        pairs.extend((f"{section}.{subsection}.{key}", value) for key, value in NAMED_OVERRIDES[section])
    return pairs


def _configured_names(cwd: Path | str, env: Mapping[str, str]) -> list[str]:
    """Every configured key in a section with chosen names, as git sees them from `cwd` (all files, includes)."""
    try:
        proc = subprocess.run(
            ["git", *HARDENING, "config", "-z", "--name-only", "--get-regexp", _NAMED_PATTERN],
            cwd=cwd,
            capture_output=True,
            env=dict(env),
            timeout=60,
            check=False,
        )
    except FileNotFoundError as exc:
        raise GitError("git is not installed or not on PATH; install git 2.39.4 or newer") from exc
    if proc.returncode not in (0, 1):  # 1: nothing matched
        message = proc.stderr.decode("utf-8", "replace").strip()
        raise GitError(f"git cannot read the configuration in {cwd}: {message}")
    return [os.fsdecode(n) for n in proc.stdout.split(b"\0") if n]


def hardened_environment(cwd: Path | str, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment of a git call in `cwd`: the person's, minus redirections, with every
    program key the configuration seen from `cwd` can name overridden."""
    env = _environment(extra)
    pairs = _config_overrides(_configured_names(cwd, env))
    env["GIT_CONFIG_COUNT"] = str(len(pairs))
    for index, (key, value) in enumerate(pairs):
        env[f"GIT_CONFIG_KEY_{index}"] = key
        env[f"GIT_CONFIG_VALUE_{index}"] = value
    return env


def command(args: Sequence[str]) -> list[str]:
    """The full argument list for `git <args>`: hardening first, diff flags after a diff-family command."""
    if args and args[0] in _DIFF_COMMANDS:
        return ["git", *HARDENING, args[0], *_DIFF_FLAGS, *args[1:]]
    return ["git", *HARDENING, *args]


def run(
    args: Sequence[str],
    cwd: Path | str,
    *,
    input: bytes | None = None,
    check: bool = True,
    env: Mapping[str, str] | None = None,
    timeout: float | None = 120,
) -> subprocess.CompletedProcess[bytes]:
    """Run `git <HARDENING> <args>` in `cwd` and return the completed process (bytes)."""
    cmd = command(args)
    hardened = hardened_environment(cwd, env)
    try:
        proc = subprocess.run(
            cmd,
            cwd=cwd,
            input=input,
            capture_output=True,
            env=hardened,
            timeout=timeout,
            check=False,
        )
    except FileNotFoundError as exc:
        raise GitError("git is not installed or not on PATH; install git 2.39.4 or newer") from exc
    if check and proc.returncode != 0:
        message = proc.stderr.decode("utf-8", "replace").strip()
        raise GitError(f"git {args[0] if args else ''} failed in {cwd}: {message}")
    return proc


@dataclass(frozen=True)
class MergedText:
    """What `git merge-file` made of three texts: the result (with conflict markers where both
    sides changed the same lines) and how many such conflicts it holds."""

    text: bytes
    conflicts: int


def merge_file(
    mine: bytes, base: bytes, theirs: bytes, *, labels: tuple[str, str, str], marker_size: int = 7
) -> MergedText:
    """git's own three-way merge of three texts (`git merge-file -p --diff3`).

    The texts go to temporary files in a fresh folder outside every repository, with repository
    discovery stopped above it, so no work tree's configuration or attributes are consulted;
    `merge-file` merges the bytes itself (no merge driver, filter or conversion runs).
    `labels` name mine, base and theirs on the markers. Binary texts are refused by git: the
    caller decides about them before asking.
    """
    with tempfile.TemporaryDirectory(prefix="autocode-merge-") as folder:
        where = Path(folder)
        names = ("mine", "base", "theirs")
        for name, data in zip(names, (mine, base, theirs), strict=True):
            (where / name).write_bytes(data)
        args = ["merge-file", "-p", "--diff3", f"--marker-size={marker_size}"]
        for label in labels:
            args += ["-L", label]
        proc = run([*args, "--", *names], where, check=False,
                   env={"GIT_CEILING_DIRECTORIES": str(where.parent)})
    # 0..127: the number of conflicts (127 meaning "that many or more"); above: an error.
    if proc.returncode > 127 or proc.returncode < 0:
        message = proc.stderr.decode("utf-8", "replace").strip()
        raise GitError(f"git merge-file could not merge the three versions: {message}")
    return MergedText(proc.stdout, proc.returncode)


def output(args: Sequence[str], cwd: Path | str) -> str:
    """stdout of a successful git call, decoded (surrogateescape keeps odd bytes round-trippable)."""
    return run(args, cwd).stdout.decode("utf-8", "surrogateescape")


def split_z(data: bytes) -> list[bytes]:
    """Split NUL-terminated `-z` output into records."""
    return [item for item in data.split(b"\0") if item]


@dataclass(frozen=True)
class VersionCheck:
    version: str
    floor: str
    ok: bool
    message: str

    def to_dict(self) -> dict[str, object]:
        return {"version": self.version, "floor": self.floor, "ok": self.ok, "message": self.message}


def parse_version(text: str) -> tuple[int, int, int] | None:
    match = re.search(r"(\d+)\.(\d+)(?:\.(\d+))?", text)
    if not match:
        return None
    return (int(match.group(1)), int(match.group(2)), int(match.group(3) or 0))


@functools.lru_cache(maxsize=1)
def check_version() -> VersionCheck:
    """Compare the installed git with the security floor (cached per process)."""
    floor = ".".join(map(str, GIT_FLOOR))
    try:
        proc = subprocess.run(["git", "--version"], capture_output=True, timeout=30, check=False)
    except FileNotFoundError:
        return VersionCheck("missing", floor, False, f"git is not installed; install git {floor} or newer")
    text = proc.stdout.decode("utf-8", "replace").strip()
    found = parse_version(text)
    if found is None:
        return VersionCheck(text or "unknown", floor, False, f"could not read the git version from {text!r}")
    version = ".".join(map(str, found))
    if found < GIT_FLOOR:
        return VersionCheck(
            version,
            floor,
            False,
            f"git {version} is older than the security floor {floor}; upgrade git to {floor} or newer",
        )
    return VersionCheck(version, floor, True, f"git {version} meets the security floor {floor}")


def require_supported_git() -> None:
    """Raise a SetupError naming the upgrade when git is missing or too old."""
    check = check_version()
    if not check.ok:
        raise GitError(check.message)


def toplevel(path: Path | str) -> Path | None:
    """The work tree root containing `path`, or None outside a repository."""
    proc = run(["rev-parse", "--show-toplevel"], path, check=False)
    if proc.returncode != 0:
        return None
    return Path(proc.stdout.decode("utf-8", "surrogateescape").rstrip("\n"))


def toplevel_and_head(path: Path | str) -> tuple[Path | None, str | None]:
    """toplevel and head in one git call: (None, None) outside a work tree, head None before the first commit."""
    proc = run(["rev-parse", "--show-toplevel", "--verify", "-q", "HEAD"], path, check=False)
    text = proc.stdout.decode("utf-8", "surrogateescape")
    text = text[:-1] if text.endswith("\n") else text
    if proc.returncode == 0:
        # The object name is the last line; the folder (which may hold a newline) is the rest.
        top, _, head = text.rpartition("\n")
        return (Path(top), head) if top else (None, None)
    if proc.returncode == 1 and text:  # a repository without a first commit
        return Path(text), None
    return None, None


def main_worktree(path: Path | str) -> Path | None:
    """The main work tree of the repository containing `path` (same as toplevel unless a linked worktree)."""
    proc = run(["rev-parse", "--path-format=absolute", "--git-common-dir"], path, check=False)
    if proc.returncode != 0:
        return None
    common = Path(proc.stdout.decode("utf-8", "surrogateescape").rstrip("\n"))
    if common.name == ".git":
        return common.parent
    return toplevel(path)


def head(path: Path | str) -> str | None:
    proc = run(["rev-parse", "--verify", "-q", "HEAD"], path, check=False)
    return proc.stdout.decode().strip() or None if proc.returncode == 0 else None


class HeadUnknown(ValueError):
    """HEAD cannot be read from the files alone (a layout or ref store this reader does not know)."""


_OBJECT_NAME = re.compile(rb"[0-9a-f]{40}(?:[0-9a-f]{24})?")
_REF_FORBIDDEN = re.compile(r"[\x00-\x20\x7f~^:?*\[\\]|\.\.|@\{")
_SMALL = 4096
_PACKED_MAX = 64 << 20


def _read_regular(path: Path, limit: int) -> bytes | None:
    """The bytes of the regular file at `path` (None when there is none); never follows a link,
    never waits on a FIFO or device, never reads past `limit` (HeadUnknown then)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        raise HeadUnknown(f"{path.name}: {exc.strerror}") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise HeadUnknown(f"{path.name} is not a regular file")
        data = os.read(fd, limit + 1)
        while len(data) <= limit:
            more = os.read(fd, limit + 1 - len(data))
            if not more:
                break
            data += more
    finally:
        os.close(fd)
    if len(data) > limit:
        raise HeadUnknown(f"{path.name} is larger than a git file of its kind")
    return data


def _git_dirs(toplevel: Path) -> tuple[Path, Path]:
    """(the work tree's git folder, the repository's common folder) from `.git` and `commondir`."""
    dot = toplevel / ".git"
    info = os.lstat(dot) if os.path.lexists(dot) else None
    if info is not None and stat.S_ISDIR(info.st_mode):
        gitdir = dot
    else:
        pointer = _read_regular(dot, _SMALL)  # a linked worktree or submodule: "gitdir: <path>"
        if pointer is None or not pointer.startswith(b"gitdir: "):
            raise HeadUnknown(".git is neither a folder nor a gitdir pointer")
        gitdir = toplevel / os.fsdecode(pointer[len(b"gitdir: "):].rstrip(b"\r\n"))
    common = _read_regular(gitdir / "commondir", _SMALL)
    return gitdir, (gitdir / os.fsdecode(common.rstrip(b"\r\n")) if common else gitdir)


def _resolve_ref(gitdir: Path, common: Path, name: str, depth: int = 0) -> str | None:
    parts = name.split("/")
    plain = (parts[0] == "refs" and len(parts) > 1 and not _REF_FORBIDDEN.search(name)
             and all(p and not p.startswith(".") and not p.endswith(".lock") for p in parts))
    if depth > 5 or not plain:
        raise HeadUnknown(f"HEAD names {name!r}, not a branch this reader follows")
    per_worktree = name.startswith(("refs/worktree/", "refs/bisect/", "refs/rewritten/"))
    loose = _read_regular((gitdir if per_worktree else common) / name, _SMALL)
    if loose is not None:
        return _object_or_ref(gitdir, common, loose, depth + 1)
    packed = _read_regular(common / "packed-refs", _PACKED_MAX) or b""
    wanted = b" " + os.fsencode(name)
    for line in packed.splitlines():
        if line.endswith(wanted) and _OBJECT_NAME.fullmatch(line[: -len(wanted)]):
            return line[: -len(wanted)].decode()
    return None  # a branch with no commit yet (or deleted): no HEAD, as `rev-parse --verify` says


def _object_or_ref(gitdir: Path, common: Path, data: bytes, depth: int) -> str | None:
    text = data.rstrip(b"\r\n")
    if _OBJECT_NAME.fullmatch(text):
        return text.decode()
    if text.startswith(b"ref: "):
        return _resolve_ref(gitdir, common, os.fsdecode(text[len(b"ref: "):]), depth)
    raise HeadUnknown("HEAD holds neither an object name nor a ref")


def head_from_files(toplevel: Path | str) -> str | None:
    """The commit HEAD names in the work tree at `toplevel`, read from the git folder's files with
    no git process (None before the first commit), for a look repeated often (a task's snapshot).

    Only files are read, so nothing a repository configures can run; every file is read only
    if it is a regular file (no link followed, no FIFO waited on) of bounded size, and a ref is
    followed only when its name is a plain `refs/...` name (no `..`, no hidden part). Any layout
    this reader does not know (the reftable ref store, an odd `.git`) raises HeadUnknown: the
    caller then asks git through `head` or shows nothing."""
    gitdir, common = _git_dirs(Path(toplevel))
    data = _read_regular(gitdir / "HEAD", _SMALL)
    if data is None:
        raise HeadUnknown("no HEAD file")
    return _object_or_ref(gitdir, common, data, 0)


def origin_url(path: Path | str) -> str | None:
    proc = run(["config", "--get", "remote.origin.url"], path, check=False)
    return proc.stdout.decode("utf-8", "surrogateescape").strip() or None if proc.returncode == 0 else None


def root_commits(path: Path | str) -> list[str]:
    proc = run(["rev-list", "--max-parents=0", "HEAD"], path, check=False)
    if proc.returncode != 0:
        return []
    return sorted(proc.stdout.decode().split())


# --- Inventory helpers -------------------------------------------------------
# Paths come back as `str` decoded with surrogateescape so that names holding
# newlines, leading dashes or bytes that are not UTF-8 survive the round trip
# to the file system unchanged.

GITLINK_MODE = "160000"
SYMLINK_MODE = "120000"


def _decode(raw: bytes) -> str:
    return os.fsdecode(raw)


def _tracked_args() -> list[str]:
    # Mode and path only (git >= 2.38): a third of `-s` output, with no object names to skip.
    return ["ls-files", "-z", "-c", "--format=%(objectmode) %(path)"]


def _parse_tracked(data: bytes) -> list[tuple[str, str]]:
    # Records are "<6-digit mode> <path>"; decoding once is much faster than per record.
    # A conflicted path has one record per stage, next to each other (the index is
    # sorted by path, then stage): keep the first.
    result: list[tuple[str, str]] = []
    append = result.append
    last = None
    for rec in os.fsdecode(data).split("\0"):
        path = rec[7:]
        if path != last and rec:
            append((rec[:6], path))
            last = path
    return result


def _untracked_args(exclude: Sequence[str]) -> list[str]:
    return ["ls-files", "-z", "-o", "--exclude-standard", *(f"--exclude={p}" for p in exclude)]


def _ignored_args(exclude: Sequence[str]) -> list[str]:
    return [
        "ls-files", "-z", "-o", "-i", "--exclude-standard", "--directory",
        *(f"--exclude={p}" for p in exclude),
    ]


def _parse_paths(data: bytes) -> list[str]:
    return [p for p in os.fsdecode(data).split("\0") if p]


def tracked_files(cwd: Path | str) -> list[tuple[str, str]]:
    """(mode, path) of every index entry (conflicted paths once), in index order."""
    return _parse_tracked(run(_tracked_args(), cwd).stdout)


def untracked_files(cwd: Path | str, exclude: Sequence[str] = ()) -> list[str]:
    """Untracked paths git does not ignore; a nested repository appears once as `dir/`.

    `exclude` adds ignore patterns (e.g. `/.autocode/`) that prune the walk.
    """
    return _parse_paths(run(_untracked_args(exclude), cwd).stdout)


def ignored_paths(cwd: Path | str, exclude: Sequence[str] = ()) -> list[str]:
    """Untracked paths git ignores, an ignored folder counted once as `dir/`."""
    return _parse_paths(run(_ignored_args(exclude), cwd).stdout)


LISTING_TIMEOUT = 120.0  # seconds one listing may take before it is stopped


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.kill()
    proc.wait()
    for stream in (proc.stdout, proc.stderr):
        if stream is not None:
            stream.close()


class PendingListing:
    """tracked_files, untracked_files and ignored_paths of one work tree, the three started at once.

    Each walks the tree on its own; running them side by side roughly halves
    the wall time of a large inventory on two or more cores, and the caller can
    work on the tracked list (ready first) while the two walks still run.
    Use as a context manager: leaving it stops whatever is still running.
    """

    def __init__(self, cwd: Path | str, exclude: Sequence[str] = ()) -> None:
        self.cwd = cwd
        self.commands = [_tracked_args(), _untracked_args(exclude), _ignored_args(exclude)]
        self.procs: list[subprocess.Popen[bytes]] = []
        self.env = hardened_environment(cwd)
        for index in range(len(self.commands)):
            self.procs.append(self._start(index))

    def _start(self, index: int) -> subprocess.Popen[bytes]:
        try:
            return subprocess.Popen(
                command(self.commands[index]),
                cwd=self.cwd,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=self.env,
            )
        except FileNotFoundError as exc:
            self.close()
            raise GitError("git is not installed or not on PATH; install git 2.39.4 or newer") from exc

    def restart_walks(self) -> None:
        """Stop the untracked and ignored walks and start them again.

        For when a folder git may not have reached yet became a link: git lists a
        folder's entries before it opens each sub-folder by name, so a walk under
        way can follow a link that replaced one (to `/`, say, and walk the whole
        machine). A walk started now sees the link as a link.
        """
        for index in (1, 2):
            _stop(self.procs[index])
            self.procs[index] = self._start(index)

    def _output(self, index: int) -> bytes:
        proc = self.procs[index]
        try:
            out, err = proc.communicate(timeout=LISTING_TIMEOUT)
        except subprocess.TimeoutExpired:
            self.close()
            raise GitError(
                f"git {self.commands[index][0]} listed {self.cwd} for more than {LISTING_TIMEOUT:g} s and was "
                "stopped; if a folder in it links to a large tree (or something swapped a folder for one), "
                "remove the link and run again"
            ) from None
        if proc.returncode != 0:
            self.close()
            message = err.decode("utf-8", "replace").strip()
            raise GitError(f"git {self.commands[index][0]} failed in {self.cwd}: {message}")
        return out

    def tracked(self) -> list[tuple[str, str]]:
        return _parse_tracked(self._output(0))

    def tracked_raw(self) -> bytes:
        """git's own output: NUL-terminated `<6-digit mode> <path>` records, in index order."""
        return self._output(0)

    def untracked(self) -> list[str]:
        return _parse_paths(self._output(1))

    def ignored(self) -> list[str]:
        return _parse_paths(self._output(2))

    def close(self) -> None:
        for proc in self.procs:
            _stop(proc)

    def __enter__(self) -> PendingListing:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def ignore_rules(cwd: Path | str, paths: Sequence[str]) -> dict[str, str]:
    """For each ignored path among `paths`, the rule that ignores it (`source:line:pattern`).

    Paths go through `--stdin`, so no name can be read as an option.
    """
    if not paths:
        return {}
    data = b"".join(os.fsencode(p) + b"\0" for p in paths)
    proc = run(["check-ignore", "-z", "-v", "-n", "--stdin"], cwd, input=data, check=False)
    if proc.returncode not in (0, 1):
        message = proc.stderr.decode("utf-8", "replace").strip()
        raise GitError(f"git check-ignore failed in {cwd}: {message}")
    fields = proc.stdout.split(b"\0")
    rules: dict[str, str] = {}
    # -v -n -z: source, line, pattern, path per record (source empty when not ignored).
    for i in range(0, len(fields) - 3, 4):
        source, line, pattern, raw_path = fields[i : i + 4]
        if source:
            rules[_decode(raw_path)] = f"{_decode(source)}:{_decode(line)}: {_decode(pattern)}"
    return rules
