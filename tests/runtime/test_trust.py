"""Trust levels: hosted tools above a session's level are withheld, and said so."""

from typing import Any

import pytest

from tests.runtime.test_adapter import FakeProvider, message, response
from tooling.runtime.adapters.openai import OpenAIAdapter
from tooling.runtime.errors import PromptRenderError, PromptValidationError
from tooling.runtime.events import InMemorySink, PromptRendered
from tooling.runtime.hosted.base import HostedTool
from tooling.runtime.hosted.web_search import (
    WEB_SEARCH_TEMPLATE,
    DomainFilter,
    WebSearchConfig,
    WebSearchSection,
    web_search_tool,
)
from tooling.runtime.prompt import Prompt, ToolChoice
from tooling.runtime.sections import MarkdownSection
from tooling.runtime.trust import TrustLevel, WithheldTool


def _tool(name: str, min_trust: Any = TrustLevel.STANDARD) -> HostedTool[Any]:
    tool = web_search_tool(name=name)
    return HostedTool(tool.kind, tool.name, tool.description, tool.config, min_trust)


def _prompt(*tools: HostedTool[Any], choice: ToolChoice | None = None) -> Prompt:
    return Prompt(
        ns="t",
        key="trust",
        sections=[MarkdownSection(title="Task", key="task", hosted_tools=tools)],
        tool_choice=choice,
    )


# -- TrustLevel -------------------------------------------------------------------


def test_trust_levels_are_ordered() -> None:
    assert TrustLevel.UNTRUSTED < TrustLevel.STANDARD < TrustLevel.TRUSTED


@pytest.mark.parametrize(
    ("value", "level"),
    [
        ("untrusted", TrustLevel.UNTRUSTED),
        (" Standard ", TrustLevel.STANDARD),
        ("TRUSTED", TrustLevel.TRUSTED),
        (TrustLevel.TRUSTED, TrustLevel.TRUSTED),
    ],
)
def test_trust_level_parse_accepts_labels_and_levels(value: Any, level: Any) -> None:
    assert TrustLevel.parse(value) is level


@pytest.mark.parametrize("value", ["root", "", 2, None])
def test_trust_level_parse_rejects_anything_else(value: Any) -> None:
    with pytest.raises(PromptValidationError) as caught:
        TrustLevel.parse(value)

    assert caught.value.message == (
        f"Unknown trust level {value!r}; expected one of: untrusted, standard, trusted."
    )
    assert caught.value.placeholder == "trust_level"


def test_trust_level_label_is_the_lower_case_name() -> None:
    assert [level.label for level in TrustLevel] == [
        "untrusted",
        "standard",
        "trusted",
    ]


# -- HostedTool.min_trust ----------------------------------------------------------


def test_hosted_tool_needs_standard_trust_by_default() -> None:
    assert web_search_tool().min_trust is TrustLevel.STANDARD


def test_hosted_tool_min_trust_accepts_a_label() -> None:
    assert _tool("search", "trusted").min_trust is TrustLevel.TRUSTED


def test_hosted_tool_min_trust_rejects_an_unknown_label() -> None:
    with pytest.raises(PromptValidationError, match="Unknown trust level 'admin'"):
        _tool("search", "admin")


# -- rendering --------------------------------------------------------------------


def test_render_at_standard_offers_standard_and_untrusted_tools() -> None:
    prompt = _prompt(
        _tool("open", "untrusted"), _tool("normal"), _tool("risky", "trusted")
    )

    rendered = prompt.render()

    assert [t.name for t in rendered.hosted_tools] == ["open", "normal"]
    assert rendered.trust_level is TrustLevel.STANDARD
    assert rendered.withheld_hosted_tools == (
        WithheldTool("risky", "web_search", TrustLevel.TRUSTED, TrustLevel.STANDARD),
    )


def test_render_at_untrusted_withholds_every_tool_that_needs_more() -> None:
    prompt = _prompt(
        _tool("open", "untrusted"), _tool("normal"), _tool("risky", "trusted")
    )

    rendered = prompt.render(trust_level="untrusted")

    assert [t.name for t in rendered.hosted_tools] == ["open"]
    assert [t.name for t in rendered.withheld_hosted_tools] == ["normal", "risky"]
    assert rendered.withheld_hosted_tools[0].reason == (
        "Hosted tool 'normal' (web_search) needs trust level 'standard'; this "
        "session runs at 'untrusted'."
    )


def test_render_at_trusted_offers_every_tool() -> None:
    prompt = _prompt(_tool("normal"), _tool("risky", "trusted"))

    rendered = prompt.render(trust_level=TrustLevel.TRUSTED)

    assert [t.name for t in rendered.hosted_tools] == ["normal", "risky"]
    assert rendered.withheld_hosted_tools == ()


def test_render_refuses_a_tool_choice_that_names_a_withheld_tool() -> None:
    prompt = _prompt(_tool("risky", "trusted"), choice=ToolChoice.parse("tool:risky"))

    with pytest.raises(PromptRenderError) as caught:
        prompt.render()

    assert caught.value.message == (
        "tool_choice names 'risky', which is withheld: Hosted tool 'risky' "
        "(web_search) needs trust level 'trusted'; this session runs at 'standard'."
    )


def test_render_rejects_an_unknown_trust_level() -> None:
    with pytest.raises(PromptValidationError, match="Unknown trust level 'high'"):
        _prompt(_tool("normal")).render(trust_level="high")


# -- the adapter ------------------------------------------------------------------


def test_adapter_sends_only_the_tools_the_trust_level_allows() -> None:
    provider = FakeProvider(response(message("Done.")))
    adapter = OpenAIAdapter(client=provider.client, model="gpt-test")
    sink = InMemorySink()
    prompt = _prompt(_tool("open", "untrusted"), _tool("normal"))

    adapter.evaluate(prompt, sink=sink, trust_level="untrusted")

    (request,) = provider.requests
    assert request["tools"] == [{"type": "web_search"}]
    (rendered,) = sink.of_type(PromptRendered)
    assert rendered.trust_level is TrustLevel.UNTRUSTED
    assert [t.name for t in rendered.withheld_hosted_tools] == ["normal"]


def test_adapter_defaults_to_standard_trust() -> None:
    provider = FakeProvider(response(message("Done.")))
    adapter = OpenAIAdapter(client=provider.client, model="gpt-test")

    adapter.evaluate(_prompt(_tool("normal"), _tool("risky", "trusted")))

    assert len(provider.requests[0]["tools"]) == 1


# -- WebSearchSection -------------------------------------------------------------


def test_web_search_section_exposes_its_configured_tool() -> None:
    config = WebSearchConfig(domain_filter=DomainFilter(allowed=("docs.python.org",)))

    section = WebSearchSection(config, key="search", name="docs_search")

    assert section.hosted_tools() == (section.tool,)
    assert section.tool.name == "docs_search"
    assert section.tool.config is config


def test_web_search_section_renders_its_guidance() -> None:
    prompt = Prompt(ns="t", key="ws", sections=[WebSearchSection()])

    rendered = prompt.render()

    assert rendered.text == f"## 1. Web Search (web_search)\n\n{WEB_SEARCH_TEMPLATE}"
    assert [t.kind for t in rendered.hosted_tools] == ["web_search"]


def test_web_search_section_can_be_disabled() -> None:
    prompt = Prompt(ns="t", key="ws", sections=[WebSearchSection(enabled=False)])

    assert prompt.render().hosted_tools == ()
