"""Structured output: JSON that satisfies the schema and keeps its citations."""

from __future__ import annotations

import json
from typing import Any

import httpx
from openai import OpenAI
from pydantic import BaseModel

from tooling.offline import offline_transport

ALLOWED = ["djangoproject.com"]
TOOLS: Any = [{"type": "web_search", "filters": {"allowed_domains": ALLOWED}}]
INPUT: Any = [
    {"role": "system", "content": "# Research\nSummarise the Django LTS policy."},
]


def make_client() -> Any:
    http_client: Any = httpx.Client(transport=offline_transport())
    return OpenAI(
        api_key="sk-offline",
        base_url="http://offline.invalid/v1",
        http_client=http_client,
        max_retries=0,
    )


ANSWER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "answer": {"type": "string"},
        "confidence": {"type": "number", "minimum": 0, "maximum": 1},
        "verdict": {"type": "string", "enum": ["supported", "unsupported"]},
        "sources": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["answer", "confidence", "verdict", "sources"],
    "additionalProperties": False,
}


def _structured(schema: dict[str, Any], tools: Any = TOOLS) -> Any:
    return make_client().responses.create(
        model="gpt-5.4",
        input=INPUT,
        tools=tools,
        include=["web_search_call.action.sources"],
        text={
            "format": {
                "type": "json_schema",
                "name": "answer_v1",
                "strict": True,
                "schema": schema,
            }
        },
    )


def test_structured_output_is_json_satisfying_the_schema() -> None:
    response = _structured(ANSWER_SCHEMA)

    data = json.loads(response.output_text)
    assert set(data) == set(ANSWER_SCHEMA["required"])
    assert (
        isinstance(data["answer"], str) and "Hosted tools: web_search" in data["answer"]
    )
    assert 0 <= data["confidence"] <= 1
    assert data["verdict"] == "supported"
    sources = response.output[0].action.sources
    assert data["sources"] == [source.url for source in sources[:2]]
    assert response.text.format.type == "json_schema"


def test_structured_output_citations_point_at_url_strings_in_the_json() -> None:
    response = _structured(ANSWER_SCHEMA)

    text = response.output_text
    annotations = response.output[-1].content[0].annotations
    assert len(annotations) == 2
    for annotation in annotations:
        assert annotation.type == "url_citation"
        assert text[annotation.start_index : annotation.end_index] == annotation.url
        assert annotation.url.startswith("https://djangoproject.com/")
        assert text[annotation.start_index - 1] == '"' == text[annotation.end_index]


def test_structured_output_without_url_field_puts_urls_in_the_text_field() -> None:
    schema = {
        "type": "object",
        "properties": {"summary": {"type": "string"}, "count": {"type": "integer"}},
        "required": ["summary", "count"],
        "additionalProperties": False,
    }

    response = _structured(schema)

    data = json.loads(response.output_text)
    assert data["count"] == 1
    annotations = response.output[-1].content[0].annotations
    assert len(annotations) == 2
    for annotation in annotations:
        assert annotation.url in data["summary"]
        span = response.output_text[annotation.start_index : annotation.end_index]
        assert span == annotation.url


class Step(BaseModel):
    title: str
    done: bool


class Report(BaseModel):
    answer: str
    steps: list[Step]
    source_urls: list[str]


def test_structured_output_parses_with_sdk_parse_and_pydantic_refs() -> None:
    response = make_client().responses.parse(
        model="gpt-5.4",
        input=INPUT,
        tools=TOOLS,
        text_format=Report,
    )

    report = response.output_parsed
    assert isinstance(report, Report)
    assert report.steps == [Step(title="Draft the document", done=True)]
    assert len(report.source_urls) == 2
    assert all(
        url.startswith("https://djangoproject.com/") for url in report.source_urls
    )


def test_structured_output_without_search_has_no_citations() -> None:
    response = _structured(ANSWER_SCHEMA, tools=[])

    data = json.loads(response.output_text)
    assert data["sources"] == ["example"]
    assert response.output[0].content[0].annotations == []
