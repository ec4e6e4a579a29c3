"""The decisions scrub makes, one at a time (docs/scrub.md explains each).

Credential-shaped test values are assembled at run time with `_j` so that this
file never holds one whole.
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import FrozenInstanceError
from pathlib import Path

import pytest

from autocode import scrub
from autocode.scrub import (
    PATH_KINDS,
    SECRET_KINDS,
    Finding,
    contains_machine_path,
    contains_secret,
    find_machine_paths,
    find_secrets,
    is_shareable,
    redact,
)

ROOT = Path(__file__).resolve().parents[2]


def _j(*parts: str) -> str:
    return "".join(parts)


RANDOM_40 = _j("q7Vd2LmX", "9sTz4Kp1", "Rw8Yb3Nc", "6Hj0Gf5A", "e2Ui7Ox9")


def kinds(text: str, env: dict[str, str] | None = None) -> list[str]:
    return [f.kind for f in find_secrets(text, env={} if env is None else env)]


def test_finding_never_shows_the_value() -> None:
    text = _j("GITHUB_TOKEN=gh", "p_", RANDOM_40[:36])
    (finding,) = find_secrets(text, env={})
    assert finding == Finding("github_token", 13, len(text))
    for shown in (repr(finding), str(finding), str(finding.to_dict())):
        assert RANDOM_40[:36] not in shown
    assert finding.to_dict() == {"kind": "github_token", "start": 13, "end": len(text)}
    with pytest.raises(FrozenInstanceError):
        finding.start = 0  # type: ignore[misc]


# --- the environment's credential values --------------------------------------------


def test_values_of_credential_named_variables_are_secrets() -> None:
    value = _j("corp-", "Zq81-", "vault")
    env = {"CORP_DEPLOY_TOKEN": value, "SOME_SETTING": "unrelated-value-123"}
    text = f"deploy with {value} and unrelated-value-123"
    assert kinds(text, env) == ["env_value"]
    assert redact(text, env=env) == "deploy with [redacted:env_value] and unrelated-value-123"


@pytest.mark.parametrize(
    "name",
    ["GITHUB_TOKEN", "SIGNING_KEY", "APP_SECRET", "MYSQL_ROOT_PASSWORD", "GH_PAT",
     "GOOGLE_CREDENTIALS", "DB_PASS", "NPM_AUTHTOKEN", "apikey"],
)
def test_credential_variable_names(name: str) -> None:
    value = _j("v4lue-", "of-", "x9Q")
    assert kinds(f"x {value} y", {name: value}) == ["env_value"]


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("HOME", "/home/someone-else"),  # not a credential name
        ("TOKENIZERS_PARALLELISM", "false-ish-value"),
        ("GITHUB_TOKEN_PATH", "/etc/app/token-file"),  # names where the secret is
        ("API_TOKEN", "short"),  # shorter than 8
        ("API_TOKEN", "true"),
        ("API_TOKEN", "12345678901"),  # digits only
        ("PGPASSWORD", "postgres"),  # a plain word would flag every mention of it
    ],
)
def test_environment_values_that_are_not_counted(name: str, value: str) -> None:
    assert kinds(f"a {value} b", {name: value}) == []


def test_env_defaults_to_the_process_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    value = _j("proc-", "env-", "8cQ2")
    monkeypatch.setenv("AUTOCODE_TEST_SECRET", value)
    assert contains_secret(f"echo {value}")
    assert not contains_secret(f"echo {value}", env={})
    assert not is_shareable(f"echo {value}")


def test_every_occurrence_of_an_environment_value_is_found() -> None:
    value = _j("rep3at", "ed-val")
    env = {"X_TOKEN": value}
    assert [(f.start, f.end) for f in find_secrets(f"{value} {value}", env=env)] == [
        (0, 12),
        (13, 25),
    ]


# --- assignments, flags and headers ---------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        _j("API_TOKEN=", RANDOM_40[:24]),
        _j("apiKey: '", RANDOM_40[:20], "'"),
        _j('{"dbPassword": "', "n0t-a-w0rd", '"}'),
        _j("export ", "SERVICE_SECRET=", RANDOM_40[:32]),
        _j("--auth-token ", RANDOM_40[:16]),
        _j("--api-key=", RANDOM_40[:30]),
        _j("pass", "word: hunter2x"),
        _j("pass", "word=Tr0ub4dor&3"),
        _j("pass", "word=CorrectHorse9"),
        _j("db.pass", "word=", "xK9#mQ2!"),
        _j("GH_PAT=", RANDOM_40[:36]),
        _j("{pass", "word: hunter2x, user: ci}"),  # a flow mapping, not an annotation
        _j("DB_PASS=", "sw0rdfish!"),
        _j("Authorization: Bearer ", RANDOM_40[:12]),
        _j("authorization=", "Basic ", "YWxhZGRpbjpvcGVuc2VzYW1l"),
        _j("https://api.corp.invalid/v1?access_token=", RANDOM_40[:24], "&page=2"),
        _j("session_secret => '", RANDOM_40[:18], "'"),
        _j("PRIVATE_KEY := \"", RANDOM_40, '"'),
    ],
)
def test_secret_assignments_are_found(text: str) -> None:
    assert kinds(text) in (["secret_assignment"], ["authorization_header"])


@pytest.mark.parametrize(
    "text",
    [
        "pass" "word=secret",
        "pass" "word=admin1",  # 6 with a digit is found; see the next case
        "pass" "word=abc12",  # shorter than 6: kept
        "pass" "word: str",
        "pass" "word=mysecretpassword",  # a single-case plain word
        "token = get_token()",
        "token = self.settings.token",
        "api_key=os.environ['API_KEY']",
        "token: Optional[str] = None",
        "TOKEN=abc123",  # keys shorter than 12 are not API credentials
        "secret_name = projects/p/secrets/db/versions/latest",
        "--password-file /run/secrets/db",
        "--token-ttl 3600",
        "token_type: bearer",
        "auth: required",
        "pass" "word = '''the one in the vault'''",
        "Authorization: Bearer",
        "use a Bearer token from the vault",
        "sort_key = lambda item: item.created_at",
        "primary_key=True",
        "API_KEY=GITHUB_TOKEN",
        "token=v1.2.3-release",
        "key=value",
        "return task.done ? 'pass' : 'sync~spin'",
        "pass" "word=CorrectHorse",  # words, even joined in mixed case, are kept
        "pass" "word: HiddenText | None = None",
        "pass" "word: Available when the URL has user information",
        "PQchangePassword.restype = PGresult_ptr",
        "_HEX_PAT = '[0-9A-Fa-f]{1,4}'",
        "_INIT_FACTORY_PAT = '__attr_factory_%s'",
        "token_range = '%d,%d-%d,%d:' % (token.start + token.end)",
        '"auth0": "types-auth0-python"',
        "authorization = base64.decodebytes(authorization)",
        "def step(self, shrink_pass: ShrinkPass, *, order: bool = False)",
        'base_key = "Software\\Python\\PythonCore\\{}.{}".format(major, minor)',
        'machine h login u password "pass" account a',
        '{"pkg/a.py": "a\\n", "pkg/passwd": "mine\\n"}',
        "tests pass: 1204571 fail: 3",
        "pass_rate=0.9531",
        '{"name":"toBe","pass":false}}],"failureMessages":[]',  # jest's JSON report
    ],
)
def test_non_secrets_after_secret_names_are_kept(text: str) -> None:
    expected = ["secret_assignment"] if text.endswith("admin1") else []
    assert kinds(text) == expected


@pytest.mark.parametrize(
    "value",
    [
        "your-api-key-here", "<token>", "<YOUR_TOKEN>", "xxxxxxxxxxxxxxxx", "XXXXXXXXXXXXXXXXXXXX",
        "changeme", "${TOKEN}", "$TOKEN", "$(cat token.txt)", "%API_TOKEN%", "***", "********",
        "{{ secrets.TOKEN }}", "REDACTED", "[redacted:secret_assignment]", "...", "example-key-123456",
        "dummy-token-value", "null", "None",
    ],
)
@pytest.mark.parametrize("name", ["TOKEN", "pass" "word", "--api-key", "Authorization: Bearer"])
def test_placeholders_are_kept(name: str, value: str) -> None:
    separator = " " if name.startswith("--") or name.endswith("Bearer") else "="
    assert kinds(f"{name}{separator}{value}") == []


def test_shaped_placeholder_bodies_are_kept() -> None:
    assert kinds(_j("gh", "p_", "X" * 36)) == []
    assert kinds(_j("sk", "-proj-", "your-key-here-your-key-here")) == []
    assert kinds(_j("AK", "IA", "IOSFODNN7", "EXAMPLE")) == []


# --- shaped formats ------------------------------------------------------------------


def test_private_key_header_alone_is_prose_but_a_key_without_end_is_found() -> None:
    header = _j("-----BEGIN ", "RSA PRIVATE", " KEY-----")
    assert kinds(f"a key file starts with {header}") == []
    text = f"{header}\n{RANDOM_40}\n{RANDOM_40}"  # truncated: no END line
    assert find_secrets(text, env={}) == [Finding("private_key", 0, len(text))]


def test_prefixes_glued_to_words_are_not_tokens() -> None:
    assert kinds(_j("task", "-", RANDOM_40)) == []
    assert kinds(_j("xgh", "p_", RANDOM_40[:36])) == []


def test_url_password_placeholders_and_plain_words_are_kept() -> None:
    assert kinds("postgres://postgres:postgres@localhost:5432/test") == []
    assert kinds("postgres://app:<password>@db/app") == []
    assert kinds("https://user@github.com/org/repo.git") == []
    assert kinds(_j("amqp://guest:", "g7!xPq2z", "@mq:5672/")) == ["url_password"]


def test_nested_findings_keep_the_specific_kind() -> None:
    token = _j("gl", "pat-", RANDOM_40[:20])
    assert kinds(f"GITLAB_TOKEN={token}") == ["gitlab_token"]
    assert kinds(f"Authorization: Bearer {token}") == ["gitlab_token"]


# --- machine paths -------------------------------------------------------------------


def path_kinds(text: str, workspace: str | os.PathLike[str] | None = None) -> list[str]:
    return [f.kind for f in find_machine_paths(text, workspace)]


@pytest.mark.parametrize(
    ("text", "span"),
    [
        ("see /home/ann/x.", (4, 15)),  # the sentence's full stop is not part of the path
        ("PATH=/home/ann/bin:/usr/bin", (5, 18)),
        ("'/Users/ann/app'", (1, 15)),
    ],
)
def test_path_spans(text: str, span: tuple[int, int]) -> None:
    (finding,) = find_machine_paths(text)
    assert (finding.start, finding.end) == span


def test_workspace_path_in_every_spelling(tmp_path: Path) -> None:
    real = tmp_path / "real-project"
    real.mkdir()
    link = tmp_path / "link"
    link.symlink_to(real)
    for text in (f"{link}/tests", f"{real}/tests", f"cd {link}", f"file://{real}/index.html"):
        assert path_kinds(text, link) == ["workspace_path"], text
    assert path_kinds("tests/unit", link) == []


def test_workspace_boundaries() -> None:
    workspace = "/ci/build/acme"  # not under a host folder such as /srv, which is found anyway
    assert path_kinds("/ci/build/acme-old/tests", workspace) == []  # a sibling
    assert path_kinds("/ci/build/acme.bak", workspace) == []
    assert path_kinds("/x/ci/build/acme", workspace) == []
    assert path_kinds("https://example.com/ci/build/acme", workspace) == []
    assert path_kinds("(/ci/build/acme)", workspace) == ["workspace_path"]
    assert path_kinds("/srv/build/acme/tests", "/srv/build/acme") == ["workspace_path"]


def test_workspace_that_is_relative_or_root_adds_nothing() -> None:
    assert path_kinds("project/tests", "project") == []
    assert path_kinds("/etc/hosts", "/") == []


def test_windows_workspace_matches_any_case_and_separator() -> None:
    for text in (r"c:\Work\Acme\tests", "C:/work/acme/tests", r'"C:\\work\\acme"'):
        assert path_kinds(text, r"C:\work\acme") == ["workspace_path"], text


@pytest.mark.parametrize(
    "text",
    ["/usr/bin/env", "/bin/bash -c true", "/etc/ssl/certs", "/opt/homebrew", "/proc/self",
     "/srv/data", "/srv/data/", "/var/lib/docker", "/api/v1/users", "/api/envs/42", "1/2/3",
     "2024/01/02", "12/31/2025", "https://h.invalid/srv/a/b", "s3://bucket/opt/x/y", "C:\\",
     'print("a:\\n")', "\\\\d+\\\\.\\\\d+", ".venv/bin/python", "venvs/app/bin/python",
     "/usr/local/cargo/bin/cargo", "docs/tmp/notes.md", "a/tmp/b", "x~/y", "~", "$HOME", "%TEMP%", "/tmp",
     "https://h.invalid/tmp/x", "http://[::1]/home/a"],
)
def test_paths_that_are_kept(text: str) -> None:
    assert path_kinds(text) == []


# --- combined answers ----------------------------------------------------------------


def test_redact_replaces_every_finding_and_merges_overlaps() -> None:
    token = _j("np", "m_", RANDOM_40[:36])
    text = f"NPM_TOKEN={token} in /home/ann/.npmrc"
    assert redact(text, env={}) == "NPM_TOKEN=[redacted:npm_token] in [redacted:home_path]"
    assert redact(text, env={}, paths=False) == "NPM_TOKEN=[redacted:npm_token] in /home/ann/.npmrc"
    assert redact(text, env={}, secrets=False) == f"NPM_TOKEN={token} in [redacted:home_path]"
    # An environment value overlapping a token: one marker for the union.
    env = {"NPM_TOKEN": _j("TOKEN=", token[:10])}
    assert redact(text, env=env, paths=False) == "NPM_[redacted:env_value] in /home/ann/.npmrc"
    assert redact("nothing to hide", env={}) == "nothing to hide"


def test_is_shareable_needs_neither() -> None:
    assert is_shareable("pytest -q tests/unit", workspace="/srv/x", env={})
    assert not is_shareable("pytest /srv/x/tests", workspace="/srv/x", env={})
    assert not contains_secret("pytest /srv/x/tests", env={})
    assert contains_machine_path("pytest /srv/x/tests", workspace=Path("/srv/x"))


def test_kinds_are_documented() -> None:
    doc = (ROOT / "docs" / "scrub.md").read_text(encoding="utf-8")
    for kind in SECRET_KINDS | PATH_KINDS:
        assert f"`{kind}`" in doc, kind


def test_import_is_light_and_compiles_large_patterns_on_first_use() -> None:
    code = (
        "import sys, autocode.scrub as s\n"
        "print(sorted(m for m in sys.modules if m.startswith('autocode')))\n"
        "print(s._SHAPED._compiled is None)\n"
        "s.find_secrets('x', env={})\n"
        "print(s._SHAPED._compiled is None)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split("\n")[:3] == ["['autocode', 'autocode.scrub']", "True", "True"]
    # `x` has no hint of a shaped token, so even the first call skipped that pattern.
    assert scrub.find_secrets(_j("gh", "p_", RANDOM_40[:36]), env={})


def test_the_shells_working_folder_is_not_a_password() -> None:
    """`PWD` is the shell's working folder; logging an environment must not hide every path."""
    assert scrub.redact("PWD=/work/app/src") == "PWD=/work/app/src"
    value = "hunter2" + "secretvalue"
    assert "hunter2" not in scrub.redact(f"DB_PWD={value} pwd={value}")
