"""Gemini CLI (npm `@google/gemini-cli`) as an engine: `gemini -p PROMPT --output-format
stream-json --yolo` in the copy, the key in GEMINI_API_KEY and an endpoint of one's own in
GOOGLE_GEMINI_BASE_URL (the server's root: the CLI adds `/v1beta/models/M:streamGenerateContent`).
Each JSON line is an event: `init`, `message`, `tool_use`, `tool_result`, `error`, and `result`
with the run's token counts (a failed run's `result` carries `error.message`).

Without a settings file the CLI stops at once with "Invalid auth method selected" (exit 41), and
in a folder it has not been told to trust it turns --yolo back into asking; `prepare` writes
~/.gemini/settings.json in the engine's HOME choosing the API key, with folder trust, telemetry
and usage statistics off, the web tools left out (its network is the endpoint alone), and
MAX_ATTEMPTS model requests per turn: the CLI's own ten attempts against an endpoint that
answers 5xx take minutes, printing only to stderr, before it gives up.
Without a key it says "you must specify the GEMINI_API_KEY environment variable" as plain text.
Checked against Gemini CLI 0.61.0 and a scripted endpoint on 127.0.0.1 (tests/engine/test_engines_e2e.py),
with no login server. Its fetch sends every request through HTTPS_PROXY as a CONNECT tunnel, even
to an http endpoint, so its base URL stays the endpoint's own (a CONNECT to the sandbox's forwarder
is refused: "fetch failed").
"""

from __future__ import annotations

import json

from autocode.providers.engines.base import Adapter, Event, Job, json_line

EDIT_TOOLS = frozenset({"replace", "write_file", "edit"})
MAX_ATTEMPTS = 3
LOGIN_WORDS = ("api key", "api_key", "401", "403", "unauthenticated", "permission_denied", "auth")


class Gemini(Adapter):
    name = "gemini"
    program = "gemini"
    install = "npm install -g @google/gemini-cli"
    key_variable = "GEMINI_API_KEY"
    endpoint = "https://generativelanguage.googleapis.com"
    majors = (0,)
    tested = True
    # Its fetch tunnels through the proxy with CONNECT even for http: to the endpoint, not the forwarder.
    forwarded_base_url = False

    # Model turns, counted from the output (its result gives tokens, not requests): each run of
    # tool calls or assistant text after the prompt or a tool's result is one answer of the model.
    turns = 0
    _model_spoke = False

    def _model(self) -> None:
        if not self._model_spoke:
            self.turns += 1
            self._model_spoke = True

    def argv(self, program: str, job: Job) -> list[str]:
        out = [program, "-p", job.prompt, "--output-format", "stream-json", "--yolo"]
        if job.model:
            out += ["-m", job.model]
        return out

    def prepare(self, job: Job) -> None:
        folder = job.scratch / ".gemini"
        folder.mkdir(parents=True, exist_ok=True)
        settings = {"security": {"auth": {"selectedType": "gemini-api-key"}, "folderTrust": {"enabled": False}},
                    "telemetry": {"enabled": False}, "privacy": {"usageStatisticsEnabled": False},
                    "general": {"disableAutoUpdate": True, "disableUpdateNag": True, "maxAttempts": MAX_ATTEMPTS},
                    "tools": {"exclude": ["web_fetch", "google_web_search"]}}
        (folder / "settings.json").write_text(json.dumps(settings), encoding="utf-8")

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
            if "GEMINI_API_KEY" in line or "API key not valid" in line:
                return [Event("login", line.strip())]
            return [Event("text", line)] if line.strip() else []
        kind = str(data.get("type") or "")
        if kind in ("tool_result", "init") or (kind == "message" and data.get("role") == "user"):
            self._model_spoke = False
        if kind == "tool_use" or (kind == "message" and data.get("role") == "assistant"):
            self._model()
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
            return [Event("login" if _login(message) else "error", message)]
        if kind == "result":
            failure = data.get("error")
            if data.get("status") == "error" and isinstance(failure, dict):
                message = str(failure.get("message") or line)
                return [Event("login" if _login(message) else "error", message)]
            stats = data.get("stats") or {}
            prompt, completion = int(stats.get("input_tokens") or 0), int(stats.get("output_tokens") or 0)
            return [Event("result", str(data.get("status") or ""),
                          usage={"prompt_tokens": prompt, "completion_tokens": completion,
                                 "total_tokens": prompt + completion},
                          data={"is_error": data.get("status") == "error", "turns": self.turns})]
        return []


def _login(message: str) -> bool:
    lower = message.lower()
    return any(word in lower for word in LOGIN_WORDS)
