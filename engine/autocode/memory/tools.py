"""The three memory tools a role's model is offered (save, search, delete), as function-tool schemas.

Providers that support tool calls pass `tool_schemas()` to the model and
route each call to the MemoryService method of the same meaning.
"""

from __future__ import annotations

from typing import Any

from autocode.memory.service import SAVE_DESCRIPTION

SEARCH_DESCRIPTION = (
    "Search the memories you can see: your own and the team's, global ones and, when a repository is "
    "in context, that repository's. Narrow with scope (all, project, global) and owner (all, self, team)."
)
DELETE_DESCRIPTION = "Delete one memory you can see, by its id (when it is wrong or no longer true)."


def tool_schemas() -> list[dict[str, Any]]:
    """OpenAI-style function tools: save_memory, search_memory, delete_memory."""
    return [
        {
            "type": "function",
            "function": {
                "name": "save_memory",
                "description": SAVE_DESCRIPTION,
                "parameters": {
                    "type": "object",
                    "properties": {
                        "content": {"type": "string", "description": "one durable fact, without task keys or PR numbers"},
                        "category": {"type": "string", "description": "a short label such as testing or ci"},
                        "scope": {
                            "type": "string",
                            "enum": ["project", "global"],
                            "description": "leave unset to save where the run is (project with a repository, else global)",
                        },
                        "shared": {"type": "boolean", "description": "true: a team memory; false: yours only"},
                    },
                    "required": ["content"],
                },
            },
        },
        {
            "type": "function",
            "function": {
                "name": "search_memory",
                "description": SEARCH_DESCRIPTION,
                "parameters": {
                    "type": "object",
                    "properties": {
                        "query": {"type": "string"},
                        "scope": {"type": "string", "enum": ["all", "project", "global"]},
                        "owner": {"type": "string", "enum": ["all", "self", "team"]},
                        "limit": {"type": "integer", "minimum": 1, "maximum": 100},
                    },
                    "required": ["query"],
                },
            },
        },
        {
            "type": "function",
            "function": {
                "name": "delete_memory",
                "description": DELETE_DESCRIPTION,
                "parameters": {
                    "type": "object",
                    "properties": {"id": {"type": "string"}},
                    "required": ["id"],
                },
            },
        },
    ]
