"""``HostedToolSection``: the one base of every hosted kind's section, its
defaults, ``clone`` and a new kind declared in a few lines."""

import dataclasses
from typing import Any

import pytest

from tooling.runtime.errors import PromptValidationError
from tooling.runtime.hosted import (
    CodeInterpreterSection,
    FileSearchConfig,
    FileSearchSection,
    HostedTool,
    HostedToolSection,
    ImageGenerationSection,
    McpConfig,
    McpSection,
    WebSearchConfig,
    WebSearchSection,
)
from tooling.runtime.hosted.code_interpreter import CODE_INTERPRETER_TEMPLATE
from tooling.runtime.hosted.file_search import FILE_SEARCH_TEMPLATE
from tooling.runtime.hosted.image_generation import IMAGE_GENERATION_TEMPLATE
from tooling.runtime.hosted.mcp import mcp_template
from tooling.runtime.hosted.web_search import WEB_SEARCH_TEMPLATE
from tooling.runtime.prompt import Prompt
from tooling.runtime.sections import MarkdownSection

FILES = FileSearchConfig(vector_store_ids=("vs_1",))
WIKI = McpConfig(server_label="wiki", server_url="https://mcp.example.com/sse")

KINDS = [
    (WebSearchSection, None, "web_search", "Web Search", WEB_SEARCH_TEMPLATE),
    (
        CodeInterpreterSection,
        None,
        "code_interpreter",
        "Code Interpreter",
        CODE_INTERPRETER_TEMPLATE,
    ),
    (FileSearchSection, FILES, "file_search", "File Search", FILE_SEARCH_TEMPLATE),
    (
        ImageGenerationSection,
        None,
        "image_generation",
        "Image Generation",
        IMAGE_GENERATION_TEMPLATE,
    ),
    (McpSection, WIKI, "mcp", "MCP Server", mcp_template(WIKI)),
]


@pytest.mark.parametrize(("cls", "config", "kind", "title", "template"), KINDS)
def test_each_kind_is_a_hosted_tool_section_with_its_defaults(
    cls: type[HostedToolSection[Any]],
    config: Any,
    kind: str,
    title: str,
    template: str,
) -> None:
    section = cls(config)
    assert isinstance(section, HostedToolSection)
    assert isinstance(section, MarkdownSection)
    assert (section.key, section.title, section.template) == (kind, title, template)
    assert (section.tool.kind, section.tool.name) == (kind, kind)
    assert section.hosted_tools() == (section.tool,)
    assert section.tools() == ()
    assert section.config is section.tool.config
    if config is not None:
        assert section.config is config
    rendered = Prompt(ns="t", key="k", sections=[section]).render()
    assert rendered.text == f"## 1. {title} ({kind})\n\n{template}"
    assert rendered.hosted_tools == (section.tool,)


@pytest.mark.parametrize(("cls", "config", "kind", "title", "template"), KINDS)
def test_each_kind_takes_key_name_title_and_enabled(
    cls: type[HostedToolSection[Any]],
    config: Any,
    kind: str,
    title: str,
    template: str,
) -> None:
    section = cls(config, key="other", name="other_tool", title="Other", enabled=False)
    assert (section.key, section.title, section.tool.name) == (
        "other",
        "Other",
        "other_tool",
    )
    rendered = Prompt(ns="t", key="k", sections=[section]).render()
    assert rendered.text == "" and rendered.hosted_tools == ()


@pytest.mark.parametrize(
    ("cls", "message"),
    [
        (FileSearchSection, "file_search_tool needs a FileSearchConfig."),
        (McpSection, "mcp_tool needs an McpConfig."),
    ],
)
def test_kinds_that_need_a_config_refuse_none(
    cls: type[HostedToolSection[Any]], message: str
) -> None:
    with pytest.raises(PromptValidationError) as info:
        cls()
    assert info.value.message == message


def test_a_wrong_config_type_is_refused() -> None:
    with pytest.raises(PromptValidationError, match="needs a CodeInterpreterConfig"):
        CodeInterpreterSection(WebSearchConfig())  # type: ignore[arg-type]


def test_an_empty_title_is_still_refused() -> None:
    with pytest.raises(PromptValidationError, match="needs a title"):
        WebSearchSection(title="  ")


def test_clone_with_a_new_config_rebuilds_the_tool() -> None:
    original = WebSearchSection(key="search", name="search")
    offline = WebSearchConfig(allow_live_access=False)
    twin = original.clone(config=offline)
    assert isinstance(twin, WebSearchSection)
    assert twin.config is offline and twin.tool.name == "search"
    assert twin.key == "search" and twin.template == WEB_SEARCH_TEMPLATE
    assert original.config == WebSearchConfig()
    renamed = original.clone(name="lookup", title="Lookup")
    assert (renamed.tool.name, renamed.title, renamed.config) == (
        "lookup",
        "Lookup",
        WebSearchConfig(),
    )
    assert original.clone().tool == original.tool


def test_clone_renews_a_template_derived_from_the_config() -> None:
    section = McpSection(WIKI)
    described = dataclasses.replace(WIKI, server_description="The team wiki")
    twin = section.clone(config=described)
    assert "About this server: The team wiki" in twin.template
    assert "About this server" not in section.template
    kept = section.clone(config=described, template="Ask the wiki.")
    assert kept.template == "Ask the wiki."


def test_clone_refuses_hosted_tools_and_checks_the_config() -> None:
    section = FileSearchSection(FILES)
    with pytest.raises(PromptValidationError) as info:
        section.clone(hosted_tools=())
    assert info.value.message == (
        "FileSearchSection.clone() takes config= and name= instead of hosted_tools=."
    )
    with pytest.raises(PromptValidationError, match="needs a FileSearchConfig"):
        section.clone(config=None)
    with pytest.raises(PromptValidationError, match="unknown option"):
        section.clone(colour="red")


# -- a new kind in a few lines ---------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class CalendarConfig:
    calendar_id: str = "primary"


def calendar_tool(
    config: CalendarConfig | None = None, *, name: str = "calendar"
) -> HostedTool[Any]:
    if config is not None and not isinstance(config, CalendarConfig):
        raise PromptValidationError("calendar_tool needs a CalendarConfig.")
    return HostedTool(
        kind="calendar",
        name=name,
        description="Read the calendar.",
        config=config or CalendarConfig(),
    )


class CalendarSection(HostedToolSection[CalendarConfig]):
    """A section for a made-up hosted kind."""

    default_key = "calendar"
    default_title = "Calendar"
    default_template = "Check the calendar before proposing a time."
    tool_factory = calendar_tool

    def section_template(self, config: CalendarConfig) -> str:
        return f"{self.default_template} Use calendar '{config.calendar_id}'."


def test_a_new_kind_declares_its_section_in_a_few_lines() -> None:
    section = CalendarSection(CalendarConfig("team"))
    assert section.params_type is None
    assert section.hosted_tools() == (calendar_tool(CalendarConfig("team")),)
    prompt = Prompt(
        ns="t",
        key="k",
        sections=[MarkdownSection(title="Task", key="task"), section],
    )
    rendered = prompt.render()
    assert rendered.text == (
        "## 1. Task (task)\n\n## 2. Calendar (calendar)\n\n"
        "Check the calendar before proposing a time. Use calendar 'team'."
    )
    assert [h.kind for h in rendered.hosted_tools] == ["calendar"]
    assert CalendarSection().config == CalendarConfig()
