"""OpenAI-compatible chat client for vLLM (and Ollama, llama.cpp server, hosted APIs).

One ``LLMClient`` per model endpoint. It owns everything between an agent and the HTTP API and
puts together the package's parts: the model profile (research.llm.profiles), fitting prompts
into the context window (fit, window), the wire format of tools (messages), HTTP with retries,
timeouts and streaming (transport), ``<think>`` and ``<tool_call>`` parsing (parsing, stream),
structured output (structured) and usage accounting (a ``CallRecord`` per call, measured speed).
No Django imports here: Celery tasks and plain scripts use it.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

from pydantic import BaseModel

from research import textre
from research.llm.fit import ContextFit
from research.llm.messages import to_openai, to_text_tags, tool_name, tools_system_prompt
from research.llm.parsing import (
    is_context_error,
    new_call_id,
    parse_arguments,
    parse_tool_call_tags,
    split_reasoning,
    unwrap_answer,
)
from research.llm.profiles import Profile, get_profile
from research.llm.stream import DeltaSink, VisibleFilter
from research.llm.structured import structured_reply
from research.llm.tokens import estimate_tokens
from research.llm.transport import Transport
from research.llm.types import CallRecord, ChatResult, LLMBadRequest, RawReply, ServerSpeed, ToolCall, Usage
from research.llm.window import discover_window

log = logging.getLogger(__name__)

M = TypeVar("M", bound=BaseModel)

_SPEED_WEIGHT = 0.3  # weight of the newest call in the moving averages


class LLMClient:
    """Chat client for one model on one OpenAI-compatible server. Thread-safe."""

    #: how many times a 400 "context length" answer makes the client shrink and retry
    context_retries: int = 2
    #: characters of a think_tags model's stream held back to catch a leaked ``…</think>``
    think_holdback: int = 1024

    def __init__(
        self,
        *,
        base_url: str,
        model: str,
        api_key: str = "EMPTY",
        profile: str | Profile = "qwen3",
        timeout: float = 120.0,
        max_retries: int = 5,
        backoff_base: float = 0.5,
        backoff_max: float = 8.0,
        context_window: int | None = None,
        on_call: Callable[[CallRecord], None] | None = None,
        stream_deadline: float | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.profile = profile if isinstance(profile, Profile) else get_profile(profile)
        self.model = model or self.profile.default_model
        self.api_key = api_key
        self.on_call = on_call
        timeout = float(timeout)
        # A non-streamed answer must arrive within ``timeout``; a stream must keep sending
        # (read timeout) and finish within ``stream_deadline``, so long reports can stream
        # for minutes while a server that trickles forever still cannot hang a worker.
        self._transport = Transport(
            base_url=self.base_url,
            api_key=api_key,
            timeout=timeout,
            max_retries=max(0, int(max_retries)),
            backoff_base=float(backoff_base),
            backoff_max=float(backoff_max),
            stream_deadline=float(stream_deadline) if stream_deadline else max(timeout * 5, 600.0),
        )
        self._fit = ContextFit(
            window=context_window,
            discover=lambda: discover_window(
                self._transport.http, base_url=self.base_url, model=self.model, timeout=self.timeout
            ),
            label=self.model or self.base_url,
        )
        # Qwen3 "Instruct-2507" models never think, so their streams need no holdback.
        if textre.search(r"instruct-2507", self.model, textre.IGNORECASE):
            self.think_holdback = 0
        self._speed = ServerSpeed()
        self._lock = threading.Lock()

    # ---------------------------------------------------------------- lifecycle

    @property
    def timeout(self) -> float:
        return self._transport.timeout

    @property
    def max_retries(self) -> int:
        return self._transport.max_retries

    @property
    def stream_deadline(self) -> float:
        return self._transport.stream_deadline

    def close(self) -> None:
        self._transport.close()

    def __enter__(self) -> LLMClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---------------------------------------------------------------- tokens and context

    def context_window(self) -> int:
        """The model's context window (see ``ContextFit.window``)."""
        return self._fit.window()

    @property
    def context_window_source(self) -> str:
        """Where the window came from: LLM_CONTEXT_WINDOW, a server endpoint, an error, a default."""
        return self._fit.source

    def count_tokens(self, text: str) -> int:
        """Conservative estimate (see research.llm.tokens), scaled up if the server has
        told us that our estimates ran low."""
        return self._fit.count_tokens(text)

    def _messages_tokens(self, messages: list[dict[str, Any]]) -> int:
        return self._fit.messages_tokens(messages)

    def fit_messages(self, messages: list[dict[str, Any]], *, reserve: int) -> list[dict[str, Any]]:
        """A copy of ``messages`` whose estimated size + ``reserve`` fits the context window
        (see ``ContextFit.fit_messages``)."""
        return self._fit.fit_messages(messages, reserve=reserve)

    # ---------------------------------------------------------------- chat

    def chat(
        self,
        messages: list[dict[str, Any]],
        *,
        agent: str = "",
        tools: list[dict[str, Any]] | None = None,
        response_format: dict[str, Any] | None = None,
        temperature: float = 0.3,
        max_tokens: int | None = None,
        on_delta: Callable[[str], None] | None = None,
        seed: int | None = None,
    ) -> ChatResult:
        """One chat completion, fitted into the context window and retried on transient failures
        (research.llm.transport); every call, ok or failed, is reported to ``on_call``.
        ``seed`` is sent as the sampling seed (vLLM, llama.cpp and OpenAI honour it), so the
        parallel runs of a heavy step sample apart yet reproducibly."""
        started = time.monotonic()
        result: ChatResult | None = None
        error = ""
        try:
            result = self._chat(messages, tools, response_format, temperature, max_tokens, on_delta, started, seed)
            return result
        except BaseException as e:
            error = f"{type(e).__name__}: {e}"
            raise
        finally:
            self._report(
                CallRecord(
                    agent=agent,
                    model=result.model if result else self.model,
                    prompt_tokens=result.usage.prompt_tokens if result else 0,
                    completion_tokens=result.usage.completion_tokens if result else 0,
                    seconds=round(time.monotonic() - started, 4),
                    ok=result is not None,
                    error=error,
                )
            )

    def speed(self) -> ServerSpeed:
        """The server's measured speed so far (callers scale time budgets with it)."""
        with self._lock:
            return self._speed

    def _measure(self, raw: RawReply, completion_tokens: int) -> None:
        if not raw.sent_at or raw.done_at <= raw.sent_at:
            return
        ttft = raw.first_token_at - raw.sent_at if raw.first_token_at else 0.0
        decode = raw.done_at - (raw.first_token_at or raw.sent_at)
        rate = completion_tokens / decode if completion_tokens >= 8 and decode > 0 else 0.0
        with self._lock:
            old = self._speed
            w = 1.0 if old.samples == 0 else _SPEED_WEIGHT

            def avg(prev: float, new: float) -> float:
                if not new:
                    return prev
                return new if not prev else prev + w * (new - prev)

            self._speed = ServerSpeed(
                tokens_per_s=round(avg(old.tokens_per_s, rate), 3),
                ttft_s=round(avg(old.ttft_s, ttft), 4),
                samples=old.samples + 1,
            )

    def _report(self, record: CallRecord) -> None:
        if self.on_call is None:
            return
        try:
            self.on_call(record)
        except Exception:  # accounting must never break a job
            log.exception("on_call hook failed")

    def _chat(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None,
        response_format: dict[str, Any] | None,
        temperature: float,
        max_tokens: int | None,
        on_delta: Callable[[str], None] | None,
        started: float,
        seed: int | None = None,
    ) -> ChatResult:
        text_mode = self.profile.tool_mode == "text_tags"
        tools = tools or None
        tools_prompt = tools_system_prompt(tools) if (tools and text_mode) else ""
        tools_cost = self.count_tokens(tools_prompt or (json.dumps(tools) if tools else ""))
        sink = None
        if on_delta is not None:
            hide = ("think", "tool_call") if tools or text_mode else ("think",)
            unwrap = ("answer",) if text_mode else ()
            holdback = self.think_holdback if self.profile.think_tags else 0
            sink = DeltaSink(on_delta, lambda: VisibleFilter(hide=hide, unwrap=unwrap, holdback=holdback))

        for overflow_try in range(self.context_retries + 1):
            fitted, send_max, prompt_estimate = self._fit_request(messages, tools_cost, max_tokens)
            body: dict[str, Any] = {**self.profile.extra_body, "model": self.model, "temperature": temperature}
            body["messages"] = to_text_tags(fitted, tools_prompt) if text_mode else to_openai(fitted)
            body["max_tokens"] = send_max
            if seed is not None:
                body["seed"] = seed
            if tools and not text_mode:
                body["tools"] = tools
                body["tool_choice"] = "auto"
            if tools and text_mode and self.profile.tool_stop:
                body["stop"] = list(self.profile.tool_stop)
            if response_format is not None:
                body["response_format"] = response_format
            if sink is not None:
                body["stream"] = True
                body["stream_options"] = {"include_usage": True}
            try:
                raw = self._transport.send(body, sink)
            except LLMBadRequest as e:
                if e.status not in (400, 413) or not is_context_error(str(e)) or overflow_try >= self.context_retries:
                    raise
                if not self._fit.learn_window(str(e)):  # a wrong window, or our estimate ran low
                    self._fit.calibrate(str(e), prompt_estimate)  # then shrink harder and try again
                continue
            result = self._finish(raw, tools, text_mode, prompt_estimate, started)
            self._measure(raw, result.usage.completion_tokens)
            return result
        raise AssertionError("unreachable")  # the loop returns or raises

    def _fit_request(
        self, messages: list[dict[str, Any]], tools_cost: int, max_tokens: int | None
    ) -> tuple[list[dict[str, Any]], int, int]:
        """Fitted messages, the max_tokens to send and the prompt estimate."""
        window = self.context_window()
        margin = 16 + window // 100
        wanted = min(max_tokens, window // 2) if max_tokens else min(8192, window // 4)
        fitted = self._fit.fit_messages(messages, reserve=wanted + tools_cost)
        prompt = self._fit.messages_tokens(fitted) + tools_cost
        room = window - prompt - margin
        if max_tokens:
            send_max = max(1, min(max_tokens, room))
        else:
            send_max = max(1, room)  # no explicit cap: let it write as much as fits
        return fitted, send_max, prompt

    def _finish(
        self, raw: RawReply, tools: list[dict[str, Any]] | None, text_mode: bool, prompt_estimate: int, started: float
    ) -> ChatResult:
        content, leaked = split_reasoning(raw.content)
        reasoning = "\n".join(r for r in (raw.reasoning.strip(), leaked) if r)
        calls = [self._native_call(tc) for tc in raw.tool_calls]
        # Text tags: the profile's own format, or a native-profile server started without
        # a tool parser (hermes-style models then print <tool_call> blocks as content).
        if (text_mode or (tools and not calls)) and "<tool_call>" in content:
            content, calls = parse_tool_call_tags(content)
        if text_mode:
            content = unwrap_answer(content)
        if tools is not None or calls:
            allowed = {tool_name(t) for t in tools or []}
            for call in calls:
                if call.name not in allowed and not call.parse_error:
                    offered = ", ".join(sorted(allowed)) or "none"
                    call.parse_error = f"unknown tool {call.name!r} (available: {offered})"
        finish = raw.finish_reason or "stop"
        if calls and finish == "stop":  # text-tag calls end on a stop string; report them alike
            finish = "tool_calls"
        usage_in = raw.usage or {}
        usage = Usage(
            prompt_tokens=int(usage_in.get("prompt_tokens") or prompt_estimate),
            completion_tokens=int(
                usage_in.get("completion_tokens")
                or estimate_tokens(raw.content + raw.reasoning + "".join(tc["arguments"] for tc in raw.tool_calls))
            ),
        )
        return ChatResult(
            content=content,
            tool_calls=calls,
            reasoning=reasoning,
            usage=usage,
            finish_reason=finish,
            seconds=round(time.monotonic() - started, 4),
            model=raw.model or self.model,
        )

    @staticmethod
    def _native_call(tc: dict[str, Any]) -> ToolCall:
        args, raw, err = parse_arguments(tc.get("arguments"))
        return ToolCall(
            id=tc.get("id") or new_call_id(),
            name=tc.get("name") or "",
            arguments=args,
            raw_arguments=raw,
            parse_error=err,
        )

    # ---------------------------------------------------------------- structured output

    def structured(
        self,
        messages: list[dict[str, Any]],
        schema: type[M],
        *,
        agent: str = "",
        max_attempts: int = 3,
        temperature: float = 0.2,
        max_tokens: int | None = None,
    ) -> M:
        """A validated ``schema`` instance, in the best response format this server accepts
        (see research.llm.structured)."""
        return structured_reply(
            self.chat,
            messages,
            schema,
            base_url=self.base_url,
            model=self.model,
            agent=agent,
            max_attempts=max_attempts,
            temperature=temperature,
            max_tokens=max_tokens,
        )
