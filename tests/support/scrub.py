"""The scrub corpus (fixtures/scrub/corpus.json), shared by every test that needs
credentials, look-alikes or machine paths.

`load_corpus()` returns `{"credentials", "lookalikes", "paths", "path_lookalikes"}`,
each a list of dicts with `text` plus:

- credentials: `kind` (the `Finding.kind` expected), `secret` (the part of `text`
  that must never be stored or shown), `note`;
- lookalikes: `why` — shareable text that must not count as a secret or a path;
- paths: `kind`, and `workspace` when the path is the workspace's own;
- path_lookalikes: `why`, sometimes `workspace` — shareable text.

Call scrub with `env={}` on this corpus: the corpus is judged on its text alone.
Credentials are stored in short parts and joined here, so the repository never
holds one whole. Regenerate with `python fixtures/scrub/make_corpus.py`.
"""

from __future__ import annotations

import json
import random
import string
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

CORPUS_PATH = Path(__file__).resolve().parents[2] / "fixtures" / "scrub" / "corpus.json"

# Inputs shaped to make a pattern backtrack (long runs of a rule's first characters).
ADVERSARIAL: tuple[str, ...] = (
    "a" * 200_000,
    "password=" * 20_000,
    "/" * 100_000,
    "/home/" * 20_000,
    "~/" * 50_000,
    "a-" * 100_000,
    "--token " * 20_000,
    "x://a:b@" * 20_000,
    "eyJ" + "a" * 100_000 + ".eyJ" + "b" * 50_000,
    "-----BEGIN PRIVATE KEY-----\n" * 5_000,
    "C:\\Users\\" * 20_000,
    "Qw8e" * 50_000,
    "key-" * 50_000,
    "M" * 100_000 + ".",
    ("M" + "a" * 24 + ".") * 10_000,
    "/srv/a" * 30_000,
    "/opt/x/" * 30_000,
    "envs/x/" * 30_000,
    "D:\\a" * 30_000,
    "\\\\a\\" * 30_000,
    "1234567890:AA" * 20_000,
    "dp.pt." * 30_000,
)


@cache
def _load() -> dict[str, tuple[dict[str, Any], ...]]:
    raw = json.loads(CORPUS_PATH.read_text(encoding="utf-8"))
    corpus: dict[str, tuple[dict[str, Any], ...]] = {}
    for section, items in raw.items():
        loaded = []
        for item in items:
            entry = {k: v for k, v in item.items() if k not in ("parts", "secret_span")}
            if "parts" in item:
                entry["text"] = "".join(item["parts"])
            if "secret_span" in item:
                start, end = item["secret_span"]
                entry["secret"] = entry["text"][start:end]
            loaded.append(entry)
        corpus[section] = tuple(loaded)
    return corpus


def load_corpus() -> dict[str, list[dict[str, Any]]]:
    """A fresh copy of the corpus with every text joined (callers may mutate it)."""
    return {section: [dict(item) for item in items] for section, items in _load().items()}


# Random values of each prefixed family, for recall on values nobody wrote by
# hand (tests/engine/test_scrub_families.py and tests/bench/bench_scrub.py).
# Prefixes are spelled in pieces so this file holds no credential shape whole.
_ALNUM = string.ascii_letters + string.digits
_URLSAFE = _ALNUM + "-_"
_HEX = "0123456789abcdef"
_B64 = _ALNUM + "+/"


def _r(rng: random.Random, n: int, alphabet: str = _ALNUM) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


PREFIX_SHAPES: dict[str, tuple[str, Callable[[random.Random], str]]] = {
    "AKIA": ("aws_access_key", lambda r: "AK" + "IA" + _r(r, 16, string.ascii_uppercase + "234567")),
    "ghp_": ("github_token", lambda r: "gh" + "p_" + _r(r, 36)),
    "gho_": ("github_token", lambda r: "gh" + "o_" + _r(r, 36)),
    "ghu_": ("github_token", lambda r: "gh" + "u_" + _r(r, 36)),
    "ghs_": ("github_token", lambda r: "gh" + "s_" + _r(r, 36)),
    "ghr_": ("github_token", lambda r: "gh" + "r_" + _r(r, 36)),
    "github_pat_": ("github_token", lambda r: "github" + "_pat_" + _r(r, 22) + "_" + _r(r, 59)),
    "glpat-": ("gitlab_token", lambda r: "gl" + "pat-" + _r(r, 20, _URLSAFE)),
    "gldt-": ("gitlab_token", lambda r: "gl" + "dt-" + _r(r, 20, _URLSAFE)),
    "sk-proj-": ("openai_key", lambda r: "sk" + "-proj-" + _r(r, 74, _URLSAFE) + "T3Blbk" + "FJ" + _r(r, 74, _URLSAFE)),
    "sk-svcacct-": ("openai_key", lambda r: "sk" + "-svcacct-" + _r(r, 64, _URLSAFE)),
    "sk- (legacy)": ("openai_key", lambda r: "sk" + "-" + _r(r, 20) + "T3Blbk" + "FJ" + _r(r, 20)),
    "sk-ant-": ("anthropic_key", lambda r: "sk" + "-ant-api03-" + _r(r, 93, _URLSAFE) + "AA"),
    "hf_": ("huggingface_token", lambda r: "h" + "f_" + _r(r, 34, string.ascii_letters)),
    "AIza": ("google_api_key", lambda r: "AI" + "za" + _r(r, 35, _URLSAFE)),
    "AccountKey=": ("azure_key", lambda r: "Account" + "Key=" + _r(r, 86, _B64) + "=="),
    "xoxb-": ("slack_token", lambda r: "xo" + "xb-" + _r(r, 12, string.digits) + "-" + _r(r, 13, string.digits) + "-" + _r(r, 24)),
    "sk_live_": ("stripe_key", lambda r: "sk" + "_live_" + _r(r, 24)),
    "discord bot": ("discord_token", lambda r: r.choice("MNO") + _r(r, 25) + "." + _r(r, 6, _URLSAFE) + "." + _r(r, 38, _URLSAFE)),
    "telegram": ("telegram_bot_token", lambda r: _r(r, 10, string.digits) + ":AA" + _r(r, 33, _URLSAFE)),
    "SK (Twilio)": ("twilio_key", lambda r: "S" + "K" + _r(r, 32, _HEX)),
    "SG.": ("sendgrid_key", lambda r: "S" + "G." + _r(r, 22, _URLSAFE) + "." + _r(r, 43, _URLSAFE)),
    "key- (Mailgun)": ("mailgun_key", lambda r: "ke" + "y-" + _r(r, 32, _HEX)),
    "dop_v1_": ("digitalocean_token", lambda r: "do" + "p_v1_" + _r(r, 64, _HEX)),
    "npm_": ("npm_token", lambda r: "np" + "m_" + _r(r, 36)),
    "pypi-": ("pypi_token", lambda r: "py" + "pi-AgEIcHlwaS5vcmc" + _r(r, 140, _URLSAFE)),
    "shpat_": ("shopify_token", lambda r: "sh" + "pat_" + _r(r, 32, _HEX)),
    "ATATT3": ("atlassian_token", lambda r: "ATA" + "TT3" + _r(r, 186, _URLSAFE)),
    "dapi": ("databricks_token", lambda r: "da" + "pi" + _r(r, 32, _HEX)),
    "hvs.": ("vault_token", lambda r: "hv" + "s." + _r(r, 91, _URLSAFE)),
    "PMAK-": ("postman_key", lambda r: "PM" + "AK-" + _r(r, 24, _HEX) + "-" + _r(r, 34, _HEX)),
    "glsa_": ("grafana_token", lambda r: "gl" + "sa_" + _r(r, 32) + "_" + _r(r, 8, _HEX)),
    "sntryu_": ("sentry_token", lambda r: "sn" + "tryu_" + _r(r, 64, _HEX)),
    "sbp_": ("supabase_key", lambda r: "sb" + "p_" + _r(r, 40, _HEX)),
    "lin_api_": ("linear_key", lambda r: "lin" + "_api_" + _r(r, 40)),
    "dp.pt.": ("doppler_token", lambda r: "dp" + ".pt." + _r(r, 43, string.ascii_lowercase + string.digits)),
}
