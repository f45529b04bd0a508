"""Web search: configuration validation, the OpenAI codec's wire JSON and the
parsing of ``web_search_call`` items (raw JSON and real SDK objects)."""

import json
from typing import Any

import httpx
import openai
import pytest

from tooling.runtime.adapters.openai.codecs.base import NativeCall, field, status_ok
from tooling.runtime.adapters.openai.codecs.web_search import (
    OpenAIWebSearchCodec,
    web_search_call,
)
from tooling.runtime.adapters.openai.parsing import citations_from_items, message_text
from tooling.runtime.errors import PromptValidationError
from tooling.runtime.hosted.base import HostedTool
from tooling.runtime.hosted.web_search import (
    MAX_ALLOWED_DOMAINS,
    WEB_SEARCH_DESCRIPTION,
    Citation,
    DomainFilter,
    GeoHint,
    WebSearchCall,
    WebSearchConfig,
    WebSearchResult,
    source_key,
    validate_domain,
    web_search_tool,
)

CODEC = OpenAIWebSearchCodec()


def search_item(
    id: str = "ws_1",
    status: str = "completed",
    action: dict[str, Any] | None = None,
) -> dict[str, Any]:
    return {
        "type": "web_search_call",
        "id": id,
        "status": status,
        "action": action
        if action is not None
        else {
            "type": "search",
            "query": "tide tables",
            "sources": [
                {"type": "url", "url": "https://tides.example/a"},
                {"type": "url", "url": "https://tides.example/b"},
                {"type": "url", "url": "https://tides.example/a"},
            ],
        },
    }


def message_item(
    text: str, *annotations: dict[str, Any], id: str = "msg_1"
) -> dict[str, Any]:
    return {
        "type": "message",
        "id": id,
        "role": "assistant",
        "status": "completed",
        "content": [
            {"type": "output_text", "text": text, "annotations": list(annotations)}
        ],
    }


def url_citation(url: str, start: int, end: int, title: str = "T") -> dict[str, Any]:
    return {
        "type": "url_citation",
        "url": url,
        "title": title,
        "start_index": start,
        "end_index": end,
    }


def sdk_items(*items: dict[str, Any]) -> list[Any]:
    """``items`` as the real SDK parses them from a Responses API reply."""
    body = {
        "id": "resp_1",
        "object": "response",
        "created_at": 1767225600,
        "status": "completed",
        "model": "gpt-test",
        "output": list(items),
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
    }

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json=body)

    client = openai.OpenAI(
        api_key="sk-test",
        base_url="http://provider.test/v1",
        # The SDK takes an httpx client too, though typed for httpx2's.
        http_client=httpx.Client(transport=httpx.MockTransport(handler)),  # type: ignore[arg-type]
        max_retries=0,
    )
    return list(client.responses.create(model="gpt-test", input="x").output)


def invalid(factory: Any, **kwargs: Any) -> PromptValidationError:
    with pytest.raises(PromptValidationError) as info:
        factory(**kwargs)
    return info.value


# -- DomainFilter ------------------------------------------------------------------


def test_web_search_domain_filter_lowercases_and_strips() -> None:
    domains = DomainFilter(allowed=(" Docs.Python.org ", "EXAMPLE.com"))
    assert domains.allowed == ("docs.python.org", "example.com")


def test_web_search_domain_filter_accepts_lists_and_single_strings() -> None:
    assert DomainFilter(allowed=["a.example"]).allowed == ("a.example",)  # type: ignore[arg-type]
    assert DomainFilter(allowed="b.example").allowed == ("b.example",)  # type: ignore[arg-type]
    assert DomainFilter().allowed == ()


@pytest.mark.parametrize(
    "domain", ["sub.docs.python.org", "xn--bcher-kva.example", "a-b.co.uk", "x1.io"]
)
def test_web_search_domain_filter_accepts_valid_domains(domain: str) -> None:
    assert validate_domain(domain) == domain


def test_web_search_domain_filter_allows_exactly_100_domains() -> None:
    domains = tuple(f"d{i}.example" for i in range(MAX_ALLOWED_DOMAINS))
    assert len(DomainFilter(allowed=domains).allowed) == 100


def test_web_search_domain_filter_rejects_more_than_100_domains() -> None:
    domains = tuple(f"d{i}.example" for i in range(101))
    error = invalid(DomainFilter, allowed=domains)
    assert error.message == "A domain filter allows at most 100 domains (got 101)."
    assert error.placeholder == "allowed_domains"


@pytest.mark.parametrize("domain", ["https://docs.python.org", "//docs.python.org"])
def test_web_search_domain_filter_rejects_schemes(domain: str) -> None:
    error = invalid(DomainFilter, allowed=(domain,))
    assert error.message == (
        f"Domain '{domain}' must be written without a scheme (for example "
        "'docs.python.org', not 'https://docs.python.org')."
    )
    assert error.placeholder == "allowed_domains"


@pytest.mark.parametrize(
    "domain",
    [
        "example.com/path",
        "localhost",
        "exa mple.com",
        "-bad.example",
        "",
        "a..b",
        "x.123",
    ],
)
def test_web_search_domain_filter_rejects_invalid_domains(domain: str) -> None:
    error = invalid(DomainFilter, allowed=(domain,))
    assert error.message == (
        f"'{domain}' is not a valid domain name (expected something like "
        "'example.com')."
    )


def test_a_domain_beyond_ascii_is_refused_naming_its_ascii_form() -> None:
    error = invalid(DomainFilter, allowed=("M\u00fcnchen.de",))
    assert error.message == (
        "'M\u00fcnchen.de' is not a valid domain name (expected something like "
        "'example.com'); a name with letters beyond ASCII is written in its ASCII "
        "form: 'xn--mnchen-3ya.de'."
    )
    assert DomainFilter(allowed=("xn--mnchen-3ya.de",)).allowed == (
        "xn--mnchen-3ya.de",
    )
    # IDNA 2003 (Python's codec) writes "faß.de" as "fass.de", another
    # domain: no hint where it differs from what browsers use
    assert invalid(DomainFilter, allowed=("fa\u00df.de",)).message == (
        "'fa\u00df.de' is not a valid domain name (expected something like "
        "'example.com')."
    )


# -- GeoHint -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("code", "expected"), [("de", "DE"), (" us ", "US"), ("GB", "GB")]
)
def test_web_search_geo_hint_upper_cases_country(code: str, expected: str) -> None:
    assert GeoHint(country_code=code).country_code == expected


@pytest.mark.parametrize("code", ["XX", "d", ""])
def test_web_search_geo_hint_rejects_non_iso_countries(code: str) -> None:
    error = invalid(GeoHint, country_code=code)
    assert error.message == (
        f"'{code}' is not an ISO 3166-1 alpha-2 country code (for example 'DE', "
        "'GB', 'US')."
    )
    assert error.placeholder == "country_code"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "USA",
            "'USA' is not an ISO 3166-1 alpha-2 country code; United States is 'US'.",
        ),
        (
            "Germany",
            "'Germany' is not an ISO 3166-1 alpha-2 country code; Germany is 'DE'.",
        ),
        (
            "UK",
            "'UK' is not an ISO 3166-1 alpha-2 country code; United Kingdom is 'GB'.",
        ),
    ],
)
def test_web_search_geo_hint_answers_a_country_name_with_its_code(
    text: str, message: str
) -> None:
    # a name is never cut to two letters ("Germany" is not "GE", Georgia)
    assert invalid(GeoHint, country_code=text).message == message


def test_web_search_geo_hint_accepts_iana_timezones() -> None:
    assert GeoHint(timezone="Europe/Berlin").timezone == "Europe/Berlin"


@pytest.mark.parametrize("timezone", ["Mars/Base", "CEST", "europe/berlin", ""])
def test_web_search_geo_hint_rejects_unknown_timezones(timezone: str) -> None:
    error = invalid(GeoHint, timezone=timezone)
    assert error.message == (
        f"'{timezone}' is not an IANA timezone (for example 'Europe/Berlin')."
    )
    assert error.placeholder == "timezone"


def test_web_search_geo_hint_blank_city_and_region_become_none() -> None:
    hint = GeoHint(city="  ", region="", country_code="FR")
    assert (hint.city, hint.region) == (None, None)
    assert GeoHint(city="Paris").city == "Paris"


# -- WebSearchConfig and the factory -----------------------------------------------


def test_web_search_config_defaults() -> None:
    config = WebSearchConfig()
    assert config.domain_filter is None
    assert config.geo_hint is None
    assert config.allow_live_access is True
    assert config.search_context_size is None


def test_web_search_config_rejects_unknown_context_size() -> None:
    error = invalid(WebSearchConfig, search_context_size="huge")
    assert error.message == "search_context_size must be 'low', 'medium' or 'high'."
    assert error.placeholder == "search_context_size"


def test_web_search_tool_factory_defaults() -> None:
    tool = web_search_tool()
    assert isinstance(tool, HostedTool)
    assert (tool.kind, tool.name, tool.description) == (
        "web_search",
        "web_search",
        WEB_SEARCH_DESCRIPTION,
    )
    assert tool.config == WebSearchConfig()


def test_web_search_tool_factory_accepts_name_description_and_config() -> None:
    config = WebSearchConfig(search_context_size="low")
    tool = web_search_tool(config, name="news_search", description=" Search news. ")
    assert (tool.name, tool.description, tool.config) == (
        "news_search",
        "Search news.",
        config,
    )


def test_web_search_tool_factory_validates_the_name() -> None:
    with pytest.raises(PromptValidationError, match="HostedTool name 'News'"):
        web_search_tool(name="News")


# -- codec: serialize --------------------------------------------------------------


def test_web_search_codec_attributes() -> None:
    assert CODEC.kind == "web_search"
    assert CODEC.item_types == ("web_search_call",)
    assert CODEC.include == ("web_search_call.action.sources",)


def test_web_search_codec_serializes_minimal_config() -> None:
    assert CODEC.serialize(web_search_tool()) == {"type": "web_search"}


def test_web_search_codec_serializes_full_config_at_top_level() -> None:
    config = WebSearchConfig(
        domain_filter=DomainFilter(allowed=("docs.python.org", "peps.python.org")),
        geo_hint=GeoHint(
            country_code="de",
            city="Berlin",
            region="Berlin",
            timezone="Europe/Berlin",
        ),
        allow_live_access=False,
        search_context_size="high",
    )
    spec = CODEC.serialize(web_search_tool(config))
    assert json.dumps(spec, sort_keys=True) == json.dumps(
        {
            "type": "web_search",
            "filters": {"allowed_domains": ["docs.python.org", "peps.python.org"]},
            "user_location": {
                "type": "approximate",
                "country": "DE",
                "city": "Berlin",
                "region": "Berlin",
                "timezone": "Europe/Berlin",
            },
            "search_context_size": "high",
            "external_web_access": False,
        },
        sort_keys=True,
    )


def test_web_search_codec_omits_empty_filters_and_location_fields() -> None:
    config = WebSearchConfig(
        domain_filter=DomainFilter(), geo_hint=GeoHint(city="Oslo")
    )
    assert CODEC.serialize(web_search_tool(config)) == {
        "type": "web_search",
        "user_location": {"type": "approximate", "city": "Oslo"},
    }


def test_web_search_codec_external_access_only_sent_when_off() -> None:
    on = CODEC.serialize(web_search_tool(WebSearchConfig(allow_live_access=True)))
    off = CODEC.serialize(web_search_tool(WebSearchConfig(allow_live_access=False)))
    assert "external_web_access" not in on
    assert off == {"type": "web_search", "external_web_access": False}


def test_web_search_codec_serializes_context_size() -> None:
    spec = CODEC.serialize(
        web_search_tool(WebSearchConfig(search_context_size="medium"))
    )
    assert spec == {"type": "web_search", "search_context_size": "medium"}


def test_web_search_codec_tool_choice_forces_with_allowed_tools() -> None:
    assert CODEC.tool_choice(web_search_tool()) == {
        "type": "allowed_tools",
        "mode": "required",
        "tools": [{"type": "web_search"}],
    }


def test_web_search_codec_matches_any_item() -> None:
    assert CODEC.matches(search_item(), web_search_tool()) is True


# -- codec: parse_call -------------------------------------------------------------


def test_web_search_codec_parse_call_success() -> None:
    call = CODEC.parse_call(search_item())
    summary = "web search (completed): search 'tide tables'; 2 source(s)"
    assert call == NativeCall(
        call_id="ws_1",
        params={"action": "search", "query": "tide tables"},
        value=WebSearchCall(
            call_id="ws_1",
            status="completed",
            action_type="search",
            query="tide tables",
            sources=("https://tides.example/a", "https://tides.example/b"),
        ),
        success=True,
        message=summary,
        rendered=f"{summary}\n- https://tides.example/a\n- https://tides.example/b",
    )


@pytest.mark.parametrize("status", ["failed", "incomplete", "searching"])
def test_web_search_codec_parse_call_failure(status: str) -> None:
    call = CODEC.parse_call(search_item(id="ws_9", status=status))
    assert call is not None
    assert call.success is False
    assert call.message == f"Web search call ws_9 {status}."
    assert call.rendered.startswith(f"web search ({status}): search 'tide tables'")


def test_web_search_codec_parse_call_open_page() -> None:
    item = search_item(action={"type": "open_page", "url": "https://a.example/page"})
    call = CODEC.parse_call(item)
    assert call is not None
    assert call.params == {"action": "open_page", "url": "https://a.example/page"}
    assert call.message == "web search (completed): open_page 'https://a.example/page'"


def test_web_search_codec_parse_call_find_in_page() -> None:
    item = search_item(
        action={"type": "find_in_page", "url": "https://a.example", "pattern": "moon"}
    )
    call = CODEC.parse_call(item)
    assert call is not None
    assert call.params == {
        "action": "find_in_page",
        "url": "https://a.example",
        "pattern": "moon",
    }


def test_web_search_codec_parse_call_uses_first_of_queries() -> None:
    item = search_item(action={"type": "search", "queries": ["first", "second"]})
    assert web_search_call(item).query == "first"
    empty = search_item(action={"type": "search", "queries": []})
    assert web_search_call(empty).query is None


def test_web_search_codec_parse_call_without_action() -> None:
    item = {"type": "web_search_call", "id": "ws_2", "status": "completed"}
    call = CODEC.parse_call(item)
    assert call is not None
    assert call.params == {"action": None}
    assert call.message == "web search (completed): search"
    assert call.value == WebSearchCall(call_id="ws_2", status="completed")


def test_web_search_codec_parse_call_defaults_missing_status_to_completed() -> None:
    call = CODEC.parse_call({"type": "web_search_call", "id": "ws_3"})
    assert call is not None
    assert call.success is True


def test_web_search_codec_parse_call_ignores_bad_sources() -> None:
    item = search_item(
        action={
            "type": "search",
            "query": "q",
            "sources": [{"type": "url", "url": ""}, {"type": "url"}, {"url": 5}],
        }
    )
    assert web_search_call(item).sources == ()


def test_web_search_codec_parse_call_reads_sdk_objects() -> None:
    (item,) = sdk_items(search_item())
    assert not isinstance(item, dict)
    assert CODEC.parse_call(item) == CODEC.parse_call(search_item())


# -- codec: parse_output -----------------------------------------------------------


def run_items() -> list[dict[str, Any]]:
    return [
        search_item("ws_1"),
        message_item(
            "Tides follow the moon.",
            url_citation("https://tides.example/b", 0, 5, "B"),
            url_citation("https://moon.example", 17, 21, "Moon"),
            {"type": "file_citation", "file_id": "f", "filename": "x.md", "index": 0},
        ),
        search_item(
            "ws_2",
            action={
                "type": "search",
                "query": "moon",
                "sources": [
                    {"type": "url", "url": "https://moon.example"},
                    {"type": "url", "url": "https://sun.example"},
                ],
            },
        ),
        message_item(" More.", id="msg_2"),
    ]


def test_web_search_codec_parse_output_collects_the_run() -> None:
    result = CODEC.parse_output(run_items(), web_search_tool())
    assert isinstance(result, WebSearchResult)
    assert result.text == "Tides follow the moon. More."
    assert result.source_urls == (
        "https://tides.example/a",
        "https://tides.example/b",
        "https://moon.example",
        "https://sun.example",
    )
    # ws_2 comes after the message, so both citations come from ws_1.
    assert result.citations == (
        Citation(
            "https://tides.example/b",
            "B",
            (0, 5),
            "Tides",
            message_id="msg_1",
            search_call_id="ws_1",
        ),
        Citation(
            "https://moon.example",
            "Moon",
            (17, 21),
            "moon",
            message_id="msg_1",
            search_call_id="ws_1",
        ),
    )
    assert [call.call_id for call in result.calls] == ["ws_1", "ws_2"]


def test_web_search_codec_parse_output_adds_cited_urls_to_sources() -> None:
    items = [
        search_item("ws_1", action={"type": "search", "query": "q"}),
        message_item("Cited.", url_citation("https://only-cited.example", 0, 5)),
    ]
    result = CODEC.parse_output(items, web_search_tool())
    assert result is not None
    assert result.source_urls == ("https://only-cited.example",)


def test_web_search_codec_parse_output_knows_a_tracked_url_is_a_listed_source() -> None:
    items = [
        search_item("ws_1", action=_sources_action("q", "https://a.example/doc")),
        message_item(
            "Cited.", url_citation("https://a.example/doc?utm_source=openai", 0, 5)
        ),
    ]
    result = CODEC.parse_output(items, web_search_tool())
    assert result is not None
    assert result.source_urls == ("https://a.example/doc",)


def test_web_search_codec_parse_output_without_calls_is_none() -> None:
    assert CODEC.parse_output([message_item("No search.")], web_search_tool()) is None


def test_web_search_codec_parse_output_same_for_sdk_objects() -> None:
    items = run_items()
    assert CODEC.parse_output(sdk_items(*items), web_search_tool()) == (
        CODEC.parse_output(items, web_search_tool())
    )


def test_web_search_result_render() -> None:
    result = WebSearchResult(
        text="Answer.",
        citations=(
            Citation("https://a.example", "A title"),
            Citation("https://b.example", ""),
        ),
    )
    assert result.render() == (
        "Answer.\n- A title <https://a.example>\n- https://b.example <https://b.example>"
    )
    assert WebSearchResult(text="").render() == ""


# -- shared parsing helpers --------------------------------------------------------


def test_web_search_message_text_joins_all_output_text() -> None:
    items = [
        message_item("One. "),
        {"type": "reasoning", "id": "rs", "summary": []},
        {
            "type": "message",
            "id": "m2",
            "content": [
                {"type": "refusal", "refusal": "no"},
                {"type": "output_text", "text": "Two."},
            ],
        },
    ]
    assert message_text(items) == "One. Two."


def _sources_action(query: str, *urls: str) -> dict[str, Any]:
    return {
        "type": "search",
        "query": query,
        "sources": [{"type": "url", "url": url} for url in urls],
    }


def test_web_search_citation_links_to_the_call_that_listed_its_url() -> None:
    items = [
        search_item("ws_1", action=_sources_action("a", "https://a.example/doc")),
        search_item("ws_2", action=_sources_action("b", "https://b.example/")),
        message_item(
            "Alpha beta.",
            url_citation("https://a.example/doc?utm_source=openai", 0, 5),
            url_citation("https://b.example?utm_source=openai", 6, 10),
            url_citation("https://elsewhere.example/", 0, 11),
        ),
    ]

    citations = citations_from_items(items)

    # a.example came from ws_1 although ws_2 is later; an unlisted URL falls
    # back to the latest earlier call.
    assert [c.search_call_id for c in citations] == ["ws_1", "ws_2", "ws_2"]


def test_web_search_citation_links_to_a_call_of_an_earlier_turn() -> None:
    earlier = [search_item("ws_9", action=_sources_action("q", "https://a.example"))]
    items = [message_item("Alpha.", url_citation("https://a.example", 0, 5))]

    (citation,) = citations_from_items(items, earlier=earlier)

    assert citation.search_call_id == "ws_9"


def test_web_search_citation_without_a_search_call_has_no_link() -> None:
    items = [
        message_item("Alpha.", url_citation("https://a.example", 0, 5)),
        search_item("ws_later"),
    ]

    (citation,) = citations_from_items(items)

    assert citation.search_call_id is None


@pytest.mark.parametrize(
    ("cited", "listed"),
    [
        ("https://a.example/x?utm_source=openai", "https://a.example/x"),
        ("https://A.Example/x/", "https://a.example/x"),
        ("https://a.example/x#part", "https://a.example/x"),
        ("https://a.example/x?q=1&utm_source=openai", "https://a.example/x?q=1"),
    ],
)
def test_web_search_source_key_ignores_tracking_case_and_fragments(
    cited: str, listed: str
) -> None:
    assert source_key(cited) == source_key(listed)


def test_web_search_source_key_keeps_real_query_parameters() -> None:
    assert source_key("https://a.example/x?q=1") != source_key("https://a.example/x")


def test_web_search_citations_skip_non_messages_and_unknown_annotations() -> None:
    items = [
        {"type": "mystery", "content": [{"type": "output_text", "text": "x"}]},
        message_item("Text", {"type": "file_path", "file_id": "f", "index": 0}),
    ]
    assert citations_from_items(items) == []


def test_web_search_field_reads_dicts_and_objects() -> None:
    class Item:
        name = "obj"
        empty = None

    assert field({"name": "dict"}, "name") == "dict"
    assert field({"name": None}, "name", "fallback") == "fallback"
    assert field(Item(), "name") == "obj"
    assert field(Item(), "empty", 3) == 3
    assert field(Item(), "missing") is None


@pytest.mark.parametrize(
    ("status", "ok"),
    [(None, True), ("completed", True), ("failed", False), ("in_progress", False)],
)
def test_web_search_status_ok(status: str | None, ok: bool) -> None:
    assert status_ok(status) is ok


# -- DomainFilter.blocked ----------------------------------------------------------


def test_web_search_domain_filter_blocked_is_validated_like_allowed() -> None:
    domain_filter = DomainFilter(blocked=(" Spam.Example ", "ads.example"))
    assert domain_filter.blocked == ("spam.example", "ads.example")
    assert domain_filter.allowed == ()
    one: Any = "spam.example"
    assert DomainFilter(blocked=one).blocked == ("spam.example",)
    error = invalid(DomainFilter, blocked=("https://spam.example",))
    assert error.placeholder == "blocked_domains"
    assert "without a scheme" in error.message
    error = invalid(DomainFilter, blocked=tuple(f"d{i}.example" for i in range(101)))
    assert error.message == "A domain filter blocks at most 100 domains (got 101)."


@pytest.mark.parametrize(
    "blocked", [("bad\x00.example",), ("\ud800.example",), ("x" * 10_000,), (7,)]
)
def test_web_search_domain_filter_refuses_hostile_blocked_domains(blocked: Any) -> None:
    error = invalid(DomainFilter, blocked=blocked)
    assert error.placeholder == "blocked_domains"


def test_web_search_codec_refuses_blocked_domains_at_render() -> None:
    tool = web_search_tool(
        WebSearchConfig(domain_filter=DomainFilter(blocked=("spam.example",)))
    )
    with pytest.raises(PromptValidationError) as info:
        CODEC.serialize(tool)
    assert info.value.message == (
        "Hosted tool 'web_search' blocks domains (spam.example), but OpenAI's web "
        "search has no block-list: list the domains to search in "
        "DomainFilter.allowed instead."
    )
    assert info.value.placeholder == "blocked_domains"


def test_web_search_blocked_domains_fail_the_evaluation_before_any_request() -> None:
    from tooling.runtime.adapters.openai import OpenAIAdapter
    from tooling.runtime.errors import PromptEvaluationError
    from tooling.runtime.events import InMemorySink, PromptFailed
    from tooling.runtime.hosted.web_search import WebSearchSection
    from tooling.runtime.prompt import Prompt

    requests: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        requests.append(request)
        return httpx.Response(500)

    client = openai.OpenAI(
        api_key="sk-test",
        base_url="http://provider.test/v1",
        # The SDK takes an httpx client too, though typed for httpx2's.
        http_client=httpx.Client(transport=httpx.MockTransport(handler)),  # type: ignore[arg-type]
    )
    config = WebSearchConfig(domain_filter=DomainFilter(blocked=("spam.example",)))
    prompt = Prompt(ns="tests", key="blocked", sections=[WebSearchSection(config)])
    sink = InMemorySink()
    with pytest.raises(PromptEvaluationError) as info:
        OpenAIAdapter(client=client, model="gpt-5.4").evaluate(prompt, sink=sink)
    assert info.value.phase == "render"
    assert "has no block-list" in info.value.message
    assert requests == []
    (failed,) = sink.of_type(PromptFailed)
    assert failed.phase == "render"


# -- Citation lives in a neutral module ----------------------------------------------


def test_citation_moved_to_a_neutral_module_and_is_re_exported() -> None:
    import tooling.runtime as runtime
    from tooling.runtime import citations

    assert Citation is citations.Citation is runtime.Citation
    assert source_key is citations.source_key
    assert Citation.__module__ == "tooling.runtime.citations"
