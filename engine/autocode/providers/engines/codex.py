"""Codex CLI (npm `@openai/codex`) as an engine: `codex exec --json` in the copy, approvals
never asked, its own sandbox off (AutoCode's sandbox confines it), the endpoint given as a
model provider of its own on the command line (`-c model_providers.autocode...`) with the key
in OPENAI_API_KEY (it speaks the Responses API there). Each JSON line is an event:
`item.started` / `item.completed` (a command, a file change, a message, a warning),
`turn.completed` with usage, `error` and `turn.failed`.
"""

from __future__ import annotations

import json

from autocode.providers.engines.base import Adapter, Event, Job, json_line

LOGIN_WORDS = ("not logged in", "401", "unauthorized", "invalid api key", "missing environment variable")


class Codex(Adapter):
    name = "codex"
    program = "codex"
    install = "npm install -g @openai/codex"
    key_variable = "OPENAI_API_KEY"
    endpoint = "https://api.openai.com/v1"
    majors = (0,)
    tested = True

    def argv(self, program: str, job: Job) -> list[str]:
        out = [program, "exec", "--json", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox",
               "-C", str(job.workdir)]
        if job.model:
            out += ["-m", job.model]
        if job.base_url:
            provider = {"name": "autocode", "base_url": job.base_url, "env_key": self.key_variable}
            table = "{" + ", ".join(f"{k} = {json.dumps(v)}" for k, v in provider.items()) + "}"
            out += ["-c", f"model_providers.autocode={table}", "-c", "model_provider=autocode"]
        return [*out, job.prompt]

    def env(self, job: Job) -> dict[str, str]:
        env = {"CODEX_HOME": str(job.scratch / "codex-home"), "NO_COLOR": "1"}
        if job.key is not None:
            env[self.key_variable] = job.key
        return env

    def prepare(self, job: Job) -> None:
        (job.scratch / "codex-home").mkdir(parents=True, exist_ok=True)

    def parse(self, line: str) -> list[Event]:
        data = json_line(line)
        if data is None:
            return [Event("text", line)] if line.strip() else []
        kind = str(data.get("type") or "")
        if kind == "turn.failed" and isinstance(data.get("error"), dict):
            data = data["error"]
            kind = "error"
        if kind == "error":
            message = str(data.get("message") or (data.get("error") or {}).get("message") or line)
            lower = message.lower()
            return [Event("login" if any(w in lower for w in LOGIN_WORDS) else "error", message)]
        if kind == "turn.completed":
            usage = data.get("usage") or {}
            prompt = int(usage.get("input_tokens") or 0)
            completion = int(usage.get("output_tokens") or 0)
            return [Event("usage", "turn completed",
                          usage={"prompt_tokens": prompt, "completion_tokens": completion,
                                 "total_tokens": prompt + completion})]
        item = data.get("item") or {}
        what = item.get("type")
        if kind == "item.started" and what == "command_execution":
            return [Event("tool", f"run {item.get('command')}")]
        if kind == "item.completed":
            if what == "file_change":
                return [Event("edit", f"edit {c.get('path')}", path=str(c.get("path")))
                        for c in item.get("changes") or [] if isinstance(c, dict)]
            if what == "agent_message":
                return [Event("text", str(item.get("text") or ""))]
            if what == "error":  # a warning it goes on after (unknown model metadata...)
                return [Event("text", f"warning: {item.get('message')}")]
        return []
