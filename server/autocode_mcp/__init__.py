"""AutoCode's MCP server: the memory and task tools for agents that speak the Model Context Protocol.

A face beside `autocode.cli` and `autocode_lsp`: it takes tool calls in, calls the
engine's public functions (the same ones the CLI and the language server use) and
sends their typed results out. It never resolves settings or opens stores itself,
and it never approves: plans and completions stay with the person.
"""

from autocode import __version__

__all__ = ["__version__"]
