"""The one way a task runs a program: the test command (verification and baseline), the
agent's `run_tests`, and agent CLIs. Everything a task starts goes through `run`, so the
rules for what that program may touch live in one place.

`run` takes the prep copy, the workspace it was made from and a `Policy`; it returns an
`Outcome`. Paths handed to the program (cwd, report files) are host paths; `seen_at` says
where a host path inside the copy appears to the program (the copy is shown at the
workspace's own path). On Linux the program runs in bubblewrap (`bwrap.py`); where no
sandbox can be made a task refuses to run code unless the person set `sandbox = "off"`.
The modules: `policy` (what the person allowed), `environment` (the allow-list),
`placement` (what appears where), `bwrap` (the command line), `process` (streaming, limits),
`egress` (the allow-list proxy an engine reaches its endpoint through) and `relay` (its
forwarder inside the sandbox).
"""

from __future__ import annotations

import contextlib
import inspect
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from autocode.errors import AutoCodeError
from autocode.remedy import Advice, Remedy, RemedyKind
from autocode.sandbox import bwrap, egress, environment, placement, process, relay
from autocode.sandbox.children import reap_orphans
from autocode.sandbox.environment import BASE_ENV
from autocode.sandbox.policy import Policy, policy_from_settings

__all__ = [
    "BASE_ENV",
    "Egress",
    "Outcome",
    "Policy",
    "SandboxUnavailable",
    "available",
    "describe",
    "policy_from_settings",
    "reap_orphans",
    "require",
    "run",
    "seen_at",
]

KIND = "bwrap"


class SandboxUnavailable(AutoCodeError):
    """No sandbox can be made here and the person did not turn it off."""

    kind = "sandboxUnavailable"
    exit_code = 2


@dataclass
class Outcome:
    """How one program run ended, and what it printed (stdout and stderr together)."""

    argv: list[str]
    exit_code: int | None
    status: str  # finished | timed_out | idle | cancelled | could_not_run
    seconds: float
    output: str
    sandbox: str  # the kind that confined it ("bwrap"), or "none"
    notes: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Egress:
    """The one destination a program may reach from its sandbox (an engine's endpoint URL), and
    what to call with each refused attempt to go elsewhere."""

    url: str
    on_refused: Callable[[dict[str, Any]], None]


def available() -> bool:
    """Whether a sandbox can be made on this machine (bubblewrap works here)."""
    return bwrap.probe().ok


def describe(policy: Policy | None = None) -> dict[str, Any]:
    """What the sandbox is here and what a program in it may do (doctor's `sandbox` section)."""
    policy = policy or Policy()
    probe = bwrap.probe()
    kind = KIND if probe.ok and policy.enabled else "none"
    if not policy.enabled:
        state = "off"
        why = 'sandbox = "off": programs run without confinement, as you asked'
    elif probe.ok:
        state = "on"
        why = probe.reason
    else:
        state = "unavailable"
        why = probe.reason
    return {
        "kind": kind,
        "state": state,
        "why": why,
        "writable": (
            ["the prep copy (shown at the workspace's path)", "a private /tmp", "a private, empty $HOME",
             "folders the run names (reports)"]
            if kind == KIND
            else ["everything your user may write (no sandbox)"]
            if state == "off"
            else ["nothing: tasks refuse to run code here"]
        ),
        "hidden": ["the work tree and its .git", "your home folder and /root (toolchains there read-only)"]
        if kind == KIND
        else [],
        "network": "allowed" if policy.network or state == "off" else "denied",
        "engine_network": "everything (no sandbox)" if kind != KIND
        else "only its endpoint's host and port, through AutoCode's egress proxy",
        "env_names": environment.allowed_names(policy.env_names),
        "env_refused": [n for n in policy.env_names if environment.refused(n, policy.refused_names)],
        "notes": list(policy.notes),
    }


def require(policy: Policy) -> None:
    """Raise `SandboxUnavailable` when the policy asks for a sandbox this machine cannot make."""
    if not policy.enabled:
        return
    probe = bwrap.probe()
    if not probe.ok:
        raise SandboxUnavailable(Advice(
            f"AutoCode runs a task's tests and commands in a sandbox, and none can be made here: {probe.reason}. "
            "Remedy: install bubblewrap (and allow user namespaces), or, to run them without one, set "
            'sandbox = "off" in your user config (~/.config/autocode/config.toml)',
            Remedy(RemedyKind.TURN_OFF_SANDBOX),
            ".",
        ))


def seen_at(copy: Path, workspace: Path, path: Path, *, policy: Policy | None = None) -> Path:
    """Where `path` (a host path inside the copy) appears to the program.

    Pass the run's policy when it may be off: without a sandbox the copy is at its own path."""
    if policy is not None and not policy.enabled:
        return path
    return placement.shown_at(copy, workspace, path)


def run(
    argv: Sequence[str],
    *,
    copy: Path,
    workspace: Path,
    cwd: Path,
    timeout: float,
    cancelled: Callable[[], bool],
    policy: Policy | None = None,
    env: Mapping[str, str] | None = None,
    writable: Sequence[Path] = (),
    output_file: Path | None = None,
    on_output: Callable[[str], None] | None = None,
    idle_timeout: float | None = None,
    credentials: Mapping[str, str] | None = None,
    egress_to: Egress | None = None,
) -> Outcome:
    """Run `argv` in `cwd` (inside `copy`), stopping it on timeout or cancel.

    `env`: extra variables the caller sets (they win over the allowed names; credential names
    are refused even here); `writable`: host folders outside the copy the program may write
    (report files); `output_file`: where the output is streamed as it comes; `on_output`:
    called with each line; `idle_timeout`: seconds the program may print nothing before it is
    stopped (status "idle"); `credentials`: the program's own key and endpoint variables (an
    engine's), the only credential-shaped names that enter its environment; `egress_to`: in a
    sandbox, the program keeps its own network namespace and reaches only this endpoint, through
    the allow-list proxy (its proxy variables set; `sandbox_network` does not apply). Host paths inside the copy among `argv`
    are rewritten to where the program sees them. Raises `SandboxUnavailable` when the policy wants a sandbox and none can
    be made."""
    policy = policy or Policy()
    require(policy)
    copy, workspace, cwd = Path(copy).absolute(), Path(workspace).absolute(), Path(cwd).absolute()
    boxed = policy.enabled
    notes: list[str] = list(policy.notes)
    if boxed:
        home = bwrap.program_home()
        # Inside, the copy is the workspace: git stops above it, and finds no .git there.
        ceiling = str(workspace.parent)
    else:
        home = bwrap.caller_home() or Path("/tmp")
        ceiling = str(copy.parent)
    env_vars, env_notes = environment.build(
        listed=policy.env_names,
        refused_names=policy.refused_names,
        extra=env,
        home=str(home),
        git_ceiling=ceiling,
        credentials=credentials,
    )
    notes += env_notes
    if boxed:
        seen_argv = placement.translate_words(argv, copy, workspace)
        cwd_seen = placement.shown_at(copy, workspace, cwd)
        deps = placement.dependency_folders(copy, workspace, cwd, seen_argv)
        extra_rw = [Path(w).absolute() for w in writable if not placement.inside(Path(w).absolute(), copy)]
        # Mount points inside the copy (for folders shown at the workspace's paths) are made
        # here and removed after the run; bwrap would otherwise leave them behind in the copy.
        points = [copy / rel for rel in deps]
        points += [copy / w.relative_to(workspace) for w in extra_rw if placement.inside(w, workspace)]
        full = bwrap.command(
            str(bwrap.probe().program),
            seen_argv,
            copy=copy,
            workspace=workspace,
            cwd_seen=cwd_seen,
            home=home,
            dependencies=deps,
            writable=extra_rw,
            network=policy.network and egress_to is None,
        )
        if deps:
            notes.append("shown read-only from the workspace: " + ", ".join(str(d) for d in deps))
        kind = KIND
    else:
        points, full, kind = [], list(argv), "none"
    try:
        with placement.mount_points(points), _egress(boxed, egress_to) as proxy:
            if proxy is not None:
                env_vars.update(egress.proxy_env())
                full = _through_relay(full, proxy)
                notes.append(f"network: only {proxy.endpoint}, through AutoCode's proxy")
            ended = process.run_streaming(
                full, cwd=cwd, env=env_vars, timeout=timeout, cancelled=cancelled,
                output_file=output_file, on_output=on_output, idle_timeout=idle_timeout,
            )
    except (FileNotFoundError, PermissionError, NotADirectoryError) as exc:
        message = f"could not run {argv[0]!r}: {exc}\n"
        if output_file is not None:
            output_file.write_text(message, encoding="utf-8")
        return Outcome(list(argv), 127, "could_not_run", 0.0, message, kind, notes)
    output = ended.output
    if ended.dropped:
        notes.append(f"the first {ended.dropped} bytes of output are only in the output file")
    if boxed and ended.exit_code is not None and _could_not_start(output):
        return Outcome(list(argv), 127, "could_not_run", ended.seconds, output, kind, notes)
    return Outcome(list(argv), ended.exit_code, ended.status, ended.seconds, output, kind, notes)


def _could_not_start(output: str) -> bool:
    # bwrap reports a missing program as "bwrap: execvp NAME: No such file or directory" (the relay likewise).
    return output.startswith(("bwrap: execvp ", relay.NOT_STARTED)) and output.count("\n") <= 1


@contextlib.contextmanager
def _egress(boxed: bool, egress_to: Egress | None) -> Iterator[egress.EgressProxy | None]:
    if not boxed or egress_to is None:
        yield None
        return
    with egress.EgressProxy(egress.Endpoint.from_url(egress_to.url), egress_to.on_refused) as proxy:
        yield proxy


def _through_relay(full: list[str], proxy: egress.EgressProxy) -> list[str]:
    """The bwrap command line with the proxy's folder shown and the relay in front of the program."""
    split = full.index("--")
    folder = str(proxy.folder)
    front = [*full[:split], "--ro-bind", folder, folder]
    # The relay runs on AutoCode's own Python: shown read-only when it lives in a hidden home.
    for prefix in dict.fromkeys(Path(p).resolve() for p in (sys.prefix, sys.base_prefix)):
        if any(placement.inside(prefix, home) and prefix != home for home in bwrap.hidden_homes()):
            front += ["--ro-bind", str(prefix), str(prefix)]
    source = inspect.getsource(relay)
    return [*front, "--", sys.executable, "-I", "-c", source, str(proxy.socket_path), str(egress.FORWARD_PORT),
            "--", *full[split + 1:]]
