"""Tool definitions: ``Tool``, ``ToolExample``, ``NativeTool``, ``HostedTool``,
and the ``ToolContext`` handlers receive."""

import dataclasses
from collections.abc import Sequence
from typing import Any

import pytest

from tooling.runtime.context import ToolContext
from tooling.runtime.errors import PromptValidationError
from tooling.runtime.hosted.base import HostedTool, frozen_tuple
from tooling.runtime.prompt import Prompt
from tooling.runtime.results import ToolResult
from tooling.runtime.session import InMemoryFilesystem, InMemorySession
from tooling.runtime.tools import NativeTool, Tool, ToolExample

NAME_RULE = (
    "must match ^[a-z0-9_-]{1,64}$: 1-64 lowercase ASCII letters, digits, "
    "underscores or hyphens (OpenAI function-name constraints)."
)


@dataclasses.dataclass(frozen=True)
class Params:
    query: str


@dataclasses.dataclass(frozen=True)
class SubParams(Params):
    pass


@dataclasses.dataclass(frozen=True)
class Result:
    hits: int


@dataclasses.dataclass(frozen=True)
class SubResult(Result):
    pass


@dataclasses.dataclass(frozen=True)
class Config:
    level: int = 1


@dataclasses.dataclass
class MutableConfig:
    level: int = 1


def search(params: Params, *, context: ToolContext) -> ToolResult[Result]:
    """Search the catalog."""
    return ToolResult.ok(Result(1))


def list_search(params: Params, *, context: ToolContext) -> ToolResult[list[Result]]:
    return ToolResult.ok([Result(1)])


def no_params(*, context: ToolContext) -> ToolResult[None]:
    return ToolResult.ok(None)


def unannotated(params, *, context):  # type: ignore[no-untyped-def]
    return ToolResult.ok(None)


def unresolvable(params: Any, *, context: ToolContext) -> ToolResult[Result]:
    return ToolResult.ok(Result(1))


unresolvable.__annotations__["params"] = "NoSuchType"


def make(**overrides: Any) -> Tool[Any, Any]:
    kwargs: dict[str, Any] = {
        "name": "search",
        "description": "Search the catalog.",
        "handler": search,
    }
    kwargs.update(overrides)
    return Tool(**kwargs)


def rejected(**overrides: Any) -> PromptValidationError:
    with pytest.raises(PromptValidationError) as info:
        make(**overrides)
    return info.value


# -- names -------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["a", "lookup_entity", "web-search", "x" * 64, "v2"])
def test_tools_name_accepts_valid_names(name: str) -> None:
    assert make(name=name).name == name


@pytest.mark.parametrize("name", [" search", "search ", "search\n", "\tsearch"])
def test_tools_name_rejects_surrounding_whitespace(name: str) -> None:
    error = rejected(name=name)
    assert error.message == "Tool name must not contain surrounding whitespace."
    assert error.placeholder == "name"


def test_tools_name_rejects_empty() -> None:
    assert rejected(name="").message == "Tool name must not be empty."


@pytest.mark.parametrize("name", ["Search", "web.search", "x" * 65, "a b", "é"])
def test_tools_name_rejects_names_outside_the_regex(name: str) -> None:
    assert rejected(name=name).message == f"Tool name '{name}' {NAME_RULE}"


def test_tools_name_must_be_a_string() -> None:
    assert rejected(name=5).message == "Tool name must be a string."


# -- descriptions ------------------------------------------------------------------


def test_tools_description_is_stored_stripped() -> None:
    assert make(description="  Search things.  ").description == "Search things."


@pytest.mark.parametrize("length", [1, 200])
def test_tools_description_accepts_1_to_200_characters(length: int) -> None:
    assert make(description="d" * length).description == "d" * length


@pytest.mark.parametrize(
    ("description", "got"),
    [("", 0), ("   ", 0), ("d" * 201, 201), (" " + "d" * 201, 201)],
)
def test_tools_description_rejects_bad_lengths(description: str, got: int) -> None:
    error = rejected(description=description)
    assert (
        error.message == f"Tool description must be 1-200 ASCII characters (got {got})."
    )
    assert error.placeholder == "description"


def test_tools_description_rejects_non_ascii() -> None:
    error = rejected(description="Café search.")
    assert error.message == "Tool description must be ASCII."


def test_tools_description_must_be_a_string() -> None:
    assert rejected(description=None).message == "Tool description must be a string."


# -- params and result types -------------------------------------------------------


def test_tools_types_come_from_handler_annotations() -> None:
    tool = make()
    assert tool.params_type is Params
    assert tool.result_type is Result
    assert tool.result_container == "object"


def test_tools_sequence_result_sets_array_container() -> None:
    tool = make(handler=list_search)
    assert tool.result_type is Result
    assert tool.result_container == "array"


@pytest.mark.parametrize(
    "result_type", [list[Result], Sequence[Result], tuple[Result, ...]]
)
def test_tools_explicit_sequence_result_types(result_type: Any) -> None:
    tool = make(handler=None, params_type=Params, result_type=result_type)
    assert (tool.result_type, tool.result_container) == (Result, "array")


def test_tools_optional_result_is_reduced_to_its_member() -> None:
    tool = make(handler=None, result_type=Result | None)
    assert (tool.result_type, tool.result_container) == (Result, "object")


def test_tools_fixed_tuple_result_is_rejected() -> None:
    error = rejected(handler=None, result_type=tuple[Result, Result])
    assert error.message == (
        "Variadic tuple[ResultT, ...] is required for a sequence result."
    )
    assert error.placeholder == "ResultT"


@pytest.mark.parametrize("result_type", [int, list[int], dict[str, Result]])
def test_tools_non_dataclass_result_is_rejected(result_type: Any) -> None:
    error = rejected(handler=None, result_type=result_type)
    assert error.message == (
        "Tool result type must be a dataclass, None, or a sequence of one dataclass."
    )


def test_tools_params_type_must_be_a_dataclass() -> None:
    error = rejected(handler=None, params_type=dict)
    assert error.message == "Tool params type must be a dataclass type or None."
    assert error.dataclass_type is dict
    assert error.placeholder == "ParamsT"


def test_tools_none_type_params_means_no_params() -> None:
    assert make(handler=None, params_type=type(None)).params_type is None


def test_tools_handler_without_params_has_no_types() -> None:
    tool = make(handler=no_params)
    assert tool.params_type is None
    assert tool.result_type is None


def test_tools_unannotated_handler_has_no_types() -> None:
    tool = make(handler=unannotated)
    assert (tool.params_type, tool.result_type) == (None, None)


def test_tools_unresolvable_handler_annotations_are_rejected() -> None:
    error = rejected(handler=unresolvable)
    assert error.message.startswith("Tool handler annotations cannot be resolved: ")
    assert "NoSuchType" in error.message
    assert error.placeholder == "handler"


def test_tools_without_handler_is_allowed() -> None:
    tool = make(handler=None)
    assert tool.handler is None
    assert tool.params_type is None


def test_tools_result_type_defaults_to_handler_annotation_when_params_given() -> None:
    assert make(params_type=Params).result_type is Result


def test_tools_accepts_overrides_defaults_to_true() -> None:
    assert make().accepts_overrides is True
    assert make().is_native is False


def test_tools_are_not_read_only_unless_they_say_so() -> None:
    assert make().read_only is False
    assert make(read_only=True).read_only is True
    # a copy with the catalog's name and description keeps it
    assert dataclasses.replace(make(read_only=True), name="other").read_only


@pytest.mark.parametrize("value", ["yes", 1, None])
def test_tools_refuse_a_read_only_flag_that_is_not_a_bool(value: Any) -> None:
    with pytest.raises(TypeError, match="read_only must be True or False"):
        make(read_only=value)


def test_tools_are_frozen() -> None:
    tool = make()
    with pytest.raises(dataclasses.FrozenInstanceError):
        tool.name = "other"  # type: ignore[misc]


def test_tools_with_description_returns_validated_copy() -> None:
    tool = make()
    copy = tool.with_description("  New text.  ")
    assert copy.description == "New text."
    assert tool.description == "Search the catalog."
    assert copy.handler is search


def test_tools_with_description_refused_without_overrides() -> None:
    with pytest.raises(PromptValidationError) as info:
        make(accepts_overrides=False).with_description("New text.")
    assert info.value.message == "Tool 'search' does not accept overrides."


def test_tools_with_description_validates_the_text() -> None:
    with pytest.raises(PromptValidationError, match="must be ASCII"):
        make().with_description("Ünïcode")


# -- examples ----------------------------------------------------------------------


def test_tools_examples_are_validated_and_stored_as_tuple() -> None:
    example = ToolExample("  Find one.  ", Params("q"), Result(1))
    tool = make(examples=[example])
    assert tool.examples == (example,)
    assert example.description == "Find one."


@pytest.mark.parametrize("description", ["", "x" * 201])
def test_tools_example_description_length_rule(description: str) -> None:
    with pytest.raises(PromptValidationError) as info:
        ToolExample(description, Params("q"), Result(1))
    assert info.value.message == (
        f"Tool example description must be 1-200 ASCII characters "
        f"(got {len(description)})."
    )


def test_tools_example_description_must_be_ascii() -> None:
    with pytest.raises(PromptValidationError) as info:
        ToolExample("Exemple é", Params("q"), Result(1))
    assert info.value.message == "Tool example description must be ASCII."


def test_tools_examples_must_be_tool_examples() -> None:
    error = rejected(examples=[("d", Params("q"), Result(1))])
    assert error.message == "Tool examples must be ToolExample instances."
    assert error.placeholder == "examples"


def test_tools_example_input_must_be_exact_params_type() -> None:
    error = rejected(examples=[ToolExample("d", SubParams("q"), Result(1))])
    assert error.message == (
        "Example input for tool 'search' must be a Params, got SubParams."
    )


def test_tools_example_input_must_be_none_without_params() -> None:
    error = rejected(handler=no_params, examples=[ToolExample("d", Params("q"), None)])
    assert error.message == (
        "Example input for tool 'search' must be None: the tool takes no parameters."
    )


def test_tools_example_without_params_and_result_accepts_none() -> None:
    tool = make(handler=no_params, examples=[ToolExample("d", None, None)])
    assert len(tool.examples) == 1


def test_tools_example_output_must_be_exact_result_type() -> None:
    error = rejected(examples=[ToolExample("d", Params("q"), SubResult(1))])
    assert error.message == "Example output for tool 'search' must be Result."
    assert error.placeholder == "examples"


def test_tools_example_output_must_be_none_without_result() -> None:
    error = rejected(handler=no_params, examples=[ToolExample("d", None, Result(1))])
    assert error.message == "Example output for tool 'search' must be None."


def test_tools_example_array_output_accepts_sequence_of_exact_items() -> None:
    tool = make(
        handler=list_search,
        examples=[ToolExample("d", Params("q"), [Result(1), Result(2)])],
    )
    assert tool.examples[0].output == [Result(1), Result(2)]


@pytest.mark.parametrize(
    "output", [[Result(1), SubResult(2)], Result(1), "not a sequence"]
)
def test_tools_example_array_output_rejects_other_values(output: Any) -> None:
    error = rejected(
        handler=list_search, examples=[ToolExample("d", Params("q"), output)]
    )
    assert error.message == (
        "Example output for tool 'search' must be a sequence of Result."
    )


# -- Tool.wrap ---------------------------------------------------------------------


def test_tools_wrap_uses_function_name_and_docstring() -> None:
    tool = Tool.wrap(search)
    assert tool.name == "search"
    assert tool.description == "Search the catalog."
    assert tool.params_type is Params
    assert tool.result_type is Result


def test_tools_wrap_requires_a_docstring() -> None:
    with pytest.raises(PromptValidationError) as info:
        Tool.wrap(list_search)
    assert info.value.message == "Tool.wrap needs a handler with a docstring."


def test_tools_wrap_requires_keyword_only_context() -> None:
    def positional(params: Params, context: ToolContext) -> ToolResult[Result]:
        """Positional context."""
        return ToolResult.ok(Result(1))

    with pytest.raises(PromptValidationError) as info:
        Tool.wrap(positional)
    assert info.value.message == (
        "Tool handler must take one positional params argument and a keyword-only "
        "'context'."
    )
    assert info.value.placeholder == "handler"


def test_tools_wrap_rejects_extra_parameters() -> None:
    def extra(
        params: Params, other: int, *, context: ToolContext
    ) -> ToolResult[Result]:
        """Too many."""
        return ToolResult.ok(Result(1))

    with pytest.raises(PromptValidationError, match="one positional params argument"):
        Tool.wrap(extra)  # type: ignore[arg-type]


# -- NativeTool --------------------------------------------------------------------


def test_tools_native_tool_rejects_a_handler() -> None:
    with pytest.raises(PromptValidationError) as info:
        NativeTool(name="native", description="Provider side.", handler=search)
    assert info.value.message == (
        "NativeTool must not set a handler; execution is provider-managed."
    )
    assert info.value.placeholder == "handler"


def test_tools_native_tool_defaults() -> None:
    tool: NativeTool[Any, Any] = NativeTool(
        name="native", description="  Provider side. "
    )
    assert tool.accepts_overrides is False
    assert tool.is_native is True
    assert tool.handler is None
    assert tool.description == "Provider side."


def test_tools_native_tool_validates_its_name() -> None:
    with pytest.raises(PromptValidationError, match="surrounding whitespace"):
        NativeTool(name="native ", description="Provider side.")


def test_tools_native_tool_takes_its_types_from_the_subscript() -> None:
    example = ToolExample(description="One hit.", input=Params("q"), output=Result(1))
    tool = NativeTool[Params, Result](
        name="web_search", description="Search.", examples=(example,)
    )
    assert (tool.params_type, tool.result_type) == (Params, Result)
    assert tool.is_native is True and tool.accepts_overrides is False


def test_tools_native_tool_subscript_still_checks_examples() -> None:
    wrong = ToolExample(description="Wrong.", input=Result(1), output=Result(1))
    with pytest.raises(PromptValidationError, match="must be a Params, got Result"):
        NativeTool[Params, Result](
            name="web_search", description="S.", examples=(wrong,)
        )


# -- Tool[P, R]: types from the subscript -----------------------------------------


def untyped(params, *, context):  # type: ignore[no-untyped-def]
    return ToolResult.ok(Result(len(params.query)))


def test_tools_subscript_gives_an_unannotated_handler_its_types() -> None:
    tool = Tool[Params, Result](name="search", description="S.", handler=untyped)
    assert (tool.params_type, tool.result_type) == (Params, Result)
    schema = Prompt(ns="t", key="k").render().tool_schema(tool)
    assert schema["properties"] == {"query": {"type": "string"}}
    assert schema["required"] == ["query"]


def test_tools_without_subscript_an_unannotated_handler_has_no_types() -> None:
    tool = Tool(name="search", description="S.", handler=untyped)
    assert (tool.params_type, tool.result_type) == (None, None)


def test_tools_subscript_agrees_with_an_annotated_handler() -> None:
    tool = Tool[Params, Result](name="search", description="S.", handler=search)
    assert (tool.params_type, tool.result_type) == (Params, Result)


def test_tools_subscript_with_sequence_and_none_results() -> None:
    listed = Tool[Params, list[Result]](
        name="search", description="S.", handler=list_search
    )
    assert (listed.result_type, listed.result_container) == (Result, "array")
    nothing = Tool[None, None](name="ping", description="Ping.", handler=untyped)
    assert (nothing.params_type, nothing.result_type) == (None, None)


def test_tools_subscript_conflicting_with_the_handler_is_refused() -> None:
    # mypy sees these conflicts too; the runtime must refuse them on its own.
    with pytest.raises(PromptValidationError) as info:
        Tool[Result, Result](name="search", description="S.", handler=search)  # type: ignore[arg-type]
    assert info.value.message == (
        "Tool 'search' is declared as Tool[Result, Result] but its handler says "
        "params Params."
    )
    assert info.value.placeholder == "ParamsT"
    with pytest.raises(PromptValidationError) as info:
        Tool[Params, Params](name="search", description="S.", handler=search)  # type: ignore[arg-type]
    assert info.value.message == (
        "Tool 'search' is declared as Tool[Params, Params] but its handler says "
        "result Result."
    )
    assert info.value.placeholder == "ResultT"


def test_tools_subscript_conflicting_with_explicit_types_is_refused() -> None:
    with pytest.raises(PromptValidationError, match="its params_type= says params"):
        Tool[Params, Result](name="s", description="S.", params_type=Config)  # type: ignore[arg-type]
    with pytest.raises(PromptValidationError, match="its result_type= says result"):
        Tool[Params, Result](name="s", description="S.", result_type=Config)
    same = Tool[Params, Result](name="s", description="S.", params_type=Params)
    assert same.params_type is Params


def test_tools_subscript_with_any_leaves_the_type_to_the_handler() -> None:
    tool = Tool[Any, Any](name="search", description="S.", handler=search)
    assert (tool.params_type, tool.result_type) == (Params, Result)


def test_tools_subscript_rejects_non_dataclass_types() -> None:
    with pytest.raises(PromptValidationError, match="params type must be a dataclass"):
        Tool[dict, Result](name="s", description="S.", handler=untyped)


def test_tools_subscripted_tool_keeps_its_types_through_overrides() -> None:
    tool = Tool[Params, Result](name="search", description="S.", handler=untyped)
    renamed = tool.with_description("Other.")
    assert (renamed.params_type, renamed.result_type) == (Params, Result)


def test_tools_subscript_needs_two_types() -> None:
    with pytest.raises(TypeError, match=r"Tool\[ParamsT, ResultT\]"):
        Tool[Params]  # type: ignore[misc]
    with pytest.raises(TypeError, match=r"NativeTool\[ParamsT, ResultT\]"):
        NativeTool[Params, Result, Result]  # type: ignore[misc]


def test_tools_subscript_is_a_normal_generic_alias() -> None:
    import typing

    alias = Tool[Params, Result]
    assert typing.get_origin(alias) is Tool
    assert typing.get_args(alias) == (Params, Result)
    assert isinstance(alias(name="s", description="S.", handler=search), Tool)


# -- HostedTool --------------------------------------------------------------------


def hosted(**overrides: Any) -> HostedTool[Any]:
    kwargs: dict[str, Any] = {
        "kind": "web_search",
        "name": "web_search",
        "description": "Search the web.",
        "config": Config(),
    }
    kwargs.update(overrides)
    return HostedTool(**kwargs)


def test_tools_hosted_tool_basics() -> None:
    tool = hosted(description="  Search the web.  ")
    assert tool.description == "Search the web."
    assert tool.handler is None
    assert tool.is_native is True
    with pytest.raises(dataclasses.FrozenInstanceError):
        tool.name = "x"  # type: ignore[misc]


@pytest.mark.parametrize(
    ("name", "message"),
    [
        (" web", "HostedTool name must not contain surrounding whitespace."),
        ("", "HostedTool name must not be empty."),
        ("Web", f"HostedTool name 'Web' {NAME_RULE}"),
    ],
)
def test_tools_hosted_tool_name_rules(name: str, message: str) -> None:
    with pytest.raises(PromptValidationError) as info:
        hosted(name=name)
    assert info.value.message == message


@pytest.mark.parametrize(
    ("description", "message"),
    [
        ("", "HostedTool description must be 1-200 ASCII characters (got 0)."),
        ("Wéb", "HostedTool description must be ASCII."),
    ],
)
def test_tools_hosted_tool_description_rules(description: str, message: str) -> None:
    with pytest.raises(PromptValidationError) as info:
        hosted(description=description)
    assert info.value.message == message


@pytest.mark.parametrize("kind", ["", "  ", None])
def test_tools_hosted_tool_kind_required(kind: Any) -> None:
    with pytest.raises(PromptValidationError) as info:
        hosted(kind=kind)
    assert info.value.message == "HostedTool kind must be a non-empty string."


@pytest.mark.parametrize("config", [MutableConfig(), {"level": 1}, None])
def test_tools_hosted_tool_config_must_be_frozen_dataclass(config: Any) -> None:
    with pytest.raises(PromptValidationError) as info:
        hosted(config=config)
    assert info.value.message == "HostedTool config must be a frozen dataclass."
    assert info.value.placeholder == "config"


def test_tools_frozen_tuple() -> None:
    assert frozen_tuple("one") == ("one",)
    assert frozen_tuple(["a", "b"]) == ("a", "b")
    assert frozen_tuple(x for x in "ab") == ("a", "b")


# -- ToolContext -------------------------------------------------------------------


def context(**overrides: Any) -> ToolContext:
    kwargs: dict[str, Any] = {
        "prompt": Prompt(ns="tests", key="context"),
        "rendered_prompt": None,
        "adapter": None,
        "session": InMemorySession(filesystem=InMemoryFilesystem({"a.txt": "A"})),
    }
    kwargs.update(overrides)
    return ToolContext(**kwargs)


def test_tools_context_exposes_session_resources_and_filesystem() -> None:
    ctx = context()
    assert ctx.resources is ctx.session.resources
    assert ctx.filesystem is not None
    assert ctx.filesystem.read("a.txt") == "A"


def test_tools_context_beat_calls_heartbeat() -> None:
    beats: list[int] = []
    context(heartbeat=lambda: beats.append(1)).beat()
    assert beats == [1]


def test_tools_context_beat_without_heartbeat_is_a_no_op() -> None:
    context().beat()


def test_tools_context_is_frozen() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        context().call_id = "x"  # type: ignore[misc]


def test_tools_context_publish_without_executor_applies_the_prompts_reducers() -> None:
    from tooling.runtime.planning import (
        PlanningToolsSection,
        SetupPlan,
        current_plan,
    )

    session = InMemorySession()
    prompt = Prompt(ns="tests", key="ctx", sections=[PlanningToolsSection()])
    ctx = context(prompt=prompt, session=session)
    ctx.publish(SetupPlan(objective="Ship", initial_steps=("a",)))
    plan = current_plan(session)
    assert plan is not None and [s.title for s in plan.steps] == ["a"]


def test_tools_context_publish_hands_the_event_to_its_publisher() -> None:
    seen: list[tuple[object, tuple[Any, ...]]] = []
    ctx = context(publisher=lambda event, reducers: seen.append((event, reducers)))
    ctx.publish("event")
    assert seen == [("event", ())]


# -- ToolRenderableResult ----------------------------------------------------------


def test_tools_renderable_result_protocol() -> None:
    from tooling.runtime import ToolRenderableResult

    @dataclasses.dataclass
    class Table:
        rows: int

        def render(self) -> str:
            return f"{self.rows} rows"

    assert isinstance(Table(2), ToolRenderableResult)
    assert not isinstance(Result(1), ToolRenderableResult)
    assert ToolResult.ok(Table(2)).render() == "2 rows"
    assert ToolResult.ok(Result(1)).render() == '{"hits": 1}'
