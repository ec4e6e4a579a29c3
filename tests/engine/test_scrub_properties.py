"""Properties of scrub over generated text: it never raises, its spans are
sound, redaction is stable, context never hides a corpus credential, and
adversarial input gets an answer (how fast: tests/bench/bench_scrub.py)."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from autocode.scrub import (
    PATH_KINDS,
    SECRET_KINDS,
    Finding,
    contains_machine_path,
    contains_secret,
    find_machine_paths,
    find_secrets,
    redact,
)
from support.scrub import ADVERSARIAL, load_corpus

CORPUS = load_corpus()

# Pieces that steer generated text into every rule's neighbourhood.
FRAGMENTS = [
    "password", "token", "api_key", "Secret", "--", "-", "=", ":", ": ", " ", "\n", "'", '"', "`",
    "://", "@", "/", "\\", "~", "~/", "$", "${", "}", "%", "%TEMP%", "C:", "/home/", "/Users/",
    "/root", "/tmp/", "/var/folders/", ".venv", "site-packages", "file://", "https://", "Bearer ",
    "Authorization: ", "Basic ", "-----BEGIN ", "PRIVATE KEY-----", "-----END ", "eyJ", ".",
    "gh" "p_", "gl" "pat-", "sk" "-", "sk" "-ant-", "xo" "xb-", "AK" "IA", "AI" "za", "h" "f_",
    "np" "m_", "py" "pi-AgE", "sk" "_live_", "x", "X", "0", "9", "aZ3", "Qw8e", "abc", "ü", "\u0000",
    "S" "G.", "S" "K", "do" "p_v1_", ":A" "A", "AccountKey=", "sig=", "Q~", "ke" "y-", "hv" "s.", "dp" ".pt.",
    "M", "/srv/", "/opt/", "/nix/store/", "venvs", "envs/", "D:\\", "\\\\",
]
fragment_text = st.lists(st.sampled_from(FRAGMENTS) | st.text(max_size=6), max_size=40).map("".join)
any_text = st.text(max_size=300) | fragment_text
workspaces = st.none() | st.sampled_from(["/srv/acme", "/home/ann/acme", r"C:\work\acme", "rel/dir", "/"])


def _check(findings: list[Finding], text: str, allowed: frozenset[str]) -> None:
    reach = -1
    previous_start = -1
    for finding in findings:
        assert 0 <= finding.start < finding.end <= len(text)
        assert finding.kind in allowed
        assert finding.start >= previous_start  # sorted
        assert finding.end > reach  # none lies inside an earlier one
        previous_start, reach = finding.start, max(reach, finding.end)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=any_text, workspace=workspaces)
def test_findings_are_sound_on_any_text(text: str, workspace: str | None) -> None:
    _check(find_secrets(text, env={}), text, SECRET_KINDS)
    _check(find_machine_paths(text, workspace), text, PATH_KINDS)


@settings(max_examples=300, deadline=None)
@given(text=fragment_text, name=st.sampled_from(["X_TOKEN", "DB_PASSWORD", "SIGNING_KEY"]))
def test_environment_values_are_found_anywhere(text: str, name: str) -> None:
    value = "e" "nv-Va1ue-" "Q7"
    mixed = text[: len(text) // 2] + value + text[len(text) // 2 :]
    assert contains_secret(mixed, env={name: value})
    assert value not in redact(mixed, env={name: value})


@settings(max_examples=300, deadline=None)
@given(text=any_text, workspace=workspaces)
def test_redaction_is_stable(text: str, workspace: str | None) -> None:
    once = redact(text, workspace, env={})
    assert redact(once, workspace, env={}) == once


@settings(max_examples=200, deadline=None)
@given(
    index=st.integers(0, len(CORPUS["credentials"]) - 1),
    before=fragment_text,
    after=fragment_text,
)
def test_context_never_hides_a_corpus_credential(index: int, before: str, after: str) -> None:
    item = CORPUS["credentials"][index]
    for text in (f"{before}\n{item['text']}\n{after}", f"{before} {item['text']} {after}"):
        assert contains_secret(text, env={})
        assert item["secret"] not in redact(text, env={})


def test_adversarial_input_is_scanned_whole() -> None:
    """Inputs shaped to make a pattern backtrack get an answer (their time, as a ratio to a plain
    regex over the same text, is a figure of tests/bench/bench_scrub.py)."""
    for text in ADVERSARIAL:
        secrets = find_secrets(text, env={})
        paths = find_machine_paths(text, "/srv/acme")
        assert all(0 <= f.start < f.end <= len(text) for f in [*secrets, *paths]), text[:20]
    assert find_secrets("a" * 200_000, env={}) == [] and find_machine_paths("a" * 200_000, "/srv/acme") == []


@settings(max_examples=200, deadline=None)
@given(
    index=st.integers(0, len(CORPUS["paths"]) - 1),
    before=fragment_text,
    after=fragment_text,
)
def test_context_never_hides_a_corpus_path(index: int, before: str, after: str) -> None:
    item = CORPUS["paths"][index]
    for text in (f"{before}\n{item['text']}\n{after}", f"{before} {item['text']} {after}"):
        assert contains_machine_path(text, item.get("workspace"))
