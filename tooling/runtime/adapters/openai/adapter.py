"""``OpenAIAdapter``: evaluates a prompt on the Responses API.

The request JSON is built once per turn from plain dicts and handed to the
official SDK's ``client.responses.create`` through ``extra_body``, which skips
the SDK's typed request transform (most of an SDK loop's cost, see
docs/benchmarks.md) while keeping its retries, errors and response parsing.
The conversation is stateless: every turn resends the history, with the
provider's output items replayed verbatim (reasoning, web_search_call and
message items included) followed by one ``function_call_output`` per call.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from typing import Any

import openai

from ...deadlines import Budget, BudgetTracker, Deadline
from ...errors import (
    PromptEvaluationError,
    PromptRenderError,
    PromptValidationError,
)
from ...events import (
    EventSink,
    NullSink,
    PromptFailed,
    event_id_for,
)
from ...hosted.base import HostedTool, unsupported_kind_message
from ...local_shell import LocalShellExecutor
from ...pricing import PriceSheet
from ...prompt import Prompt, PromptResponse, RenderedPrompt, ToolChoice
from ...schema import is_strict_compatible
from ...session import InMemorySession, SessionProtocol
from ...tools import Tool
from ...trust import TrustLevel
from .codecs import HostedToolCodec, default_codecs
from .context import RunContext
from .native import bind_native_tools
from .quotas import limited_specs, offered_request
from .redaction import redact_request, redact_tools
from .resume import RunRecord
from .run import ADAPTER_NAME, Run
from .sending import configured_timeout

__all__ = ["OpenAIAdapter", "RunRecord", "redact_request", "redact_tools"]


class OpenAIAdapter:
    """Runs prompts on the OpenAI Responses API through the official SDK.

    ``client`` is an ``openai.OpenAI`` instance; without one, the SDK's
    default client is built (configured by ``OPENAI_API_KEY`` and
    ``OPENAI_BASE_URL``, as in seed 004's ``OpenAIAdapter(model=...)``).
    ``hosted_tool_codecs`` maps hosted tool kinds to codecs.
    ``model_capabilities`` optionally maps model names to the hosted kinds
    each may use; a model missing from a given mapping may use none.

    Retries and timeouts: the adapter retries failed requests itself (see
    ``sending.py``), up to ``max_retries`` times (default: the client's own
    ``max_retries``), each attempt with the smaller of ``timeout`` (default:
    the client's read timeout) and what is left of the deadline. The client is
    used with the SDK's retries turned off.

    ``shell_executors`` maps executor names to the ``LocalShellExecutor`` a
    shell tool with ``environment: local`` runs its commands through (its
    config names one); without it no local command ever runs.
    """

    name = ADAPTER_NAME

    def __init__(
        self,
        *,
        client: openai.OpenAI | None = None,
        model: str,
        hosted_tool_codecs: Mapping[str, HostedToolCodec[Any, Any]] | None = None,
        model_capabilities: Mapping[str, frozenset[str]] | None = None,
        max_turns: int = 16,
        parallel_tool_calls: bool = True,
        store: bool | None = None,
        extra_request: Mapping[str, Any] | None = None,
        max_retries: int | None = None,
        timeout: float | None = None,
        poll_seconds: float = 1.0,
        shell_executors: Mapping[str, LocalShellExecutor] | None = None,
    ) -> None:
        if not model or not model.strip():
            raise ValueError("OpenAIAdapter needs a model name.")
        if max_turns < 1:
            raise ValueError("max_turns must be at least 1.")
        if max_retries is not None and max_retries < 0:
            raise ValueError("max_retries must not be negative.")
        if timeout is not None and timeout <= 0:
            raise ValueError("timeout must be positive.")
        if poll_seconds <= 0:
            raise ValueError("poll_seconds must be positive.")
        if client is None:  # configured by OPENAI_API_KEY / OPENAI_BASE_URL
            client = openai.OpenAI()
        self.client = client
        self.max_retries = (
            max_retries if max_retries is not None else int(client.max_retries)
        )
        self.timeout = timeout if timeout is not None else configured_timeout(client)
        self.poll_seconds = poll_seconds
        # One retry layer: this adapter's (every attempt recorded, none past
        # the deadline), never the SDK's as well.
        self.request_client = (
            client if client.max_retries == 0 else client.with_options(max_retries=0)
        )
        self.model = model.strip()
        self.hosted_tool_codecs: Mapping[str, HostedToolCodec[Any, Any]] = (
            dict(hosted_tool_codecs)
            if hosted_tool_codecs is not None
            else default_codecs()
        )
        self.model_capabilities = model_capabilities
        self.max_turns = max_turns
        self.parallel_tool_calls = parallel_tool_calls
        self.store = store
        self.extra_request = dict(extra_request or {})
        # a local shell runs only through an executor named here (none: none)
        self.shell_executors: Mapping[str, LocalShellExecutor] = (
            shell_executors if shell_executors is not None else {}
        )

    # -- building the request ------------------------------------------------

    def _codec(
        self, hosted: HostedTool[Any], prompt_name: str
    ) -> HostedToolCodec[Any, Any]:
        codec = self.hosted_tool_codecs.get(hosted.kind)
        if codec is None:
            raise PromptEvaluationError(
                f"Unsupported hosted tool kind '{hosted.kind}' (tool '{hosted.name}') "
                f"for the OpenAI adapter; supported kinds: "
                f"{', '.join(sorted(self.hosted_tool_codecs)) or 'none'}.",
                prompt_name=prompt_name,
                phase="render",
            )
        return codec

    def _serialize(self, hosted: HostedTool[Any], prompt_name: str) -> dict[str, Any]:
        """The wire form of ``hosted``; a config of the wrong type is refused
        here, before any request, like an unknown kind."""
        try:
            return self._codec(hosted, prompt_name).serialize(hosted)
        except (TypeError, PromptValidationError) as error:
            raise PromptEvaluationError(
                str(error), prompt_name=prompt_name, phase="render"
            ) from error

    def _check_capabilities(self, rendered: RenderedPrompt) -> None:
        if self.model_capabilities is None:
            return
        allowed = self.model_capabilities.get(self.model, frozenset())
        message = unsupported_kind_message(self.model, allowed, rendered.hosted_tools)
        if message is not None:
            raise PromptEvaluationError(
                message, prompt_name=rendered.prompt_name, phase="render"
            )

    def bind_native(
        self, rendered: RenderedPrompt
    ) -> tuple[RenderedPrompt, dict[str, Tool[Any, Any]]]:
        """``rendered`` with its ``NativeTool``s offered as the built-in tools
        they name (see ``native.py``), and those tools by name."""
        return bind_native_tools(rendered, self.hosted_tool_codecs)

    def tools_payload(self, rendered: RenderedPrompt) -> list[dict[str, Any]]:
        """The exact ``tools`` array sent to the provider: function and native
        tools in declaration order, then the hosted tools."""
        bound, natives = self.bind_native(rendered)
        payload: list[dict[str, Any]] = []
        for tool in rendered.tools:
            if tool.is_native:
                hosted = bound.hosted_tool(tool.name)
                if hosted is not None:  # else withheld at this trust level
                    payload.append(self._serialize(hosted, rendered.prompt_name))
                continue
            try:
                schema = rendered.tool_schema(tool)
            except TypeError as error:
                raise PromptEvaluationError(
                    f"Tool '{tool.name}' has parameters no JSON schema can describe: "
                    f"{error}",
                    prompt_name=rendered.prompt_name,
                    phase="render",
                ) from error
            payload.append(
                {
                    "type": "function",
                    "name": tool.name,
                    "description": tool.description,
                    "parameters": schema,
                    "strict": is_strict_compatible(schema),
                }
            )
        for hosted in bound.hosted_tools:
            if hosted.name not in natives:
                payload.append(self._serialize(hosted, rendered.prompt_name))
        return payload

    def tool_choice_payload(
        self, choice: ToolChoice | None, rendered: RenderedPrompt
    ) -> str | dict[str, Any] | None:
        """The wire form of ``choice``; names must be tools of the prompt."""
        if choice is None:
            return None
        if choice.mode in ("auto", "none", "required"):
            return choice.mode
        refs = [self._tool_ref(name, rendered) for name in choice.tools]
        if choice.mode == "tool":
            name = choice.tools[0]
            hosted = rendered.hosted_tool(name)
            if hosted is not None:
                return self._codec(hosted, rendered.prompt_name).tool_choice(hosted)
            return refs[0]
        mode = "required" if choice.required else "auto"
        return {"type": "allowed_tools", "mode": mode, "tools": refs}

    def _tool_ref(self, name: str, rendered: RenderedPrompt) -> dict[str, Any]:
        if rendered.tool(name) is not None:
            return {"type": "function", "name": name}
        hosted = rendered.hosted_tool(name)
        if hosted is None:
            raise PromptEvaluationError(
                f"tool_choice names '{name}', which is not a tool of this prompt.",
                prompt_name=rendered.prompt_name,
                phase="render",
            )
        spec = self._serialize(hosted, rendered.prompt_name)
        ref: dict[str, Any] = {"type": spec["type"]}
        if spec["type"] == "mcp":
            ref["server_label"] = spec["server_label"]
        return ref

    def include_payload(self, rendered: RenderedPrompt) -> list[str]:
        include: list[str] = []
        for hosted in rendered.hosted_tools:
            for value in self._codec(hosted, rendered.prompt_name).include:
                if value not in include:
                    include.append(value)
        return include

    def request_preview(self, rendered: RenderedPrompt) -> dict[str, Any]:
        """The first request body, exactly as it would be sent."""
        bound, _ = self.bind_native(rendered)
        self._check_capabilities(bound)
        tools = self.tools_payload(rendered)  # native tools in declared order
        rendered = bound
        body: dict[str, Any] = {
            "model": self.model,
            "input": [{"role": "system", "content": rendered.text}],
        }
        if tools:
            body["tools"] = tools
            choice = self.tool_choice_payload(rendered.tool_choice, rendered)
            if choice is not None:
                body["tool_choice"] = choice
            if any(t["type"] == "function" for t in tools):
                body["parallel_tool_calls"] = self.parallel_tool_calls
        include = self.include_payload(rendered)
        if include:
            body["include"] = include
        if rendered.output is not None:
            body["text"] = {"format": rendered.output.text_format()}
        if self.store is not None:
            body["store"] = self.store
        body.update(self.extra_request)
        if rendered.hosted_tool_limits:  # a limit of 0: never offered
            specs = limited_specs(rendered, self._serialize)
            body = offered_request(body, rendered.hosted_tool_limits, specs, {})
        return body

    # -- the loop ------------------------------------------------------------

    def evaluate(
        self,
        prompt: Prompt,
        *bound: Any,
        values: Mapping[str, Any] | None = None,
        session: SessionProtocol | None = None,
        sink: EventSink | None = None,
        deadline: Deadline | None = None,
        budget: Budget | None = None,
        max_turns: int | None = None,
        heartbeat: Callable[[], None] | None = None,
        rendered: RenderedPrompt | None = None,
        trust_level: TrustLevel | str = TrustLevel.STANDARD,
        run_id: str | None = None,
        resume: RunRecord | None = None,
        parse_output: bool = True,
        pricing: PriceSheet | None = None,
    ) -> PromptResponse:
        """Render ``prompt`` (unless ``rendered`` is given) and run it to an answer.

        ``trust_level`` decides which hosted tools the run is offered (see
        ``Prompt.render``). ``heartbeat`` is called before every step and
        about every ``poll_seconds`` while waiting for the provider; it may
        raise ``RunAborted`` to stop the run at once (no ``PromptFailed``).

        ``run_id`` names the run in its events' ids (``event_id_for``; a fresh
        id by default); pass the same id with ``resume`` (what an interrupted
        evaluation of the same prompt and values recorded) to continue it: the
        recorded responses and tool calls are replayed, not repeated, and the
        events they produce again carry the same ids as the first time.

        ``pricing`` prices each provider call and native call (their events'
        ``cost``) and lets ``budget.max_cost`` stop the run before a request
        that would pass it (see ``costs.py``); without it nothing is priced.

        ``parse_output`` is accepted for the seeds' sake: a declared output
        is always parsed, so ``False`` with one is refused.
        """
        if not parse_output and getattr(prompt, "output", None) is not None:
            raise ValueError(
                "parse_output=False is not supported: a prompt's declared output "
                "is always parsed (leave parse_output out)."
            )
        session = session if session is not None else InMemorySession()
        sink = sink if sink is not None else NullSink()
        tracker = BudgetTracker(budget) if budget is not None else None
        run_id = run_id or str(uuid.uuid4())
        context = RunContext(
            adapter=self,
            prompt_name=prompt.name,
            session=session,
            sink=sink,
            deadline=deadline,
            tracker=tracker,
            heartbeat=heartbeat,
            run_id=run_id,
        )
        run = Run(context, prompt, resume, pricing=pricing)
        try:
            if deadline is not None and deadline.expired():
                raise PromptEvaluationError(
                    "Deadline expired before evaluation started.",
                    prompt_name=prompt.name,
                    phase="deadline",
                    provider_payload=deadline.payload(),
                )
            if rendered is None:
                try:
                    rendered = prompt.render(
                        *bound, values=values, session=session, trust_level=trust_level
                    )
                except (PromptRenderError, PromptValidationError) as error:
                    raise PromptEvaluationError(
                        error.message, prompt_name=prompt.name, phase="render"
                    ) from error
            return run.execute(rendered, max_turns or self.max_turns)
        except PromptEvaluationError as error:
            sink.emit(
                PromptFailed(
                    prompt_name=error.prompt_name or prompt.name,
                    phase=error.phase,
                    message=error.message,
                    provider_payload=error.provider_payload,
                    usage=run.usage,
                    session_id=session.session_id,
                    event_id=event_id_for(run_id, "end"),
                )
            )
            raise
