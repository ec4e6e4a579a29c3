"""The environment a task's program gets: an allow-list of the caller's variables, never a
credential. Provider keys, tokens and cloud credentials stay out even when the person lists
them; variables that make an interpreter run code at start-up are never passed.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping

from autocode.scrub import env_name_is_secret

# Names every program gets from the caller's environment when set.
BASE_ENV = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TERM", "TZ")
# Also allowed: the locale family, and the interpreter's own variables that say which
# environment is active (not the ones that inject code or paths: see NEVER).
LOCALE_PREFIX = "LC_"
INTERPRETER_ENV = ("LANGUAGE", "VIRTUAL_ENV", "CONDA_PREFIX", "CONDA_DEFAULT_ENV", "NO_COLOR", "USER", "LOGNAME")
# Never passed, even when listed: they run code or change imports before the tests start,
# or name the caller's own git repository.
NEVER = frozenset(
    {
        "PYTHONSTARTUP", "PYTHONINSPECT", "PYTHONHOME", "PYTHONUSERBASE", "PYTHONBREAKPOINT",
        "NODE_OPTIONS", "LD_PRELOAD", "LD_LIBRARY_PATH", "LD_AUDIT", "BASH_ENV", "ENV", "PERL5OPT",
        "RUBYOPT", "GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY",
        "GIT_COMMON_DIR", "GIT_CONFIG", "GIT_CONFIG_GLOBAL", "GIT_CONFIG_SYSTEM", "GIT_SSH_COMMAND",
        "GIT_ASKPASS", "SSH_ASKPASS", "SSH_AUTH_SOCK", "GPG_AGENT_INFO", "DBUS_SESSION_BUS_ADDRESS",
        "XDG_RUNTIME_DIR", "HOME", "TMPDIR",
    }
)
# Provider and cloud families: anything with these prefixes may name an account or a key.
CREDENTIAL_PREFIXES = (
    "ANTHROPIC_", "OPENAI_", "AZURE_", "AWS_", "GOOGLE_", "GCLOUD_", "GEMINI_", "MISTRAL_", "COHERE_",
    "GROQ_", "DEEPSEEK_", "OPENROUTER_", "HF_", "HUGGINGFACE", "GITHUB_", "GH_", "GITLAB_", "NPM_",
    "PYPI_", "TWINE_", "DOCKER_", "AUTOCODE_",
)


# Variables AutoCode itself sets for a run (the proof's report files); never read from outside.
OWN_PREFIX = "AUTOCODE_PROOF_"


def refused(name: str, extra_refused: Iterable[str] = ()) -> str | None:
    """Why `name` may never enter a sandboxed program's environment, or None when it may."""
    upper = name.upper()
    if name in NEVER:
        return "it changes how programs start or which repository git uses"
    if name in set(extra_refused):
        return "it holds the provider's key"
    if upper.startswith(CREDENTIAL_PREFIXES):
        return "it belongs to a provider's or a service's credentials"
    if env_name_is_secret(name):
        return "its name says it holds a credential"
    return None


def allowed_names(listed: Iterable[str] = ()) -> list[str]:
    """The names a program may get (before the caller's own `env=`): the base, the interpreter's,
    then what the person listed."""
    return list(dict.fromkeys([*BASE_ENV, *INTERPRETER_ENV, *listed]))


def build(
    *,
    listed: Iterable[str] = (),
    refused_names: Iterable[str] = (),
    extra: Mapping[str, str] | None = None,
    home: str,
    git_ceiling: str,
    source: Mapping[str, str] | None = None,
    credentials: Mapping[str, str] | None = None,
) -> tuple[dict[str, str], list[str]]:
    """The environment, and a note for each listed name that was refused.

    `extra`: the caller's own variables (the proof's report paths...), which win, but a
    credential-shaped name among them is refused the same way. `credentials`: the variables a
    program is meant to hold (an engine's own key and endpoint, in the variables its CLI reads),
    set on purpose by AutoCode, never taken from `extra`, the person's list or the environment."""
    environ = os.environ if source is None else source
    listed = tuple(listed)
    refused_set = tuple(refused_names)
    notes: list[str] = []
    names = allowed_names(listed)
    env: dict[str, str] = {}
    for name in names:
        why = refused(name, refused_set)
        if why is not None:
            if name in listed:
                notes.append(f"sandbox_env names {name}, which is never passed: {why}")
            continue
        if name in environ:
            env[name] = environ[name]
    for name, value in environ.items():
        if name.startswith(LOCALE_PREFIX) and name not in env:
            env[name] = value
    env.update({"PYTHONDONTWRITEBYTECODE": "1", "HOME": home, "TMPDIR": "/tmp"})
    for name, value in (extra or {}).items():
        # The proof's own report paths are set here by AutoCode, never taken from the environment;
        # so is NODE_OPTIONS when the proof adds its reporter to `npm test` (the person's own
        # NODE_OPTIONS is never passed: it is in NEVER and the loop above drops it).
        own = name in ("HOME", "TMPDIR", "NODE_OPTIONS") or name.startswith(OWN_PREFIX)
        why = None if own else refused(name, refused_set)
        if why is not None:
            notes.append(f"the variable {name} was not passed: {why}")
            continue
        env[name] = value
    env.update(credentials or {})
    # git in the copy never walks up into the person's repository (the copy has no .git).
    env["GIT_CEILING_DIRECTORIES"] = git_ceiling
    return env, notes
