"""Web search through the real SDK: sources, domain filters, citations."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

import httpx
from openai import OpenAI
from openai.types.responses import ResponseFunctionWebSearch, ResponseOutputMessage

from tooling.offline import MARKER_SEARCH_FAILS, offline_transport

SOURCES = ["web_search_call.action.sources"]


def make_client() -> Any:
    http_client: Any = httpx.Client(transport=offline_transport())
    return OpenAI(
        api_key="sk-offline",
        base_url="http://offline.invalid/v1",
        http_client=http_client,
        max_retries=0,
    )


def _search(
    tool: dict[str, Any], *, include: list[str] | None = None, text: str = ""
) -> Any:
    return make_client().responses.create(
        model="gpt-5.4",
        input=[
            {"role": "system", "content": "# Release helper\nAnswer briefly."},
            {
                "role": "user",
                "content": text or "Which Django release is the current LTS?",
            },
        ],
        tools=[tool],
        include=include if include is not None else SOURCES,
    )


def _hosts(urls: list[str]) -> list[str]:
    return [urlsplit(url).hostname or "" for url in urls]


def test_web_search_sources_stay_within_allowed_domains() -> None:
    allowed = ["djangoproject.com", "docs.python.org"]
    response = _search({"type": "web_search", "filters": {"allowed_domains": allowed}})

    search, message = response.output
    assert isinstance(search, ResponseFunctionWebSearch)
    assert search.status == "completed"
    assert search.action.type == "search"
    assert search.action.query == "Which Django release is the current LTS?"
    assert search.action.queries == [search.action.query]
    urls = [source.url for source in search.action.sources or []]
    assert len(urls) == 3
    assert len(set(urls)) == 3
    for host in _hosts(urls):
        assert any(host == d or host.endswith("." + d) for d in allowed)

    assert isinstance(message, ResponseOutputMessage)
    text = response.output_text
    part: Any = message.content[0]
    annotations = part.annotations
    assert [a.type for a in annotations] == ["url_citation", "url_citation"]
    assert [a.url for a in annotations] == urls[:2]
    for annotation in annotations:
        span = text[annotation.start_index : annotation.end_index]
        assert annotation.url in span
        host = urlsplit(annotation.url).hostname
        assert annotation.title == (
            f"Which Django release is the current LTS? - {host}"
        )


def test_web_search_defaults_to_three_documentation_domains() -> None:
    response = _search({"type": "web_search"})

    urls = [s.url for s in response.output[0].action.sources]
    assert _hosts(urls) == [
        "docs.python.org",
        "www.djangoproject.com",
        "developers.openai.com",
    ]


def test_web_search_sources_only_with_include_but_citations_anyway() -> None:
    allowed = ["djangoproject.com"]
    response = _search(
        {"type": "web_search", "filters": {"allowed_domains": allowed}}, include=[]
    )

    search = response.output[0]
    assert search.type == "web_search_call"
    assert search.action.sources is None
    annotations = response.output[1].content[0].annotations
    assert len(annotations) == 2
    assert all(_hosts([a.url]) == ["djangoproject.com"] for a in annotations)


def _query_of_system_prompt(content: str) -> str:
    response = make_client().responses.create(
        model="gpt-5.4",
        input=[{"role": "system", "content": content}],
        tools=[{"type": "web_search"}],
    )
    return response.output[0].action.query


def test_web_search_query_is_the_rendered_prompts_question() -> None:
    rendered = (
        "## 1. Task (research.task)\n\n"
        "Answer the question: Which **Django** release is the current `LTS`? "
        "Be brief.\n\nCite every source you use."
    )
    assert _query_of_system_prompt(rendered) == (
        "Which Django release is the current LTS?"
    )


def test_web_search_query_without_a_question_is_the_first_line_of_text() -> None:
    rendered = "## 1. Task (task)\n\n**Find** the `Django` LTS\nMore text."
    assert _query_of_system_prompt(rendered) == "Find the Django LTS"


def test_web_search_query_is_shortened_at_a_word() -> None:
    words = " ".join(f"word{n}" for n in range(30))
    query = _query_of_system_prompt(f"# Heading\n{words}")
    assert len(query) <= 80
    assert words.startswith(query) and words[len(query)] == " "


def test_web_search_preview_tool_also_searches() -> None:
    response = _search({"type": "web_search_preview", "search_context_size": "low"})

    assert [item.type for item in response.output] == ["web_search_call", "message"]


def test_web_search_failure_marker_gives_failed_call_and_no_citations() -> None:
    response = _search(
        {"type": "web_search"}, text=f"Find the LTS {MARKER_SEARCH_FAILS} please"
    )

    search = response.output[0]
    assert search.status == "failed"
    assert search.action.sources is None
    assert "[offline:" not in (search.action.query or "")
    assert response.output[1].content[0].annotations == []
    assert "web search failed" in response.output_text


def test_web_search_runs_once_per_conversation() -> None:
    client = make_client()
    tools: Any = [{"type": "web_search"}]
    first = client.responses.create(model="gpt-5.4", input="LTS?", tools=tools)
    history: list[Any] = [{"role": "user", "content": "LTS?"}]
    history += [item.model_dump(exclude_none=True) for item in first.output]
    history.append({"role": "user", "content": "And the one before?"})

    second = client.responses.create(model="gpt-5.4", input=history, tools=tools)

    assert [item.type for item in second.output] == ["message"]
    assert len(second.output[0].content[0].annotations) == 2
