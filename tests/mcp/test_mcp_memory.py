"""The memory tools through MCP, driven by the SDK's own stdio client against the real server:
every rule of the memory bar (refusals with reason and destination, duplicates, skills, scopes
from the repository the server was started in, the eviction cap, secrets), search and delete,
and the recall prompt and resource."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from support import make_repo
from support.mcp import CLIENT_NAME, McpClient, mcp_server, server_env, sqlite_contents, tool_names

pytest.importorskip("mcp", reason="the MCP SDK is not installed (pip install '.[mcp]')")

DURABLE = "This repository's tests need TEST_DATABASE_URL set, or they fail with connection refused."
GLOBAL_FACT = "The CI runners of this organisation have no outbound network access."
PROJECT_FACT = "Integration tests in this repository run against a local Redis on port 6390."
PROCEDURE = (
    "To cut a release of this project: 1. bump the version in pyproject.toml "
    "2. tag the commit with the version 3. push the tag and wait for the release job"
)
REFUSALS = {
    "task_key": "Fixing PAY-128 needs the billing flag turned on.",
    "pr_or_issue": "PR #412 changed how migrations run.",
    "commit_sha": "The flaky test came from commit 3f9a2c7e1b4d.",
    "this_task": "This task needs the staging database.",
}


def credential() -> str:
    # Assembled at run time so no credential-shaped literal sits in the repository.
    return "ghp" + "_" + "Zq3Rt7Kp9Lm2Xv5Nb8Wc4Yd6Hf1Gj0Sa3TeU8vQ"


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_repo(
        tmp_path_factory.mktemp("mcp-memory") / "project", {"README.md": "x\n"},
        # its own repository key: the servers of a test worker share one default store, and the
        # language server's memory tests save project memories for team/project
        origin="https://example.invalid/team/mcp-project.git",
    )


@pytest.fixture(scope="module")
def client(repo: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[McpClient]:
    with mcp_server(repo, tmp_path_factory.mktemp("mcp-logs") / "mcp.log") as c:
        yield c


@pytest.fixture(scope="module")
def other(tmp_path_factory: pytest.TempPathFactory) -> Iterator[McpClient]:
    """A server on another repository, with a cap of 3 memories per agent (the person's config)."""
    home = tmp_path_factory.mktemp("other-config")
    (home / "autocode").mkdir()
    (home / "autocode" / "config.toml").write_text(
        'memory_max_count = 3\nsandbox_env = ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"]\n', encoding="utf-8"
    )
    repo = make_repo(
        tmp_path_factory.mktemp("mcp-other") / "other", {"README.md": "y\n"},
        origin="https://example.invalid/team/other.git",
    )
    log = tmp_path_factory.mktemp("mcp-logs") / "other.log"
    with mcp_server(repo, log, "--agent", "capped", env=server_env(XDG_CONFIG_HOME=str(home))) as c:
        yield c


def test_the_tools_are_the_seeds_names_and_parameters(client: McpClient) -> None:
    tools = {t.name: t for t in client.tools()}
    params = {name: set(t.input_schema["properties"]) for name, t in tools.items()}
    assert params["save_memory"] == {"content", "category", "scope", "shared"}
    assert tools["save_memory"].input_schema["required"] == ["content"]
    assert params["search_memory"] == {"query", "scope", "owner"}
    assert tools["search_memory"].input_schema["required"] == ["query"]
    assert params["delete_memory"] == {"id"}
    # Nothing an agent could approve with; no tool takes a workspace (it is fixed at start).
    assert not [n for n in tool_names(client.tools()) if any(w in n for w in ("approv", "reject", "apply"))]
    assert not [n for n, p in params.items() if "workspace" in p]


def test_save_duplicate_search_and_delete(client: McpClient, repo: Path) -> None:
    saved = client.ok("save_memory", {"content": DURABLE, "category": "testing"})
    assert saved["saved"] is True and saved["scope"] == "project"
    # The repository in context is the server's workspace, named by its portable key.
    assert saved["repository"] and str(repo) not in saved["repository"]
    again = client.ok("save_memory", {"content": DURABLE})
    assert again["saved"] is False and again["duplicateOf"] == saved["id"]
    assert saved["id"] in again["message"]
    assert sqlite_contents().count(DURABLE) == 1
    # Another variable is another fact: kept beside the first, and the reply names the close one
    # (in the structured result and in the text an agent that reads only text sees).
    near = DURABLE.replace("TEST_DATABASE_URL", "TEST_CACHE_URL")
    beside = client.call("save_memory", {"content": near})
    assert not beside.is_error
    assert beside.data["saved"] is True and beside.data["similarTo"] == saved["id"]
    assert beside.data["id"] != saved["id"] and again["similarTo"] is None
    assert f"close to memory {saved['id']}" in beside.text
    assert sqlite_contents().count(near) == 1 and sqlite_contents().count(DURABLE) == 1
    client.ok("delete_memory", {"id": beside.data["id"]})

    found = client.ok("search_memory", {"query": "TEST_DATABASE_URL tests"})
    assert [m["id"] for m in found["memories"]][:1] == [saved["id"]]
    # Saved without `shared`: the calling agent's own (the client's name, no --agent given).
    assert found["memories"][0]["owner"] == CLIENT_NAME
    mine = client.ok("search_memory", {"query": "TEST_DATABASE_URL", "owner": "self"})
    assert [m["id"] for m in mine["memories"]] == [saved["id"]]
    assert client.ok("search_memory", {"query": "TEST_DATABASE_URL", "owner": "team"})["memories"] == []

    deleted = client.ok("delete_memory", {"id": saved["id"]})
    assert deleted["deleted"]["id"] == saved["id"]
    assert DURABLE not in sqlite_contents()
    gone = client.call("delete_memory", {"id": saved["id"]})
    assert gone.error["kind"] == "memoryNotFound"


@pytest.mark.parametrize("reason", sorted(REFUSALS))
def test_task_trivia_is_refused_with_the_reason_and_where_it_belongs(client: McpClient, reason: str) -> None:
    before = sqlite_contents()
    reply = client.call("save_memory", {"content": REFUSALS[reason]})
    assert reply.is_error
    assert reply.data["saved"] is False
    error = reply.error
    assert error["kind"] == "memoryRefused" and error["reason"] == reason
    assert error["belongs"] and error["belongs"] in reply.text
    assert "not saved" in reply.text
    assert sqlite_contents() == before


def test_a_credential_is_refused_and_never_written_anywhere(client: McpClient) -> None:
    secret = credential()
    before = sqlite_contents()
    reply = client.call("save_memory", {"content": f"The deploy token is {secret}"})
    assert reply.is_error and reply.error["reason"] == "credential"
    assert secret not in reply.text and secret not in str(reply.data)
    assert sqlite_contents() == before
    # The log names the failed call, scrubbed.
    assert secret not in client.log_file.read_text(encoding="utf-8", errors="replace")
    # A query carrying one is answered, and the log keeps no copy either.
    client.ok("search_memory", {"query": f"token {secret}"})
    assert secret not in client.log_file.read_text(encoding="utf-8", errors="replace")


def test_reusable_know_how_becomes_a_skill(client: McpClient) -> None:
    result = client.ok("save_memory", {"content": PROCEDURE})
    assert result["saved"] is False and result["skill"]
    assert result["skill"] in result["message"]
    assert PROCEDURE not in sqlite_contents()


def test_scopes_follow_the_repository_the_server_started_in(client: McpClient, other: McpClient) -> None:
    project = client.ok("save_memory", {"content": PROJECT_FACT, "shared": True})
    glob = client.ok("save_memory", {"content": GLOBAL_FACT, "scope": "global", "shared": True})
    assert project["scope"] == "project" and glob["scope"] == "global" and glob["repository"] is None

    seen_there = [m["content"] for m in other.ok("search_memory", {"query": "Redis CI runners network"})["memories"]]
    assert GLOBAL_FACT in seen_there and PROJECT_FACT not in seen_there
    assert other.call("delete_memory", {"id": project["id"]}).error["kind"] == "memoryNotFound"
    assert other.ok("search_memory", {"query": "Redis", "scope": "project"})["memories"] == []
    seen_here = [m["content"] for m in client.ok("search_memory", {"query": "Redis CI runners network"})["memories"]]
    assert GLOBAL_FACT in seen_here and PROJECT_FACT in seen_here

    recall = client.prompt("recall", {"brief": "set up Redis for the integration tests"})
    assert PROJECT_FACT in recall and GLOBAL_FACT in recall
    resource = other.read_resource("autocode://memory/recall")
    assert "## Project memories" in resource and GLOBAL_FACT in resource and PROJECT_FACT not in resource


def test_the_agents_own_memories_are_capped_oldest_first(other: McpClient) -> None:
    facts = [f"The staging service number {n} listens on port 80{n}0 behind the proxy." for n in range(1, 5)]
    ids = [other.ok("save_memory", {"content": fact})["id"] for fact in facts[:3]]
    fourth = other.ok("save_memory", {"content": facts[3]})
    assert fourth["saved"] is True
    assert [e["id"] for e in fourth["evicted"]] == [ids[0]]
    left = sqlite_contents()
    assert facts[0] not in left and all(f in left for f in facts[1:])
    mine = other.ok("search_memory", {"query": "staging service port proxy", "owner": "self"})["memories"]
    assert {m["owner"] for m in mine} == {"capped"} and len(mine) == 3


@pytest.mark.parametrize(
    ("tool", "arguments", "said"),
    [
        ("save_memory", {"content": "x" * 8_001}, "over the limit of 8,000"),
        ("save_memory", {"content": "fine", "category": "c" * 65}, "`category`"),
        ("save_memory", {"content": ["HOSTILE-MARKER"]}, "`content`"),
        ("save_memory", {"content": "fine", "scope": "team"}, "`scope`"),
        ("save_memory", {"content": "fine", "shared": {"deep": [[["HOSTILE-MARKER"]]]}}, "`shared`"),
        ("save_memory", {"content": "fine", "workspace": "/"}, "unknown argument(s) workspace"),
        ("save_memory", {"content": "   "}, "empty"),
        ("search_memory", {"query": "q" * 2_001}, "over the limit of 2,000"),
        ("search_memory", {"query": "x", "owner": "everyone"}, "`owner`"),
        ("delete_memory", {"id": "m" * 129}, "over the limit of 128"),
        ("delete_memory", {}, "`id`"),
    ],
)
def test_bad_arguments_are_clear_tool_errors_and_write_nothing(
    client: McpClient, tool: str, arguments: dict[str, object], said: str
) -> None:
    before = sqlite_contents()
    reply = client.call(tool, arguments)
    assert reply.error["kind"] == "invalidArguments", reply.text
    assert said in reply.text
    assert "HOSTILE-MARKER" not in reply.text and "x" * 100 not in reply.text
    assert sqlite_contents() == before


def test_an_unknown_tool_names_the_tools(client: McpClient) -> None:
    reply = client.call("drop_all_memories", {})
    assert reply.error["kind"] == "unknownTool"
    assert "save_memory" in reply.text and "start_task" in reply.text
