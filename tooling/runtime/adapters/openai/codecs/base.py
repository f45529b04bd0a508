"""The ``HostedToolCodec`` protocol: one codec per hosted tool kind."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol, TypeVar

from ....hosted.base import HostedTool

ConfigT = TypeVar("ConfigT")
OutputT = TypeVar("OutputT", covariant=True)


@dataclasses.dataclass(frozen=True, slots=True)
class NativeCall:
    """One provider-executed call, as a codec reads it from an output item.

    ``answer`` is set for a call the provider handed to the client that the
    product did not run: the input item the next request must carry for it
    (the API refuses a request that leaves a client call unanswered). Such a
    call ran nothing, and is not charged.
    """

    call_id: str
    params: Mapping[str, Any]
    value: Any
    success: bool
    message: str
    rendered: str
    answer: Mapping[str, Any] | None = None


class HostedToolCodec(Protocol[ConfigT, OutputT]):
    """Serialises a hosted tool to the wire and parses what it produced.

    ``ConfigT`` is the config type of the kind's ``HostedTool`` and
    ``OutputT`` the typed output ``parse_output`` builds (seed 000's
    ``HostedToolCodec[ConfigT, OutputT]``).

    ``item_types`` are the output item types the codec understands;
    ``parse_call`` turns one such item into a ``NativeCall`` (or ``None`` for
    items that are not calls, such as ``mcp_list_tools``). ``include`` lists
    the ``include`` values the codec needs on every request.

    A codec written as seed 000 shows (a subclass defining ``kind``,
    ``serialize`` and ``parse_output``) inherits the defaults of the rest: no
    item types (its calls are not recorded one by one), no ``include``, a
    ``{"type": kind}`` tool choice.

    Optional attributes, read with ``getattr`` where they are used:
    ``config_type``, ``call_fields`` and ``value_type`` let a ``NativeTool``
    named for the kind be sent as the built-in (``..native``): the config
    built with no arguments, the keys of a parsed call's ``params`` and the
    type of its ``value``. ``parse_call_in(item, items)`` replaces
    ``parse_call`` for a kind whose call and its output are separate items of
    one response (shell).

    Items are the response's decoded JSON (``JsonObject``: read them as
    mappings or attributes) and untrusted: a codec may raise on an item it
    cannot read; the adapter then records a failed native call and goes on.
    """

    @property
    def kind(self) -> str: ...

    @property
    def item_types(self) -> tuple[str, ...]:
        return ()

    @property
    def include(self) -> tuple[str, ...]:
        return ()

    def serialize(self, tool: HostedTool[ConfigT]) -> dict[str, Any]: ...

    def tool_choice(self, tool: HostedTool[ConfigT]) -> dict[str, Any]:
        return {"type": self.kind}

    def matches(self, item: Any, tool: HostedTool[ConfigT]) -> bool:
        return True

    def parse_call(self, item: Any) -> NativeCall | None:
        return None

    def parse_output(
        self, response_items: Sequence[Any], tool: HostedTool[ConfigT]
    ) -> OutputT | None: ...


#: how a run finds the codec of a hosted tool of a prompt (by the tool and the
#: prompt's name): ``OpenAIAdapter._codec``
CodecFor = Callable[[HostedTool[Any], str], HostedToolCodec[Any, Any]]


class JsonObject(dict[str, Any]):
    """A decoded JSON object whose keys also read as attributes.

    Output items reach codecs as decoded JSON, never as the SDK's lenient
    models; this keeps both reading styles working: ``item["type"]``,
    ``item.get("type")`` and ``getattr(item, "type", None)`` (a missing key is
    an ``AttributeError``, so ``getattr`` defaults apply).
    """

    __slots__ = ()

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None

    @classmethod
    def wrap(cls, value: Any) -> Any:
        """``value`` with every JSON object in it as a ``JsonObject``."""
        if isinstance(value, Mapping):
            return cls((str(k), cls.wrap(v)) for k, v in value.items())
        if isinstance(value, list | tuple):
            return [cls.wrap(item) for item in value]
        return value


def field(item: Any, name: str, default: Any = None) -> Any:
    """Read a field from an SDK model or a dict; missing reads as ``default``."""
    if isinstance(item, Mapping):
        value = item.get(name, default)
    else:
        value = getattr(item, name, default)
    return default if value is None else value


def status_ok(status: str | None) -> bool:
    return status in (None, "completed")
