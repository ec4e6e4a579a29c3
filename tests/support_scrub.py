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
from functools import cache
from pathlib import Path
from typing import Any

CORPUS_PATH = Path(__file__).resolve().parent.parent / "fixtures" / "scrub" / "corpus.json"


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
