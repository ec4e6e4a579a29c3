"""Gemini CLI (npm `@google/gemini-cli`) as an engine: `gemini -p PROMPT --output-format
stream-json --yolo` in the copy, the key in GEMINI_API_KEY and an endpoint of one's own in
GOOGLE_GEMINI_BASE_URL. Each JSON line is an event: `init`, `message`, `tool_use`,
`tool_result`, `error`, and `result` with the run's token counts.
"""

from __future__ import annotations

from autocode.providers.engines.base import Adapter, Event, Job, json_line

EDIT_TOOLS = frozenset({"replace", "write_file", "edit"})


class Gemini(Adapter):
    name = "gemini"
    program = "gemini"
    install = "npm install -g @google/gemini-cli"
    key_variable = "GEMINI_API_KEY"
    endpoint = "https://generativelanguage.googleapis.com"
    majors = (0,)

    def argv(self, program: str, job: Job) -> list[str]:
        out = [program, "-p", job.prompt, "--output-format", "stream-json", "--yolo"]
        if job.model:
            out += ["-m", job.model]
        return out

    def env(self, job: Job) -> dict[str, str]:
        env = {"NO_COLOR": "1", "GEMINI_CLI_NO_RELAUNCH": "true"}
        if job.base_url:
            env["GOOGLE_GEMINI_BASE_URL"] = job.base_url
        if job.key is not None:
            env[self.key_variable] = job.key
        return env

    def parse(self, line: str) -> list[Event]:
        data = json_line(line)
        if data is None:
            return [Event("text", line)] if line.strip() else []
        kind = str(data.get("type") or "")
        if kind == "tool_use":
            tool = str(data.get("tool_name") or "tool")
            args = data.get("parameters") or {}
            path = args.get("file_path") or args.get("absolute_path") or args.get("path")
            return [Event("edit" if tool in EDIT_TOOLS else "tool", f"{tool} {path or ''}".strip(),
                          path=str(path) if path else None)]
        if kind == "message" and data.get("role") == "assistant":
            return [Event("text", str(data.get("content") or ""))]
        if kind == "error":
            message = str(data.get("message") or line)
            lower = message.lower()
            return [Event("login" if "api key" in lower or "auth" in lower else "error", message)]
        if kind == "result":
            stats = data.get("stats") or {}
            prompt, completion = int(stats.get("input_tokens") or 0), int(stats.get("output_tokens") or 0)
            return [Event("result", str(data.get("status") or ""),
                          usage={"prompt_tokens": prompt, "completion_tokens": completion,
                                 "total_tokens": prompt + completion},
                          data={"is_error": data.get("status") == "error"})]
        return []
