"""Endpoint families, the error answers of real servers, streamed chunks and replies, the context view."""

from __future__ import annotations

import json

import pytest

from autocode.providers.agent import context
from autocode.providers.agent.endpoint_errors import (
    ContextTooLong,
    EndpointError,
    ParamRefused,
    ToolsRefused,
    classify,
)
from autocode.providers.agent.families import RequestShape, family_of
from autocode.providers.agent.reply import turn_of
from autocode.providers.agent.stream import Assembly

URL = "http://127.0.0.1:9/v1"


@pytest.mark.parametrize(
    ("provider", "base_url", "model", "family", "temperature", "token_param"),
    [
        ("openai", "https://api.openai.com/v1", "gpt-4o", "openai", True, "max_completion_tokens"),
        ("openai", "https://api.openai.com/v1", "gpt-5-mini", "openai-reasoning", False, "max_completion_tokens"),
        ("openai", "https://api.openai.com/v1", "o3-mini", "openai-reasoning", False, "max_completion_tokens"),
        ("openai", "https://api.openai.com/v1", "o1", "openai-reasoning", False, "max_completion_tokens"),
        ("azure", "https://x.openai.azure.com", "o4-mini", "azure-reasoning", False, "max_completion_tokens"),
        ("azure", "https://x.openai.azure.com", "gpt-4o", "azure", True, "max_tokens"),
        ("openai", "http://127.0.0.1:11434/v1", "qwen2.5-coder", "ollama", True, "max_tokens"),
        ("openai", "http://127.0.0.1:1234/v1", "qwen2.5-coder", "lmstudio", True, "max_tokens"),
        ("openai", "http://127.0.0.1:8080/v1", "qwen", "llamacpp", True, "max_tokens"),
        ("openai", "http://127.0.0.1:4000/v1", "gpt-5", "litellm-reasoning", False, "max_tokens"),
        ("openai", "http://127.0.0.1:8000/v1", "ollama-like", "generic", True, "max_tokens"),
    ],
)
def test_the_family_is_guessed_from_the_url_and_model(
    provider: str, base_url: str, model: str, family: str, temperature: bool, token_param: str
) -> None:
    found = family_of(provider, base_url, model)
    assert (found.name, found.temperature, found.token_param) == (family, temperature, token_param)


def test_the_endpoint_family_setting_wins_and_shapes_the_body() -> None:
    shape = RequestShape(family_of("openai", URL, "m", "lmstudio"), max_output_tokens=100)
    body = shape.body("m", [], json_answer=True)
    assert body == {"model": "m", "messages": [], "temperature": 0, "max_tokens": 100, "stream": True,
                    "stream_options": {"include_usage": True}}
    reasoning = RequestShape(family_of("openai", URL, "o3", "openai"), temperature=None, stream=False)
    assert reasoning.body("o3", [], json_answer=True) == {"model": "o3", "messages": [], "response_format": {"type": "json_object"}}
    assert family_of("openai", URL, "m", "ollama").context_window == 4096


def _err(body: object) -> bytes:
    return json.dumps(body).encode()


def test_real_error_answers_are_classified_by_what_they_say() -> None:
    sent = {"model": "m", "messages": [], "temperature": 0, "tools": [{}], "max_tokens": 5}
    temperature = classify(URL, 400, _err({"error": {"message": "Unsupported value: 'temperature' does not support 0 "
                                                    "with this model.", "param": "temperature", "code": "unsupported_value"}}), sent, 1)
    assert isinstance(temperature, ParamRefused) and temperature.param == "temperature"
    max_tokens = classify(URL, 400, _err({"error": {"message": "Unsupported parameter: 'max_tokens' is not supported with "
                                                   "this model. Use 'max_completion_tokens' instead.", "param": "max_tokens"}}), sent, 1)
    assert isinstance(max_tokens, ParamRefused) and max_tokens.param == "max_tokens"
    for refusal in ('registry.ollama.ai/library/gemma:2b does not support tools',
                    '"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set',
                    "tools param requires --jinja flag"):
        assert isinstance(classify(URL, 400, _err({"error": {"message": refusal}}), sent, 1), ToolsRefused), refusal
    order = classify(URL, 400, _err({"error": {"message": "An assistant message with 'tool_calls' must be followed by tool "
                                              "messages responding to each 'tool_call_id'."}}), sent, 1)
    assert type(order) is EndpointError and "HTTP 400: An assistant message" in order.message
    long = classify(URL, 400, _err({"error": {"message": "This model's maximum context length is 4096 tokens.",
                                             "code": "context_length_exceeded"}}), sent, 1)
    assert isinstance(long, ContextTooLong) and long.limit == 4096
    llamacpp = classify(URL, 400, _err({"error": {"code": 400, "message": "the request exceeds the available context size, "
                                                 "try increasing it", "type": "exceed_context_size_error"}}), sent, 1)
    assert isinstance(llamacpp, ContextTooLong)
    # A parameter the request did not carry is not "refused": the message is told as it is.
    other = classify(URL, 400, _err({"error": "'response_format.type' must be 'json_schema' or 'text'"}), sent, 1)
    assert type(other) is EndpointError
    assert "check the API key" in classify(URL, 401, _err({"error": {"message": "Incorrect API key provided"}}), sent, 1).message


def test_a_stream_is_put_back_together() -> None:
    a = Assembly()
    lines = [
        ": keep-alive", "",
        'data: {"choices": [{"delta": {"role": "assistant", "content": "", "reasoning_content": "hm"}}]}', "",
        'data: {"choices": [{"delta": {"content": "Hel"}}]}', "",
        'data: {"choices": [{"delta": {"content": "lo", "tool_calls": [{"index": 0, "id": "c1", "function": {"name": "read_file", "arguments": "{\\"pa"}}]}}]}', "",
        'data: {"choices": [{"delta": {"tool_calls": [{"index": 0, "function": {"arguments": "th\\": \\"x\\"}"}}]}}]}', "",
        'data: {"choices": [{"delta": {}, "finish_reason": "tool_calls"}]}', "",
        'data: {"choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}}', "",
        "data: [DONE]", "",
    ]
    for line in lines:
        a.line(line.encode() + b"\n")
    assert a.done
    turn = turn_of(a.completion(), URL)
    assert turn.content == "Hello" and turn.reasoning == "hm" and turn.finish_reason == "tool_calls"
    assert turn.tool_calls[0]["function"] == {"name": "read_file", "arguments": '{"path": "x"}'}
    assert turn.usage == {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}


def test_replies_in_every_shape_read_the_same() -> None:
    def reply(message: dict[str, object]) -> dict[str, object]:
        return {"choices": [{"message": message, "finish_reason": "stop"}]}

    assert turn_of(reply({"content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}), URL).content == "ab"
    think = turn_of(reply({"content": "<think>plan</think>\n\nanswer"}), URL)
    assert (think.content, think.reasoning) == ("answer", "plan")
    closing_only = turn_of(reply({"content": "plan</think>answer"}), URL)  # the template opened the block
    assert (closing_only.content, closing_only.reasoning) == ("answer", "plan")
    assert turn_of(reply({"content": "x", "reasoning": "why"}), URL).reasoning == "why"
    written = turn_of(reply({"content": 'ok <tool_call>{"name": "search", "arguments": {"pattern": "a"}}</tool_call>'}), URL,
                      tools_offered=True)
    assert written.calls_from_text and written.tool_calls[0]["function"]["name"] == "search" and written.content == "ok"
    assert turn_of(reply({"content": "<tool_call>{}</tool_call>"}), URL).tool_calls == []  # no tools offered


def test_the_context_view_trims_old_output_first_then_summarises() -> None:
    messages: list[dict[str, object]] = [{"role": "system", "content": "s"}, {"role": "user", "content": "task"}]
    for i in range(30):
        messages.append({"role": "assistant", "content": None, "tool_calls": [
            {"id": f"c{i}", "type": "function", "function": {"name": "read_file", "arguments": json.dumps({"path": f"f{i}.py"})}}]})
        messages.append({"role": "tool", "tool_call_id": f"c{i}", "content": f"f{i}.py lines 1-400\n" + "x = 1\n" * 800})
    roomy = context.Sizing(window=1_000_000, reserve=4_000)
    sent, done = context.view(messages, roomy)
    assert done == "trimmed old tool output" and context.size(sent) < 25_000
    assert sent[-1]["content"] == messages[-1]["content"]  # the newest result whole
    assert "[trimmed:" in str(sent[3]["content"]) and "read_file(path='f0.py')" in str(sent[3]["content"])
    tight = context.Sizing(window=4_096, reserve=1_000)
    sent, done = context.view(messages, tight)
    assert done == "summarised the conversation so far"
    assert sent[:2] == messages[:2] and "condensed" in str(sent[2]["content"]) and "read_file(path='f0.py')" in str(sent[2]["content"])
    assert tight.tokens(context.size(sent)) <= tight.limit * 1.5
    assert [m["role"] for m in sent[3:5]] == ["assistant", "tool"]  # a kept turn starts at its call


def test_the_endpoint_family_setting_offers_every_family() -> None:
    from typing import get_args

    from autocode.providers.agent.families import FAMILIES
    from autocode.settings.schema import Settings

    assert get_args(Settings.model_fields["endpoint_family"].annotation) == FAMILIES
