"""Function tools: ``Tool``, ``NativeTool`` and ``ToolExample``."""

from __future__ import annotations

import collections.abc
import dataclasses
import inspect
import re
import typing
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Generic, Literal, Protocol, TypeVar, get_args

from .errors import PromptValidationError
from .results import ToolResult
from .subscripts import SubscriptAlias, subscript_args, type_name

if TYPE_CHECKING:
    from .context import ToolContext

ParamsT = TypeVar("ParamsT")
ResultT = TypeVar("ResultT")
ParamsT_contra = TypeVar("ParamsT_contra", contravariant=True)

NAME_PATTERN = re.compile(r"^[a-z0-9_-]{1,64}$")
DESCRIPTION_MAX = 200


class ToolHandler(Protocol[ParamsT_contra, ResultT]):
    """``handler(params, *, context) -> ToolResult``."""

    def __call__(
        self, params: ParamsT_contra, *, context: ToolContext
    ) -> ToolResult[ResultT]: ...


def validate_tool_name(name: str, *, owner: str = "Tool") -> str:
    """Apply the OpenAI function-name rules; return the name unchanged."""
    if not isinstance(name, str):
        raise PromptValidationError(
            f"{owner} name must be a string.", placeholder="name"
        )
    if name != name.strip():
        raise PromptValidationError(
            f"{owner} name must not contain surrounding whitespace.", placeholder="name"
        )
    if not name:
        raise PromptValidationError(
            f"{owner} name must not be empty.", placeholder="name"
        )
    if not NAME_PATTERN.fullmatch(name):
        raise PromptValidationError(
            f"{owner} name '{name}' must match ^[a-z0-9_-]{{1,64}}$: 1-64 lowercase "
            "ASCII letters, digits, underscores or hyphens (OpenAI function-name "
            "constraints).",
            placeholder="name",
        )
    return name


def validate_description(description: str, *, owner: str = "Tool") -> str:
    """Strip, then require 1-200 ASCII characters; return the stripped text."""
    if not isinstance(description, str):
        raise PromptValidationError(
            f"{owner} description must be a string.", placeholder="description"
        )
    stripped = description.strip()
    if not stripped or len(stripped) > DESCRIPTION_MAX:
        raise PromptValidationError(
            f"{owner} description must be 1-{DESCRIPTION_MAX} ASCII characters "
            f"(got {len(stripped)}).",
            placeholder="description",
        )
    if not stripped.isascii():
        raise PromptValidationError(
            f"{owner} description must be ASCII.", placeholder="description"
        )
    return stripped


@dataclasses.dataclass(frozen=True)
class ToolExample(Generic[ParamsT, ResultT]):
    """A documented call: input params and the output they produce."""

    description: str
    input: ParamsT
    output: ResultT

    def __post_init__(self) -> None:
        object.__setattr__(
            self,
            "description",
            validate_description(self.description, owner="Tool example"),
        )


def _is_dataclass_type(value: Any) -> bool:
    return isinstance(value, type) and dataclasses.is_dataclass(value)


def _normalise_result_type(
    result_type: Any,
) -> tuple[type[Any] | None, Literal["object", "array"]]:
    origin = typing.get_origin(result_type)
    if origin in (typing.Union, __import__("types").UnionType):
        options = [a for a in get_args(result_type) if a is not type(None)]
        result_type = options[0] if options else None
        origin = typing.get_origin(result_type)
    if result_type is None or result_type is type(None):
        return None, "object"
    if _is_dataclass_type(result_type):
        return typing.cast(type[Any], result_type), "object"
    if origin in (list, tuple, collections.abc.Sequence):
        args = get_args(result_type)
        if origin is tuple and not (len(args) == 2 and args[1] is Ellipsis):
            raise PromptValidationError(
                "Variadic tuple[ResultT, ...] is required for a sequence result.",
                placeholder="ResultT",
            )
        if args and _is_dataclass_type(args[0]):
            return typing.cast(type[Any], args[0]), "array"
    raise PromptValidationError(
        "Tool result type must be a dataclass, None, or a sequence of one dataclass.",
        placeholder="ResultT",
    )


def _types_from_handler(handler: Callable[..., Any]) -> tuple[Any, Any]:
    try:
        hints = typing.get_type_hints(handler)
    except (NameError, TypeError) as error:
        raise PromptValidationError(
            f"Tool handler annotations cannot be resolved: {error}",
            placeholder="handler",
        ) from error
    parameters = [
        p
        for p in inspect.signature(handler).parameters.values()
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
    ]
    params_type = hints.get(parameters[0].name) if parameters else None
    result = hints.get("return")
    result_type = get_args(result)[0] if get_args(result) else None
    return params_type, result_type


def _same_params(a: Any, b: Any) -> bool:
    none = (None, type(None))
    return (a in none and b in none) or a == b


def _same_result(a: Any, b: Any) -> bool:
    try:
        return _normalise_result_type(a) == _normalise_result_type(b)
    except PromptValidationError:
        return bool(a == b)


def _open(argument: Any) -> bool:
    """``Any`` or a type variable: the subscript leaves this type open."""
    return argument is Any or isinstance(argument, TypeVar)


@dataclasses.dataclass(frozen=True)
class Tool(Generic[ParamsT, ResultT]):
    """A callable affordance advertised to the model as a function tool.

    ``params_type`` and ``result_type`` come from the subscript
    (``Tool[P, R](...)``, seed 002) or default to the handler's annotations
    (``handler(params: P, *, context) -> ToolResult[R]``). A subscript gives
    an unannotated handler its types; an annotation or explicit argument that
    disagrees with it is refused. ``Any`` in the subscript leaves that type
    to the handler.

    ``read_only=True`` declares that the handler changes nothing outside the
    run (it reads, looks up or computes; the session's own state and files it
    may write are the run's). It is information for operators, shown in the
    admin's tool list (a tool that changes things elsewhere is the one to put
    under an approval policy); a run records every call the same way
    (docs/write-path.md). A handler that sends, charges, sets, appends or
    creates anything elsewhere is not read-only (the default).
    """

    name: str
    description: str
    handler: ToolHandler[ParamsT, ResultT] | None = None
    params_type: type[ParamsT] | None = None
    result_type: Any = None
    examples: tuple[ToolExample[Any, Any], ...] = ()
    accepts_overrides: bool = True
    read_only: bool = False
    result_container: Literal["object", "array"] = dataclasses.field(
        default="object", init=False
    )

    def __class_getitem__(cls, item: Any) -> Any:
        if not isinstance(item, tuple) or len(item) != 2:
            raise TypeError(
                f"{cls.__name__}[...] takes two types: "
                f"{cls.__name__}[ParamsT, ResultT]."
            )
        return SubscriptAlias(cls, item)

    def __post_init__(self) -> None:
        validate_tool_name(self.name)
        object.__setattr__(self, "description", validate_description(self.description))
        if not isinstance(self.read_only, bool):
            raise TypeError(
                f"Tool '{self.name}': read_only must be True or False; got "
                f"{type(self.read_only).__name__}."
            )
        params_type, result_type = self._subscript_types()
        if self.handler is not None and (params_type is None or result_type is None):
            inferred_params, inferred_result = _types_from_handler(self.handler)
            params_type = params_type if params_type is not None else inferred_params
            result_type = result_type if result_type is not None else inferred_result
        if params_type is type(None):
            params_type = None
        if params_type is not None and not _is_dataclass_type(params_type):
            raise PromptValidationError(
                "Tool params type must be a dataclass type or None.",
                dataclass_type=params_type,
                placeholder="ParamsT",
            )
        normalised, container = _normalise_result_type(result_type)
        object.__setattr__(self, "params_type", params_type)
        object.__setattr__(self, "result_type", normalised)
        object.__setattr__(self, "result_container", container)
        object.__setattr__(self, "examples", tuple(self.examples))
        for example in self.examples:
            self._check_example(example)

    def _subscript_types(self) -> tuple[Any, Any]:
        """``params_type`` and ``result_type``, taken from ``Tool[P, R]`` when
        the tool was built through a subscript. An explicit argument or an
        annotated handler must agree with the subscript."""
        params_type, result_type = self.params_type, self.result_type
        subscript = subscript_args(self)
        if len(subscript) != 2:
            return params_type, result_type
        sub_params, sub_result = subscript
        hinted: tuple[Any, Any] = (None, None)
        if self.handler is not None:
            hinted = _types_from_handler(self.handler)
        owner = f"{type(self).__name__} '{self.name}'"
        declared = (
            f"{type(self).__name__}[{type_name(sub_params)}, {type_name(sub_result)}]"
        )
        checks = (
            ("params", sub_params, _same_params, params_type, hinted[0]),
            ("result", sub_result, _same_result, result_type, hinted[1]),
        )
        for what, declared_type, same, explicit, annotated in checks:
            if _open(declared_type):
                continue
            for source, given in (
                (f"{what}_type=", explicit),
                ("handler", annotated),
            ):
                if given is not None and not same(given, declared_type):
                    raise PromptValidationError(
                        f"{owner} is declared as {declared} but its {source} "
                        f"says {what} {type_name(given)}.",
                        placeholder="ParamsT" if what == "params" else "ResultT",
                    )
        if not _open(sub_params):
            params_type = None if sub_params is type(None) else sub_params
        if not _open(sub_result):
            result_type = sub_result
        return params_type, result_type

    def _check_example(self, example: Any) -> None:
        if not isinstance(example, ToolExample):
            raise PromptValidationError(
                "Tool examples must be ToolExample instances.", placeholder="examples"
            )
        expected_input = self.params_type
        if expected_input is None:
            if example.input is not None:
                raise PromptValidationError(
                    f"Example input for tool '{self.name}' must be None: the tool "
                    "takes no parameters.",
                    placeholder="examples",
                )
        elif type(example.input) is not expected_input:
            raise PromptValidationError(
                f"Example input for tool '{self.name}' must be a "
                f"{expected_input.__name__}, got {type(example.input).__name__}.",
                placeholder="examples",
            )
        expected_output = self.result_type
        output = example.output
        if expected_output is None:
            valid = output is None
        elif self.result_container == "array":
            valid = isinstance(output, collections.abc.Sequence) and not isinstance(
                output, str
            )
            valid = valid and all(type(item) is expected_output for item in output)
        else:
            valid = type(output) is expected_output
        if not valid:
            wanted = "None" if expected_output is None else expected_output.__name__
            if self.result_container == "array":
                wanted = f"a sequence of {wanted}"
            raise PromptValidationError(
                f"Example output for tool '{self.name}' must be {wanted}.",
                placeholder="examples",
            )

    @property
    def is_native(self) -> bool:
        return False

    def with_description(self, description: str) -> Tool[ParamsT, ResultT]:
        """A copy with another description, if the tool accepts overrides."""
        if not self.accepts_overrides:
            raise PromptValidationError(
                f"Tool '{self.name}' does not accept overrides.",
                placeholder="description",
            )
        return dataclasses.replace(self, description=description)

    @classmethod
    def wrap(cls, fn: ToolHandler[ParamsT, ResultT]) -> Tool[ParamsT, ResultT]:
        """Build a tool from a handler: name from ``__name__``, description from
        the docstring."""
        doc = inspect.getdoc(fn)
        if not doc:
            raise PromptValidationError(
                "Tool.wrap needs a handler with a docstring.", placeholder="description"
            )
        parameters = list(inspect.signature(fn).parameters.values())
        if (
            len(parameters) != 2
            or parameters[1].kind is not inspect.Parameter.KEYWORD_ONLY
        ):
            raise PromptValidationError(
                "Tool handler must take one positional params argument and a "
                "keyword-only 'context'.",
                placeholder="handler",
            )
        return cls(name=getattr(fn, "__name__", ""), description=doc, handler=fn)


@dataclasses.dataclass(frozen=True)
class NativeTool(Tool[ParamsT, ResultT]):
    """A tool the provider executes: it can never have a local handler.

    ``NativeTool[P, R](name=..., description=..., examples=...)`` (seed 001):
    the OpenAI adapter sends one whose name is a kind it has a codec for as
    that built-in tool, checks ``P`` and ``R`` against the provider's call
    before any request and records each call with a ``P`` and an ``R``
    (``adapters/openai/native.py``). Hosted tools remain the preferred
    declaration: they carry a configuration.
    """

    accepts_overrides: bool = False

    def __post_init__(self) -> None:
        if self.handler is not None:
            raise PromptValidationError(
                "NativeTool must not set a handler; execution is provider-managed.",
                placeholder="handler",
            )
        Tool.__post_init__(self)

    @property
    def is_native(self) -> bool:
        return True
