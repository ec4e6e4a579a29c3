"""A throwaway editor for tests: the whole of adding an editor, in one module.

It knows nothing of AutoCode's Python code. It speaks JSON-RPC over the
server's stdio, opts in to the custom methods in `initialize`, and takes every
shape from `docs/protocol.schema.json`: each command's arguments are checked
against the schema before they are sent, and each result, notification and
request the server sends is checked against it when it arrives. A field the
schema does not declare, or a wrong type, fails at once, so this editor has no
normaliser at all.

The person's decisions are functions the caller gives (`answer`, `review`),
as a real editor would ask its user.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator

SCHEMA = Path(__file__).resolve().parents[2] / "docs" / "protocol.schema.json"


class SchemaError(AssertionError):
    """The server sent (or this editor was about to send) something the schema does not allow."""


class Shapes:
    """Validators for the schema's commands and methods."""

    def __init__(self, path: Path = SCHEMA) -> None:
        self.schema = json.loads(path.read_text(encoding="utf-8"))

    def check(self, ref: dict[str, Any], value: Any, what: str) -> None:
        validator = Draft202012Validator({**ref, "$defs": self.schema["$defs"]})
        errors = sorted(validator.iter_errors(value), key=lambda e: list(e.absolute_path))
        if errors:
            where = "/".join(str(p) for p in errors[0].absolute_path)
            raise SchemaError(f"{what}: {errors[0].message} (at /{where})")

    def command(self, name: str, part: str, value: Any) -> None:
        self.check(self.schema["commands"][name][part], value, f"{name} {part}")

    def method(self, name: str, part: str, value: Any) -> None:
        self.check(self.schema["methods"][name][part], value, f"{name} {part}")


class MiniEditor:
    """One editor window on one repository, talking to a server process over its stdio."""

    def __init__(self, proc: asyncio.subprocess.Process, shapes: Shapes,
                 answer: Callable[[dict[str, Any]], dict[str, Any]],
                 review: Callable[[dict[str, Any]], dict[str, Any]]) -> None:
        self.proc = proc
        self.shapes = shapes
        self.answer = answer
        self.review = review
        self.snapshots: list[dict[str, Any]] = []
        self.problems: list[str] = []
        self._next = 0
        self._pending: dict[int, asyncio.Future[Any]] = {}
        self._reader = asyncio.create_task(self._read())

    @classmethod
    async def open(cls, argv: list[str], env: dict[str, str], workspace: Path,
                   answer: Callable[[dict[str, Any]], dict[str, Any]],
                   review: Callable[[dict[str, Any]], dict[str, Any]]) -> MiniEditor:
        proc = await asyncio.create_subprocess_exec(
            *argv, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL, env=env)
        editor = cls(proc, Shapes(), answer, review)
        await editor.request("initialize", {
            "processId": None, "clientInfo": {"name": "mini-editor"},
            "rootUri": workspace.as_uri(),
            "workspaceFolders": [{"uri": workspace.as_uri(), "name": workspace.name}],
            "capabilities": {"experimental": {"autocode": {"protocolVersion": "1.0"}}},
        })
        editor.notify("initialized", {})
        return editor

    async def command(self, name: str, arguments: dict[str, Any]) -> Any:
        self.shapes.command(name, "arguments", arguments)
        result = await self.request("workspace/executeCommand", {"command": name, "arguments": [arguments]})
        self.shapes.command(name, "result", result)
        return result

    async def close(self) -> None:
        await self.request("shutdown", None)
        self.notify("exit", None)
        await asyncio.wait_for(self.proc.wait(), 30)
        self._reader.cancel()

    async def request(self, method: str, params: Any) -> Any:
        self._next += 1
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[self._next] = future
        self._send({"jsonrpc": "2.0", "id": self._next, "method": method, "params": params})
        return await asyncio.wait_for(future, 120)

    def notify(self, method: str, params: Any) -> None:
        self._send({"jsonrpc": "2.0", "method": method, "params": params})

    def _send(self, message: dict[str, Any]) -> None:
        body = json.dumps(message).encode()
        assert self.proc.stdin is not None
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)

    async def _read(self) -> None:
        assert self.proc.stdout is not None
        while True:
            length = 0
            while (line := await self.proc.stdout.readline()) not in (b"\r\n", b""):
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            if not line:
                return
            self._handle(json.loads(await self.proc.stdout.readexactly(length)))

    def _handle(self, message: dict[str, Any]) -> None:
        method = message.get("method")
        try:
            if method is None:
                future = self._pending.pop(message["id"])
                if "error" in message:
                    future.set_exception(RuntimeError(json.dumps(message["error"])))
                else:
                    future.set_result(message.get("result"))
            elif method == "autocode/task/didChange":
                self.shapes.method(method, "params", message["params"])
                self.snapshots.append(message["params"]["task"])
            elif method in ("autocode/task/askQuestion", "autocode/task/reviewPlan"):
                self.shapes.method(method, "params", message["params"])
                decide = self.answer if method.endswith("askQuestion") else self.review
                reply = decide(message["params"])
                self.shapes.method(method, "result", reply)
                self._send({"jsonrpc": "2.0", "id": message["id"], "result": reply})
            elif "id" in message:  # any other request of the server: this editor has no such feature
                self._send({"jsonrpc": "2.0", "id": message["id"], "result": None})
        except SchemaError as exc:
            self.problems.append(str(exc))
            if "id" in message and method is not None:
                self._send({"jsonrpc": "2.0", "id": message["id"],
                            "error": {"code": -32603, "message": str(exc)}})
