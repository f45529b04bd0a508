"""Sections: keys, templates and placeholders, predicates, and how a tree of
sections renders (headings, numbering, disabled branches, tool examples)."""

import dataclasses
from typing import Any

import pytest

from tooling.runtime.context import ToolContext
from tooling.runtime.errors import PromptRenderError, PromptValidationError
from tooling.runtime.hosted.base import HostedTool
from tooling.runtime.hosted.web_search import web_search_tool
from tooling.runtime.prompt import Prompt
from tooling.runtime.results import ToolResult
from tooling.runtime.sections import (
    MarkdownSection,
    Section,
    normalise_section_key,
    template_placeholders,
)
from tooling.runtime.session import InMemorySession
from tooling.runtime.tools import Tool, ToolExample

KEY_RULE = (
    "must match ^[a-z0-9][a-z0-9._-]{0,63}$ (lowercase letters, digits, '.', '_' "
    "or '-', starting with a letter or digit)."
)


@dataclasses.dataclass(frozen=True)
class Greeting:
    name: str
    price: int = 3


@dataclasses.dataclass(frozen=True)
class Empty:
    pass


@dataclasses.dataclass(frozen=True)
class Query:
    text: str


@dataclasses.dataclass(frozen=True)
class Hit:
    title: str


@dataclasses.dataclass(frozen=True)
class Line:
    text: str

    def render(self) -> str:
        return self.text


def find(params: Query, *, context: ToolContext) -> ToolResult[Hit]:
    return ToolResult.ok(Hit(params.text))


def lines(params: Query, *, context: ToolContext) -> ToolResult[Line]:
    return ToolResult.ok(Line(params.text))


def tool(name: str, **kwargs: Any) -> Tool[Any, Any]:
    return Tool(name=name, description=f"The {name} tool.", handler=find, **kwargs)


def section(key: str, **kwargs: Any) -> MarkdownSection:
    kwargs.setdefault("title", key.title())
    return MarkdownSection(key=key, **kwargs)


def render(*sections: Section, **kwargs: Any) -> str:
    return Prompt(ns="tests", key="sections", sections=sections).render(**kwargs).text


# -- keys and titles -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("key", "expected"),
    [
        ("  Intro ", "intro"),
        ("a.b-c_d", "a.b-c_d"),
        ("9lives", "9lives"),
        ("k" * 64, "k" * 64),
    ],
)
def test_sections_key_is_stripped_and_lowercased(key: str, expected: str) -> None:
    assert normalise_section_key(key) == expected
    assert section(key, title="T").key == expected


@pytest.mark.parametrize("key", ["", "-intro", ".x", "a b", "k" * 65, "caf\u00e9"])
def test_sections_key_must_match_the_regex(key: str) -> None:
    with pytest.raises(PromptValidationError) as info:
        section(key, title="T")
    assert info.value.message == f"Section key '{key}' {KEY_RULE}"
    assert info.value.placeholder == "key"


def test_sections_key_must_be_a_string() -> None:
    with pytest.raises(PromptValidationError, match="Section key '5' must match"):
        normalise_section_key(5)  # type: ignore[arg-type]


@pytest.mark.parametrize("title", ["", "   ", None])
def test_sections_title_is_required(title: Any) -> None:
    with pytest.raises(PromptValidationError) as info:
        MarkdownSection(key="intro", title=title)
    assert info.value.message == "Section 'intro' needs a title."
    assert info.value.section_path == ("intro",)


def test_sections_title_and_template_are_normalised() -> None:
    built = MarkdownSection(
        key="intro", title="  Intro  ", template="\n    First line.\n      Indented.\n"
    )
    assert built.title == "Intro"
    assert built.template == "First line.\n  Indented."
    assert repr(built) == "<MarkdownSection 'intro'>"


# -- placeholders --------------------------------------------------------------------


def test_sections_placeholders_are_listed_once_in_order() -> None:
    assert template_placeholders("$b ${a} $b $$c ${a}") == ("b", "a")


def test_sections_unknown_placeholder_is_rejected_at_construction() -> None:
    with pytest.raises(PromptValidationError) as info:
        section("intro", template="Hello $name and ${nope}", params_type=Greeting)
    error = info.value
    assert error.message == (
        "Template references unknown placeholder '$nope' (known: name, price)."
    )
    assert error.placeholder == "nope"
    assert error.dataclass_type is Greeting
    assert error.section_path == ("intro",)


def test_sections_unknown_placeholder_with_fieldless_params() -> None:
    with pytest.raises(PromptValidationError) as info:
        section("intro", template="$x", params_type=Empty)
    assert info.value.message == (
        "Template references unknown placeholder '$x' (known: none)."
    )


def test_sections_invalid_placeholder_is_rejected_at_construction() -> None:
    with pytest.raises(PromptValidationError) as info:
        section("intro", template="Costs $5 today", params_type=Greeting)
    assert info.value.message == (
        "Invalid placeholder at character 7: '5 today'. Use $name or ${name} with "
        "a letter or underscore first, and $$ for a literal dollar sign."
    )
    assert info.value.placeholder == "5 today"


def test_sections_invalid_placeholder_snippet_stops_at_line_end() -> None:
    with pytest.raises(PromptValidationError) as info:
        template_placeholders("a $\nb")
    assert info.value.message.startswith("Invalid placeholder at character 3: ''.")
    assert info.value.placeholder == ""


def test_sections_trailing_lone_dollar_is_a_validation_error() -> None:
    with pytest.raises(PromptValidationError, match="Invalid placeholder"):
        section("price", template="Price: $", params_type=Greeting)


def test_sections_double_dollar_is_a_literal() -> None:
    built = section("price", template="Costs $$$price.", params_type=Greeting)
    assert built.placeholders == ("price",)
    assert render(built, values={"name": "n", "price": 5}) == (
        "## 1. Price (price)\n\nCosts $5."
    )


def test_sections_placeholders_without_params_are_rejected() -> None:
    with pytest.raises(PromptValidationError) as info:
        section("intro", template="Hi $name, ${day}")
    assert info.value.message == (
        "Section does not accept parameters but declares placeholders ($name, $day)."
    )
    assert info.value.placeholder == "name"


def test_sections_params_type_must_be_a_dataclass() -> None:
    with pytest.raises(PromptValidationError) as info:
        section("intro", params_type=dict)
    assert info.value.message == "Section params must be a dataclass type."
    assert info.value.dataclass_type is dict


def test_sections_params_type_is_taken_from_default_params() -> None:
    built = section("intro", template="$name", default_params=Greeting("Ada"))
    assert built.params_type is Greeting
    assert built.param_names == ("name", "price")


def test_sections_default_params_must_match_params_type() -> None:
    with pytest.raises(PromptValidationError) as info:
        section("intro", params_type=Greeting, default_params=Query("q"))
    assert info.value.message == (
        "Section default params must be an instance of its params type."
    )


def test_sections_children_must_be_sections() -> None:
    with pytest.raises(PromptValidationError) as info:
        section("intro", children=["not a section"])
    assert info.value.message == "Section children must be sections."


def test_sections_tools_must_be_tools() -> None:
    with pytest.raises(PromptValidationError) as info:
        section("intro", tools=[web_search_tool()])
    assert info.value.message == (
        "Section tools must be Tool instances; hosted tools go in hosted_tools."
    )


def test_sections_hosted_tools_must_be_hosted_tools() -> None:
    with pytest.raises(PromptValidationError) as info:
        section("intro", hosted_tools=[tool("find")])
    assert info.value.message == "Section hosted_tools must be HostedTool instances."


def test_sections_hosted_tools_are_exposed() -> None:
    search = web_search_tool()
    built = section("intro", hosted_tools=[search])
    assert built.hosted_tools() == (search,)
    assert isinstance(built.hosted_tools()[0], HostedTool)


def test_sections_render_body_substitutes_with_str() -> None:
    built = section("intro", template="Hi $name (${price})", params_type=Greeting)
    assert built.render_body(Greeting("Ada", 7), ("intro",)) == "Hi Ada (7)"


def test_sections_render_body_empty_template_is_empty() -> None:
    assert section("intro").render_body(None, ("intro",)) == ""


def test_sections_render_body_missing_value_raises_render_error() -> None:
    built = section("intro", template="Hi $name", params_type=Greeting)
    with pytest.raises(PromptRenderError) as info:
        built.render_body(None, ("root", "intro"))
    assert info.value.message == "Missing placeholder during render."
    assert info.value.placeholder == "name"
    assert info.value.section_path == ("root", "intro")


# -- enabled predicates --------------------------------------------------------------


def test_sections_enabled_flag() -> None:
    assert section("a").is_enabled(None) is True
    assert section("a", enabled=False).is_enabled(None) is False


def test_sections_predicate_without_arguments() -> None:
    assert section("a", enabled=lambda: False).is_enabled(Greeting("x")) is False


def test_sections_predicate_receives_params() -> None:
    seen: list[Any] = []

    def predicate(params: Greeting) -> bool:
        seen.append(params)
        return params.name == "on"

    built = section("a", params_type=Greeting, enabled=predicate)
    assert built.is_enabled(Greeting("on")) is True
    assert built.is_enabled(Greeting("off"), session="ignored") is False
    assert seen == [Greeting("on"), Greeting("off")]


def test_sections_predicate_receives_keyword_only_session() -> None:
    session = InMemorySession()
    calls: list[Any] = []

    def predicate(*, session: Any) -> bool:
        calls.append(session)
        return True

    assert section("a", enabled=predicate).is_enabled(None, session=session) is True
    assert calls == [session]


def test_sections_predicate_receives_params_and_session() -> None:
    calls: list[tuple[Any, Any]] = []

    def predicate(params: Any, *, session: Any) -> bool:
        calls.append((params, session))
        return False

    built = section("a", params_type=Greeting, enabled=predicate)
    assert built.is_enabled(Greeting("x"), session="s") is False
    assert calls == [(Greeting("x"), "s")]


def test_sections_predicate_returning_truthy_value_is_bool() -> None:
    assert section("a", enabled=lambda: "yes").is_enabled(None) is True


def test_sections_predicate_with_two_positional_parameters_is_rejected() -> None:
    with pytest.raises(PromptValidationError) as info:
        section("a", enabled=lambda params, session: True)
    assert info.value.message == (
        "An enabled predicate takes (), (params), (*, session) or (params, *, session)."
    )


def test_sections_enabled_must_be_bool_or_callable() -> None:
    with pytest.raises(PromptValidationError) as info:
        section("a", enabled="yes")
    assert info.value.message == "Section enabled must be a bool or a callable."


def test_sections_raising_predicate_is_a_render_error() -> None:
    def predicate() -> bool:
        raise RuntimeError("boom")

    with pytest.raises(PromptRenderError) as info:
        section("a", enabled=predicate).is_enabled(None)
    assert info.value.message == "Section enabled predicate failed: boom"
    assert info.value.section_path == ("a",)
    assert isinstance(info.value.__cause__, RuntimeError)


def test_sections_raising_predicate_fails_prompt_render() -> None:
    def predicate() -> bool:
        raise ValueError("bad")

    with pytest.raises(
        PromptRenderError, match="Section enabled predicate failed: bad"
    ):
        render(section("a", enabled=predicate))


# -- rendering a tree ----------------------------------------------------------------


def test_sections_heading_format_for_roots_and_children() -> None:
    text = render(
        section(
            "parent",
            title="Parent",
            template="Parent body.",
            children=[
                section("child", title="Child", template="Child body."),
                section(
                    "other",
                    title="Other",
                    children=[section("leaf", title="Leaf", template="Leaf body.")],
                ),
            ],
        ),
        section("second", title="Second", template="Second body."),
    )
    assert text == (
        "## 1. Parent (parent)\n\nParent body.\n\n"
        "### 1.1. Child (parent.child)\n\nChild body.\n\n"
        "### 1.2. Other (parent.other)\n\n"
        "#### 1.2.1. Leaf (parent.other.leaf)\n\nLeaf body.\n\n"
        "## 2. Second (second)\n\nSecond body."
    )


def test_sections_numbering_has_no_gaps_for_disabled_sections() -> None:
    text = render(
        section("off", enabled=False),
        section(
            "on",
            title="On",
            children=[
                section("hidden", enabled=False),
                section("shown", title="Shown"),
            ],
        ),
        section("last", title="Last"),
    )
    assert text == ("## 1. On (on)\n\n### 1.1. Shown (on.shown)\n\n## 2. Last (last)")


def test_sections_disabled_branch_hides_descendants_and_their_tools() -> None:
    prompt = Prompt(
        ns="tests",
        key="sections",
        sections=[
            section(
                "gate",
                enabled=False,
                tools=[tool("gate_tool")],
                children=[
                    section(
                        "inner",
                        tools=[tool("inner_tool")],
                        hosted_tools=[web_search_tool()],
                        children=[section("deep", tools=[tool("deep_tool")])],
                    )
                ],
            ),
            section("open", title="Open", tools=[tool("open_tool")]),
        ],
    )
    rendered = prompt.render()
    assert rendered.text == "## 1. Open (open)"
    assert [t.name for t in rendered.tools] == ["open_tool"]
    assert rendered.hosted_tools == ()
    assert set(rendered.policies_by_tool) == {"open_tool"}


def test_sections_predicate_sees_session_during_render() -> None:
    session = InMemorySession()
    session.put_state("flag", True)
    text = render(
        section("a", title="A", enabled=lambda *, session: session.get_state("flag")),
        section(
            "b", title="B", enabled=lambda *, session: not session.get_state("flag")
        ),
        session=session,
    )
    assert text == "## 1. A (a)"


def test_sections_tools_are_collected_in_depth_first_order() -> None:
    prompt = Prompt(
        ns="tests",
        key="sections",
        sections=[
            section(
                "a",
                tools=[tool("a1"), tool("a2")],
                children=[section("b", tools=[tool("b1")])],
            ),
            section("c", tools=[tool("c1")]),
        ],
    )
    assert [t.name for t in prompt.render().tools] == ["a1", "a2", "b1", "c1"]


def test_sections_examples_block_lists_tools_with_examples() -> None:
    documented = Tool(
        name="find",
        description="Find a hit.",
        handler=find,
        examples=(
            ToolExample("Find cats.", Query("cats"), Hit("Cats")),
            ToolExample("Find dogs.", Query("dogs"), Hit("Dogs")),
        ),
    )
    multiline = Tool(
        name="lines",
        description="Echo lines.",
        handler=lines,
        examples=(ToolExample("Two lines.", Query("a"), Line("first\nsecond")),),
    )
    built = section(
        "tools",
        title="Tools",
        template="Use the tools.",
        tools=[documented, tool("plain"), multiline],
    )
    assert render(built) == (
        "## 1. Tools (tools)\n\nUse the tools.\n\n"
        "Tools:\n"
        "- find: Find a hit.\n"
        "  - Find cats.\n"
        '    input: {"text": "cats"}\n'
        '    output: {"title": "Cats"}\n'
        "  - Find dogs.\n"
        '    input: {"text": "dogs"}\n'
        '    output: {"title": "Dogs"}\n'
        "- lines: Echo lines.\n"
        "  - Two lines.\n"
        '    input: {"text": "a"}\n'
        "    output: first\n"
        "      second"
    )


def test_sections_examples_block_omitted_without_examples() -> None:
    assert render(section("t", title="T", tools=[tool("plain")])) == "## 1. T (t)"


def test_sections_examples_block_without_body() -> None:
    no_params = Tool(
        name="ping",
        description="Ping.",
        examples=(ToolExample("Ping once.", None, None),),
    )
    assert render(section("t", title="T", tools=[no_params])) == (
        "## 1. T (t)\n\nTools:\n- ping: Ping.\n  - Ping once.\n    input: null\n"
        "    output: "
    )


def test_sections_markdown_section_is_a_section() -> None:
    assert issubclass(MarkdownSection, Section)
