"""``NativeTool`` declarations sent as OpenAI's built-in tools (seed 001).

A ``NativeTool`` whose name is a kind this adapter has a codec for
(``web_search``, ``code_interpreter``, ``image_generation`` ...) is offered
as that built-in, with the kind's default configuration: ``bind_native_tools``
moves it from the prompt's function tools to its hosted tools, so the request,
the tool choice, the trust level and the parsing of output items treat it
exactly like a hosted tool of the same kind. A kind that needs configuration
(``file_search``'s vector stores, ``mcp``'s server) must be declared as a
hosted tool; so must a second tool of a kind the prompt already has.

The declaration is checked before any request: every field of ``ParamsT``
must be one the provider's call item carries (``call_fields`` of the codec),
and every field of ``ResultT`` one the adapter can fill from the call:
``payload`` (the output item as received), a field of the codec's parsed call
(``value_type``) or a call field. Each call the provider makes is then
recorded like a hosted tool's, with ``params`` a ``ParamsT`` and the result's
value a ``ResultT`` rendered with ``render()``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from ...errors import PromptEvaluationError, PromptValidationError
from ...hosted.base import HostedTool
from ...prompt import RenderedPrompt
from ...results import ToolResult
from ...serde import dump, parse
from ...tools import Tool
from ...trust import WithheldTool
from .codecs.base import HostedToolCodec, NativeCall

PAYLOAD_FIELD = "payload"


def _fail(message: str, rendered: RenderedPrompt) -> PromptEvaluationError:
    return PromptEvaluationError(
        message, prompt_name=rendered.prompt_name, phase="render"
    )


def _field_names(cls: Any) -> tuple[str, ...]:
    return tuple(f.name for f in dataclasses.fields(cls))


def _support(
    tool: Tool[Any, Any], codec: HostedToolCodec[Any, Any], rendered: RenderedPrompt
) -> tuple[Any, tuple[str, ...], Any]:
    config_type = getattr(codec, "config_type", None)
    call_fields = getattr(codec, "call_fields", None)
    value_type = getattr(codec, "value_type", None)
    if config_type is None or call_fields is None or value_type is None:
        raise _fail(
            f"Native tool '{tool.name}': the OpenAI adapter cannot offer "
            f"'{codec.kind}' as a NativeTool; declare it as a hosted tool.",
            rendered,
        )
    return config_type, tuple(call_fields), value_type


def _default_config(
    tool: Tool[Any, Any], kind: str, config_type: Any, rendered: RenderedPrompt
) -> Any:
    try:
        return config_type()
    except (PromptValidationError, TypeError, ValueError) as error:
        raise _fail(
            f"Native tool '{tool.name}': OpenAI's {kind} needs configuration a "
            f"NativeTool cannot carry ({error}); declare it as a hosted tool "
            f"with a {config_type.__name__}.",
            rendered,
        ) from error


def _check_params(
    tool: Tool[Any, Any],
    kind: str,
    call_fields: tuple[str, ...],
    rendered: RenderedPrompt,
) -> None:
    if tool.params_type is None:
        return
    unknown = [n for n in _field_names(tool.params_type) if n not in call_fields]
    if unknown:
        raise _fail(
            f"Native tool '{tool.name}': params field(s) {', '.join(unknown)} of "
            f"{tool.params_type.__name__} are never sent by OpenAI's {kind} call; "
            f"it sends: {', '.join(call_fields)}.",
            rendered,
        )


def _check_result(
    tool: Tool[Any, Any],
    kind: str,
    call_fields: tuple[str, ...],
    value_type: Any,
    rendered: RenderedPrompt,
) -> None:
    result_type = tool.result_type
    if result_type is None or result_type is value_type:
        return
    if tool.result_container == "array":
        raise _fail(
            f"Native tool '{tool.name}': a native call produces one result, not a "
            "sequence.",
            rendered,
        )
    available = (PAYLOAD_FIELD, *_field_names(value_type), *call_fields)
    unknown = [n for n in _field_names(result_type) if n not in available]
    if unknown:
        raise _fail(
            f"Native tool '{tool.name}': result field(s) {', '.join(unknown)} of "
            f"{result_type.__name__} cannot be filled from OpenAI's {kind} call; "
            f"available: {', '.join(dict.fromkeys(available))}.",
            rendered,
        )


def bind_native_tools(
    rendered: RenderedPrompt, codecs: Mapping[str, HostedToolCodec[Any, Any]]
) -> tuple[RenderedPrompt, dict[str, Tool[Any, Any]]]:
    """``rendered`` with its native tools offered as hosted tools, and those
    native tools by name. Raises ``PromptEvaluationError`` (phase ``render``)
    for a native tool this adapter cannot offer as declared."""
    natives = [tool for tool in rendered.tools if tool.is_native]
    if not natives:
        return rendered, {}
    hosted = list(rendered.hosted_tools)
    withheld = list(rendered.withheld_hosted_tools)
    bound: dict[str, Tool[Any, Any]] = {}
    for tool in natives:
        codec = codecs.get(tool.name)
        if codec is None:
            raise _fail(
                f"Native tool '{tool.name}' is not a built-in tool of the OpenAI "
                f"adapter; its built-ins: {', '.join(sorted(codecs)) or 'none'}.",
                rendered,
            )
        kind = codec.kind
        twin = next((h for h in hosted if h.kind == kind), None)
        if twin is not None:
            raise _fail(
                f"Native tool '{tool.name}' repeats the {kind} tool '{twin.name}' "
                "the prompt already offers; keep one of them.",
                rendered,
            )
        config_type, call_fields, value_type = _support(tool, codec, rendered)
        _check_params(tool, kind, call_fields, rendered)
        _check_result(tool, kind, call_fields, value_type, rendered)
        config = _default_config(tool, kind, config_type, rendered)
        built = HostedTool(
            kind=kind, name=tool.name, description=tool.description, config=config
        )
        if built.min_trust > rendered.trust_level:
            withheld.append(
                WithheldTool(tool.name, kind, built.min_trust, rendered.trust_level)
            )
            continue
        hosted.append(built)
        bound[tool.name] = tool
    functions = tuple(tool for tool in rendered.tools if not tool.is_native)
    replaced = dataclasses.replace(
        rendered,
        tools=functions,
        hosted_tools=tuple(hosted),
        withheld_hosted_tools=tuple(withheld),
    )
    return replaced, bound


def _params(tool: Tool[Any, Any], params: Mapping[str, Any]) -> Any:
    """A ``ParamsT`` built from the call's params (the dict when the call
    lacks a field the type requires)."""
    if tool.params_type is None:
        return dict(params)
    names = _field_names(tool.params_type)
    try:
        return parse(
            tool.params_type, {k: v for k, v in dump(params).items() if k in names}
        )
    except Exception:  # the payload is the provider's: keep it as it came
        return dict(params)


def _value(tool: Tool[Any, Any], call: NativeCall, item: Any) -> Any:
    result_type = tool.result_type
    if result_type is None:
        return None
    if isinstance(call.value, result_type):
        return call.value
    source: dict[str, Any] = {}
    if dataclasses.is_dataclass(call.value) and not isinstance(call.value, type):
        source.update(dump(call.value))
    source.update(dump(dict(call.params)))
    source[PAYLOAD_FIELD] = dump(item)
    names = _field_names(result_type)
    return parse(result_type, {k: v for k, v in source.items() if k in names})


def typed_native_call(
    tool: Tool[Any, Any], call: NativeCall, item: Any
) -> tuple[Any, ToolResult[Any], str]:
    """The params, result and rendered text of one provider call of ``tool``.

    A failed call has no value (the provider's message says why); a value the
    result type cannot be built from (the payload is untrusted, the type's own
    checks may raise anything) leaves the value out and says so: the call is
    still recorded and the run goes on.
    """
    params = _params(tool, call.params)
    message = call.message
    value: Any = None
    if call.success:
        try:
            value = _value(tool, call, item)
        except Exception as error:
            message = (
                f"{message} (the result could not be read as "
                f"{tool.result_type.__name__}: {type(error).__name__}: {error})"
            )
    result: ToolResult[Any] = ToolResult(
        message=message, value=value, success=call.success
    )
    rendered = result.render() if value is not None else call.rendered
    return params, result, rendered


__all__ = ["PAYLOAD_FIELD", "bind_native_tools", "typed_native_call"]
