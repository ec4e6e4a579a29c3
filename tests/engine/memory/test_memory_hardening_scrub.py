"""What issue 13 found saved and learned: SendGrid, Twilio and DigitalOcean keys,
a `ghp_` token of low variety, and this machine's environment and host paths.
Each is now refused as a memory and omitted from the learned record, and the
store and record keep nothing of it.

Credential-shaped values are assembled at run time, so this file holds none whole.
"""

from __future__ import annotations

import json
import random
import string
from collections.abc import Callable
from pathlib import Path

import pytest

from autocode.memory import MemoryContext, MemoryService
from autocode.record import Convention, ObservedFacts, merge_record

MemoryFactory = Callable[..., MemoryService]
_RNG = random.Random(13)


def _r(n: int, alphabet: str = string.ascii_letters + string.digits) -> str:
    return "".join(_RNG.choice(alphabet) for _ in range(n))


SECRETS = {
    "sendgrid": "S" + "G." + _r(22) + "." + _r(43),
    "twilio": "S" + "K" + _r(32, "0123456789abcdef"),
    "digitalocean": "do" + "p_v1_" + _r(64, "0123456789abcdef"),
    "github low variety": "gh" + "p_" + "k3Q" * 12,
}
PATHS = ["/opt/venvs/app/bin/python3", "/srv/builds/42/app"]


@pytest.mark.parametrize("name", sorted(SECRETS))
def test_new_credential_families_are_refused_as_memories(make_memory: MemoryFactory, name: str) -> None:
    memory = make_memory()
    result = memory.save(MemoryContext("implementer", None), f"The deploy job authenticates with {SECRETS[name]}")
    assert not result.saved and result.refused is not None and result.refused.kind == "credential"
    assert SECRETS[name] not in json.dumps(result.to_dict())
    assert memory.store.count_memories() == 0


@pytest.mark.parametrize("path", PATHS)
def test_environment_and_host_paths_are_refused_as_memories(make_memory: MemoryFactory, path: str) -> None:
    memory = make_memory()
    result = memory.save(MemoryContext("implementer", None), f"The service runs from {path} on the build box")
    assert not result.saved and result.refused is not None and result.refused.kind == "machine_path"
    assert memory.store.count_memories() == 0


def test_they_are_omitted_from_the_learned_record(tmp_path: Path) -> None:
    values = [*SECRETS.values(), *PATHS]
    answers = [Convention(f"Question {i}?", f"Use {value}.") for i, value in enumerate(values)]
    answers.append(Convention("Which interpreter?", "python3 from the project's own virtual environment."))
    result = merge_record(tmp_path, ObservedFacts(test_command=f"{PATHS[0]} -m pytest"), answers, env={})
    assert result.written
    raw = (tmp_path / ".autocode" / "project.json").read_text(encoding="utf-8")
    data = json.loads(raw)
    assert [c["question"] for c in data["conventions"]] == ["Which interpreter?"]
    for value in values:
        assert value not in raw and value not in json.dumps(result.to_dict())
    # The interpreter path is replaced by the portable launcher, as for any virtualenv.
    assert data["test_command"] == "python3 -m pytest"
