"""What rendering a prompt gives: the text and tools (``RenderedPrompt``), the
model's answer (``PromptResponse``), and the request options a prompt declares
(``ToolChoice``, ``StructuredOutput``)."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Generic, Literal

from jsonschema.validators import validator_for

from .citations import Citation
from .errors import PromptValidationError
from .hosted.base import HostedTool
from .policies import ToolPolicy
from .schema import dataclass_schema, is_strict_compatible
from .subscripts import SubscriptAlias
from .tools import Tool
from .trust import TrustLevel, WithheldTool

if TYPE_CHECKING:
    from typing_extensions import TypeVar

    OutputT = TypeVar("OutputT", default=Any)
else:
    from typing import TypeVar

    OutputT = TypeVar("OutputT")

ToolChoiceMode = Literal["auto", "none", "required", "tool", "allowed"]


@dataclasses.dataclass(frozen=True, slots=True)
class ToolChoice:
    """Which tools the model may or must use.

    ``auto``/``none``/``required`` as on the wire; ``tool`` forces the single
    tool named in ``tools``; ``allowed`` restricts the model to ``tools``
    (``required=True`` makes it call one of them).
    """

    mode: ToolChoiceMode = "auto"
    tools: tuple[str, ...] = ()
    required: bool = False

    def __post_init__(self) -> None:
        if self.mode not in ("auto", "none", "required", "tool", "allowed"):
            raise PromptValidationError(f"Unknown tool_choice mode '{self.mode}'.")
        if self.mode == "tool" and len(self.tools) != 1:
            raise PromptValidationError("tool_choice 'tool' names exactly one tool.")
        if self.mode == "allowed" and not self.tools:
            raise PromptValidationError(
                "tool_choice 'allowed' names at least one tool."
            )
        if self.mode in ("auto", "none", "required") and self.tools:
            raise PromptValidationError(
                f"tool_choice '{self.mode}' takes no tool names."
            )

    @classmethod
    def parse(cls, text: str) -> ToolChoice:
        """``auto``, ``none``, ``required``, ``tool:<name>``, ``allowed:<a>,<b>``
        or ``allowed-required:<a>,<b>``."""
        value = text.strip()
        if value in ("", "auto", "none", "required"):
            return cls(mode=value or "auto")  # type: ignore[arg-type]
        kind, _, names = value.partition(":")
        tools = tuple(n.strip() for n in names.split(",") if n.strip())
        if kind == "tool":
            return cls(mode="tool", tools=tools)
        if kind in ("allowed", "allowed-required"):
            return cls(mode="allowed", tools=tools, required=kind == "allowed-required")
        raise PromptValidationError(
            f"tool_choice '{text}' is not one of auto, none, required, tool:<name>, "
            "allowed:<names>, allowed-required:<names>."
        )

    def relaxed(self) -> ToolChoice:
        """What a forcing choice becomes after the first turn, so the loop can
        end: ``auto``, keeping an ``allowed`` restriction."""
        if self.mode == "allowed":
            return ToolChoice(mode="allowed", tools=self.tools, required=False)
        return ToolChoice(mode="auto")

    @property
    def forcing(self) -> bool:
        return self.mode in ("required", "tool") or (
            self.mode == "allowed" and self.required
        )


@dataclasses.dataclass(frozen=True, slots=True)
class StructuredOutput:
    """The JSON the final answer must be: a JSON schema, maybe from a dataclass."""

    name: str
    schema: Mapping[str, Any]
    output_type: type[Any] | None = None
    strict: bool = True

    @classmethod
    def from_dataclass(
        cls, output_type: type[Any], *, name: str = ""
    ) -> StructuredOutput:
        schema = dataclass_schema(output_type)
        return cls(
            name=sanitize_schema_name(name or output_type.__name__),
            schema=schema,
            output_type=output_type,
            strict=is_strict_compatible(schema),
        )

    @classmethod
    def from_schema(cls, schema: Mapping[str, Any], *, name: str) -> StructuredOutput:
        if not isinstance(schema, Mapping) or schema.get("type") != "object":
            raise PromptValidationError(
                "A structured-output schema must be a JSON object schema "
                '({"type": "object", ...}).',
                placeholder="output_schema",
            )
        return cls(
            name=sanitize_schema_name(name),
            schema=dict(schema),
            strict=is_strict_compatible(schema),
        )

    def text_format(self) -> dict[str, Any]:
        return {
            "type": "json_schema",
            "name": self.name,
            "schema": dict(self.schema),
            "strict": self.strict,
        }


def check_entered_schema(schema: Mapping[str, Any]) -> None:
    """Refuse, where a schema is entered (the catalog's form), one no answer
    could be checked against: not JSON Schema (a misspelt type), or a strict
    object (``additionalProperties`` false, nothing combined) requiring a key
    it does not describe, which the model could never send. A stored
    revision is not held to it: its runs go on as they did. Patterns are not
    compiled here (they are ECMA-262, not Python's ``re``)."""
    try:
        validator = validator_for(schema)
        problem = next(iter(validator(validator.META_SCHEMA).iter_errors(schema)), None)
    except RecursionError:
        raise PromptValidationError(
            "The output schema is nested too deeply to check.",
            placeholder="output_schema",
        ) from None
    if problem is not None:
        where = "/".join(str(part) for part in problem.absolute_path)
        raise PromptValidationError(
            f"The output schema is not valid JSON Schema"
            f"{f' at {where}' if where else ''}: {problem.message}",
            placeholder="output_schema",
        )
    properties = schema.get("properties")
    required = schema.get("required")
    combined = any(
        word in schema
        for word in ("allOf", "anyOf", "oneOf", "$ref", "patternProperties")
    )
    if (
        schema.get("additionalProperties") is False
        and not combined
        and isinstance(properties, Mapping)
        and isinstance(required, list)
    ):
        missing = [str(key) for key in required if key not in properties]
        if missing:
            raise PromptValidationError(
                f"The output schema requires key(s) it does not describe under "
                f"properties (and allows no other): {', '.join(missing)}.",
                placeholder="output_schema",
            )


def sanitize_schema_name(name: str) -> str:
    cleaned = re.sub(r"[^a-zA-Z0-9_-]+", "_", name).strip("_")[:57] or "prompt"
    return cleaned if cleaned.endswith("_schema") else f"{cleaned}_schema"


@dataclasses.dataclass(frozen=True, slots=True)
class RenderedPrompt(Generic[OutputT]):
    """The text and tools the model will see, for one set of parameters."""

    def __class_getitem__(cls, item: Any) -> Any:
        # typing's alias would fail setting __orig_class__ on a frozen slots
        # dataclass; this one leaves instances as they are built.
        return SubscriptAlias(cls, item)

    prompt_name: str
    text: str
    tools: tuple[Tool[Any, Any], ...]
    hosted_tools: tuple[HostedTool[Any], ...]
    tool_param_descriptions: Mapping[str, Mapping[str, str]]
    policies_by_tool: Mapping[str, tuple[ToolPolicy, ...]]
    output: StructuredOutput | None
    tool_choice: ToolChoice | None
    params: Mapping[str, Any]
    trust_level: TrustLevel = TrustLevel.STANDARD
    withheld_hosted_tools: tuple[WithheldTool, ...] = ()
    # hosted tool name -> most calls per run (``Prompt(hosted_tool_limits=)``)
    hosted_tool_limits: Mapping[str, int] = dataclasses.field(
        default_factory=lambda: MappingProxyType({})
    )

    def tool(self, name: str) -> Tool[Any, Any] | None:
        for tool in self.tools:
            if tool.name == name:
                return tool
        return None

    def hosted_tool(self, name: str) -> HostedTool[Any] | None:
        for hosted in self.hosted_tools:
            if hosted.name == name:
                return hosted
        return None

    def tool_schema(self, tool: Tool[Any, Any]) -> dict[str, Any]:
        """The params schema with any description overrides applied."""
        return dataclass_schema(
            tool.params_type, descriptions=self.tool_param_descriptions.get(tool.name)
        )


@dataclasses.dataclass(frozen=True, slots=True)
class PromptResponse(Generic[OutputT]):
    """The result of an evaluation."""

    def __class_getitem__(cls, item: Any) -> Any:
        # typing's alias would fail setting __orig_class__ on a frozen slots
        # dataclass; this one leaves instances as they are built.
        return SubscriptAlias(cls, item)

    prompt_name: str
    text: str | None
    output: Any = None
    hosted_outputs: Mapping[str, Any] = dataclasses.field(
        default_factory=lambda: MappingProxyType({})
    )
    citations: tuple[Citation, ...] = ()
    usage: Any = None
    turns: int = 0
    response_id: str | None = None
