"""OpenCode (npm `opencode-ai`) as an engine: `opencode run --format json` in the copy with the
model as `provider/model`. Each JSON line is an event with a `part`: `tool_use` (a tool call,
edits by the edit and write tools), `text`, `step_finish` with tokens and cost, `error`.
Its endpoint and key come from OpenCode's own configuration (OPENCODE_CONFIG_CONTENT); a
repository's opencode.json is not read (OPENCODE_DISABLE_PROJECT_CONFIG), and neither its model
list (models.dev), its default plugins nor language servers are fetched. A failed request is an
`error` line whose `error.data` has the endpoint's message and status; OpenCode retries a 5xx
itself for about a minute and a quarter, printing nothing, before that line comes.
Checked against OpenCode 1.18.33 and a scripted endpoint on 127.0.0.1 (tests/engine/test_engines_e2e.py):
it needs no login server and no npm download (its openai-compatible provider is built in).
"""

from __future__ import annotations

import json
from typing import Any

from autocode.providers.engines.base import Adapter, Event, Job, json_line

EDIT_TOOLS = frozenset({"edit", "write", "patch", "multiedit"})


class OpenCode(Adapter):
    name = "opencode"
    program = "opencode"
    install = "npm install -g opencode-ai"
    key_variable = "OPENAI_API_KEY"
    endpoint = "https://api.openai.com/v1"
    majors = (0, 1)
    tested = True

    def model_name(self, job: Job) -> str:
        model = job.model or "gpt-4o"
        return model if "/" in model else f"autocode/{model}"

    def argv(self, program: str, job: Job) -> list[str]:
        return [program, "run", "--format", "json", "-m", self.model_name(job), job.prompt]

    def env(self, job: Job) -> dict[str, str]:
        env = {"NO_COLOR": "1", "OPENCODE_DISABLE_AUTOUPDATE": "1", "OPENCODE_DISABLE_PROJECT_CONFIG": "1",
               "OPENCODE_DISABLE_MODELS_FETCH": "1", "OPENCODE_DISABLE_DEFAULT_PLUGINS": "1",
               "OPENCODE_DISABLE_LSP_DOWNLOAD": "1", "OPENCODE_DISABLE_SHARE": "1"}
        if job.base_url:
            model = self.model_name(job).split("/", 1)[1]
            config = {"provider": {"autocode": {"npm": "@ai-sdk/openai-compatible", "name": "AutoCode endpoint",
                                                "options": {"baseURL": job.base_url,
                                                            "apiKey": "{env:" + self.key_variable + "}"},
                                                "models": {model: {"name": model}}}},
                      "permission": {"edit": "allow", "bash": "allow", "webfetch": "deny"}}
            env["OPENCODE_CONFIG_CONTENT"] = json.dumps(config)
        if job.key is not None:
            env[self.key_variable] = job.key
        return env

    def parse(self, line: str) -> list[Event]:
        data = json_line(line)
        if data is None:
            return [Event("text", line)] if line.strip() else []
        kind = str(data.get("type") or "")
        part = data.get("part") or {}
        if kind == "tool_use":
            tool = str(part.get("tool") or "tool")
            state = part.get("state") or {}
            args = state.get("input") or {}
            path = args.get("filePath") or args.get("path")
            return [Event("edit" if tool in EDIT_TOOLS else "tool", f"{tool} {path or ''}".strip(),
                          path=str(path) if path else None)]
        if kind == "text":
            return [Event("text", str(part.get("text") or ""))]
        if kind == "step_finish":
            tokens = part.get("tokens") or {}
            prompt, completion = int(tokens.get("input") or 0), int(tokens.get("output") or 0)
            cost = part.get("cost")
            return [Event("usage", "step finished",
                          usage={"prompt_tokens": prompt, "completion_tokens": completion,
                                 "total_tokens": prompt + completion},
                          cost_usd=float(cost) if isinstance(cost, int | float) else None)]
        if kind == "error":
            raw_error = data.get("error")
            error: dict[str, Any] = raw_error if isinstance(raw_error, dict) else {}
            raw_detail = error.get("data")
            detail: dict[str, Any] = raw_detail if isinstance(raw_detail, dict) else {}
            message = str(detail.get("message") or error.get("message") or data.get("message") or line)
            status = detail.get("statusCode")
            if status is not None:
                message = f"{message} (HTTP {status} from {(detail.get('metadata') or {}).get('url') or 'its endpoint'})"
            lower = message.lower()
            login = status in (401, 403) or "api key" in lower or "unauthorized" in lower
            return [Event("login" if login else "error", message)]
        return []
