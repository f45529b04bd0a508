"""The seeds' code examples, run against ``tooling.runtime`` as written.

Every code block of ``../shared/seeds/*.txt`` that targets the runtime is one
test below, named ``test_<seed>_<subject>``. Each test holds the block's code
as the seed writes it, with only its import lines changed (``weakincentives``
becomes ``tooling.runtime``; where the product's name differs, the import
aliases it, e.g. ``InMemorySink as InProcessEventBus``), followed by
assertions on what it must produce. Where a seed elides something (``...``,
an undefined params class or tool), the test fills it in minimally and says
so in a comment. Imports sit inside each test so that one missing name fails
one example, not the module.

Definition blocks (a dataclass or protocol the seed shows the library
defining) are checked against the product's own type: its fields, defaults,
validation and behaviour. Where a seed shows an OpenAI wire format that the
real API does not use (``/work/shared/reference/openai-responses.md``), the
real shape is asserted.

The provider is the real ``openai`` SDK fed realistic Responses API JSON
(``tests/runtime/fakes.py``), or the offline provider over loopback HTTP.

Blocks that are not tests (seed, block, why not a test):

====  ===================================  =========================================
seed  block                                why not a test
====  ===================================  =========================================
000   "Serialization Flow" diagram         a diagram; the flow runs in
                                           test_000_domain_restricted_search and
                                           test_000_geo_localized_search
000   "Output Parsing Flow" diagram        a diagram; the flow runs in
                                           test_000_openai_web_search_codec_as_written
                                           and test_000_callers_read_hosted_outputs
000   "Wire Format Mapping" row            the real API has no block-list;
      DomainFilter.blocked ->              test_000_blocked_domains_refused_before_
      filters.blocked_domains              request asserts the refusal instead
000   "Testing", "Fixtures" (prose)        no code
002   handler signature                    schematic: ParamsT/ResultT stand for the
      def handle_tool(params: ParamsT,     author's types (undefined names); the
      *, context) -> ToolResult[ResultT]   concrete form runs in
                                           test_002_lookup_tool_example
002   ToolContext data model (with         superseded by seed 003's ToolContext
      event_bus)                           (deadline, budget tracker, resources);
                                           checked in test_003_tool_context_fields
003   handler signature                    schematic, as in 002; concrete handlers
      def handle(params: ParamsT, ...)     run in every 003 test
003   "Execution Flow (Pseudocode)"        pseudo-code (resolve_and_parse and
                                           section are undefined); its rules run in
                                           test_003_sequential_dependency_policy,
                                           test_003_read_before_write_policy and
                                           test_003_policy_integration
004   {"type": "built_in", "name": ...}    not the real API: a built-in is sent as
      tool and tool_choice envelopes       its own type ({"type": "file_search",
      (prose)                              ...}), asserted in
                                           test_004_native_section_exposes_file_search
004   "Integration Tests" (prose)          needs OPENAI_API_KEY; no code
====  ===================================  =========================================
"""

import dataclasses
import json
import re
from dataclasses import dataclass, field
from typing import Any

import openai
import pytest

from .fakes import (
    MODEL,
    FakeProvider,
    message,
    response,
    url_citation,
    web_search_call,
)

# -- helpers ------------------------------------------------------------------------


def _adapter(*replies: dict[str, Any]) -> tuple[FakeProvider, Any]:
    from tooling.runtime import OpenAIAdapter

    provider = FakeProvider(*replies)
    return provider, OpenAIAdapter(client=provider.client, model=MODEL)


def _sdk_items(*items: dict[str, Any]) -> list[Any]:
    """Output items as the SDK parses them (typed models, not dicts)."""
    body = response(*items)
    del body["usage"]  # not read here; SDK versions differ on its required fields
    return list(openai.types.responses.Response.model_validate(body).output)


def _executor(prompt: Any, session: Any, *params: Any) -> tuple[Any, Any]:
    from tooling.runtime import InMemorySink, ToolExecutor

    sink = InMemorySink()
    executor = ToolExecutor(
        prompt=prompt,
        rendered=prompt.render(*params, session=session),
        session=session,
        sink=sink,
    )
    return executor, sink


def _call(executor: Any, name: str, arguments: dict[str, Any], call_id: str) -> Any:
    from tooling.runtime import FunctionCall

    return executor.execute(FunctionCall(name, json.dumps(arguments), call_id))


def _ok_tool(name: str) -> Any:
    from tooling.runtime import Tool, ToolContext, ToolResult

    @dataclass(frozen=True)
    class NoParams:
        pass

    def handler(params: NoParams, *, context: ToolContext) -> ToolResult[None]:
        return ToolResult.ok(None, f"{name} passed")

    return Tool[NoParams, None](name=name, description=f"Run {name}.", handler=handler)


WEB_SEARCH_SOURCES = (
    "https://tidesandcurrents.noaa.gov/",
    "https://www.metoffice.gov.uk/weather/tides",
)
ANSWER_TEXT = "High tide in Boston is at 10:42 today."


def _web_search_reply(**extra: Any) -> dict[str, Any]:
    return response(
        web_search_call(query="high tide boston", sources=WEB_SEARCH_SOURCES),
        message(
            ANSWER_TEXT,
            url_citation(
                WEB_SEARCH_SOURCES[0], 0, len(ANSWER_TEXT), title="NOAA Tides"
            ),
        ),
        **extra,
    )


# ==================================================================================
# Seed 000: hosted tools
# ==================================================================================


def test_000_marker_protocols() -> None:
    from tooling.runtime import (
        HostedToolConfig,
        HostedToolOutput,
        WebSearchConfig,
        WebSearchResult,
    )

    # "All configuration dataclasses implement this protocol implicitly when
    # they are frozen dataclasses with slots."
    assert getattr(HostedToolConfig, "_is_runtime_protocol", False)
    assert getattr(HostedToolOutput, "_is_runtime_protocol", False)
    assert isinstance(WebSearchConfig(), HostedToolConfig)
    assert isinstance(WebSearchResult(text=""), HostedToolOutput)
    assert WebSearchConfig.__dataclass_params__.frozen  # type: ignore[attr-defined]
    assert "__slots__" in vars(WebSearchConfig)


def test_000_hosted_tool_construction_rules() -> None:
    from tooling.runtime import HostedTool, PromptValidationError, WebSearchConfig

    tool = HostedTool[WebSearchConfig](
        kind="web_search",
        name="web_search",
        description="Search the web for current information.",
        config=WebSearchConfig(),
    )
    assert (tool.kind, tool.name, tool.config) == (
        "web_search",
        "web_search",
        WebSearchConfig(),
    )
    assert tool.handler is None
    with pytest.raises(dataclasses.FrozenInstanceError):
        tool.name = "other"  # type: ignore[misc]

    def build(**changes: Any) -> Any:
        fields = {
            "kind": "web_search",
            "name": "web_search",
            "description": "Search.",
            "config": WebSearchConfig(),
        }
        return HostedTool(**{**fields, **changes})

    with pytest.raises(PromptValidationError, match=r"\^\[a-z0-9_-\]\{1,64\}\$"):
        build(name="Web Search")
    with pytest.raises(PromptValidationError, match="1-200 ASCII"):
        build(description="x" * 201)
    with pytest.raises(PromptValidationError, match="ASCII"):
        build(description="Recherche über Cafés")

    @dataclass
    class Mutable:
        depth: int = 1

    with pytest.raises(PromptValidationError, match="frozen dataclass"):
        build(config=Mutable())


def test_000_web_search_config_definitions() -> None:
    from tooling.runtime import (
        DomainFilter,
        GeoHint,
        PromptValidationError,
        WebSearchConfig,
    )

    assert DomainFilter() == DomainFilter(allowed=(), blocked=())
    assert DomainFilter(blocked=("pinterest.com",)).blocked == ("pinterest.com",)
    assert GeoHint() == GeoHint(
        country_code=None, city=None, region=None, timezone=None
    )
    config = WebSearchConfig()
    assert (config.domain_filter, config.geo_hint, config.allow_live_access) == (
        None,
        None,
        True,
    )
    # Validation, as the seed lists it.
    with pytest.raises(PromptValidationError, match="without a scheme"):
        DomainFilter(allowed=("https://cdc.gov",))
    with pytest.raises(PromptValidationError, match="ISO 3166-1 alpha-2"):
        GeoHint(country_code="UK")
    with pytest.raises(PromptValidationError, match="IANA timezone"):
        GeoHint(timezone="London")


def test_000_citation_and_web_search_result_definitions() -> None:
    from tooling.runtime import Citation, WebSearchResult

    citation = Citation("https://www.cdc.gov/flu", "Flu | CDC", (0, 12))
    assert (citation.url, citation.title, citation.span) == (
        "https://www.cdc.gov/flu",
        "Flu | CDC",
        (0, 12),
    )
    assert Citation(url="https://a.example", title="A").span is None
    result = WebSearchResult("Flu season peaks in February.")
    assert (result.text, result.citations, result.source_urls) == (
        "Flu season peaks in February.",
        (),
        (),
    )


def test_000_web_search_tool_factory() -> None:
    from tooling.runtime import HostedTool, WebSearchConfig, web_search_tool

    assert web_search_tool() == HostedTool(
        kind="web_search",
        name="web_search",
        description="Search the web for current information and cite sources.",
        config=WebSearchConfig(),
    )
    named = web_search_tool(WebSearchConfig(allow_live_access=False), name="cached")
    assert (named.kind, named.name, named.config.allow_live_access) == (
        "web_search",
        "cached",
        False,
    )


def test_000_section_hosted_tools_override_point() -> None:
    from tooling.runtime import (
        HostedTool,
        MarkdownSection,
        Prompt,
        Section,
        web_search_tool,
    )

    @dataclass(frozen=True)
    class TopicParams:
        topic: str = "tides"

    tool = web_search_tool()

    # A subclass of the generic base overrides the hook.
    class SearchingSection(MarkdownSection[TopicParams]):
        def hosted_tools(self) -> tuple[HostedTool[Any], ...]:
            return (tool,)

    plain = MarkdownSection(title="Plain", key="plain", template="No tools here.")
    assert plain.hosted_tools() == ()
    assert issubclass(SearchingSection, Section)
    searching = SearchingSection(title="Search", key="search", template="On $topic.")
    assert searching.params_type is TopicParams
    rendered = Prompt(ns="seeds", key="hooks", sections=[plain, searching]).render()
    assert rendered.hosted_tools == (tool,)


def _seed_000_web_search_section() -> Any:
    """Seed 000's ``WebSearchSection`` class, as written."""
    from tooling.runtime import (
        EmptyParams,
        HostedTool,
        MarkdownSection,
        WebSearchConfig,
        web_search_tool,
    )

    # Elided in the seed: the template's text.
    _WEB_SEARCH_TEMPLATE = "Use web search for facts that may have changed."

    class WebSearchSection(MarkdownSection[EmptyParams]):
        """Section that enables web search capability."""

        def __init__(
            self,
            config: WebSearchConfig = WebSearchConfig(),  # noqa: B008
            *,
            key: str = "web_search",
        ) -> None:
            self._tool = web_search_tool(config)
            super().__init__(
                title="Web Search",
                key=key,
                template=_WEB_SEARCH_TEMPLATE,
            )

        def hosted_tools(self) -> tuple[HostedTool[WebSearchConfig], ...]:
            return (self._tool,)

    return WebSearchSection


def test_000_web_search_section_as_written() -> None:
    from tooling.runtime import (
        DomainFilter,
        EmptyParams,
        Prompt,
        WebSearchConfig,
        web_search_tool,
    )

    WebSearchSection = _seed_000_web_search_section()
    section = WebSearchSection()
    assert section.params_type is EmptyParams
    assert section.hosted_tools() == (web_search_tool(),)
    config = WebSearchConfig(domain_filter=DomainFilter(allowed=("www.who.int",)))
    keyed = WebSearchSection(config, key="who_search")
    assert keyed.key == "who_search"
    assert keyed.hosted_tools()[0].config is config

    prompt = Prompt(ns="seeds", key="web-search-section", sections=[section])
    rendered = prompt.render()
    assert rendered.text == (
        "## 1. Web Search (web_search)\n\n"
        "Use web search for facts that may have changed."
    )
    _, adapter = _adapter()
    assert adapter.tools_payload(rendered) == [{"type": "web_search"}]


def test_000_product_web_search_section() -> None:
    from tooling.runtime import Prompt, WebSearchConfig, WebSearchSection

    section = WebSearchSection(config=WebSearchConfig(allow_live_access=False))
    assert section.key == "web_search"
    assert [t.name for t in section.hosted_tools()] == ["web_search"]
    rendered = Prompt(ns="seeds", key="product-section", sections=[section]).render()
    assert rendered.text.startswith("## 1. Web Search (web_search)\n\n")
    _, adapter = _adapter()
    assert adapter.tools_payload(rendered) == [
        {"type": "web_search", "external_web_access": False}
    ]


def test_000_rendered_prompt_collects_tools_depth_first() -> None:
    from tooling.runtime import (
        MarkdownSection,
        Prompt,
        RenderedPrompt,
        web_search_tool,
    )

    first = web_search_tool(name="first_search")
    nested = web_search_tool(name="nested_search")
    hidden = web_search_tool(name="hidden_search")
    last = web_search_tool(name="last_search")
    lint = _ok_tool("lint")
    prompt = Prompt(
        ns="seeds",
        key="depth-first",
        sections=[
            MarkdownSection(
                title="Outer",
                key="outer",
                template="Outer.",
                tools=[lint],
                hosted_tools=(first,),
                children=[
                    MarkdownSection(
                        title="Inner",
                        key="inner",
                        template="Inner.",
                        hosted_tools=(nested,),
                    ),
                    MarkdownSection(
                        title="Hidden",
                        key="hidden",
                        template="Hidden.",
                        hosted_tools=(hidden,),
                        enabled=False,
                    ),
                ],
            ),
            MarkdownSection(
                title="Last", key="last", template="Last.", hosted_tools=(last,)
            ),
        ],
    )
    rendered = prompt.render()
    assert isinstance(rendered, RenderedPrompt)
    assert rendered.tools == (lint,)
    assert rendered.hosted_tools == (first, nested, last)
    # The seed declares ``RenderedPrompt(Generic[OutputT])``.
    assert RenderedPrompt[Any] is not None


def test_000_hosted_tool_codec_protocol() -> None:
    from tooling.runtime import (
        HostedToolCodec,
        OpenAIWebSearchCodec,
        WebSearchConfig,
        WebSearchResult,
        web_search_tool,
    )

    # ``HostedToolCodec[ConfigT, OutputT]``: two type parameters.
    assert HostedToolCodec[WebSearchConfig, WebSearchResult] is not None
    codec = OpenAIWebSearchCodec()
    assert codec.kind == "web_search"
    assert codec.serialize(web_search_tool()) == {"type": "web_search"}
    # "Return None from parse_output if the tool was not invoked."
    items = _sdk_items(message("No search needed."))
    assert codec.parse_output(items, web_search_tool()) is None


def test_000_codec_registry() -> None:
    from tooling.runtime import OpenAIWebSearchCodec

    _, adapter = _adapter()
    assert isinstance(adapter.hosted_tool_codecs["web_search"], OpenAIWebSearchCodec)
    assert {"web_search", "file_search", "code_interpreter"} <= set(
        adapter.hosted_tool_codecs
    )


def test_000_openai_web_search_codec_as_written() -> None:
    from collections.abc import Sequence

    from tooling.runtime import (
        Citation,
        DomainFilter,
        GeoHint,
        HostedTool,
        HostedToolCodec,
        WebSearchConfig,
        WebSearchResult,
        web_search_tool,
    )
    from tooling.runtime import OpenAIWebSearchCodec as ProductCodec

    class OpenAIWebSearchCodec(HostedToolCodec[WebSearchConfig, WebSearchResult]):
        """OpenAI Responses API codec for web_search."""

        @property
        def kind(self) -> str:
            return "web_search"

        def serialize(
            self,
            tool: HostedTool[WebSearchConfig],
        ) -> dict[str, Any]:
            spec: dict[str, Any] = {"type": "web_search"}
            config = tool.config

            if config.domain_filter:
                filters: dict[str, Any] = {}
                if config.domain_filter.allowed:
                    filters["allowed_domains"] = list(config.domain_filter.allowed)
                if config.domain_filter.blocked:
                    filters["blocked_domains"] = list(config.domain_filter.blocked)
                if filters:
                    spec["filters"] = filters

            if config.geo_hint:
                location: dict[str, Any] = {"type": "approximate"}
                if config.geo_hint.country_code:
                    location["country"] = config.geo_hint.country_code
                if config.geo_hint.city:
                    location["city"] = config.geo_hint.city
                if config.geo_hint.region:
                    location["region"] = config.geo_hint.region
                if config.geo_hint.timezone:
                    location["timezone"] = config.geo_hint.timezone
                spec["user_location"] = location

            if not config.allow_live_access:
                spec["external_web_access"] = False

            return spec

        def parse_output(
            self,
            response_items: Sequence[Any],
            tool: HostedTool[WebSearchConfig],
        ) -> WebSearchResult | None:
            # Find web_search_call items and message with annotations
            web_search_call = None
            message_content = None

            for item in response_items:
                item_type = getattr(item, "type", None)
                if item_type == "web_search_call":
                    web_search_call = item
                elif item_type == "message":
                    message_content = item

            if web_search_call is None:
                return None

            # Extract text and citations from message
            text = ""
            citations: list[Citation] = []

            if message_content:
                content = getattr(message_content, "content", [])
                for part in content:
                    if getattr(part, "type", None) == "output_text":
                        text = getattr(part, "text", "")
                        for ann in getattr(part, "annotations", []):
                            if getattr(ann, "type", None) == "url_citation":
                                citations.append(
                                    Citation(
                                        url=getattr(ann, "url", ""),
                                        title=getattr(ann, "title", ""),
                                        span=(
                                            getattr(ann, "start_index", 0),
                                            getattr(ann, "end_index", 0),
                                        ),
                                    )
                                )

            return WebSearchResult(
                text=text,
                citations=tuple(citations),
                source_urls=(),  # Requires include=["web_search_call.action.sources"]
            )

    seed, product = OpenAIWebSearchCodec(), ProductCodec()
    configs = [
        WebSearchConfig(),
        WebSearchConfig(
            domain_filter=DomainFilter(allowed=("www.cdc.gov", "www.who.int"))
        ),
        WebSearchConfig(
            geo_hint=GeoHint(
                country_code="DE",
                city="Berlin",
                region="Berlin",
                timezone="Europe/Berlin",
            )
        ),
        WebSearchConfig(allow_live_access=False),
    ]
    # On every config the real API accepts, the seed's serialiser and the
    # product's agree.
    for config in configs:
        tool = web_search_tool(config)
        assert seed.serialize(tool) == product.serialize(tool)
    assert seed.serialize(web_search_tool(configs[2]))["user_location"] == {
        "type": "approximate",
        "country": "DE",
        "city": "Berlin",
        "region": "Berlin",
        "timezone": "Europe/Berlin",
    }

    items = _sdk_items(*_web_search_reply()["output"])
    seed_result = seed.parse_output(items, web_search_tool())
    product_result = product.parse_output(items, web_search_tool())
    assert seed_result is not None and product_result is not None
    assert seed_result.text == product_result.text == ANSWER_TEXT
    assert [(c.url, c.title, c.span) for c in seed_result.citations] == [
        (WEB_SEARCH_SOURCES[0], "NOAA Tides", (0, len(ANSWER_TEXT)))
    ]
    assert [(c.url, c.title, c.span) for c in product_result.citations] == [
        (c.url, c.title, c.span) for c in seed_result.citations
    ]
    # The product also fills what the seed leaves empty (the include is sent).
    assert product_result.source_urls == WEB_SEARCH_SOURCES
    assert seed.parse_output(_sdk_items(message()), web_search_tool()) is None


def test_000_blocked_domains_refused_before_request() -> None:
    from tooling.runtime import (
        DomainFilter,
        Prompt,
        PromptEvaluationError,
        WebSearchConfig,
        WebSearchSection,
    )

    # The seed maps ``blocked`` to ``filters.blocked_domains``; the real API
    # has no block-list, so the OpenAI adapter refuses it before any request.
    config = WebSearchConfig(domain_filter=DomainFilter(blocked=("pinterest.com",)))
    prompt = Prompt(
        ns="seeds", key="blocked", sections=[WebSearchSection(config=config)]
    )
    provider, adapter = _adapter(_web_search_reply())
    with pytest.raises(PromptEvaluationError, match="no block-list") as raised:
        adapter.evaluate(prompt)
    assert raised.value.phase == "render"
    assert provider.requests == []


def test_000_prompt_response_definition() -> None:
    from collections.abc import Mapping

    from tooling.runtime import PromptResponse

    response_ = PromptResponse(prompt_name="lookup", text="Done.", output=None)
    assert isinstance(response_.hosted_outputs, Mapping)
    assert dict(response_.hosted_outputs) == {}
    # The seed declares ``PromptResponse(Generic[OutputT])``.
    assert PromptResponse[Any] is not None


def test_000_callers_read_hosted_outputs(capsys: pytest.CaptureFixture[str]) -> None:
    from tooling.runtime import (
        InMemorySession,
        MarkdownSection,
        Prompt,
        ToolInvoked,
        WebSearchSection,
    )
    from tooling.runtime import InMemorySink as InProcessEventBus

    # Elided in the seed: the prompt, adapter, bus and session.
    provider, adapter = _adapter(_web_search_reply())
    prompt = Prompt(
        ns="research",
        key="lookup",
        sections=[
            MarkdownSection(title="Task", key="task", template="When is high tide?"),
            WebSearchSection(),
        ],
    )
    bus = InProcessEventBus()
    session = InMemorySession()

    # Seed: ``adapter.evaluate(prompt, bus=bus, session=session)``; the
    # product's keyword is ``sink=`` (ADR 0011).
    response = adapter.evaluate(prompt, sink=bus, session=session)
    web_result = response.hosted_outputs.get("web_search")
    if web_result:
        for citation in web_result.citations:
            print(f"- [{citation.title}]({citation.url})")

    assert capsys.readouterr().out == f"- [NOAA Tides]({WEB_SEARCH_SOURCES[0]})\n"
    (request,) = provider.requests
    assert request["tools"] == [{"type": "web_search"}]
    assert request["include"] == ["web_search_call.action.sources"]
    (invoked,) = bus.of_type(ToolInvoked)
    assert (invoked.name, invoked.native, invoked.kind) == (
        "web_search",
        True,
        "web_search",
    )


def test_000_basic_web_search_untyped_placeholder_refused() -> None:
    from tooling.runtime import MarkdownSection, PromptValidationError

    # As written, the seed's task section has a ``$question`` placeholder but
    # no params type to fill it from; the product refuses it where it is built.
    with pytest.raises(PromptValidationError, match=r"\$question"):
        MarkdownSection(
            title="Task",
            key="task",
            template="Answer this question: $question",
        )


def test_000_basic_web_search() -> None:
    from tooling.runtime import (
        InMemorySession,
        MarkdownSection,
        Prompt,
        WebSearchSection,
    )
    from tooling.runtime import InMemorySink as InProcessEventBus

    # Elided in the seed: ``Answer`` and the params the ``$question``
    # placeholder comes from (``MarkdownSection[Question]``, see the test
    # above).
    @dataclass(frozen=True)
    class Answer:
        answer: str

    @dataclass(frozen=True)
    class Question:
        question: str

    prompt = Prompt[Answer](
        ns="research",
        key="lookup",
        sections=[
            MarkdownSection[Question](
                title="Task",
                key="task",
                template="Answer this question: $question",
            ),
            WebSearchSection(),
        ],
    )

    reply = json.dumps({"answer": ANSWER_TEXT})
    provider, adapter = _adapter(
        response(
            web_search_call(query="high tide boston", sources=WEB_SEARCH_SOURCES),
            message(reply),
        )
    )
    bus, session = InProcessEventBus(), InMemorySession()
    response_ = adapter.evaluate(
        prompt,
        Question(question="When is high tide in Boston?"),
        sink=bus,
        session=session,
    )

    assert response_.output == Answer(answer=ANSWER_TEXT)
    (request,) = provider.requests
    assert request["input"][0]["content"].startswith(
        "## 1. Task (task)\n\nAnswer this question: When is high tide in Boston?"
    )
    assert request["tools"] == [{"type": "web_search"}]
    assert request["text"]["format"]["type"] == "json_schema"
    assert request["text"]["format"]["schema"]["properties"] == {
        "answer": {"type": "string"}
    }


def test_000_domain_restricted_search() -> None:
    from tooling.runtime import DomainFilter, Prompt, WebSearchConfig, WebSearchSection

    config = WebSearchConfig(
        domain_filter=DomainFilter(
            allowed=("pubmed.ncbi.nlm.nih.gov", "www.cdc.gov", "www.who.int"),
        ),
    )

    section = WebSearchSection(config=config)

    rendered = Prompt(ns="seeds", key="domains", sections=[section]).render()
    _, adapter = _adapter()
    assert adapter.tools_payload(rendered) == [
        {
            "type": "web_search",
            "filters": {
                "allowed_domains": [
                    "pubmed.ncbi.nlm.nih.gov",
                    "www.cdc.gov",
                    "www.who.int",
                ]
            },
        }
    ]


def test_000_geo_localized_search() -> None:
    from tooling.runtime import GeoHint, Prompt, WebSearchConfig, WebSearchSection

    config = WebSearchConfig(
        geo_hint=GeoHint(
            country_code="GB",
            city="London",
            timezone="Europe/London",
        ),
    )

    section = WebSearchSection(config=config)

    rendered = Prompt(ns="seeds", key="geo", sections=[section]).render()
    _, adapter = _adapter()
    assert adapter.tools_payload(rendered) == [
        {
            "type": "web_search",
            "user_location": {
                "type": "approximate",
                "country": "GB",
                "city": "London",
                "timezone": "Europe/London",
            },
        }
    ]


def test_000_inline_tool_untyped_placeholder_refused() -> None:
    from tooling.runtime import (
        MarkdownSection,
        PromptValidationError,
        WebSearchConfig,
        web_search_tool,
    )

    tool = web_search_tool(
        WebSearchConfig(allow_live_access=False),
        name="cached_search",
    )

    # As written: ``$topic`` with no params type to fill it from.
    with pytest.raises(PromptValidationError, match=r"\$topic"):
        MarkdownSection(
            title="Research",
            key="research",
            template="Find information about $topic",
            hosted_tools=(tool,),
        )


def test_000_inline_tool_construction() -> None:
    from tooling.runtime import (
        MarkdownSection,
        Prompt,
        WebSearchConfig,
        web_search_tool,
    )

    # Elided in the seed: the params ``$topic`` comes from.
    @dataclass(frozen=True)
    class TopicParams:
        topic: str

    tool = web_search_tool(
        WebSearchConfig(allow_live_access=False),
        name="cached_search",
    )

    section = MarkdownSection[TopicParams](
        title="Research",
        key="research",
        template="Find information about $topic",
        hosted_tools=(tool,),
    )

    rendered = Prompt(ns="seeds", key="inline", sections=[section]).render(
        TopicParams(topic="tidal energy")
    )
    assert rendered.text == (
        "## 1. Research (research)\n\nFind information about tidal energy"
    )
    assert rendered.hosted_tool("cached_search") is tool
    _, adapter = _adapter()
    assert adapter.tools_payload(rendered) == [
        {"type": "web_search", "external_web_access": False}
    ]


def test_000_adding_a_hosted_tool() -> None:
    from collections.abc import Mapping, Sequence

    from tooling.runtime import (
        HostedTool,
        HostedToolCodec,
        HostedToolConfig,
        HostedToolOutput,
        InMemorySession,
        MarkdownSection,
        OpenAIAdapter,
        OpenAIWebSearchCodec,
        Prompt,
    )

    # Step 1: Define Configuration (Core)
    @dataclass(slots=True, frozen=True)
    class CodeInterpreterConfig(HostedToolConfig):
        """Configuration for code interpreter capability."""

        allowed_languages: tuple[str, ...] = ("python",)
        timeout_seconds: int = 30

    # Step 2: Define Output (Core)
    @dataclass(slots=True, frozen=True)
    class CodeInterpreterResult(HostedToolOutput):
        """Parsed result from code interpreter execution."""

        code: str
        stdout: str
        stderr: str
        exit_code: int

    # Step 3: Create Factory (Core)
    def code_interpreter_tool(
        config: CodeInterpreterConfig = CodeInterpreterConfig(),
        *,
        name: str = "code_interpreter",
    ) -> HostedTool[CodeInterpreterConfig]:
        return HostedTool(
            kind="code_interpreter",
            name=name,
            description="Execute code in a sandboxed environment.",
            config=config,
        )

    # Step 4: Implement Codec (Adapter)
    class OpenAICodeInterpreterCodec(
        HostedToolCodec[CodeInterpreterConfig, CodeInterpreterResult]
    ):
        @property
        def kind(self) -> str:
            return "code_interpreter"

        def serialize(
            self,
            tool: HostedTool[CodeInterpreterConfig],
        ) -> dict[str, Any]:
            # Map to OpenAI wire format
            # (elided in the seed; the real API's shape)
            return {"type": "code_interpreter", "container": {"type": "auto"}}

        def parse_output(
            self,
            response_items: Sequence[Any],
            tool: HostedTool[CodeInterpreterConfig],
        ) -> CodeInterpreterResult | None:
            # Parse provider response
            # (elided in the seed; a minimal reading of code_interpreter_call)
            for item in response_items:
                if getattr(item, "type", None) == "code_interpreter_call":
                    logs = [
                        getattr(output, "logs", "")
                        for output in getattr(item, "outputs", None) or []
                        if getattr(output, "type", None) == "logs"
                    ]
                    return CodeInterpreterResult(
                        code=getattr(item, "code", "") or "",
                        stdout="".join(logs),
                        stderr="",
                        exit_code=0,
                    )
            return None

    # Step 5: Register Codec (Adapter)
    hosted_tool_codecs: Mapping[str, HostedToolCodec[Any, Any]] = {
        "web_search": OpenAIWebSearchCodec(),
        "code_interpreter": OpenAICodeInterpreterCodec(),  # NEW
    }

    assert HostedToolCodec[Any, Any] is not None
    tool = code_interpreter_tool()
    assert (tool.kind, tool.name, tool.config) == (
        "code_interpreter",
        "code_interpreter",
        CodeInterpreterConfig(),
    )
    provider = FakeProvider(
        response(
            {
                "id": "ci_1",
                "type": "code_interpreter_call",
                "status": "completed",
                "container_id": "cntr_1",
                "code": "print(1+1)",
                "outputs": [{"type": "logs", "logs": "2\n"}],
            },
            message("1 + 1 is 2."),
        )
    )
    adapter = OpenAIAdapter(
        client=provider.client, model=MODEL, hosted_tool_codecs=hosted_tool_codecs
    )
    prompt = Prompt(
        ns="seeds",
        key="new-kind",
        sections=[
            MarkdownSection(
                title="Compute",
                key="compute",
                template="Add 1 and 1.",
                hosted_tools=(tool,),
            )
        ],
    )
    result = adapter.evaluate(prompt, session=InMemorySession())
    (request,) = provider.requests
    assert request["tools"] == [
        {"type": "code_interpreter", "container": {"type": "auto"}}
    ]
    assert result.hosted_outputs["code_interpreter"] == CodeInterpreterResult(
        code="print(1+1)", stdout="2\n", stderr="", exit_code=0
    )


def test_000_unsupported_kind_refused_before_request() -> None:
    from tooling.runtime import (
        HostedTool,
        MarkdownSection,
        Prompt,
        PromptEvaluationError,
    )

    @dataclass(frozen=True, slots=True)
    class TelepathyConfig:
        range_km: int = 1

    tool = HostedTool(
        kind="telepathy",
        name="mind_reader",
        description="Read minds.",
        config=TelepathyConfig(),
    )
    prompt = Prompt(
        ns="seeds",
        key="unknown-kind",
        sections=[
            MarkdownSection(
                title="Task", key="task", template="Guess.", hosted_tools=(tool,)
            )
        ],
    )
    provider, adapter = _adapter(response(message()))
    with pytest.raises(
        PromptEvaluationError,
        match=r"Unsupported hosted tool kind 'telepathy'.*OpenAI adapter",
    ) as raised:
        adapter.evaluate(prompt)
    assert raised.value.phase == "render"
    assert provider.requests == []


# ==================================================================================
# Seed 001: native tools
# ==================================================================================


def _seed_001_native_tool() -> tuple[Any, Any, Any]:
    """Seed 001's example, as written; returns the tool and its two types."""
    from tooling.runtime import NativeTool, ToolExample

    @dataclass
    class WebSearchParams:
        query: str

    @dataclass
    class WebSearchResult:
        # Capture the provider payload verbatim; rendering is handled by ToolResult.
        payload: dict[str, object]

    web_search_tool = NativeTool[WebSearchParams, WebSearchResult](
        name="web_search",
        description="Use the provider's built-in search to gather fresh results.",
        examples=(
            ToolExample(
                description="Search for current weather in Paris.",
                input=WebSearchParams(query="current weather in Paris"),
                output=WebSearchResult(payload={"results": []}),
            ),
        ),
    )
    return web_search_tool, WebSearchParams, WebSearchResult


def test_001_native_tool_declaration() -> None:
    from tooling.runtime import NativeTool, PromptValidationError, Tool, ToolContext

    tool, params_type, result_type = _seed_001_native_tool()
    assert isinstance(tool, Tool)
    assert (tool.params_type, tool.result_type) == (params_type, result_type)
    assert tool.handler is None
    assert tool.accepts_overrides is False
    assert tool.is_native

    def handler(params: Any, *, context: ToolContext) -> Any:
        raise AssertionError("never called")

    with pytest.raises(PromptValidationError, match="must not set a handler"):
        NativeTool[params_type, result_type](  # type: ignore[valid-type]
            name="web_search", description="Search.", handler=handler
        )


def test_001_native_tool_sent_as_built_in() -> None:
    from tooling.runtime import MarkdownSection, Prompt

    tool, _, _ = _seed_001_native_tool()
    # "Register alongside client tools inside a prompt section."
    prompt = Prompt(
        ns="seeds",
        key="native",
        sections=[
            MarkdownSection(
                title="Research",
                key="research",
                template="Use search for fresh facts.",
                tools=[tool, _ok_tool("lint")],
            )
        ],
    )
    rendered = prompt.render()
    _, adapter = _adapter()
    payload = adapter.tools_payload(rendered)
    assert payload[0] == {"type": "web_search"}
    assert payload[1]["type"] == "function" and payload[1]["name"] == "lint"
    # The example is documented in the prompt, as for client tools.
    assert "Search for current weather in Paris." in rendered.text


def test_001_native_call_becomes_tool_result() -> None:
    from tooling.runtime import (
        InMemorySession,
        InMemorySink,
        MarkdownSection,
        Prompt,
        ToolInvoked,
    )

    tool, params_type, result_type = _seed_001_native_tool()
    prompt = Prompt(
        ns="seeds",
        key="native-call",
        sections=[
            MarkdownSection(
                title="Research",
                key="research",
                template="When is high tide?",
                tools=[tool],
            )
        ],
    )
    provider, adapter = _adapter(_web_search_reply())
    sink = InMemorySink()
    adapter.evaluate(prompt, sink=sink, session=InMemorySession())

    (invoked,) = sink.of_type(ToolInvoked)
    assert (invoked.name, invoked.native, invoked.kind, invoked.provider) == (
        "web_search",
        True,
        "web_search",
        "openai",
    )
    assert invoked.success
    assert isinstance(invoked.params, params_type)
    assert invoked.params.query == "high tide boston"
    assert invoked.call_id == "ws_1"
    value = invoked.result.value
    assert isinstance(value, result_type)
    # "Capture the provider payload verbatim": the item as received.
    item = web_search_call(query="high tide boston", sources=WEB_SEARCH_SOURCES)
    assert value.payload == item
    # No render() on the seed's result: ToolResult renders it as JSON.
    assert invoked.rendered_output == invoked.result.render()
    assert json.loads(invoked.rendered_output) == {"payload": item}
    (request,) = provider.requests
    assert request["tools"] == [{"type": "web_search"}]
    assert request["include"] == ["web_search_call.action.sources"]


def test_001_params_checked_against_provider_payload() -> None:
    from tooling.runtime import (
        MarkdownSection,
        NativeTool,
        Prompt,
        PromptEvaluationError,
    )

    @dataclass
    class SearchParams:
        query: str
        max_results: int  # web_search_call never carries it

    @dataclass
    class SearchResult:
        payload: dict[str, object]

    tool = NativeTool[SearchParams, SearchResult](
        name="web_search", description="Search the web."
    )
    prompt = Prompt(
        ns="seeds",
        key="native-mismatch",
        sections=[
            MarkdownSection(title="T", key="t", template="Search.", tools=[tool])
        ],
    )
    provider, adapter = _adapter(_web_search_reply())
    with pytest.raises(PromptEvaluationError, match="max_results") as raised:
        adapter.evaluate(prompt)
    assert raised.value.phase == "render"
    assert provider.requests == []


# ==================================================================================
# Seed 002: tool runtime (first version)
# ==================================================================================


def test_002_tool_renderable_result() -> None:
    from tooling.runtime import (
        InMemorySession,
        MarkdownSection,
        Prompt,
        Tool,
        ToolContext,
        ToolInvoked,
        ToolRenderableResult,
        ToolResult,
    )

    @dataclass(frozen=True)
    class Forecast:
        city: str
        high_c: int

        def render(self) -> str:
            return f"{self.city}: high of {self.high_c} C"

    @dataclass(frozen=True)
    class Raw:
        city: str
        note: str | None = None

    def takes_renderable(value: ToolRenderableResult) -> str:
        return value.render()

    assert takes_renderable(Forecast("Paris", 21)) == "Paris: high of 21 C"
    # A dataclass's own render() wins; otherwise serde JSON without None.
    assert ToolResult.ok(Forecast("Paris", 21)).render() == "Paris: high of 21 C"
    assert ToolResult.ok(Raw("Paris")).render() == '{"city": "Paris"}'

    @dataclass(frozen=True)
    class CityParams:
        city: str

    def forecast(params: CityParams, *, context: ToolContext) -> ToolResult[Forecast]:
        return ToolResult.ok(Forecast(params.city, 21), "Forecast ready.")

    prompt = Prompt(
        ns="seeds",
        key="renderable",
        sections=[
            MarkdownSection(
                title="Weather",
                key="weather",
                template="Forecasts.",
                tools=[
                    Tool[CityParams, Forecast](
                        name="forecast", description="Forecast.", handler=forecast
                    )
                ],
            )
        ],
    )
    executor, sink = _executor(prompt, InMemorySession())
    execution = _call(executor, "forecast", {"city": "Paris"}, "call_1")
    # The provider sees message + render(); ToolInvoked records the same text.
    assert execution.output == "Forecast ready.\n\nParis: high of 21 C"
    (invoked,) = sink.of_type(ToolInvoked)
    assert invoked.rendered_output == "Paris: high of 21 C"
    assert invoked.model_output == execution.output


def test_002_lookup_tool_example() -> None:
    from tooling.runtime import (
        InMemorySession,
        MarkdownSection,
        Prompt,
        Tool,
        ToolContext,
        ToolResult,
    )

    @dataclass
    class LookupParams:
        entity_id: str = field(metadata={"description": "Global identifier to fetch"})
        include_related: bool = field(default=False)

    @dataclass
    class LookupResult:
        entity_id: str
        document_url: str

    def lookup_handler(
        params: LookupParams, *, context: ToolContext
    ) -> ToolResult[LookupResult]:
        result = LookupResult(
            entity_id=params.entity_id, document_url="https://example.com"
        )
        message = f"Fetched entity {result.entity_id}."
        return ToolResult(message=message, value=result)

    lookup_tool = Tool[LookupParams, LookupResult](
        name="lookup_entity",
        description="Fetch structured information for a given entity id.",
        handler=lookup_handler,
    )

    prompt = Prompt(
        ns="examples/tooling",
        key="tools_overview",
        name="tools_overview",
        sections=[
            MarkdownSection(
                title="Guidance",
                template="Use tools when you need up-to-date context.",
                tools=[lookup_tool],
            )
        ],
    )

    rendered = prompt.render()
    markdown = rendered.text
    tools = rendered.tools
    assert tools[0].name == "lookup_entity"

    assert markdown == (
        "## 1. Guidance (guidance)\n\nUse tools when you need up-to-date context."
    )
    assert dict(rendered.tool_param_descriptions) == {}
    _, adapter = _adapter()
    assert adapter.tools_payload(rendered) == [
        {
            "type": "function",
            "name": "lookup_entity",
            "description": "Fetch structured information for a given entity id.",
            "parameters": {
                "type": "object",
                "properties": {
                    "entity_id": {
                        "type": "string",
                        "description": "Global identifier to fetch",
                    },
                    # Strict mode: a defaulted field is required and
                    # nullable; null means "use the default".
                    "include_related": {"type": ["boolean", "null"]},
                },
                "required": ["entity_id", "include_related"],
                "additionalProperties": False,
            },
            "strict": True,
        }
    ]
    executor, _ = _executor(prompt, InMemorySession())
    execution = _call(
        executor,
        "lookup_entity",
        {"entity_id": "ent-7", "include_related": None},
        "call_1",
    )
    assert execution.result.success
    assert execution.result.value == LookupResult("ent-7", "https://example.com")
    assert execution.output == (
        'Fetched entity ent-7.\n\n{"entity_id": "ent-7", '
        '"document_url": "https://example.com"}'
    )


# ==================================================================================
# Seed 003: tool runtime (later version)
# ==================================================================================


def test_003_tool_result_factories() -> None:
    from tooling.runtime import ToolResult

    ok = ToolResult.ok({"n": 1}, "Counted.")
    assert (ok.message, ok.value, ok.success) == ("Counted.", {"n": 1}, True)
    failed: ToolResult[None] = ToolResult.error("No such entity.")
    assert (failed.message, failed.value, failed.success) == (
        "No such entity.",
        None,
        False,
    )
    assert failed.exclude_value_from_context is False


def test_003_tool_context_fields() -> None:
    from tooling.runtime import ToolContext

    names = {f.name for f in dataclasses.fields(ToolContext)}
    assert {
        "prompt",
        "rendered_prompt",
        "adapter",
        "session",
        "deadline",
        "budget_tracker",
    } <= names
    assert ToolContext.__dataclass_params__.frozen  # type: ignore[attr-defined]
    for name in ("resources", "filesystem"):
        assert isinstance(getattr(ToolContext, name), property)
    assert callable(ToolContext.beat)


def test_003_resource_access() -> None:
    from tooling.runtime import (
        Filesystem,
        InMemoryFilesystem,
        InMemorySession,
        MarkdownSection,
        Prompt,
        Tool,
        ToolContext,
        ToolResult,
    )

    # Elided in the seed: ``Params``, ``Result`` and what the handler does
    # with the filesystem.
    @dataclass(frozen=True)
    class Params:
        path: str

    @dataclass(frozen=True)
    class Result:
        content: str
        same_as_shorthand: bool

    def my_handler(params: Params, *, context: ToolContext) -> ToolResult[Result]:
        # mypy refuses an abstract class for type[T] (python/mypy#4717).
        fs = context.resources.get(Filesystem)  # type: ignore[type-abstract]
        # Or shorthand: fs = context.filesystem
        assert fs is not None
        return ToolResult.ok(
            Result(fs.read(params.path), fs is context.filesystem), "Read."
        )

    session = InMemorySession(filesystem=InMemoryFilesystem({"notes.md": "tides"}))
    prompt = Prompt(
        ns="seeds",
        key="resources",
        sections=[
            MarkdownSection(
                title="Files",
                key="files",
                template="Read files.",
                tools=[
                    Tool(name="read_notes", description="Read.", handler=my_handler)
                ],
            )
        ],
    )
    executor, _ = _executor(prompt, session)
    execution = _call(executor, "read_notes", {"path": "notes.md"}, "call_1")
    assert execution.result.value == Result("tides", True)


def test_003_section_integration() -> None:
    from tooling.runtime import (
        MarkdownSection,
        ReadBeforeWritePolicy,
        Tool,
        ToolContext,
        ToolResult,
    )

    # Elided in the seed: ``Params``, ``lookup_tool`` and ``search_tool``.
    @dataclass(frozen=True)
    class Params:
        audience: str = "operators"

    @dataclass(frozen=True)
    class Query:
        text: str

    @dataclass(frozen=True)
    class Hit:
        title: str

    def lookup(params: Query, *, context: ToolContext) -> ToolResult[Hit]:
        return ToolResult.ok(Hit(params.text))

    lookup_tool = Tool[Query, Hit](
        name="lookup", description="Look up.", handler=lookup
    )
    search_tool = Tool[Query, Hit](name="search", description="Search.", handler=lookup)

    section = MarkdownSection[Params](
        title="Guidance",
        key="guidance",
        template="Use tools when needed.",
        tools=[lookup_tool, search_tool],
        policies=[ReadBeforeWritePolicy()],
    )

    assert section.params_type is Params
    assert section.tools() == (lookup_tool, search_tool)
    (policy,) = section.policies
    assert isinstance(policy, ReadBeforeWritePolicy)
    assert section.render(Params(), 0, "1") == (
        "## 1. Guidance (guidance)\n\nUse tools when needed."
    )


def test_003_sequential_dependency_policy() -> None:
    from tooling.runtime import (
        InMemorySession,
        MarkdownSection,
        PolicyDenied,
        PolicyState,
        Prompt,
        SequentialDependencyPolicy,
    )

    policy = SequentialDependencyPolicy(
        dependencies={
            "deploy": frozenset({"test", "build"}),
            "build": frozenset({"lint"}),
        }
    )

    prompt = Prompt(
        ns="seeds",
        key="pipeline",
        sections=[
            MarkdownSection(
                title="Pipeline",
                key="pipeline",
                template="Ship it.",
                tools=[_ok_tool(n) for n in ("lint", "test", "build", "deploy")],
                policies=[policy],
            )
        ],
    )
    session = InMemorySession()
    executor, sink = _executor(prompt, session)
    outcomes = [
        (name, _call(executor, name, {}, f"call_{i}").result)
        for i, name in enumerate(["deploy", "build", "lint", "build", "test", "deploy"])
    ]
    assert [(n, r.success, r.message) for n, r in outcomes] == [
        ("deploy", False, "Tool 'deploy' requires: build, test"),
        ("build", False, "Tool 'build' requires: lint"),
        ("lint", True, "lint passed"),
        ("build", True, "build passed"),
        ("test", True, "test passed"),
        ("deploy", True, "deploy passed"),
    ]
    assert [d.tool_name for d in sink.of_type(PolicyDenied)] == ["deploy", "build"]
    state = session.get_state("policy:sequential_dependency")
    assert state == PolicyState(
        "sequential_dependency",
        invoked_tools=frozenset({"lint", "build", "test", "deploy"}),
    )


def test_003_read_before_write_policy() -> None:
    from tooling.runtime import (
        InMemoryFilesystem,
        InMemorySession,
        MarkdownSection,
        Prompt,
        ReadBeforeWritePolicy,
    )
    from tooling.runtime.vfs import vfs_tools

    policy = ReadBeforeWritePolicy()

    read_file, write_file = vfs_tools()[:2]  # elided in the seed: the tools
    session = InMemorySession(
        filesystem=InMemoryFilesystem({"config.yaml": "debug: false\n"})
    )
    prompt = Prompt(
        ns="seeds",
        key="rbw",
        sections=[
            MarkdownSection(
                title="Files",
                key="files",
                template="Edit config.",
                tools=[read_file, write_file],
                policies=[policy],
            )
        ],
    )
    executor, _ = _executor(prompt, session)
    steps = [
        ("write_file", {"path": "new.txt", "content": "hi"}),  # OK (doesn't exist)
        ("write_file", {"path": "config.yaml", "content": "x"}),  # DENIED
        ("read_file", {"path": "config.yaml"}),  # OK (records path)
        ("write_file", {"path": "config.yaml", "content": "debug: true\n"}),  # OK
    ]
    results = [
        _call(executor, name, args, f"call_{i}").result
        for i, (name, args) in enumerate(steps)
    ]
    assert [r.success for r in results] == [True, False, True, True]
    assert results[1].message == "File 'config.yaml' must be read before overwriting."
    assert session.filesystem.files == {
        "config.yaml": "debug: true\n",
        "new.txt": "hi",
    }


def test_003_policy_integration() -> None:
    from tooling.runtime import (
        InMemoryFilesystem,
        InMemorySession,
        MarkdownSection,
        PolicyDecision,
        ReadBeforeWritePolicy,
        SequentialDependencyPolicy,
    )
    from tooling.runtime import Prompt as PromptTemplate
    from tooling.runtime.vfs import vfs_tools

    # Elided in the seed: the tools, the dependencies and the prompt-level
    # policy. Omitted in the seed and required by the product (ADR 0011): the
    # sections' titles (keys derive from them) and the prompt's ns/key.
    read_file, write_file = vfs_tools()[:2]
    lint, test, build, deploy = (
        _ok_tool(n) for n in ("lint", "test", "build", "deploy")
    )
    checked: list[str] = []

    class Audit:
        name = "audit"

        def check(self, tool: Any, params: Any, *, context: Any) -> PolicyDecision:
            checked.append(tool.name)
            return PolicyDecision.allow()

        def on_result(
            self, tool: Any, params: Any, result: Any, *, context: Any
        ) -> None:
            return None

    audit = Audit()

    template = PromptTemplate(
        ns="seeds",
        key="integration",
        sections=[
            MarkdownSection(
                title="Files",
                tools=[read_file, write_file],
                policies=[ReadBeforeWritePolicy()],
            ),
            MarkdownSection(
                title="Pipeline",
                tools=[lint, test, build, deploy],
                policies=[
                    SequentialDependencyPolicy(
                        dependencies={
                            "deploy": {"test", "build"},
                            "build": {"lint"},
                        }
                    )
                ],
            ),
        ],
        policies=[audit],  # Prompt-level policies
    )

    assert [section.key for section in template.sections] == ["files", "pipeline"]
    assert [p.name for p in template.policies_for_tool("write_file")] == [
        "read_before_write",
        "audit",
    ]
    assert [p.name for p in template.policies_for_tool("deploy")] == [
        "sequential_dependency",
        "audit",
    ]
    session = InMemorySession(filesystem=InMemoryFilesystem({"app.py": "x = 1\n"}))
    executor, _ = _executor(template, session)
    write = _call(executor, "write_file", {"path": "app.py", "content": "x"}, "c1")
    deploy_result = _call(executor, "deploy", {}, "c2").result
    assert write.result.message == "File 'app.py' must be read before overwriting."
    assert deploy_result.message == "Tool 'deploy' requires: build, test"
    assert _call(executor, "read_file", {"path": "app.py"}, "c3").result.success
    assert _call(executor, "lint", {}, "c4").result.success
    # Section policies first, then the prompt's; the first denial ends the
    # check, so the prompt-level policy saw only the calls its sections allowed.
    assert checked == ["read_file", "lint"]


def test_003_session_reset_clears_policy_and_plan_state() -> None:
    from tooling.runtime import (
        InMemoryFilesystem,
        InMemorySession,
        MarkdownSection,
        PlanningToolsSection,
        Prompt,
        ReadBeforeWritePolicy,
    )
    from tooling.runtime.vfs import vfs_tools

    session = InMemorySession(filesystem=InMemoryFilesystem({"a.txt": "a"}))
    prompt = Prompt(
        ns="seeds",
        key="reset",
        sections=[
            MarkdownSection(
                title="Files",
                key="files",
                template="Files.",
                tools=list(vfs_tools()),
                policies=[ReadBeforeWritePolicy()],
            ),
            PlanningToolsSection(),
        ],
    )
    executor, _ = _executor(prompt, session)
    assert _call(executor, "read_file", {"path": "a.txt"}, "c1").result.success
    setup = _call(executor, "planning_setup_plan", {"objective": "Edit a"}, "c2")
    assert setup.result.success
    assert _call(
        executor, "write_file", {"path": "a.txt", "content": "b"}, "c3"
    ).result.success

    session.reset()

    assert session.filesystem.files == {"a.txt": "b"}  # files are not state
    write = _call(executor, "write_file", {"path": "a.txt", "content": "c"}, "c4")
    assert write.result.message == "File 'a.txt' must be read before overwriting."
    read = _call(executor, "planning_read_plan", {}, "c5").result
    assert not read.success
    assert "No plan" in read.message


def test_003_planning_tool_suite() -> None:
    from tooling.runtime import (
        AddStep,
        InMemorySession,
        Plan,
        PlanningStrategy,
        PlanningToolsSection,
        PlanStep,
        Prompt,
        ReadPlan,
        SetupPlan,
        UpdateStep,
    )

    assert [f.name for f in dataclasses.fields(SetupPlan)] == [
        "objective",
        "initial_steps",
    ]
    assert [f.name for f in dataclasses.fields(AddStep)] == ["steps"]
    assert [f.name for f in dataclasses.fields(UpdateStep)] == [
        "step_id",
        "title",
        "status",
    ]
    assert dataclasses.fields(ReadPlan) == ()
    assert [f.name for f in dataclasses.fields(PlanStep)] == [
        "step_id",
        "title",
        "status",
    ]
    assert {"objective", "status", "steps"} <= {
        f.name for f in dataclasses.fields(Plan)
    }
    assert {s.name for s in PlanningStrategy} == {
        "REACT",
        "PLAN_ACT_REFLECT",
        "GOAL_DECOMPOSE_ROUTE_SYNTHESISE",
    }

    section = PlanningToolsSection(strategy=PlanningStrategy.PLAN_ACT_REFLECT)
    assert [t.name for t in section.tools()] == [
        "planning_setup_plan",
        "planning_add_step",
        "planning_update_step",
        "planning_read_plan",
    ]
    session = InMemorySession()
    executor, _ = _executor(Prompt(ns="seeds", key="plan", sections=[section]), session)

    def run(name: str, args: dict[str, Any]) -> Any:
        return _call(executor, name, args, f"call_{name}_{json.dumps(args)}").result

    # Others require an existing plan.
    assert not run("planning_add_step", {"steps": ["Too early"]}).success
    assert run(
        "planning_setup_plan", {"objective": "Ship", "initial_steps": ["A"]}
    ).success
    assert run("planning_add_step", {"steps": ["B", "C"]}).success
    assert not run("planning_update_step", {"step_id": 2, "title": "x" * 501}).success
    for step_id in (1, 2, 3):
        assert run(
            "planning_update_step", {"step_id": step_id, "status": "done"}
        ).success
    plan = run("planning_read_plan", {}).value
    assert [(s.step_id, s.title, s.status) for s in plan.steps] == [
        (1, "A", "done"),
        (2, "B", "done"),
        (3, "C", "done"),
    ]
    assert plan.status == "completed"  # all steps done


def test_003_plan_is_a_reduction_of_events() -> None:
    from tooling.runtime import (
        InMemorySession,
        MarkdownSection,
        PlanningToolsSection,
        Prompt,
        SetupPlan,
        Tool,
        ToolContext,
        ToolResult,
        UpdateStep,
    )

    # "PlanningToolsSection auto-registers reducers for Plan, SetupPlan,
    # AddStep, UpdateStep": any handler of the prompt can move the plan by
    # publishing those events.
    @dataclass(frozen=True)
    class Kickoff:
        objective: str

    def kickoff(params: Kickoff, *, context: ToolContext) -> ToolResult[None]:
        context.publish(SetupPlan(objective=params.objective, initial_steps=("A",)))
        context.publish(UpdateStep(step_id=1, status="in_progress"))
        return ToolResult.ok(None, "Kicked off.")

    prompt = Prompt(
        ns="seeds",
        key="reduced-plan",
        sections=[
            PlanningToolsSection(),
            MarkdownSection(
                title="Kickoff",
                key="kickoff",
                template="Start.",
                tools=[Tool(name="kickoff", description="Start.", handler=kickoff)],
            ),
        ],
    )
    executor, _ = _executor(prompt, InMemorySession())
    assert _call(executor, "kickoff", {"objective": "Ship"}, "c1").result.success
    plan = _call(executor, "planning_read_plan", {}, "c2").result.value
    assert (plan.objective, plan.status) == ("Ship", "active")
    assert [(s.step_id, s.title, s.status) for s in plan.steps] == [
        (1, "A", "in_progress")
    ]


def test_003_handlers_publish_events() -> None:
    from tooling.runtime import (
        InMemorySession,
        MarkdownSection,
        Prompt,
        Tool,
        ToolContext,
        ToolInvoked,
        ToolResult,
    )

    # Seed 003: "Tool handlers publish events via context.session.dispatcher";
    # the product's form is ``context.publish(event)``.
    @dataclass(frozen=True)
    class Deployed:
        version: str

    @dataclass(frozen=True)
    class Release:
        version: str
        fail: bool = False

    def release(params: Release, *, context: ToolContext) -> ToolResult[None]:
        context.publish(Deployed(params.version))
        if params.fail:
            raise RuntimeError("rollout aborted")
        return ToolResult.ok(None, f"Released {params.version}.")

    prompt = Prompt(
        ns="seeds",
        key="publish",
        sections=[
            MarkdownSection(
                title="Release",
                key="release",
                template="Release.",
                tools=[Tool(name="release", description="Release.", handler=release)],
            )
        ],
    )
    executor, sink = _executor(prompt, InMemorySession())
    _call(executor, "release", {"version": "1.2"}, "c1")
    _call(executor, "release", {"version": "1.3", "fail": True}, "c2")
    kinds = [type(e).__name__ for e in sink.events]
    # The event reaches the run's sink before the call's ToolInvoked; the
    # failed call's event is dropped with its state changes.
    assert sink.of_type(Deployed) == [Deployed("1.2")]
    assert kinds.index("Deployed") < kinds.index("ToolInvoked")
    assert [i.success for i in sink.of_type(ToolInvoked)] == [True, False]


def test_003_exception_table() -> None:
    from tooling.runtime import (
        DeadlineExceededError,
        InMemorySession,
        MarkdownSection,
        Prompt,
        PromptEvaluationError,
        Tool,
        ToolContext,
        ToolResult,
        ToolValidationError,
    )

    @dataclass(frozen=True)
    class Raise:
        kind: str

    errors: dict[str, Exception] = {
        "validation": ToolValidationError("count must be positive"),
        "type": TypeError("unsupported operand"),
        "other": RuntimeError("disk on fire"),
        "evaluation": PromptEvaluationError("stop now", phase="tool"),
        "deadline": DeadlineExceededError("too slow"),
    }

    def explode(params: Raise, *, context: ToolContext) -> ToolResult[None]:
        context.session.put_state("touched", params.kind)  # must be rolled back
        raise errors[params.kind]

    prompt = Prompt(
        ns="seeds",
        key="exceptions",
        sections=[
            MarkdownSection(
                title="Boom",
                key="boom",
                template="Boom.",
                tools=[Tool(name="explode", description="Fail.", handler=explode)],
            )
        ],
    )
    session = InMemorySession()
    executor, _ = _executor(prompt, session)
    wrapped = {
        kind: _call(executor, "explode", {"kind": kind}, f"c_{kind}").result
        for kind in ("validation", "type", "other")
    }
    assert {k: (r.success, r.value) for k, r in wrapped.items()} == {
        k: (False, None) for k in wrapped
    }
    assert wrapped["validation"].message == (
        "Tool validation failed: count must be positive"
    )
    assert "TypeError" in wrapped["type"].message
    assert "unsupported operand" in wrapped["type"].message
    assert "disk on fire" in wrapped["other"].message
    with pytest.raises(PromptEvaluationError, match="stop now"):
        _call(executor, "explode", {"kind": "evaluation"}, "c_evaluation")
    with pytest.raises(PromptEvaluationError) as raised:
        _call(executor, "explode", {"kind": "deadline"}, "c_deadline")
    assert raised.value.phase == "deadline"
    # "All failure paths restore session and resource state."
    assert session.get_state("touched") is None


# ==================================================================================
# Seed 004: OpenAI native tools via Responses
# ==================================================================================


def _seed_004_file_search_section() -> tuple[Any, Any]:
    """Seed 004's ``OpenAIFileSearchSection`` skeleton, as written."""
    from tooling.runtime import Section, SupportsDataclass

    @dataclass(slots=True)
    class FileSearchParams:
        corpus_ids: tuple[str, ...] = ()
        max_results: int = 5

    class OpenAIFileSearchSection(Section[FileSearchParams]):
        def __init__(self, *, default_params: FileSearchParams | None = None) -> None:
            super().__init__(
                title="File search",
                key="openai_file_search",
                default_params=default_params or FileSearchParams(),
                tools=(),  # provider executes the tool; no local handler
                accepts_overrides=False,
            )

        def render(
            self, params: SupportsDataclass | None, depth: int, number: str
        ) -> str:
            _ = params  # native tool sections usually render nothing
            return ""

        def clone(self, **kwargs: object) -> "OpenAIFileSearchSection":
            default = kwargs.get("default_params", self.default_params)
            assert default is None or isinstance(default, FileSearchParams)
            return OpenAIFileSearchSection(default_params=default)

    return OpenAIFileSearchSection, FileSearchParams


def test_004_native_tool_section_skeleton() -> None:
    OpenAIFileSearchSection, FileSearchParams = _seed_004_file_search_section()

    section = OpenAIFileSearchSection()
    assert section.key == "openai_file_search"
    assert section.params_type is FileSearchParams
    assert section.default_params == FileSearchParams()
    assert section.tools() == ()
    assert section.hosted_tools() == ()
    assert section.accepts_overrides is False
    assert section.render(FileSearchParams(), 0, "1") == ""
    narrowed = section.clone(default_params=FileSearchParams(corpus_ids=("vs_1",)))
    assert isinstance(narrowed, OpenAIFileSearchSection) and narrowed is not section
    assert narrowed.default_params == FileSearchParams(corpus_ids=("vs_1",))
    assert section.clone().default_params == section.default_params


def test_004_prompt_with_native_tool_section() -> None:
    from tooling.runtime import MarkdownSection, Prompt

    OpenAIFileSearchSection, _ = _seed_004_file_search_section()

    @dataclass(slots=True)
    class ContentParams:
        topic: str

    prompt = Prompt(
        ns="research",
        key="native-file-search",
        name="native_file_search",
        sections=(
            OpenAIFileSearchSection(),
            MarkdownSection[ContentParams](
                title="Task",
                key="task",
                template="Summarize the latest findings about ${topic} using the file search tool if needed.",  # noqa: E501
            ),
        ),
    )

    rendered = prompt.render(ContentParams(topic="LLM safety"))
    # The native tool section renders nothing: no heading, no number.
    assert rendered.text == (
        "## 1. Task (task)\n\nSummarize the latest findings about LLM safety "
        "using the file search tool if needed."
    )
    # The skeleton attaches no tool: nothing is offered to the provider.
    assert rendered.tools == () and rendered.hosted_tools == ()


def test_004_native_section_exposes_file_search() -> None:
    from tooling.runtime import (
        FileSearchConfig,
        HostedTool,
        MarkdownSection,
        Prompt,
        file_search_tool,
    )

    # Beyond the skeleton: "expose the native tool settings on the section so
    # the adapter can translate them into provider payloads".
    OpenAIFileSearchSection, FileSearchParams = _seed_004_file_search_section()

    class CorpusSection(OpenAIFileSearchSection):  # type: ignore[misc,valid-type]
        def hosted_tools(self) -> tuple[HostedTool[Any], ...]:
            params = self.default_params
            return (
                file_search_tool(
                    FileSearchConfig(
                        vector_store_ids=params.corpus_ids,
                        max_results=params.max_results,
                    )
                ),
            )

    section = CorpusSection(default_params=FileSearchParams(corpus_ids=("vs_123",)))
    prompt = Prompt(
        ns="seeds",
        key="corpus",
        sections=[
            section,
            MarkdownSection(title="Task", key="task", template="Summarise."),
        ],
    )
    rendered = prompt.render()
    _, adapter = _adapter()
    # The real wire shape, not ``{"type": "built_in", "name": ...}``.
    assert adapter.tools_payload(rendered) == [
        {"type": "file_search", "vector_store_ids": ["vs_123"], "max_num_results": 5}
    ]


def test_004_mixing_native_and_function_tools(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from tooling.offline import OfflineServer
    from tooling.runtime import InMemorySession as Session
    from tooling.runtime import InMemorySink as InProcessEventBus
    from tooling.runtime import (
        MarkdownSection,
        OpenAIAdapter,
        Prompt,
        Tool,
        ToolContext,
        ToolInvoked,
        ToolResult,
    )

    OpenAIFileSearchSection, _ = _seed_004_file_search_section()

    with OfflineServer() as server:
        # The adapter's client comes from the environment, as the SDK's does.
        monkeypatch.setenv("OPENAI_API_KEY", "sk-offline")
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)

        @dataclass(slots=True)
        class ContentParams:
            topic: str

        @dataclass(slots=True)
        class EchoParams:
            text: str

        def echo(params: EchoParams, *, context: ToolContext) -> ToolResult[EchoParams]:
            _ = context
            # Seed: ``ToolResult.success(params)``; ADR 0011: ``ok`` (``success``
            # is the result's boolean field).
            return ToolResult.ok(params)

        echo_tool = Tool[EchoParams, EchoParams](
            name="echo",
            description="Echo the provided text.",
            handler=echo,
        )

        prompt = Prompt(
            ns="research",
            key="native-file-search",
            name="native_file_search",
            sections=(
                OpenAIFileSearchSection(),
                MarkdownSection[ContentParams](
                    title="Task",
                    key="task",
                    template="Summarize the latest findings about ${topic}.",
                    tools=(echo_tool,),
                ),
            ),
        )

        adapter = OpenAIAdapter(model="gpt-4.1")
        session = Session()
        bus = InProcessEventBus()

        # Seed: ``bus=bus``, and ``EchoParams(text="hello")`` beside the
        # prompt's params; ADR 0011: ``sink=``, and tool arguments come from
        # the model (test_004_tool_params_given_to_evaluate_refused).
        response = adapter.evaluate(
            prompt,
            ContentParams(topic="LLM safety"),
            parse_output=True,
            sink=bus,
            session=session,
        )

        served = server.served

    # The offline model calls the function tool, then answers.
    assert [s.status for s in served] == [200, 200]
    (invoked,) = bus.of_type(ToolInvoked)
    assert (invoked.name, invoked.native, invoked.success) == ("echo", False, True)
    assert invoked.call_id
    assert isinstance(invoked.params, EchoParams)
    assert invoked.result.value == invoked.params
    assert invoked.model_output == "OK\n\n" + json.dumps({"text": invoked.params.text})
    assert response.text


def test_004_tool_params_given_to_evaluate_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from tooling.offline import OfflineServer
    from tooling.runtime import (
        MarkdownSection,
        OpenAIAdapter,
        Prompt,
        PromptEvaluationError,
        Tool,
    )

    @dataclass(slots=True)
    class ContentParams:
        topic: str

    @dataclass(slots=True)
    class EchoParams:
        text: str

    echo_tool = Tool[EchoParams, EchoParams](name="echo", description="Echo.")
    prompt = Prompt(
        ns="research",
        key="native-file-search",
        sections=(
            MarkdownSection[ContentParams](
                title="Task",
                key="task",
                template="Summarize the latest findings about ${topic}.",
                tools=(echo_tool,),
            ),
        ),
    )
    with OfflineServer() as server:
        monkeypatch.setenv("OPENAI_API_KEY", "sk-offline")
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        adapter = OpenAIAdapter(model="gpt-4.1")
        # As seed 004 writes it: a tool's params passed as a prompt param.
        with pytest.raises(
            PromptEvaluationError,
            match="Unexpected params type supplied to prompt: EchoParams",
        ) as raised:
            adapter.evaluate(
                prompt,
                ContentParams(topic="LLM safety"),
                EchoParams(text="hello"),
                parse_output=True,
            )
        assert raised.value.phase == "render"
        assert server.served == []


def test_004_capability_allow_list_refused_before_request() -> None:
    from tooling.runtime import (
        FileSearchConfig,
        FileSearchSection,
        OpenAIAdapter,
        Prompt,
        PromptEvaluationError,
    )

    # Seed 004 (prose): ``openai_native_tools={"gpt-4.1": {"file_search"}}``;
    # construction fails fast when the model does not advertise the tool. The
    # product's allow-list is ``model_capabilities``.
    provider = FakeProvider(response(message()))
    adapter = OpenAIAdapter(
        client=provider.client,
        model="gpt-4.1",
        model_capabilities={"gpt-4.1": frozenset({"web_search"})},
    )
    prompt = Prompt(
        ns="seeds",
        key="capabilities",
        sections=[FileSearchSection(FileSearchConfig(vector_store_ids=("vs_1",)))],
    )
    with pytest.raises(
        PromptEvaluationError,
        match=re.escape(
            "Model 'gpt-4.1' does not support hosted tool kind 'file_search'"
        ),
    ) as raised:
        adapter.evaluate(prompt)
    assert raised.value.phase == "render"
    assert provider.requests == []


def test_004_tool_choice_must_name_a_known_tool() -> None:
    from tooling.runtime import (
        Prompt,
        PromptValidationError,
        ToolChoice,
        WebSearchSection,
    )

    # Seed 004 (prose): "Tool choice must reference a known native tool name."
    with pytest.raises(PromptValidationError, match="'file_search'"):
        Prompt(
            ns="seeds",
            key="choice",
            sections=[WebSearchSection()],
            tool_choice=ToolChoice(mode="tool", tools=("file_search",)),
        )
    prompt = Prompt(
        ns="seeds",
        key="choice",
        sections=[WebSearchSection()],
        tool_choice=ToolChoice(mode="tool", tools=("web_search",)),
    )
    _, adapter = _adapter()
    rendered = prompt.render()
    assert adapter.tool_choice_payload(rendered.tool_choice, rendered) == {
        "type": "allowed_tools",
        "mode": "required",
        "tools": [{"type": "web_search"}],
    }
