"""The placeholder rule for prefixed credentials and the machine-path rule for
environment folders and host folders (docs/scrub.md). The families themselves
are judged on the corpus (test_scrub_corpus.py).

Credential-shaped values are assembled at run time with `_j`, so this file
never holds one whole.
"""

from __future__ import annotations

import random

import pytest

from autocode.scrub import find_machine_paths, find_secrets
from support.scrub import PREFIX_SHAPES, load_corpus


def _j(*parts: str) -> str:
    return "".join(parts)


def kinds(text: str) -> list[str]:
    return [f.kind for f in find_secrets(text, env={})]


def path_kinds(text: str) -> list[str]:
    return [f.kind for f in find_machine_paths(text)]


GH = _j("gh", "p_")
DO = _j("dop", "_v1_")


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        (GH + "abc" * 12, "github_token"),  # low variety is not a placeholder
        (GH + "a1" * 18, "github_token"),
        (GH + "0123456789" * 3 + "abcdef", "github_token"),
        (DO + "ab12" * 16, "digitalocean_token"),
        (_j("SK", "0123456789abcdef" * 2), "twilio_key"),
        (_j("np", "m_") + "xyz" * 12, "npm_token"),
    ],
)
def test_low_variety_prefixed_values_are_secrets(text: str, kind: str) -> None:
    assert kinds(text) == [kind]
    assert kinds(f"token: {text}") == [kind]


@pytest.mark.parametrize(
    "text",
    [
        GH + "x" * 36,
        GH + "X" * 36,
        GH + "0" * 36,
        GH + "a" * 36,  # one repeated character
        GH + "Z" * 36,
        GH + "1234567890xxxxxx1234567890abcdefghij",  # says so with a run of x
        GH + "EXAMPLEexample0123456789abcdefghijkl",
        GH + "your0personal0token0goes0here000000",
        _j("sk", "-proj-", "your-key-here-your-key-here"),
        _j("sk", "-proj-", "<your-project-key-goes-in-these-brackets>"),
        _j("AK", "IA", "IOSFODNN7", "EXAMPLE"),
        DO + "0" * 64,
        DO + "f" * 64,
        _j("SG", ".", "x" * 22, ".", "x" * 43),
        _j("xo", "xb-", "*" * 24),
        _j("sbp", "_", "0" * 40),
    ],
)
def test_prefixed_placeholders_say_so(text: str) -> None:
    assert kinds(text) == []


@pytest.mark.parametrize(
    "text",
    [
        "NotImplementedErrorHandler.handle.someLongFunctionNameHereXyz",  # dotted words, not Discord
        "see key-rotation-policy in the runbook",
        "the SKU is SK-12",
        "pubkey-" + "0123456789abcdef" * 2,  # Mailgun's public validation key
        "sb_publishable_" + "Ab3dE5" * 4,
        "dp.pt. is Doppler's prefix for personal tokens",
        "hvs. starts a Vault service token",
        '"type": "service_account" is how the key file starts',
        "the bot token looks like 123456789:AA followed by 33 characters",
        "shpat_ tokens come from a custom app",
        "Q~ appears in Azure client secrets",
    ],
)
def test_family_lookalikes_are_kept(text: str) -> None:
    assert kinds(text) == []


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("/opt/venvs/app/bin/python3", "env_path"),
        ("/srv/builds/42/app", "host_path"),
        ("run /srv/builds/42/app/manage.py check", "host_path"),
        ("/data/ml/checkpoints", "host_path"),
        ("/var/lib/postgresql/16/main", "host_path"),
        ("/Volumes/External/projects", "host_path"),
        ("/mnt/data/cache", "host_path"),
        ("/opt/homebrew/bin/git", "host_path"),
        ("PATH=/usr/bin:/opt/tools/bin", "host_path"),
        (r"D:\tools\run-tests.bat", "host_path"),
        ("E:/builds/app", "host_path"),
        (r"\\buildhost\share\run-tests.bat", "host_path"),
        ("/usr/local/share/.venvs/tool/bin/tool", "env_path"),
        ("/usr/local/share/virtualenvs/app-x1/bin/python", "env_path"),
        ("/usr/share/envs/ml/bin/python", "env_path"),
        ("/usr/local/pyenv/versions/3.12.1/bin/python", "env_path"),
        ("/usr/local/.nvm/versions/node/v20.11.0/bin/node", "env_path"),
        ("/usr/local/.cargo/bin/cargo", "env_path"),
        ("/usr/local/.rustup/toolchains/stable/bin/rustc", "env_path"),
        (_j("/nix/store/", "0123456789abcdfghijklmnpqrsvwxyz", "-python3-3.11.9/bin/python3"), "env_path"),
        (r"C:\venvs\app\Scripts\python.exe", "env_path"),
    ],
)
def test_machine_paths_of_hosts_and_environments(text: str, kind: str) -> None:
    assert path_kinds(text) == [kind]


@pytest.mark.parametrize("label", sorted(PREFIX_SHAPES))
def test_random_values_of_each_prefix_are_found(label: str) -> None:
    kind, make = PREFIX_SHAPES[label]
    rng = random.Random(label)
    for _ in range(200):
        value = make(rng)
        for text in (value, f"KEY={value}", f"use '{value}' here"):
            found = find_secrets(text, env={})
            assert [f.kind for f in found] == [kind], (label, value)
            start = text.index(value)
            # The whole value, or (after `AccountKey=`) the whole key that follows the name.
            assert start <= found[0].start < start + 16 and found[0].end == start + len(value)


def test_json_escaped_unc_path_is_found() -> None:
    text = '{"share": "\\\\\\\\buildhost\\\\drop\\\\run.bat"}'
    assert path_kinds(text) == ["host_path"]


def test_long_text_finds_what_short_text_finds() -> None:
    """Past 4096 characters each shape is searched on its own (scrub._shaped_matches)."""
    pad = "plain words and nothing else.\n" * 150
    for item in load_corpus()["credentials"] + load_corpus()["lookalikes"]:
        short = [(f.kind, f.start, f.end) for f in find_secrets(item["text"], env={})]
        long = [(f.kind, f.start - len(pad), f.end - len(pad)) for f in find_secrets(pad + item["text"] + "\n" + pad, env={})]
        assert long == short, item["text"][:40]
