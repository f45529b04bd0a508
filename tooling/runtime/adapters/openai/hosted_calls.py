"""Calls the provider made to hosted tools, each recorded as a ``ToolInvoked``.

An output item of a type a hosted tool's codec reads (``web_search_call``,
``mcp_call`` ...) is one native call: the codec reads it (``parse_call``, or
``parse_call_in`` for a kind whose call and output are separate items), it is
attributed to the hosted tool that may have run it (``quotas.py``), counted
against that tool's quota, priced (``costs.py``) and recorded, typed as its
``NativeTool`` declares when it is one (``native.py``). An item the codec
cannot read is recorded as a failed call the model can read; it never stops
the run. A client call the product did not run is answered, not charged
(``NativeCall.answer``).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from ...events import EventSink, ToolInvoked, event_id_for
from ...hosted.base import HostedTool
from ...prompt import RenderedPrompt
from ...results import ToolResult
from ...session import SessionProtocol
from ...tools import Tool
from .codecs.base import CodecFor, field
from .costs import RunCosts
from .native import typed_native_call
from .quotas import HostedQuotas
from .send_failures import excerpt

logger = logging.getLogger(__name__)

PROVIDER = "openai"


class HostedCalls:
    """The native calls of one run: which items they are, and recording each."""

    def __init__(
        self,
        *,
        rendered: RenderedPrompt,
        codec_for: CodecFor,
        adapter_name: str,
        native_tools: Mapping[str, Tool[Any, Any]],
        quotas: HostedQuotas,
        costs: RunCosts,
        sequence: Iterator[int],
        sink: EventSink,
        session: SessionProtocol,
        run_id: str,
    ) -> None:
        self.rendered = rendered
        self.codec_for = codec_for
        self.adapter_name = adapter_name
        self.native_tools = native_tools
        self.quotas = quotas
        self.costs = costs
        self.sequence = sequence
        self.sink = sink
        self.session = session
        self.run_id = run_id
        # the hosted tools whose codec reads each item type
        self.by_item_type: dict[str, list[HostedTool[Any]]] = {}
        for hosted in rendered.hosted_tools:
            codec = codec_for(hosted, rendered.prompt_name)
            for item_type in codec.item_types:
                self.by_item_type.setdefault(item_type, []).append(hosted)

    def claims(self, item: Any) -> bool:
        """Whether ``item`` is a call to one of the run's hosted tools."""
        return field(item, "type") in self.by_item_type

    def record(
        self, item: Any, turn: int, output: Sequence[Any] = ()
    ) -> Mapping[str, Any] | None:
        """Record one native call item of ``turn``'s ``output``; return the
        input item answering it when it is a client call the product did not
        run (``NativeCall.answer``)."""
        rendered = self.rendered
        item_type = field(item, "type")
        candidates = self.by_item_type[item_type]
        hosted = candidates[0]
        codec = self.codec_for(hosted, rendered.prompt_name)
        alike: list[str] = []  # the tools that may have run it (quotas.py)
        try:
            matching = [c for c in candidates if codec.matches(item, c)]
            alike = [c.name for c in matching]
            hosted = self.quotas.attribute(matching or candidates, turn)
            # a kind whose call and output are separate items reads the response
            paired = getattr(codec, "parse_call_in", None)
            call = paired(item, output) if paired else codec.parse_call(item)
        except Exception as error:  # an item the codec cannot read: record it
            logger.warning("Could not read a %s item: %r", item_type, error)
            message = (
                f"The provider's {item_type} item could not be read "
                f"({type(error).__name__}: {excerpt(str(error), 200)})."
            )
            item_id = field(item, "id")
            self._emit(
                hosted,
                turn,
                call_id=item_id if isinstance(item_id, str) else None,
                params={},
                result=ToolResult.error(message),
                rendered_output="",
                alike=alike,
            )
            return None
        if call is None:
            return None
        params: Any = dict(call.params)
        result: ToolResult[Any] = ToolResult(
            message=call.message,
            value=call.value if call.success else None,
            success=call.success,
        )
        rendered_output = call.rendered
        native = self.native_tools.get(hosted.name)
        if native is not None:  # a NativeTool: its own params and result types
            params, result, rendered_output = typed_native_call(native, call, item)
        self._emit(
            hosted,
            turn,
            call_id=call.call_id,
            params=params,
            result=result,
            rendered_output=rendered_output,
            raw_params=call.params,
            alike=alike,
            answer=call.answer,
        )
        return call.answer

    def _emit(
        self,
        hosted: HostedTool[Any],
        turn: int,
        *,
        call_id: str | None,
        params: Any,
        result: ToolResult[Any],
        rendered_output: str,
        raw_params: Mapping[str, Any] | None = None,
        alike: Sequence[str] = (),
        answer: Mapping[str, Any] | None = None,
    ) -> None:
        """Emit a native call's ``ToolInvoked`` with its fee, priced from
        ``raw_params`` (the codec's reading of the call; ``params`` may be a
        ``NativeTool``'s typed params). A call answered by the product
        (``answer``) ran nothing: no fee, and what the model received is kept
        as its ``model_output``."""
        sequence = next(self.sequence)
        if answer is not None:
            cost = self.costs.nothing_ran()
        else:
            cost = self.costs.native_call(
                hosted, raw_params if raw_params is not None else _mapping(params)
            )
        self.quotas.count(hosted.name, turn, alike=alike)
        self.sink.emit(
            ToolInvoked(
                prompt_name=self.rendered.prompt_name,
                adapter=self.adapter_name,
                name=hosted.name,
                call_id=call_id,
                params=params,
                result=result,
                rendered_output=rendered_output,
                model_output=""
                if answer is None
                else json.dumps(answer.get("output"), ensure_ascii=False),
                native=True,
                provider=PROVIDER,
                kind=hosted.kind,
                turn=turn,
                sequence=sequence,
                cost=cost,
                session_id=self.session.session_id,
                event_id=event_id_for(self.run_id, "tool", sequence),
            )
        )


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}
