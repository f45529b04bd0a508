"""The runtime against the real OpenAI Responses API (marked ``openai``).

Skipped unless ``OPENAI_API_KEY`` is set (``tests/conftest.py``); see
``live_openai.py`` for the environment variables. No database: run with
``pytest -m openai tests/integration/test_openai_live.py``.

Each hosted kind is evaluated once per module (a module-scoped fixture) and
several tests assert one behaviour each on that run: what went on the wire,
the ``ToolInvoked`` events against the provider's own output items, and the
typed hosted output. Answers of a real model vary, so content checks are
limited to what the prompt makes checkable; the content checks that need a
real model skip themselves when ``OPENAI_BASE_URL`` is not OpenAI's API (for
example the offline provider, ``make offline-provider``). Cost is kept low:
low reasoning effort, a cap on output tokens and on hosted tool calls.
"""

from __future__ import annotations

import base64
import dataclasses
import re
import uuid
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from typing import Any
from urllib.parse import urlsplit

import openai
import pytest

from tests.integration.live_openai import (
    LIVE_MODEL,
    RequestLog,
    live_client,
    not_openai_reason,
    request_options,
    talks_to_openai,
)
from tooling.runtime import (
    CodeInterpreterConfig,
    CodeInterpreterResult,
    CodeInterpreterSection,
    DomainFilter,
    FileSearchConfig,
    FileSearchResult,
    FileSearchSection,
    GeoHint,
    HostedTool,
    ImageGenerationConfig,
    ImageGenerationResult,
    ImageGenerationSection,
    InMemorySink,
    MarkdownSection,
    McpConfig,
    McpResult,
    McpSection,
    OpenAIAdapter,
    PolicyDenied,
    Prompt,
    PromptEvaluationError,
    PromptExecuted,
    PromptFailed,
    PromptRendered,
    PromptResponse,
    PromptValidationError,
    ProviderCallCompleted,
    SequentialDependencyPolicy,
    Tool,
    ToolChoice,
    ToolContext,
    ToolInvoked,
    ToolResult,
    WebSearchConfig,
    WebSearchResult,
    WebSearchSection,
)

pytestmark = pytest.mark.openai

ALLOWED_DOMAINS = ("docs.python.org",)
BERLIN = GeoHint(
    country_code="DE", city="Berlin", region="Berlin", timezone="Europe/Berlin"
)
SUM_OF_SQUARES = str(sum(i * i for i in range(1, 101)))  # 338350
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
DEEPWIKI = McpConfig(
    server_label="deepwiki",
    server_url="https://mcp.deepwiki.com/mcp",
    allowed_tools=("read_wiki_structure",),
    require_approval="never",
)


# -- running a prompt ------------------------------------------------------------


@dataclasses.dataclass
class LiveRun:
    """One evaluation: its answer, its events and the HTTP requests sent."""

    response: PromptResponse
    sink: InMemorySink
    log: RequestLog

    @property
    def first_request(self) -> dict[str, Any]:
        return self.log.responses_bodies()[0]

    def output_items(self, *item_types: str) -> list[dict[str, Any]]:
        """The provider's output items of these types, over every turn."""
        return [
            item
            for call in self.sink.of_type(ProviderCallCompleted)
            for item in call.response.get("output") or []
            if item.get("type") in item_types
        ]

    def native_calls(self, kind: str) -> list[ToolInvoked]:
        return [
            e for e in self.sink.of_type(ToolInvoked) if e.native and e.kind == kind
        ]


def task_section(text: str, **kwargs: Any) -> MarkdownSection:
    return MarkdownSection(key="task", title="Task", template=text, **kwargs)


def evaluate(
    prompt: Prompt, *, max_hosted_tool_calls: int | None = None, max_turns: int = 4
) -> LiveRun:
    log = RequestLog()
    adapter = OpenAIAdapter(
        client=live_client(log),
        model=LIVE_MODEL,
        max_turns=max_turns,
        extra_request=request_options(max_hosted_tool_calls=max_hosted_tool_calls),
    )
    sink = InMemorySink()
    response = adapter.evaluate(prompt, sink=sink)
    return LiveRun(response=response, sink=sink, log=log)


def assert_native_calls_match_the_transcript(
    run: LiveRun, *, kind: str, name: str, item_types: Sequence[str]
) -> None:
    """One ``ToolInvoked`` per provider-emitted call item, same ids, in order."""
    items = run.output_items(*item_types)
    events = run.native_calls(kind)
    assert items, f"the provider emitted no {'/'.join(item_types)} item"
    assert [e.call_id for e in events] == [item["id"] for item in items]
    for event in events:
        assert (event.name, event.kind, event.provider, event.adapter) == (
            name,
            kind,
            "openai",
            "openai",
        )
        assert event.native is True
        assert event.success is True, event.result.message
    assert len(run.sink.of_type(PromptExecuted)) == 1


def digits_of(text: str) -> str:
    """``text`` with thousands separators between digits removed."""
    return re.sub(r"(?<=\d)[,\s\u00a0\u202f'](?=\d)", "", text)


def host_in(url: str, domains: Sequence[str]) -> bool:
    host = (urlsplit(url).hostname or "").lower()
    return any(host == d or host.endswith(f".{d}") for d in domains)


# -- web_search ------------------------------------------------------------------


@pytest.fixture(scope="module")
def web_search_run() -> LiveRun:
    config = WebSearchConfig(
        domain_filter=DomainFilter(allowed=ALLOWED_DOMAINS),
        geo_hint=BERLIN,
        search_context_size="low",
    )
    prompt = Prompt(
        ns="live",
        key="web-search",
        sections=[
            WebSearchSection(config),
            task_section(
                "In which Python version was the zoneinfo module added to the "
                "standard library? Search the documentation, answer in one "
                "sentence and cite the page you used."
            ),
        ],
        tool_choice=ToolChoice(mode="tool", tools=("web_search",)),
    )
    return evaluate(prompt, max_hosted_tool_calls=4)


def test_web_search_request_carries_domain_filter_and_geo_hint(
    web_search_run: LiveRun,
) -> None:
    body = web_search_run.first_request
    assert body["model"] == LIVE_MODEL
    assert body["tools"] == [
        {
            "type": "web_search",
            "filters": {"allowed_domains": ["docs.python.org"]},
            "user_location": {
                "type": "approximate",
                "country": "DE",
                "city": "Berlin",
                "region": "Berlin",
                "timezone": "Europe/Berlin",
            },
            "search_context_size": "low",
        }
    ]
    assert body["tool_choice"] == {
        "type": "allowed_tools",
        "mode": "required",
        "tools": [{"type": "web_search"}],
    }
    assert "web_search_call.action.sources" in body["include"]


def test_web_search_calls_are_published_as_native_tool_invocations(
    web_search_run: LiveRun,
) -> None:
    assert_native_calls_match_the_transcript(
        web_search_run,
        kind="web_search",
        name="web_search",
        item_types=("web_search_call",),
    )


def test_web_search_url_citations_stay_inside_the_allowed_domains(
    web_search_run: LiveRun,
) -> None:
    citations = [
        c for c in web_search_run.response.citations if c.kind == "url_citation"
    ]
    assert citations, "the answer cites no URL"
    for citation in citations:
        assert host_in(citation.url, ALLOWED_DOMAINS), citation.url
        assert citation.span is not None and citation.cited_text


def test_web_search_citations_are_linked_to_a_search_call(
    web_search_run: LiveRun,
) -> None:
    call_ids = {item["id"] for item in web_search_run.output_items("web_search_call")}
    citations = web_search_run.response.citations
    assert citations
    assert {c.search_call_id for c in citations} <= call_ids


def test_web_search_hosted_output_lists_the_calls_and_sources(
    web_search_run: LiveRun,
) -> None:
    output = web_search_run.response.hosted_outputs["web_search"]
    assert isinstance(output, WebSearchResult)
    assert [c.call_id for c in output.calls] == [
        item["id"] for item in web_search_run.output_items("web_search_call")
    ]
    assert output.text == web_search_run.response.text
    cited = {c.url for c in web_search_run.response.citations}
    assert cited <= set(output.source_urls)


# -- code_interpreter ------------------------------------------------------------


@pytest.fixture(scope="module")
def code_interpreter_run() -> LiveRun:
    prompt = Prompt(
        ns="live",
        key="code-interpreter",
        sections=[
            CodeInterpreterSection(CodeInterpreterConfig()),
            task_section(
                "Use the code interpreter to compute the sum of the squares of "
                "the integers from 1 to 100 and print it. Then reply with the "
                "number only."
            ),
        ],
        tool_choice=ToolChoice(mode="tool", tools=("code_interpreter",)),
    )
    return evaluate(prompt, max_hosted_tool_calls=3)


def test_code_interpreter_request_uses_an_auto_container(
    code_interpreter_run: LiveRun,
) -> None:
    body = code_interpreter_run.first_request
    assert body["tools"] == [
        {"type": "code_interpreter", "container": {"type": "auto"}}
    ]
    assert body["tool_choice"] == {"type": "code_interpreter"}
    assert "code_interpreter_call.outputs" in body["include"]


def test_code_interpreter_calls_are_published_as_native_tool_invocations(
    code_interpreter_run: LiveRun,
) -> None:
    assert_native_calls_match_the_transcript(
        code_interpreter_run,
        kind="code_interpreter",
        name="code_interpreter",
        item_types=("code_interpreter_call",),
    )


def test_code_interpreter_hosted_output_records_code_and_container(
    code_interpreter_run: LiveRun,
) -> None:
    output = code_interpreter_run.response.hosted_outputs["code_interpreter"]
    assert isinstance(output, CodeInterpreterResult)
    items = code_interpreter_run.output_items("code_interpreter_call")
    assert [run.call_id for run in output.calls] == [item["id"] for item in items]
    for run, item in zip(output.calls, items, strict=True):
        assert run.container_id and run.container_id == item["container_id"]
        assert run.code.strip()


def test_code_interpreter_answer_is_the_computed_value(
    code_interpreter_run: LiveRun,
) -> None:
    if not talks_to_openai():
        pytest.skip(not_openai_reason("a stand-in does not run the code"))
    output = code_interpreter_run.response.hosted_outputs["code_interpreter"]
    assert SUM_OF_SQUARES in digits_of(code_interpreter_run.response.text or "")
    assert SUM_OF_SQUARES in digits_of(output.logs)


# -- image_generation ------------------------------------------------------------


@pytest.fixture(scope="module")
def image_generation_run() -> LiveRun:
    config = ImageGenerationConfig(size="1024x1024", quality="low", output_format="png")
    prompt = Prompt(
        ns="live",
        key="image-generation",
        sections=[
            ImageGenerationSection(config),
            task_section(
                "Draw a plain red circle on a white background, then say in one "
                "short sentence what you drew."
            ),
        ],
        tool_choice=ToolChoice(mode="tool", tools=("image_generation",)),
    )
    return evaluate(prompt, max_hosted_tool_calls=1)


def test_image_generation_request_asks_for_a_small_low_quality_png(
    image_generation_run: LiveRun,
) -> None:
    body = image_generation_run.first_request
    assert body["tools"] == [
        {
            "type": "image_generation",
            "size": "1024x1024",
            "quality": "low",
            "output_format": "png",
        }
    ]
    assert body["tool_choice"] == {"type": "image_generation"}


def test_image_generation_calls_are_published_as_native_tool_invocations(
    image_generation_run: LiveRun,
) -> None:
    assert_native_calls_match_the_transcript(
        image_generation_run,
        kind="image_generation",
        name="image_generation",
        item_types=("image_generation_call",),
    )


def test_image_generation_hosted_output_holds_a_png_image(
    image_generation_run: LiveRun,
) -> None:
    output = image_generation_run.response.hosted_outputs["image_generation"]
    assert isinstance(output, ImageGenerationResult)
    assert output.succeeded
    image = output.succeeded[0]
    assert image.mime_type == "image/png"
    assert image.data().startswith(PNG_MAGIC)
    item = image_generation_run.output_items("image_generation_call")[0]
    assert base64.b64decode(item["result"]) == image.data()


# -- mcp -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def mcp_run() -> LiveRun:
    prompt = Prompt(
        ns="live",
        key="mcp",
        sections=[
            McpSection(DEEPWIKI, key="deepwiki", name="deepwiki"),
            task_section(
                "Use read_wiki_structure on the GitHub repository 'psf/requests' "
                "and name two of its documentation topics in one sentence."
            ),
        ],
        tool_choice=ToolChoice(mode="tool", tools=("deepwiki",)),
    )
    return evaluate(prompt, max_hosted_tool_calls=2)


def test_mcp_request_restricts_tools_and_never_asks_for_approval(
    mcp_run: LiveRun,
) -> None:
    body = mcp_run.first_request
    assert body["tools"] == [
        {
            "type": "mcp",
            "server_label": "deepwiki",
            "server_url": "https://mcp.deepwiki.com/mcp",
            "allowed_tools": ["read_wiki_structure"],
            "require_approval": "never",
        }
    ]
    assert body["tool_choice"] == {"type": "mcp", "server_label": "deepwiki"}


def test_mcp_calls_are_published_as_native_tool_invocations(
    mcp_run: LiveRun,
) -> None:
    assert_native_calls_match_the_transcript(
        mcp_run,
        kind="mcp",
        name="deepwiki",
        item_types=("mcp_call", "mcp_approval_request"),
    )


def test_mcp_calls_use_only_the_allowed_tool(mcp_run: LiveRun) -> None:
    for event in mcp_run.native_calls("mcp"):
        assert event.params["server_label"] == "deepwiki"
        assert event.params["name"] == "read_wiki_structure"


def test_mcp_hosted_output_lists_the_tool_and_its_output(mcp_run: LiveRun) -> None:
    output = mcp_run.response.hosted_outputs["deepwiki"]
    assert isinstance(output, McpResult)
    assert "read_wiki_structure" in output.listed_tools
    assert output.list_errors == ()
    assert output.approval_requests == ()
    assert output.calls and all(call.succeeded for call in output.calls)
    assert all(call.output for call in output.calls)


# -- file_search -----------------------------------------------------------------


@dataclasses.dataclass
class FileSearchRun:
    run: LiveRun
    file_id: str
    codename: str
    cleanup: dict[str, bool]


def _deleted(delete: Callable[[], Any]) -> bool:
    try:
        return bool(delete().deleted)
    except openai.APIError:
        return False


@pytest.fixture(scope="module")
def file_search_run() -> Iterator[FileSearchRun]:
    """Upload a generated file to a new vector store, wait until it is indexed
    (bounded polling), search it, and delete both again whatever happens."""
    log = RequestLog()
    client = live_client(log)
    token = uuid.uuid4().hex[:12]
    codename = f"amber-falcon-{token}"
    document = (
        "WINK live test handbook\n\n"
        f"The codename of the WINK release train is {codename}.\n"
        "Releases leave the station every second Tuesday.\n"
    ).encode()
    try:
        uploaded = client.files.create(
            file=(f"wink-live-{token}.txt", document, "text/plain"),
            purpose="assistants",
        )
    except openai.NotFoundError:
        if talks_to_openai():
            raise
        pytest.skip(not_openai_reason("it has no /files endpoint for file_search"))
    cleanup: dict[str, bool] = {}
    try:
        store = client.vector_stores.create(
            name=f"wink-live-{token}",
            expires_after={"anchor": "last_active_at", "days": 1},
        )
        try:
            attached = client.vector_stores.files.create_and_poll(
                uploaded.id,
                vector_store_id=store.id,
                poll_interval_ms=1000,
                max_wait_seconds=120,
            )
            assert attached.status == "completed", attached.last_error
            prompt = Prompt(
                ns="live",
                key="file-search",
                sections=[
                    FileSearchSection(
                        FileSearchConfig(vector_store_ids=(store.id,), max_results=3)
                    ),
                    task_section(
                        "What is the codename of the WINK release train? Look it "
                        "up in the documents and cite the file."
                    ),
                ],
                tool_choice=ToolChoice(mode="tool", tools=("file_search",)),
            )
            adapter = OpenAIAdapter(
                client=client,
                model=LIVE_MODEL,
                max_turns=4,
                extra_request=request_options(max_hosted_tool_calls=2),
            )
            sink = InMemorySink()
            response = adapter.evaluate(prompt, sink=sink)
        finally:
            cleanup["vector_store"] = _deleted(
                lambda: client.vector_stores.delete(store.id)
            )
    finally:
        cleanup["file"] = _deleted(lambda: client.files.delete(uploaded.id))
    yield FileSearchRun(
        run=LiveRun(response=response, sink=sink, log=log),
        file_id=uploaded.id,
        codename=codename,
        cleanup=cleanup,
    )


def test_file_search_request_names_the_vector_store(
    file_search_run: FileSearchRun,
) -> None:
    body = file_search_run.run.first_request
    [tool] = body["tools"]
    assert tool["type"] == "file_search"
    assert len(tool["vector_store_ids"]) == 1
    assert tool["vector_store_ids"][0].startswith("vs_")
    assert tool["max_num_results"] == 3
    assert body["tool_choice"] == {"type": "file_search"}
    assert "file_search_call.results" in body["include"]


def test_file_search_calls_are_published_as_native_tool_invocations(
    file_search_run: FileSearchRun,
) -> None:
    assert_native_calls_match_the_transcript(
        file_search_run.run,
        kind="file_search",
        name="file_search",
        item_types=("file_search_call",),
    )


def test_file_search_results_come_from_the_uploaded_file(
    file_search_run: FileSearchRun,
) -> None:
    output = file_search_run.run.response.hosted_outputs["file_search"]
    assert isinstance(output, FileSearchResult)
    assert output.results
    assert {hit.file_id for hit in output.results} == {file_search_run.file_id}
    assert any(file_search_run.codename in hit.text for hit in output.results)
    for citation in output.citations:
        assert citation.kind == "file_citation"
        assert citation.file_id == file_search_run.file_id


def test_file_search_answer_names_the_codename(
    file_search_run: FileSearchRun,
) -> None:
    assert file_search_run.codename in (file_search_run.run.response.text or "")


def test_file_search_cleanup_deletes_the_store_and_the_file(
    file_search_run: FileSearchRun,
) -> None:
    assert file_search_run.cleanup == {"vector_store": True, "file": True}


# -- a function tool under a policy ----------------------------------------------


@dataclasses.dataclass(frozen=True)
class ServiceParams:
    service: str = dataclasses.field(metadata={"description": "The service name"})


@dataclasses.dataclass(frozen=True)
class StepDone:
    service: str
    step: str


def release_tools(executed: list[str]) -> list[Tool[ServiceParams, StepDone]]:
    """``build`` and ``deploy``; ``executed`` lists the handlers that ran."""

    def build(params: ServiceParams, *, context: ToolContext) -> ToolResult[StepDone]:
        executed.append("build")
        return ToolResult.ok(StepDone(params.service, "built"), "Built.")

    def deploy(params: ServiceParams, *, context: ToolContext) -> ToolResult[StepDone]:
        executed.append("deploy")
        return ToolResult.ok(StepDone(params.service, "deployed"), "Deployed.")

    return [
        Tool(name="deploy", description="Deploy a built service.", handler=deploy),
        Tool(name="build", description="Build a service.", handler=build),
    ]


@dataclasses.dataclass
class PolicyRun:
    run: LiveRun
    executed: list[str]


@pytest.fixture(scope="module")
def policy_run() -> PolicyRun:
    executed: list[str] = []
    prompt = Prompt(
        ns="live",
        key="release",
        sections=[
            task_section(
                "Release the service 'catalog-api'. Call the deploy tool for it "
                "right away. If a call is denied, do what the denial asks and "
                "retry. When deploy has succeeded, reply 'released'.",
                tools=release_tools(executed),
                policies=[SequentialDependencyPolicy({"deploy": ["build"]})],
            )
        ],
    )
    return PolicyRun(run=evaluate(prompt, max_turns=6), executed=executed)


def test_function_tools_every_call_is_answered_once(policy_run: PolicyRun) -> None:
    bodies = policy_run.run.log.responses_bodies()
    history = bodies[-1]["input"]
    calls = [i["call_id"] for i in history if i.get("type") == "function_call"]
    outputs = [i["call_id"] for i in history if i.get("type") == "function_call_output"]
    assert calls, "the model called no function tool"
    assert Counter(outputs) == Counter(calls)
    assert len(set(calls)) == len(calls)


def test_function_tools_every_call_is_recorded_in_order(
    policy_run: PolicyRun,
) -> None:
    run = policy_run.run
    calls = run.output_items("function_call")
    local = [e for e in run.sink.of_type(ToolInvoked) if not e.native]
    assert [(e.name, e.call_id) for e in local] == [
        (c["name"], c["call_id"]) for c in calls
    ]
    assert [e.sequence for e in local] == sorted(e.sequence for e in local)


def test_function_tools_policy_denials_fail_the_call_without_running_it(
    policy_run: PolicyRun,
) -> None:
    run = policy_run.run
    invoked = {e.call_id: e for e in run.sink.of_type(ToolInvoked) if not e.native}
    for denial in run.sink.of_type(PolicyDenied):
        assert denial.tool_name == "deploy"
        assert denial.reason == "Tool 'deploy' requires: build"
        assert invoked[denial.call_id].success is False
    ran = policy_run.executed
    if "deploy" in ran:
        assert "build" in ran[: ran.index("deploy")]


def test_function_tools_run_ends_with_an_answer(policy_run: PolicyRun) -> None:
    run = policy_run.run
    last = run.sink.of_type(ProviderCallCompleted)[-1]
    assert not [i for i in last.response["output"] if i["type"] == "function_call"]
    [executed] = run.sink.of_type(PromptExecuted)
    assert executed.turns == run.response.turns == len(run.log.responses_bodies())
    assert run.sink.of_type(PromptFailed) == []


# -- design by contract: nothing is sent -----------------------------------------


@dataclasses.dataclass(frozen=True)
class ShellConfig:
    environment: str = "container_auto"


def prompt_with(*hosted: HostedTool[Any]) -> Prompt:
    return Prompt(
        ns="live", key="dbc", sections=[task_section("Answer.", hosted_tools=hosted)]
    )


def test_adapter_unsupported_hosted_kind_fails_before_any_request() -> None:
    log = RequestLog()
    sink = InMemorySink()
    adapter = OpenAIAdapter(client=live_client(log), model=LIVE_MODEL)
    shell = HostedTool(
        kind="shell", name="shell", description="A shell.", config=ShellConfig()
    )

    with pytest.raises(PromptEvaluationError) as info:
        adapter.evaluate(prompt_with(shell), sink=sink)

    assert info.value.phase == "render"
    assert "Unsupported hosted tool kind 'shell'" in info.value.message
    assert log.requests == []
    assert sink.of_type(PromptRendered) == []
    assert [e.phase for e in sink.of_type(PromptFailed)] == ["render"]


def test_adapter_model_without_the_hosted_kind_fails_before_any_request() -> None:
    log = RequestLog()
    adapter = OpenAIAdapter(
        client=live_client(log),
        model=LIVE_MODEL,
        model_capabilities={LIVE_MODEL: frozenset({"file_search"})},
    )
    prompt = prompt_with(WebSearchSection().tool)

    with pytest.raises(PromptEvaluationError) as info:
        adapter.evaluate(prompt)

    assert info.value.phase == "render"
    assert info.value.message == (
        f"Model '{LIVE_MODEL}' does not support hosted tool kind 'web_search' "
        "(tool 'web_search'); it supports: file_search."
    )
    assert log.requests == []


MALFORMED_WEB_SEARCH: dict[str, Callable[[], WebSearchConfig]] = {
    "101 domains": lambda: WebSearchConfig(
        domain_filter=DomainFilter(
            allowed=tuple(f"d{i}.example.com" for i in range(101))
        )
    ),
    "domain with a scheme": lambda: WebSearchConfig(
        domain_filter=DomainFilter(allowed=("https://docs.python.org",))
    ),
    "unknown country": lambda: WebSearchConfig(geo_hint=GeoHint(country_code="XX")),
    "unknown timezone": lambda: WebSearchConfig(
        geo_hint=GeoHint(timezone="Europe/Atlantis")
    ),
}


@pytest.mark.parametrize(
    "build", MALFORMED_WEB_SEARCH.values(), ids=list(MALFORMED_WEB_SEARCH)
)
def test_web_search_malformed_config_fails_before_any_request(
    build: Callable[[], WebSearchConfig],
) -> None:
    log = RequestLog()
    adapter = OpenAIAdapter(client=live_client(log), model=LIVE_MODEL)

    with pytest.raises(PromptValidationError):
        adapter.evaluate(prompt_with(WebSearchSection(build()).tool))

    assert log.requests == []


def test_adapter_config_of_the_wrong_type_fails_before_any_request() -> None:
    log = RequestLog()
    adapter = OpenAIAdapter(client=live_client(log), model=LIVE_MODEL)
    mismatched = HostedTool(
        kind="web_search",
        name="web_search",
        description="Search.",
        config=ShellConfig(),
    )

    with pytest.raises(PromptEvaluationError) as info:
        adapter.evaluate(prompt_with(mismatched))

    assert info.value.phase == "render"
    assert log.requests == []
