"""Aider (PyPI `aider-chat`) as an engine: `aider --message PROMPT` in the copy with every
question answered yes, no git (the copy has none), no commits, no update check, no analytics,
plain output. Aider has no machine format, so its plain lines are read: "Applied edit to X",
"Tokens: N sent, M received. Cost: ..." and its error lines. An OpenAI-compatible endpoint is
reached as the model `openai/<model>` with OPENAI_API_BASE; the model's limits come from a
metadata file AutoCode writes (so Aider never fetches its price list from the internet).
"""

from __future__ import annotations

import json
import re

from autocode.providers.engines.base import Adapter, Event, Job

APPLIED = re.compile(r"^Applied edit to (.+?)\s*$")
TOKENS = re.compile(r"^Tokens: ([\d.]+)(k?) sent(?:, [\d.]+k? cache \w+)*, ([\d.]+)(k?) received\."
                    r"(?: Cost: \$([\d.]+) message, \$([\d.]+) session\.)?")
LOGIN_WORDS = ("authenticationerror", "incorrect api key", "invalid api key", "api_key client option must be set",
               "missing these environment variables", "no api key")
ERROR_WORDS = ("apiconnectionerror", "did not conform to the edit format", "failed to apply edit", "error:")


class Aider(Adapter):
    name = "aider"
    program = "aider"
    install = ("pip install aider-chat in a virtual environment of its own, with its bin folder on PATH "
               "(or `make engines`, which installs it under .tools/aider)")
    key_variable = "OPENAI_API_KEY"
    endpoint = "https://api.openai.com/v1"
    majors = (0,)
    scratch_patterns = (".aider*",)
    tested = True

    def model_name(self, job: Job) -> str:
        model = job.model or "gpt-4o"
        return model if "/" in model or not job.base_url else f"openai/{model}"

    def prepare(self, job: Job) -> None:
        # Limits and prices of the model, so Aider does not download its list of every model.
        window = job.context_window or 128_000
        entry = {"max_input_tokens": window, "max_tokens": 8192, "max_output_tokens": 8192,
                 "input_cost_per_token": 0.0, "output_cost_per_token": 0.0,
                 "litellm_provider": "openai", "mode": "chat"}
        job.scratch.mkdir(parents=True, exist_ok=True)
        (job.scratch / "model-metadata.json").write_text(json.dumps({self.model_name(job): entry}), encoding="utf-8")
        # Aider would otherwise read its settings from the repository too (.aider.conf.yml, .env,
        # .aider.model.settings.yml), where a repository could name another endpoint for the key
        # or commands to run: empty files of AutoCode's own stand in for them.
        # (an empty mapping for the config, which Aider insists be one; nothing in the others)
        for name, text in (("aider.conf.yml", "{}\n"), ("env", ""), ("model-settings.yml", "")):
            (job.scratch / name).write_text(text, encoding="utf-8")

    def argv(self, program: str, job: Job) -> list[str]:
        out = [
            program, "--message", job.prompt, "--model", self.model_name(job),
            "--yes-always", "--no-git", "--no-auto-commits", "--no-dirty-commits", "--no-check-update",
            "--analytics-disable", "--no-pretty", "--no-fancy-input", "--no-show-release-notes",
            "--no-show-model-warnings", "--no-auto-lint", "--no-auto-test", "--no-detect-urls",
            # With every question answered yes it would run the shell commands its model suggests.
            "--no-suggest-shell-commands",
            "--edit-format", "diff", "--map-tokens", "0", "--no-restore-chat-history",
            "--chat-history-file", str(job.scratch / "chat-history.md"),
            "--input-history-file", str(job.scratch / "input-history"),
            "--model-metadata-file", str(job.scratch / "model-metadata.json"),
            "--config", str(job.scratch / "aider.conf.yml"), "--env-file", str(job.scratch / "env"),
            "--model-settings-file", str(job.scratch / "model-settings.yml"),
        ]
        if job.base_url:
            out += ["--openai-api-base", job.base_url]
        return out + list(job.files)

    def env(self, job: Job) -> dict[str, str]:
        env = {"LITELLM_LOCAL_MODEL_COST_MAP": "True", "TERM": "dumb", "NO_COLOR": "1"}
        if job.key is not None:
            env[self.key_variable] = job.key
        return env

    def parse(self, line: str) -> list[Event]:
        text = line.strip()
        if not text:
            return []
        applied = APPLIED.match(text)
        if applied:
            return [Event("edit", f"edit {applied.group(1)}", path=applied.group(1))]
        tokens = TOKENS.match(text)
        if tokens:
            sent = _count(tokens.group(1), tokens.group(2))
            received = _count(tokens.group(3), tokens.group(4))
            cost = float(tokens.group(6)) if tokens.group(6) else None
            return [Event("usage", text, usage={"prompt_tokens": sent, "completion_tokens": received,
                                                 "total_tokens": sent + received}, cost_usd=cost)]
        lower = text.lower()
        if any(w in lower for w in LOGIN_WORDS):
            return [Event("login", text)]
        if any(w in lower for w in ERROR_WORDS):
            return [Event("error", text)]
        return [Event("text", text)]


def _count(number: str, k: str) -> int:
    return int(float(number) * (1000 if k else 1))
