"""Sections: keys, templates and placeholders, predicates, and how a tree of
sections renders (headings, numbering, disabled branches, tool examples)."""

import dataclasses
import typing
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
    no_params: Tool[Any, Any] = Tool(
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


# -- params type from the subscript --------------------------------------------------


def test_sections_subscript_gives_the_params_type() -> None:
    built = MarkdownSection[Greeting](title="Intro", key="intro", template="Hi $name")
    assert built.params_type is Greeting
    assert built.param_names == ("name", "price")
    assert render(built, values={"name": "Ada"}) == "## 1. Intro (intro)\n\nHi Ada"


def test_sections_subscript_alias_keeps_its_type_arguments() -> None:
    alias = MarkdownSection[Greeting]
    assert typing.get_origin(alias) is MarkdownSection
    assert typing.get_args(alias) == (Greeting,)
    built = alias(title="Intro", key="intro")
    assert type(built) is MarkdownSection
    assert built.__orig_class__ == alias  # type: ignore[attr-defined]


def test_sections_subscript_and_the_same_explicit_params_type_agree() -> None:
    built = Section[Greeting](title="T", key="t", params_type=Greeting)
    assert built.params_type is Greeting


def test_sections_subscript_conflicting_with_params_type_is_an_error() -> None:
    with pytest.raises(PromptValidationError) as info:
        MarkdownSection[Greeting](title="T", key="t", params_type=Query)  # type: ignore[arg-type]
    assert (
        info.value.message
        == "MarkdownSection[Greeting] conflicts with params_type=Query."
    )
    assert info.value.dataclass_type is Query
    assert info.value.section_path == ("t",)


def test_sections_subscript_conflicting_with_default_params_is_an_error() -> None:
    with pytest.raises(PromptValidationError) as info:
        MarkdownSection[Greeting](title="T", key="t", default_params=Query("x"))  # type: ignore[arg-type]
    assert info.value.message == (
        "Section default params must be an instance of its params type."
    )


def test_sections_subscript_must_be_a_dataclass() -> None:
    with pytest.raises(PromptValidationError) as info:
        MarkdownSection[int](title="T", key="t")
    assert info.value.message == "Section params must be a dataclass type."
    assert info.value.dataclass_type is int


@pytest.mark.parametrize("argument", [Any, object, typing.TypeVar("T")])
def test_sections_open_subscripts_leave_the_section_without_params(
    argument: Any,
) -> None:
    built = MarkdownSection[argument](title="T", key="t", template="Plain.")
    assert built.params_type is None
    with pytest.raises(PromptValidationError, match="does not accept parameters"):
        MarkdownSection[argument](title="T", key="t", template="$name")


def test_sections_subclass_of_a_subscripted_section_declares_its_params() -> None:
    class GreetingSection(Section[Greeting]):
        def __init__(self, *, key: str = "greet") -> None:
            super().__init__(title="Greet", key=key, template="Hello $name")

    assert GreetingSection.declared_params_type is Greeting
    assert GreetingSection().params_type is Greeting
    assert render(GreetingSection(), values={"name": "Bo"}) == (
        "## 1. Greet (greet)\n\nHello Bo"
    )
    assert Section.declared_params_type is None


def test_sections_subclass_declared_params_conflict_is_an_error() -> None:
    class GreetingSection(MarkdownSection[Greeting]):
        pass

    assert GreetingSection(title="T", key="t").params_type is Greeting
    with pytest.raises(PromptValidationError) as info:
        GreetingSection(title="T", key="t", params_type=Query)  # type: ignore[arg-type]
    assert info.value.message == (
        "GreetingSection (a section of Greeting) conflicts with params_type=Query."
    )


def test_sections_generic_subclass_takes_the_params_from_its_own_subscript() -> None:
    P = typing.TypeVar("P")

    class Boxed(MarkdownSection[P]):
        """A generic subclass whose ``__init__`` has no ``params_type``."""

        def __init__(self, title: str) -> None:
            super().__init__(title=title, template="[$name]")

    built = Boxed[Greeting]("Box")
    assert (built.params_type, built.key) == (Greeting, "box")
    assert render(built, values={"name": "x"}) == "## 1. Box (box)\n\n[x]"
    with pytest.raises(PromptValidationError, match="does not accept parameters"):
        Boxed("Box")


def test_sections_subscripted_subclass_of_a_generic_subclass() -> None:
    P = typing.TypeVar("P")

    class Boxed(MarkdownSection[P]):
        pass

    class GreetingBox(Boxed[Greeting]):
        pass

    assert GreetingBox.declared_params_type is Greeting
    assert GreetingBox(title="T", key="t", template="$name").params_type is Greeting


def test_sections_non_generic_subclass_subscript_is_refused() -> None:
    class Plain(MarkdownSection[Greeting]):
        pass

    with pytest.raises(TypeError):
        Plain[Query]  # type: ignore[misc]


# -- keys derived from titles --------------------------------------------------------


@pytest.mark.parametrize(
    ("title", "key"),
    [
        ("Guidance", "guidance"),
        ("  Task Notes! ", "task-notes"),
        ("v1.2 release_notes", "v1.2-release_notes"),
        ("--Odd__", "odd"),
        ("x" * 80, "x" * 64),
        ("caf\u00e9 menu", "caf-menu"),
    ],
)
def test_sections_key_defaults_to_one_derived_from_the_title(
    title: str, key: str
) -> None:
    assert MarkdownSection(title=title).key == key


@pytest.mark.parametrize("title", ["!!!", "\u00e9\u00e9", "\u2603"])
def test_sections_title_without_a_derivable_key_needs_a_key(title: str) -> None:
    with pytest.raises(PromptValidationError) as info:
        MarkdownSection(title=title)
    assert info.value.message == (
        f"Section '{title}' needs a key: none can be derived from its title."
    )
    assert info.value.placeholder == "key"
    assert MarkdownSection(title=title, key="given").key == "given"


@pytest.mark.parametrize("key", [None, "given"])
@pytest.mark.parametrize("title", ["a\x00b", "a\ud800b", "\x00"])
def test_sections_title_with_nul_or_lone_surrogate_is_refused(
    title: str, key: str | None
) -> None:
    with pytest.raises(PromptValidationError) as info:
        MarkdownSection(title=title, key=key)
    owner = "A section" if key is None else "Section 'given'"
    assert info.value.message == (
        f"{owner} title must not contain NUL bytes or lone surrogates."
    )
    assert info.value.placeholder == "title"


@pytest.mark.parametrize("template", ["a\x00b", "$$\udfff"])
def test_sections_template_with_nul_or_lone_surrogate_is_refused(
    template: str,
) -> None:
    with pytest.raises(PromptValidationError) as info:
        MarkdownSection(title="T", key="t", template=template)
    assert info.value.message == (
        "Section 't' template must not contain NUL bytes or lone surrogates."
    )
    assert info.value.section_path == ("t",)


@pytest.mark.parametrize("template", [None, 5, b"bytes"])
def test_sections_template_must_be_a_string(template: Any) -> None:
    with pytest.raises(PromptValidationError) as info:
        MarkdownSection(title="T", key="t", template=template)
    assert info.value.message == "Section 't' template must be a string."


def test_sections_huge_title_derives_a_bounded_key() -> None:
    built = MarkdownSection(title="Word " * 100_000)
    assert built.key == ("word-" * 13)[:64].rstrip("-")
    assert len(built.title) == 499_999


@pytest.mark.parametrize("title", [None, "", "  ", 5])
def test_sections_without_key_or_title_are_refused(title: Any) -> None:
    with pytest.raises(PromptValidationError) as info:
        MarkdownSection(title=title)
    assert info.value.message == "A section needs a title."


# -- tools() -------------------------------------------------------------------------


def test_sections_tools_is_a_method() -> None:
    first, second = tool("first"), tool("second")
    built = section("t", tools=[first, second])
    assert built.tools() == (first, second)
    assert section("u").tools() == ()


def test_sections_tools_override_feeds_the_prompt() -> None:
    extra = tool("extra")

    class Dynamic(MarkdownSection):
        def tools(self) -> tuple[Tool[Any, Any], ...]:
            return (extra,)

    prompt = Prompt(ns="t", key="k", sections=[Dynamic(title="D", key="d")])
    assert prompt.render().tools == (extra,)
    assert prompt.policies_for_tool("extra") == ()
    with pytest.raises(PromptValidationError, match="Duplicate tool name 'extra'"):
        Prompt(
            ns="t",
            key="k",
            sections=[Dynamic(title="D", key="d"), section("e", tools=[extra])],
        )


def test_sections_tools_override_is_checked() -> None:
    class Wrong(MarkdownSection):
        def tools(self) -> tuple[Tool[Any, Any], ...]:
            return (web_search_tool(),)  # type: ignore[return-value]

    with pytest.raises(PromptValidationError, match="Section tools must be Tool"):
        Wrong(title="W", key="w")


# -- render(params, depth, number) ---------------------------------------------------


def test_sections_render_is_the_heading_body_and_examples() -> None:
    built = section("intro", template="Hi $name", params_type=Greeting)
    assert built.render(Greeting("Ada"), 1, "2.1", path=("root", "intro")) == (
        "### 2.1. Intro (root.intro)\n\nHi Ada"
    )
    assert built.render(Greeting("Ada"), 0, "3") == "## 3. Intro (intro)\n\nHi Ada"


def test_sections_render_without_params_reports_the_missing_placeholder() -> None:
    built = section("intro", template="Hi $name", params_type=Greeting)
    with pytest.raises(PromptRenderError) as info:
        built.render(None, 0, "1", path=("a", "intro"))
    assert info.value.placeholder == "name"
    assert info.value.section_path == ("a", "intro")


class Banner(MarkdownSection):
    """Overrides ``render`` as seed 004 writes it (no ``path``)."""

    def render(self, params: Any, depth: int, number: str) -> str:
        return f"=== {number} {self.title.upper()} (depth {depth}) ==="


class PathBanner(MarkdownSection):
    def render(self, params: Any, depth: int, number: str, **extra: Any) -> str:
        return f"{number}: {'/'.join(extra['path'])}"


class Silent(MarkdownSection):
    def render(self, params: Any, depth: int, number: str) -> str:
        return ""


def test_sections_render_override_controls_its_text() -> None:
    prompt = Prompt(
        ns="t",
        key="k",
        sections=[
            section("a", template="A."),
            section(
                "b",
                children=[
                    Banner(title="Note", key="note"),
                    PathBanner(title="P", key="p"),
                ],
            ),
        ],
    )
    assert prompt.render().text == (
        "## 1. A (a)\n\nA.\n\n## 2. B (b)\n\n=== 2.1 NOTE (depth 1) ===\n\n2.2: b/p"
    )


def test_sections_rendering_nothing_adds_no_block_and_takes_no_number() -> None:
    hidden_tool = tool("native_lookup")
    prompt = Prompt(
        ns="t",
        key="k",
        sections=[
            Silent(title="Native", key="native", tools=[hidden_tool]),
            section("a", template="A."),
            section("b", children=[Silent(title="S", key="s"), section("c")]),
        ],
    )
    rendered = prompt.render()
    assert rendered.text == "## 1. A (a)\n\nA.\n\n## 2. B (b)\n\n### 2.1. C (b.c)"
    assert rendered.tools == (hidden_tool,)


def test_sections_silent_parent_keeps_its_number_for_its_children() -> None:
    prompt = Prompt(
        ns="t",
        key="k",
        sections=[Silent(title="G", key="g", children=[section("c")]), section("d")],
    )
    assert prompt.render().text == "### 1.1. C (g.c)\n\n## 2. D (d)"


def test_sections_render_returning_a_non_string_is_a_render_error() -> None:
    class Broken(MarkdownSection):
        def render(self, params: Any, depth: int, number: str) -> str:
            return None  # type: ignore[return-value]

    with pytest.raises(PromptRenderError) as info:
        render(section("a", children=[Broken(title="X", key="x")]))
    assert info.value.message == "Section 'a.x' render() returned NoneType, not str."
    assert info.value.section_path == ("a", "x")


def test_sections_render_raising_is_a_render_error() -> None:
    class Failing(MarkdownSection):
        def render(self, params: Any, depth: int, number: str) -> str:
            raise ValueError("boom")

    with pytest.raises(PromptRenderError) as info:
        render(Failing(title="X", key="x"))
    assert info.value.message == "Section 'x' failed to render: boom"
    assert isinstance(info.value.__cause__, ValueError)


# -- clone(**kwargs) -----------------------------------------------------------------


def test_sections_clone_replaces_options_and_copies_the_rest() -> None:
    child = section("child", template="C.")
    original = section(
        "intro",
        template="Hi $name",
        params_type=Greeting,
        children=[child],
        tools=[tool("t1")],
    )
    twin = original.clone(title="Hello", default_params=Greeting("Zed"))
    assert type(twin) is MarkdownSection and twin is not original
    assert (twin.key, twin.title, twin.template) == ("intro", "Hello", "Hi $name")
    assert twin.default_params == Greeting("Zed")
    assert twin.tools() == original.tools()
    assert [c.key for c in twin.children] == ["child"]
    assert twin.children[0] is not child
    assert original.title == "Intro" and original.default_params is None
    assert (
        render(twin)
        == "## 1. Hello (intro)\n\nHi Zed\n\n### 1.1. Child (intro.child)\n\nC."
    )


def test_sections_clone_is_checked_like_a_new_section() -> None:
    original = section("intro", template="Hi $name", params_type=Greeting)
    with pytest.raises(PromptValidationError, match="must match"):
        original.clone(key="Not A Key")
    with pytest.raises(PromptValidationError, match="unknown placeholder '\\$nope'"):
        original.clone(template="$nope")


def test_sections_clone_refuses_unknown_options() -> None:
    with pytest.raises(PromptValidationError) as info:
        section("intro").clone(colour="red", size=2)
    assert info.value.message.startswith(
        "MarkdownSection.clone() got unknown option(s) 'colour', 'size'; it "
        "accepts: title, key, template,"
    )
    assert info.value.placeholder == "colour"


def test_sections_clone_keeps_the_subscript_and_subclass_state() -> None:
    subscripted = MarkdownSection[Greeting](title="T", key="t", template="$name")
    assert subscripted.clone(key="u").params_type is Greeting
    with pytest.raises(PromptValidationError, match="conflicts with params_type"):
        subscripted.clone(params_type=Query)

    banner = Banner(title="Note", key="note")
    copy = banner.clone(title="Other")
    assert isinstance(copy, Banner)
    assert copy.render(None, 0, "1") == "=== 1 OTHER (depth 0) ==="


def test_sections_render_refuses_unexpected_arguments() -> None:
    built = section("intro")
    with pytest.raises(TypeError) as info:
        built.render(None, 0, "1", "extra", colour="red")
    assert str(info.value) == (
        "MarkdownSection.render() takes (params, depth, number, *, path=()); got "
        "unexpected 'extra', colour=."
    )
    with pytest.raises(TypeError, match="path must be a tuple of section keys"):
        built.render(None, 0, "1", path="intro")


def test_sections_render_override_with_a_path_keyword_gets_the_path() -> None:
    class Keyed(MarkdownSection):
        def render(
            self, params: Any, depth: int, number: str, *, path: tuple[str, ...] = ()
        ) -> str:
            return f"{number} {'.'.join(path)}"

    assert render(section("a", children=[Keyed(title="K", key="k")])) == (
        "## 1. A (a)\n\n1.1 a.k"
    )
