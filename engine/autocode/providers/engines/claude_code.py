"""Claude Code (npm `@anthropic-ai/claude-code`) as an engine: `claude -p PROMPT --output-format
stream-json --verbose`, edits accepted without asking (`--permission-mode acceptEdits`), its
key in ANTHROPIC_API_KEY and its endpoint in ANTHROPIC_BASE_URL. Each stream-json line is one
message: the init, an assistant turn (text and tool calls), a tool result, the closing result
with usage and cost.
"""

from __future__ import annotations

from typing import Any

from autocode.providers.engines.base import Adapter, Event, Job, json_line

EDIT_TOOLS = frozenset({"Edit", "MultiEdit", "Write", "NotebookEdit"})
LOGIN_WORDS = ("not logged in", "please run /login", "invalid api key", "authentication_error", "authentication_failed")


class ClaudeCode(Adapter):
    name = "claude-code"
    program = "claude"
    install = "npm install -g @anthropic-ai/claude-code (or `make engines`, which installs it under .tools/)"
    key_variable = "ANTHROPIC_API_KEY"
    endpoint = "https://api.anthropic.com"
    majors = (2,)
    tested = True

    def argv(self, program: str, job: Job) -> list[str]:
        # Only its user settings (the private, empty home): a repository's .claude/settings.json could
        # otherwise set its endpoint, hooks or permissions, and its .mcp.json start servers.
        out = [program, "-p", job.prompt, "--output-format", "stream-json", "--verbose",
               "--permission-mode", "acceptEdits", "--disallowedTools", "WebFetch", "WebSearch",
               "--setting-sources", "user", "--strict-mcp-config"]
        if job.model:
            out += ["--model", job.model]
        return out

    def env(self, job: Job) -> dict[str, str]:
        env = {
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_TELEMETRY": "1",
            "DISABLE_AUTOUPDATER": "1",
            "DISABLE_ERROR_REPORTING": "1",
        }
        if job.base_url:
            # The CLI adds /v1/messages itself.
            base = job.base_url.rstrip("/")
            env["ANTHROPIC_BASE_URL"] = base[: -len("/v1")] if base.endswith("/v1") else base
        if job.key is not None:
            env[self.key_variable] = job.key
        return env

    def parse(self, line: str) -> list[Event]:
        data = json_line(line)
        if data is None:
            return [Event("text", line)] if line.strip() else []
        kind = data.get("type")
        if kind == "system" and data.get("subtype") == "init":
            return [Event("text", f"started ({data.get('model')})", data={"session": data.get("session_id")})]
        if kind == "assistant":
            message = data.get("message") or {}
            if data.get("error") == "authentication_failed":
                return [Event("login", _texts(message) or "authentication failed")]
            return _blocks(message)
        if kind == "result":
            text = str(data.get("result") or "")
            usage = data.get("usage") or {}
            prompt = sum(int(usage.get(k) or 0) for k in
                         ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"))
            completion = int(usage.get("output_tokens") or 0)
            cost = data.get("total_cost_usd")
            event = Event(
                "result", text,
                usage={"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion},
                cost_usd=float(cost) if isinstance(cost, int | float) else None,
                data={"is_error": bool(data.get("is_error")), "turns": data.get("num_turns")},
            )
            if data.get("is_error") and any(w in text.lower() for w in LOGIN_WORDS):
                return [Event("login", text), event]
            return [event]
        return []


def _texts(message: dict[str, Any]) -> str:
    return " ".join(str(b.get("text") or "") for b in message.get("content") or [] if isinstance(b, dict)
                    and b.get("type") == "text").strip()


def _blocks(message: dict[str, Any]) -> list[Event]:
    out: list[Event] = []
    for block in message.get("content") or []:
        if not isinstance(block, dict):
            continue
        if block.get("type") == "text" and str(block.get("text") or "").strip():
            out.append(Event("text", str(block["text"])))
        elif block.get("type") == "tool_use":
            name = str(block.get("name") or "tool")
            given = block.get("input")
            args: dict[str, Any] = given if isinstance(given, dict) else {}
            path = args.get("file_path") or args.get("notebook_path") or args.get("path")
            what = path or args.get("command") or args.get("pattern") or ""
            out.append(Event("edit" if name in EDIT_TOOLS else "tool", f"{name} {what}".strip(),
                             path=str(path) if path else None, data={"tool": name}))
    return out
