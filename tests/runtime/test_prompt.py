"""``Prompt`` construction checks, ``ToolChoice``, ``StructuredOutput`` and
rendering with parameters."""

import dataclasses
import typing
from typing import Any

import pytest

from tooling.runtime.context import ToolContext
from tooling.runtime.errors import PromptRenderError, PromptValidationError
from tooling.runtime.hosted.web_search import web_search_tool
from tooling.runtime.policies import (
    PolicyDecision,
    ReadBeforeWritePolicy,
    SequentialDependencyPolicy,
)
from tooling.runtime.prompt import (
    Prompt,
    PromptResponse,
    RenderedPrompt,
    StructuredOutput,
    ToolChoice,
    sanitize_schema_name,
)
from tooling.runtime.rendered import check_entered_schema
from tooling.runtime.results import ToolResult
from tooling.runtime.sections import MarkdownSection, Section
from tooling.runtime.tools import Tool


@dataclasses.dataclass(frozen=True)
class Topic:
    topic: str
    tone: str = "plain"


@dataclasses.dataclass(frozen=True)
class Audience:
    audience: str = "everyone"


@dataclasses.dataclass(frozen=True)
class Unused:
    x: int = 0


@dataclasses.dataclass(frozen=True)
class Picky:
    size: int

    def __post_init__(self) -> None:
        if not isinstance(self.size, int):
            raise TypeError("size must be an int")


@dataclasses.dataclass(frozen=True)
class LookupParams:
    query: str = dataclasses.field(metadata={"description": "Search text"})
    limit: int = 5


@dataclasses.dataclass(frozen=True)
class Answer:
    answer: str
    confidence: float = 0.5


@dataclasses.dataclass(frozen=True)
class Loose:
    data: dict[str, int]


def lookup(params: LookupParams, *, context: ToolContext) -> ToolResult[None]:
    return ToolResult.ok(None)


def tool(name: str, **kwargs: Any) -> Tool[Any, Any]:
    return Tool(name=name, description=f"The {name} tool.", handler=lookup, **kwargs)


def section(key: str, **kwargs: Any) -> MarkdownSection:
    kwargs.setdefault("title", key.title())
    return MarkdownSection(key=key, **kwargs)


def prompt(*sections: Section, **kwargs: Any) -> Prompt:
    return Prompt(ns="tests", key="demo", sections=sections, **kwargs)


def invalid(*sections: Section, **kwargs: Any) -> PromptValidationError:
    with pytest.raises(PromptValidationError) as info:
        prompt(*sections, **kwargs)
    return info.value


class NamedPolicy:
    """A policy without ``referenced_tools``."""

    name = "named"

    def check(self, tool: Any, params: Any, *, context: Any) -> PolicyDecision:
        return PolicyDecision.allow()

    def on_result(self, tool: Any, params: Any, result: Any, *, context: Any) -> None:
        return None


# -- construction ----------------------------------------------------------------


def test_prompt_identity_is_stripped_and_name_defaults_to_key() -> None:
    built = Prompt(ns=" tests ", key=" demo ")
    assert (built.ns, built.key, built.name) == ("tests", "demo", "demo")
    assert Prompt(ns="tests", key="demo", name=" Nice name ").name == "Nice name"
    assert repr(built) == "<Prompt tests/demo>"


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"ns": " ", "key": "k"}, "Prompt namespace must not be empty."),
        ({"ns": None, "key": "k"}, "Prompt namespace must not be empty."),
        ({"ns": "n", "key": ""}, "Prompt key must not be empty."),
    ],
)
def test_prompt_ns_and_key_are_required(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(PromptValidationError) as info:
        Prompt(**kwargs)
    assert info.value.message == message


def test_prompt_sections_must_be_sections() -> None:
    error = invalid("not a section")  # type: ignore[arg-type]
    assert error.message == "Prompt sections must be Section instances."


def test_prompt_duplicate_root_section_keys_are_rejected() -> None:
    error = invalid(section("a"), section("b"), section("A"))
    assert error.message == "Duplicate section key 'a'."
    assert error.section_path == ("a",)


def test_prompt_duplicate_child_section_keys_are_rejected() -> None:
    error = invalid(section("a", children=[section("b"), section("b")]))
    assert error.message == "Duplicate section key 'a.b'."


def test_prompt_same_key_under_different_parents_is_allowed() -> None:
    built = prompt(
        section("a", children=[section("x")]), section("b", children=[section("x")])
    )
    assert "(a.x)" in built.render().text
    assert "(b.x)" in built.render().text


def test_prompt_duplicate_function_tool_names_are_rejected() -> None:
    error = invalid(
        section("a", tools=[tool("find")]), section("b", tools=[tool("find")])
    )
    assert error.message == (
        "Duplicate tool name 'find' in prompt 'tests/demo': sections 'a' and 'b' both "
        "declare it."
    )
    assert error.section_path == ("b",)
    assert error.placeholder == "find"


def test_prompt_duplicate_names_across_function_and_hosted_tools() -> None:
    error = invalid(
        section("a", tools=[tool("web_search")]),
        section("b", children=[section("c", hosted_tools=[web_search_tool()])]),
    )
    assert error.message == (
        "Duplicate tool name 'web_search' in prompt 'tests/demo': sections 'a' and "
        "'b.c' both declare it."
    )


def test_prompt_duplicate_tool_names_in_disabled_sections_are_rejected() -> None:
    error = invalid(
        section("a", enabled=False, tools=[tool("find")]),
        section("b", enabled=lambda: False, tools=[tool("find")]),
    )
    assert error.message.startswith("Duplicate tool name 'find'")


def test_prompt_duplicate_tool_in_same_section_is_rejected() -> None:
    error = invalid(section("a", tools=[tool("find"), tool("find")]))
    assert error.message == (
        "Duplicate tool name 'find' in prompt 'tests/demo': sections 'a' and 'a' both "
        "declare it."
    )


def test_prompt_section_policy_referencing_unknown_tool_is_rejected() -> None:
    policy = SequentialDependencyPolicy({"deploy": {"build"}})
    error = invalid(section("a", tools=[tool("deploy")], policies=[policy]))
    assert error.message == (
        "Policy 'sequential_dependency' refers to tool 'build', which prompt "
        "'tests/demo' does not have."
    )
    assert error.placeholder == "build"


def test_prompt_prompt_level_policy_referencing_unknown_tool_is_rejected() -> None:
    error = invalid(
        section("a", tools=[tool("read_file")]),
        policies=[ReadBeforeWritePolicy(write_tools=("write_file", "edit_file"))],
    )
    assert error.message == (
        "Policy 'read_before_write' refers to tool 'edit_file', which prompt "
        "'tests/demo' does not have."
    )


def test_prompt_policies_may_reference_tools_of_disabled_sections() -> None:
    policy = SequentialDependencyPolicy({"deploy": {"build"}})
    built = prompt(
        section("a", tools=[tool("deploy")], policies=[policy]),
        section("b", enabled=False, tools=[tool("build")]),
    )
    assert built.policies_for_tool("deploy") == (policy,)


def test_prompt_policies_without_referenced_tools_are_accepted() -> None:
    policy = NamedPolicy()
    built = prompt(section("a", tools=[tool("find")]), policies=[policy])
    assert built.policies_for_tool("find") == (policy,)


def test_prompt_tool_choice_naming_unknown_tool_is_rejected() -> None:
    error = invalid(
        section("a", tools=[tool("find")]), tool_choice=ToolChoice("tool", ("ghost",))
    )
    assert error.message == (
        "tool_choice names 'ghost', which prompt 'tests/demo' does not have."
    )
    assert error.placeholder == "ghost"


def test_prompt_tool_choice_may_name_hosted_tools() -> None:
    choice = ToolChoice.parse("allowed:find,web_search")
    built = prompt(
        section("a", tools=[tool("find")], hosted_tools=[web_search_tool()]),
        tool_choice=choice,
    )
    assert built.render().tool_choice == choice


# -- parameter description overrides ---------------------------------------------


def test_prompt_param_descriptions_reach_the_tool_schema() -> None:
    built = prompt(
        section("a", tools=[tool("find")]),
        param_descriptions={"find": {"query": "Overridden", "limit": "How many"}},
    )
    rendered = built.render()
    schema = rendered.tool_schema(rendered.tools[0])
    assert schema["properties"]["query"]["description"] == "Overridden"
    assert schema["properties"]["limit"]["description"] == "How many"
    assert dict(rendered.tool_param_descriptions["find"]) == {
        "query": "Overridden",
        "limit": "How many",
    }


def test_prompt_tool_schema_without_overrides_uses_field_metadata() -> None:
    rendered = prompt(section("a", tools=[tool("find")])).render()
    schema = rendered.tool_schema(rendered.tools[0])
    assert schema["properties"]["query"] == {
        "description": "Search text",
        "type": "string",
    }


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (
            {"ghost": {"q": "x"}},
            "Parameter descriptions given for unknown tool 'ghost'.",
        ),
        (
            {"web_search": {"q": "x"}},
            "Parameter descriptions given for unknown tool 'web_search'.",
        ),
        ({"find": {"nope": "x"}}, "Tool 'find' has no parameter 'nope'."),
        ({"ping": {"any": "x"}}, "Tool 'ping' has no parameter 'any'."),
        ({"locked": {"query": "x"}}, "Tool 'locked' does not accept overrides."),
    ],
)
def test_prompt_param_descriptions_are_validated(
    overrides: dict[str, Any], message: str
) -> None:
    tools = [
        tool("find"),
        tool("locked", accepts_overrides=False),
        Tool(name="ping", description="Ping."),
    ]
    error = invalid(
        section("a", tools=tools, hosted_tools=[web_search_tool()]),
        param_descriptions=overrides,
    )
    assert error.message == message


# -- ToolChoice ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", ToolChoice("auto")),
        (" auto ", ToolChoice("auto")),
        ("none", ToolChoice("none")),
        ("required", ToolChoice("required")),
        ("tool:find", ToolChoice("tool", ("find",))),
        ("allowed:a, b", ToolChoice("allowed", ("a", "b"))),
        ("allowed-required:a,b,", ToolChoice("allowed", ("a", "b"), required=True)),
    ],
)
def test_prompt_tool_choice_parse_forms(text: str, expected: ToolChoice) -> None:
    assert ToolChoice.parse(text) == expected


def test_prompt_tool_choice_parse_rejects_unknown_forms() -> None:
    with pytest.raises(PromptValidationError) as info:
        ToolChoice.parse("always")
    assert info.value.message == (
        "tool_choice 'always' is not one of auto, none, required, tool:<name>, "
        "allowed:<names>, allowed-required:<names>."
    )


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"mode": "sometimes"}, "Unknown tool_choice mode 'sometimes'."),
        ({"mode": "tool"}, "tool_choice 'tool' names exactly one tool."),
        (
            {"mode": "tool", "tools": ("a", "b")},
            "tool_choice 'tool' names exactly one tool.",
        ),
        ({"mode": "allowed"}, "tool_choice 'allowed' names at least one tool."),
        ({"mode": "auto", "tools": ("a",)}, "tool_choice 'auto' takes no tool names."),
        (
            {"mode": "required", "tools": ("a",)},
            "tool_choice 'required' takes no tool names.",
        ),
    ],
)
def test_prompt_tool_choice_validation(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(PromptValidationError) as info:
        ToolChoice(**kwargs)
    assert info.value.message == message


def test_prompt_tool_choice_parse_of_tool_without_name_is_rejected() -> None:
    with pytest.raises(PromptValidationError, match="names exactly one tool"):
        ToolChoice.parse("tool:")


@pytest.mark.parametrize(
    ("text", "forcing"),
    [
        ("auto", False),
        ("none", False),
        ("required", True),
        ("tool:a", True),
        ("allowed:a", False),
        ("allowed-required:a", True),
    ],
)
def test_prompt_tool_choice_forcing(text: str, forcing: bool) -> None:
    assert ToolChoice.parse(text).forcing is forcing


# -- StructuredOutput ------------------------------------------------------------


def test_prompt_structured_output_from_dataclass() -> None:
    output = StructuredOutput.from_dataclass(Answer)
    assert output.name == "Answer_schema"
    assert output.output_type is Answer
    assert output.strict is True
    assert output.schema["required"] == ["answer", "confidence"]
    assert output.text_format() == {
        "type": "json_schema",
        "name": "Answer_schema",
        "schema": dict(output.schema),
        "strict": True,
    }


def test_prompt_structured_output_from_dataclass_with_name() -> None:
    assert StructuredOutput.from_dataclass(Answer, name="My Prompt!").name == (
        "My_Prompt_schema"
    )


def test_prompt_structured_output_non_strict_dataclass() -> None:
    assert StructuredOutput.from_dataclass(Loose).strict is False


def test_prompt_structured_output_from_schema() -> None:
    schema = {
        "type": "object",
        "properties": {"answer": {"type": "string"}},
        "required": ["answer"],
        "additionalProperties": False,
    }
    output = StructuredOutput.from_schema(schema, name="answer")
    assert output.name == "answer_schema"
    assert output.output_type is None
    assert output.strict is True
    assert output.schema == schema


def test_prompt_structured_output_from_schema_not_strict() -> None:
    schema = {"type": "object", "properties": {"a": {"type": "string"}}}
    assert StructuredOutput.from_schema(schema, name="x").strict is False


@pytest.mark.parametrize(
    ("schema", "message"),
    [
        (
            {"type": "object", "properties": {"a": {"type": "strin"}}},
            "The output schema is not valid JSON Schema at properties/a/type: "
            "'strin' is not valid under any of the given schemas",
        ),
        (
            {
                "type": "object",
                "properties": {"a": {}},
                "required": ["a", "zz"],
                "additionalProperties": False,
            },
            "The output schema requires key(s) it does not describe under "
            "properties (and allows no other): zz.",
        ),
    ],
)
def test_an_entered_schema_no_answer_could_meet_is_refused(
    schema: Any, message: str
) -> None:
    """Refused where the catalog's form takes the schema, not after a paid
    answer fails the run; a stored revision's schema still builds (its runs
    go on as they did)."""
    with pytest.raises(PromptValidationError) as info:
        check_entered_schema(schema)
    assert info.value.message == message
    assert info.value.placeholder == "output_schema"
    assert StructuredOutput.from_schema(schema, name="x").schema == schema


@pytest.mark.parametrize(
    "schema",
    [
        # a key another part of the schema may describe
        {"type": "object", "properties": {"a": {}}, "required": ["a", "b"]},
        {
            "type": "object",
            "properties": {"a": {}},
            "required": ["b"],
            "additionalProperties": False,
            "allOf": [{"properties": {"b": {}}}],
        },
        # ECMA-262 patterns Python's re does not read
        {
            "type": "object",
            "properties": {"a": {"type": "string", "pattern": "^\\p{Lu}"}},
        },
    ],
)
def test_an_entered_schema_that_an_answer_can_meet_is_taken(schema: Any) -> None:
    check_entered_schema(schema)


@pytest.mark.parametrize("schema", [{"type": "array"}, [], "object"])
def test_prompt_structured_output_from_schema_requires_object(schema: Any) -> None:
    with pytest.raises(PromptValidationError) as info:
        StructuredOutput.from_schema(schema, name="x")
    assert info.value.message == (
        'A structured-output schema must be a JSON object schema ({"type": '
        '"object", ...}).'
    )
    assert info.value.placeholder == "output_schema"


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("My Prompt!", "My_Prompt_schema"),
        ("__x__", "x_schema"),
        ("", "prompt_schema"),
        ("!!!", "prompt_schema"),
        ("report_schema", "report_schema"),
        ("a-b_c", "a-b_c_schema"),
        ("x" * 80, "x" * 57 + "_schema"),
    ],
)
def test_prompt_sanitize_schema_name(name: str, expected: str) -> None:
    assert sanitize_schema_name(name) == expected


# -- rendering with parameters ---------------------------------------------------


def topic_prompt(**kwargs: Any) -> Prompt:
    return prompt(
        section("intro", template="About $topic in a $tone tone.", params_type=Topic),
        section("who", template="For $audience.", params_type=Audience),
        **kwargs,
    )


def test_prompt_render_with_values() -> None:
    rendered = topic_prompt().render(values={"topic": "tides", "audience": "kids"})
    assert rendered.text == (
        "## 1. Intro (intro)\n\nAbout tides in a plain tone.\n\n"
        "## 2. Who (who)\n\nFor kids."
    )
    assert dict(rendered.params) == {
        "topic": "tides",
        "tone": "plain",
        "audience": "kids",
    }
    assert rendered.prompt_name == "demo"


def test_prompt_render_with_bound_dataclasses() -> None:
    rendered = topic_prompt().render(Topic("moons", "dry"), Audience("adults"))
    assert "About moons in a dry tone." in rendered.text
    assert "For adults." in rendered.text


def test_prompt_render_bound_params_win_over_values() -> None:
    rendered = topic_prompt().render(Topic("bound"), values={"topic": "value"})
    assert "About bound in" in rendered.text


def test_prompt_render_unknown_values_are_rejected() -> None:
    with pytest.raises(PromptRenderError) as info:
        topic_prompt().render(values={"topic": "t", "zzz": 1, "colour": 2})
    assert info.value.message == (
        "Unknown parameter(s) 'colour', 'zzz'; this prompt accepts: audience, tone, "
        "topic."
    )
    assert info.value.placeholder == "colour"


def test_prompt_render_names_at_most_ten_unknown_values_each_cut_short() -> None:
    values = {f"k{n:04d}{'x' * 500}": n for n in range(5000)}
    with pytest.raises(PromptRenderError) as info:
        topic_prompt().render(values={"topic": "t", **values})
    message = info.value.message
    assert message.startswith(f"Unknown parameter(s) '{'k0000' + 'x' * 95}', ")
    assert "k0009" in message and "k0010" not in message
    assert " and 4990 more; this prompt accepts: audience, tone, topic." in message
    assert len(message) < 1300


def test_prompt_render_unknown_values_without_parameters() -> None:
    with pytest.raises(PromptRenderError) as info:
        prompt(section("a")).render(values={"x": 1})
    assert info.value.message == "Unknown parameter(s) 'x'; this prompt accepts: none."


def test_prompt_render_missing_parameters_are_reported() -> None:
    with pytest.raises(PromptRenderError) as info:
        topic_prompt().render(values={"tone": "warm"})
    error = info.value
    assert error.message == "Missing parameter(s) 'topic' for section 'intro'."
    assert error.section_path == ("intro",)
    assert error.dataclass_type is Topic
    assert error.placeholder == "topic"


def test_prompt_render_invalid_parameters_are_reported() -> None:
    built = prompt(section("pick", template="$size", params_type=Picky))
    with pytest.raises(PromptRenderError) as info:
        built.render(values={"size": "big"})
    assert info.value.message == (
        "Parameters for section 'pick' are invalid: size must be an int"
    )


def test_prompt_render_uses_default_params() -> None:
    built = prompt(
        section("intro", template="$topic/$tone", default_params=Topic("base", "calm"))
    )
    assert built.render().text.endswith("base/calm")
    assert built.render(values={"tone": "loud"}).text.endswith("base/loud")


def test_prompt_render_duplicate_bound_type_is_rejected() -> None:
    with pytest.raises(PromptRenderError) as info:
        topic_prompt().render(Topic("a"), Topic("b"))
    assert info.value.message == "Duplicate params type supplied to prompt: Topic."


def test_prompt_render_unexpected_bound_type_is_rejected() -> None:
    with pytest.raises(PromptRenderError) as info:
        topic_prompt().render(Unused())
    assert info.value.message == "Unexpected params type supplied to prompt: Unused."


@pytest.mark.parametrize("value", [{"topic": "x"}, Topic])
def test_prompt_render_bound_values_must_be_dataclass_instances(value: Any) -> None:
    with pytest.raises(PromptRenderError) as info:
        topic_prompt().render(value)
    assert info.value.message == "Prompt params must be dataclass instances."


def test_prompt_render_collects_tools_policies_and_output() -> None:
    policy = SequentialDependencyPolicy({"deploy": {"build"}})
    output = StructuredOutput.from_dataclass(Answer)
    choice = ToolChoice.parse("tool:build")
    search = web_search_tool()
    built = prompt(
        section(
            "ops",
            tools=[tool("build"), tool("deploy")],
            hosted_tools=[search],
            policies=[policy],
        ),
        output=output,
        tool_choice=choice,
    )
    rendered = built.render()
    assert [t.name for t in rendered.tools] == ["build", "deploy"]
    assert rendered.hosted_tools == (search,)
    assert rendered.tool("deploy") is rendered.tools[1]
    assert rendered.tool("web_search") is None
    assert rendered.hosted_tool("web_search") is search
    assert rendered.hosted_tool("build") is None
    assert dict(rendered.policies_by_tool) == {"build": (policy,), "deploy": (policy,)}
    assert rendered.output is output
    assert rendered.tool_choice == choice


def test_prompt_policies_come_from_section_ancestors_and_prompt() -> None:
    outer = SequentialDependencyPolicy({"b": {"a"}}, name="outer")
    inner = SequentialDependencyPolicy({"c": {"a"}}, name="inner")
    sibling = SequentialDependencyPolicy({"c": {"b"}}, name="sibling")
    top = NamedPolicy()
    built = prompt(
        section(
            "root",
            tools=[tool("a")],
            policies=[outer],
            children=[
                section("mid", tools=[tool("b")], policies=[inner, outer]),
                section("other", tools=[tool("c")], policies=[sibling]),
            ],
        ),
        policies=[top, inner],
    )
    assert built.policies_for_tool("a") == (outer, top, inner)
    assert built.policies_for_tool("b") == (outer, inner, top)
    assert built.policies_for_tool("c") == (outer, sibling, top, inner)
    assert built.policies_for_tool("unknown") == (top, inner)


def test_prompt_response_defaults() -> None:
    response = PromptResponse(prompt_name="p", text="t")
    assert response.output is None
    assert dict(response.hosted_outputs) == {}
    assert response.citations == ()
    assert response.usage is None
    assert response.turns == 0
    assert response.response_id is None


def test_prompt_declared_hosted_tools_include_disabled_and_nested_sections() -> None:
    first = web_search_tool(name="first_search")
    nested = web_search_tool(name="nested_search")
    hidden = web_search_tool(name="hidden_search")
    built = prompt(
        section(
            "a", hosted_tools=[first], children=[section("b", hosted_tools=[nested])]
        ),
        section("c", enabled=False, hosted_tools=[hidden]),
    )

    assert built.declared_hosted_tools() == (first, nested, hidden)
    assert built.render().hosted_tools == (first, nested)


def test_prompt_declared_tools_include_disabled_and_nested_sections() -> None:
    first, nested, hidden = tool("first"), tool("nested"), tool("hidden")
    built = prompt(
        section("a", tools=[first], children=[section("b", tools=[nested])]),
        section("c", enabled=False, tools=[hidden]),
        section("d", hosted_tools=[web_search_tool()]),
    )
    assert built.declared_tools() == (first, nested, hidden)
    assert built.render().tools == (first, nested)


# -- Prompt[OutputT] ---------------------------------------------------------------


def test_prompt_subscript_gives_the_structured_output() -> None:
    built = Prompt[Answer](ns="t", key="k", sections=[section("a")])
    assert built.output == StructuredOutput.from_dataclass(Answer)
    assert built.output is not None and built.output.output_type is Answer
    assert built.render().output == built.output
    assert type(built) is Prompt
    assert typing.get_args(built.__orig_class__) == (Answer,)  # type: ignore[attr-defined]


def test_prompt_subscript_and_the_same_output_agree() -> None:
    named = StructuredOutput.from_dataclass(Answer, name="final")
    built = Prompt[Answer](ns="t", key="k", output=named)
    assert built.output is named


def test_prompt_subscript_conflicting_with_output_is_an_error() -> None:
    with pytest.raises(PromptValidationError) as info:
        Prompt[Answer](ns="t", key="k", output=StructuredOutput.from_dataclass(Loose))
    assert info.value.message == "Prompt[Answer] conflicts with output= for Loose."
    assert info.value.placeholder == "output"
    schema = StructuredOutput.from_schema({"type": "object"}, name="raw")
    with pytest.raises(PromptValidationError) as info:
        Prompt[Answer](ns="t", key="k", output=schema)
    assert info.value.message == "Prompt[Answer] conflicts with output= for a schema."


@pytest.mark.parametrize("argument", [str, None])
def test_prompt_subscript_str_asks_for_plain_text(argument: Any) -> None:
    assert Prompt[argument](ns="t", key="k").output is None
    with pytest.raises(PromptValidationError) as info:
        Prompt[argument](
            ns="t", key="k", output=StructuredOutput.from_dataclass(Answer)
        )
    assert info.value.message == (
        f"Prompt[{'str' if argument is str else 'None'}] asks for plain text but "
        "output= gives a structured output."
    )


@pytest.mark.parametrize("argument", [int, dict[str, int], list[Answer]])
def test_prompt_subscript_must_be_a_dataclass(argument: Any) -> None:
    with pytest.raises(PromptValidationError) as info:
        Prompt[argument](ns="t", key="k")
    assert info.value.message.endswith(
        ": the output type must be a dataclass (or str for plain text)."
    )
    assert info.value.dataclass_type == argument


@pytest.mark.parametrize("argument", [Any, typing.TypeVar("OutT")])
def test_prompt_open_subscripts_leave_the_output_as_given(argument: Any) -> None:
    assert Prompt[argument](ns="t", key="k").output is None
    given = StructuredOutput.from_dataclass(Answer)
    assert Prompt[argument](ns="t", key="k", output=given).output is given


def test_prompt_rendered_prompt_and_response_are_generic() -> None:
    assert typing.get_args(RenderedPrompt[Answer]) == (Answer,)
    response = PromptResponse[Answer](prompt_name="p", text=None, output=Answer("yes"))
    assert response.output == Answer("yes")


def test_prompt_takes_one_type_argument() -> None:
    with pytest.raises(TypeError, match="Too many arguments"):
        Prompt[Answer, Loose]  # type: ignore[misc]
