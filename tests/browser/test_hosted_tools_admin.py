"""Issue 4, tried as a new user would, in a real browser: an operator adds a
web search hosted tool through its typed admin form, attaches it to a section
and a prompt, previews the exact tool JSON, runs the prompt and reads the web
searches, citations and sources on the session page, in the API and on the
citations page; invalid settings are refused next to their field with nothing
saved, and a prompt whose model may not use web search cannot be saved,
previewed or run.

Nothing here depends on the offline provider's wording (queries, answers,
titles): the page is compared with the database records and the API."""

from __future__ import annotations

import json
import urllib.request
from typing import Any

import pytest
from selenium.webdriver.common.by import By

from sessions_app import services as session_services
from sessions_app.models import AgentSession, Citation, ProviderCall, ToolInvocation
from tests.browser.ui import UI
from tests.limits import REQUEST_SECONDS
from tooling import services
from tooling.models import (
    HostedToolDefinition,
    ModelCapability,
    PromptTemplate,
    SectionDefinition,
    SectionHostedTool,
)
from tooling.runtime import source_key

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

DOMAINS = ["docs.python.org", "docs.djangoproject.com"]

# The web_search tool as the OpenAI Responses API takes it: filters and
# user_location at the top level of the tool object.
WEB_SEARCH_TOOL = {
    "type": "web_search",
    "filters": {"allowed_domains": DOMAINS},
    "user_location": {
        "type": "approximate",
        "country": "GB",
        "city": "London",
        "region": "England",
        "timezone": "Europe/London",
    },
    "search_context_size": "high",
}
COUNT_WORDS_TOOL = {
    "type": "function",
    "name": "count_words",
    "description": "Count the words and characters of a text.",
    "parameters": {
        "type": "object",
        "properties": {
            "text": {
                "description": "The text whose words to count.",
                "type": "string",
                "maxLength": 20000,
            }
        },
        "required": ["text"],
        "additionalProperties": False,
    },
    "strict": True,
}


# -- admin steps ------------------------------------------------------------------


def fill_web_search(ui: UI, name: str, **fields: str) -> None:
    """The hosted tool add form with kind web_search; ``fields`` by form name."""
    ui.go("/admin/tooling/hostedtooldefinition/add/")
    ui.fill("name", name)
    ui.select("kind", "web_search")
    ui.fill("description", "Search the Python and Django documentation.")
    for field, value in fields.items():
        if field in ("search_context_size", "country"):
            ui.select(field, value)
        else:
            ui.fill(field, value)


def add_count_words(ui: UI) -> None:
    ui.go("/admin/tooling/tooldefinition/add/")
    ui.fill("name", "count_words")
    ui.select("handler_key", "demo.count_words")
    ui.save_and_expect_success()


def add_docs_search(ui: UI, shot: Any) -> None:
    fill_web_search(
        ui,
        "docs_search",
        allowed_domains="\n".join(DOMAINS),
        country="GB",
        city="London",
        region="England",
        timezone="Europe/London",
        search_context_size="high",
    )
    assert ui.field("allow_live_access").is_selected()  # the default
    shot("issue4-01-web-search-form")
    ui.save_and_expect_success()


def add_section_with_search(ui: UI) -> None:
    ui.go("/admin/tooling/sectiondefinition/add/")
    ui.fill("key", "docs")
    ui.fill("title", "Documentation research")
    ui.fill(
        "template",
        "Answer the question: $question\n\nSearch only the documentation sites, "
        "count the words of your draft, and cite every source you use.",
    )
    ui.fill(
        "default_params",
        json.dumps({"question": "Which Django release is the current LTS?"}),
    )
    row = ui.add_inline_row("sectiontool_set")
    ui.autocomplete(f"id_sectiontool_set-{row}-tool", "count", "count_words")
    row = ui.add_inline_row("sectionhostedtool_set")
    ui.autocomplete(
        f"id_sectionhostedtool_set-{row}-hosted_tool",
        "docs",
        "docs_search (web_search)",
    )
    ui.save_and_expect_success()


def add_prompt(ui: UI, key: str, model: str = "") -> None:
    ui.go("/admin/tooling/prompttemplate/add/")
    ui.fill("namespace", "ops")
    ui.fill("key", key)
    ui.fill("name", "Documentation research")
    if model:
        ui.fill("model", model)
    ui.autocomplete("id_prompt_sections-0-section", "docs", "docs")
    ui.save_and_expect_success()


def open_preview(ui: UI, ref: str) -> None:
    """The prompt's "Preview / run" link in the prompt list."""
    ui.go("/admin/tooling/prompttemplate/")
    [row] = [r for r in ui.find_all("#result_list tbody tr") if ref in r.text]
    ui.click_and_load(row.find_element(By.LINK_TEXT, "Preview / run"))
    assert ui.text("h1") == f"Preview {ref}"


# -- reading the session page -------------------------------------------------------


def page_invocations(ui: UI) -> list[dict[str, Any]]:
    """The timeline's tool calls in page order."""
    calls = []
    for item in ui.find_all("ol.timeline > li.tool-invocation"):
        badges = [b.text for b in item.find_elements(By.CSS_SELECTOR, ".head .badge")]
        calls.append(
            {
                "call_id": item.get_attribute("id").removeprefix("call-"),
                "name": item.find_element(By.CSS_SELECTOR, ".head strong").text,
                "badges": badges,
                "success": "ok" in badges,
            }
        )
    return calls


def page_sources(ui: UI) -> list[dict[str, Any]]:
    """The "Sources" list: one entry per citation, in page order."""
    sources = []
    for item in ui.find_all("ol.sources > li"):
        link = item.find_element(By.CSS_SELECTOR, "strong a")
        origins = item.find_elements(By.CSS_SELECTOR, "a[href^='#call-']")
        sources.append(
            {
                "id": int(item.get_attribute("id").removeprefix("citation-")),
                "title": link.text,
                "url": link.get_attribute("href"),
                "from": [a.get_attribute("href").split("#", 1)[1] for a in origins],
            }
        )
    return sources


def page_highlights(ui: UI) -> dict[int, str]:
    """Citation id -> the highlighted text in the output that links to it."""
    marked: dict[int, str] = {}
    for mark in ui.find_all("div.output mark"):
        text = mark.get_attribute("textContent")
        refs = mark.find_elements(By.XPATH, "./following-sibling::sup[1]//a")
        for ref in refs:
            marked[int(ref.get_attribute("href").split("#citation-", 1)[1])] = text
    return marked


def page_consulted(ui: UI) -> list[str]:
    return [
        a.get_attribute("href")
        for a in ui.driver.find_elements(
            By.XPATH,
            "//h3[normalize-space()='Consulted but not cited']"
            "/following-sibling::ul[1]/li/a",
        )
    ]


def provider_order(session: AgentSession) -> list[str]:
    """The call ids of the session's tool calls in the order the provider
    returned them (turn by turn, item by item)."""
    ids = []
    for call in ProviderCall.objects.filter(session=session).order_by("turn"):
        for item in (call.response or {}).get("output", []):
            kind = item.get("type", "")
            if kind == "function_call":
                ids.append(item["call_id"])
            elif kind.endswith("_call"):
                ids.append(item["id"])
    return ids


def api_get(ui: UI, path: str) -> Any:
    """``path`` of the API as the logged-in browser user (its session cookie)."""
    cookie = ui.driver.get_cookie("sessionid")
    request = urllib.request.Request(
        ui.base_url + path,
        headers={
            "Accept": "application/json",
            "Cookie": f"sessionid={cookie['value']}",
        },
    )
    with urllib.request.urlopen(request, timeout=REQUEST_SECONDS) as response:
        assert response.status == 200
        return json.loads(response.read())


def citation_rows(ui: UI) -> list[dict[str, Any]]:
    rows = []
    for row in ui.find_all("table tbody tr"):
        cells = row.find_elements(By.CSS_SELECTOR, "td")
        href = cells[3].find_element(By.CSS_SELECTOR, "a").get_attribute("href")
        rows.append(
            {
                "url": cells[0]
                .find_element(By.CSS_SELECTOR, "a")
                .get_attribute("href"),
                "domain": cells[1].text.splitlines()[0].strip(),
                "flags": [
                    flag.text
                    for flag in cells[1].find_elements(By.CSS_SELECTOR, ".flag")
                ],
                "session": href.split("/audit/sessions/", 1)[1].split("/", 1)[0],
                "citation": int(href.split("#citation-", 1)[1]),
            }
        )
    return rows


def filter_citations(ui: UI, domain: str) -> list[dict[str, Any]]:
    ui.go("/audit/citations/")
    ui.fill("domain", domain)
    ui.click_and_load(ui.find("form.filters button[type=submit]"))
    assert ui.field("domain").get_attribute("value") == domain
    return citation_rows(ui)


# -- the tests ------------------------------------------------------------------------


def test_operator_adds_web_search_previews_runs_and_reads_its_sources(
    ui: UI, shot: Any
) -> None:
    # 1. A function tool, the web search hosted tool through its typed form, a
    # section with both, a prompt with the section.
    add_count_words(ui)
    add_docs_search(ui, shot)
    tool = HostedToolDefinition.objects.get(name="docs_search")
    assert tool.kind == "web_search"
    assert tool.config == {
        "allowed_domains": DOMAINS,
        "allow_live_access": True,
        "country": "GB",
        "city": "London",
        "region": "England",
        "timezone": "Europe/London",
        "search_context_size": "high",
    }
    # Reopened, the typed form shows what was saved.
    ui.go(f"/admin/tooling/hostedtooldefinition/{tool.pk}/change/")
    assert ui.field("allowed_domains").get_attribute("value").split() == DOMAINS
    assert ui.field("country").get_attribute("value") == "GB"
    assert ui.field("timezone").get_attribute("value") == "Europe/London"

    add_section_with_search(ui)
    section = SectionDefinition.objects.get(key="docs")
    assert [link.hosted_tool.name for link in SectionHostedTool.objects.all()] == [
        "docs_search"
    ]
    assert [link.section for link in SectionHostedTool.objects.all()] == [section]
    add_prompt(ui, "docs")

    # The preview shows the exact tool JSON: what the service layer computes,
    # and what the OpenAI wire format wants.
    open_preview(ui, "ops/docs")
    tools = ui.json_of("#request-json")["tools"]
    assert tools == [COUNT_WORDS_TOOL, WEB_SEARCH_TOOL], json.dumps(tools, indent=1)
    template = PromptTemplate.objects.with_catalog().get(namespace="ops", key="docs")
    expected_request = json.loads(
        json.dumps(services.preview_prompt(template=template, params={}).safe_request)
    )
    assert tools == expected_request["tools"]
    assert ui.json_of("#request-json") == expected_request
    assert ui.json_of("#request-json")["include"] == ["web_search_call.action.sources"]
    shot("issue4-02-preview")

    # 2. Run it; the session page shows the web searches beside the local call.
    ui.click_and_load(ui.find("input[name=run]"))
    assert ui.path.startswith("/audit/sessions/")
    assert "Succeeded" in ui.text("h1")
    session = AgentSession.objects.get()
    assert session.tools_payload == [COUNT_WORDS_TOOL, WEB_SEARCH_TOOL]
    shot("issue4-03-session")

    invocations = list(
        ToolInvocation.objects.filter(session=session).order_by("turn", "sequence")
    )
    native = [inv for inv in invocations if inv.native]
    local = [inv for inv in invocations if not inv.native]
    assert native, "the run made no web search"
    assert local, "the run made no local call"
    assert {(inv.name, inv.kind) for inv in native} == {("docs_search", "web_search")}
    calls = page_invocations(ui)
    # Page order = database order = the order the provider returned them.
    assert [c["call_id"] for c in calls] == [inv.call_id for inv in invocations]
    assert [c["call_id"] for c in calls] == provider_order(session)
    for call, invocation in zip(calls, invocations, strict=True):
        assert call["name"] == invocation.name
        assert call["success"] == invocation.success
        if invocation.native:
            assert "native · web_search" in call["badges"], call
        else:
            assert "function" in call["badges"], call
            assert not any(b.startswith("native") for b in call["badges"]), call

    # The sources: every citation, titled and linked, highlighted in the output,
    # linked to the web search it came from (an anchor on this page).
    citations = list(
        Citation.objects.filter(session=session).order_by("provider_call__turn", "id")
    )
    assert citations, "the run cited nothing"
    sources = page_sources(ui)
    highlights = page_highlights(ui)
    native_ids = {inv.call_id for inv in native}
    assert [s["id"] for s in sources] == [c.pk for c in citations]
    for source, citation in zip(sources, citations, strict=True):
        assert citation.title and source["title"] == citation.title
        assert source["url"] == citation.url
        assert source["url"].startswith(("https://", "http://"))
        assert citation.search_call_id in native_ids
        assert source["from"] == [f"call-{citation.search_call_id}"]
        target = ui.find(f"ol.timeline > li#call-{citation.search_call_id}")
        assert "native · web_search" in target.text
        assert citation.cited_text and citation.cited_text in session.output_text
        assert highlights[citation.pk] == citation.cited_text

    # Sources a search consulted but no citation cites, listed apart.
    cited = {source_key(c.url) for c in citations}
    consulted: list[str] = []
    for invocation in native:
        for url in invocation.value.get("sources") or []:
            if source_key(url) not in cited and url not in consulted:
                consulted.append(url)
    assert page_consulted(ui) == consulted
    shown = {source_key(url) for url in page_consulted(ui)}
    assert not shown & cited

    # 3. The API returns the same native calls and citations as the page.
    body = api_get(ui, f"/api/sessions/{session.pk}/")
    assert [i["call_id"] for i in body["tool_invocations"]] == [
        c["call_id"] for c in calls
    ]
    assert [
        (i["call_id"], i["name"], i["kind"], i["success"])
        for i in body["tool_invocations"]
        if i["native"]
    ] == [
        (c["call_id"], c["name"], "web_search", c["success"])
        for c in calls
        if "native · web_search" in c["badges"]
    ]
    assert [
        (c["id"], c["title"], c["url"], [f"call-{c['search_call_id']}"])
        for c in body["citations"]
    ] == [(s["id"], s["title"], s["url"], s["from"]) for s in sources]
    assert {c["id"]: c["cited_text"] for c in body["citations"]} == highlights

    # 4. The citations page across sessions: a second run, and a citation
    # outside the allowed domains (seeded: the provider keeps to the filter).
    second = session_services.start_session(prompt_ref="ops/docs", params={})
    assert second.status == AgentSession.Status.SUCCEEDED
    provider_call = ProviderCall.objects.filter(session=session).last()
    assert provider_call is not None
    outside = Citation.objects.create(
        session=session,
        provider_call=provider_call,
        url="https://blog.example.com/django-lts",
        domain="blog.example.com",
        title="Someone's blog",
    )
    cited_domains = sorted({c.domain for c in citations})
    assert cited_domains and set(cited_domains) <= set(DOMAINS), cited_domains
    parent = cited_domains[0].split(".", 1)[1]  # subdomains match too
    listed_sessions: set[str] = set()
    for domain in [*cited_domains, parent]:
        rows = filter_citations(ui, domain)
        expected = Citation.objects.for_domain(domain).order_by("-created_at", "-id")
        assert [r["citation"] for r in rows] == [c.pk for c in expected]
        assert [r["session"] for r in rows] == [str(c.session_id) for c in expected]
        assert all(r["domain"].endswith(domain) for r in rows), rows
        assert not any(r["flags"] for r in rows), rows
        listed_sessions |= {r["session"] for r in rows}
    assert listed_sessions == {str(session.pk), str(second.pk)}
    shot("issue4-04-citations-by-domain")

    [row] = filter_citations(ui, "example.com")
    assert row == {
        "url": outside.url,
        "domain": "blog.example.com",
        "flags": ["outside allowed domains"],
        "session": str(session.pk),
        "citation": outside.pk,
    }
    shot("issue4-05-citation-outside-allowed-domains")
    flagged = api_get(ui, "/api/citations/?domain=example.com")["results"]
    assert [(c["id"], c["outside_allowed_domains"]) for c in flagged] == [
        (outside.pk, True)
    ]
    # Unfiltered: only the seeded citation is flagged.
    ui.go("/audit/citations/")
    rows = citation_rows(ui)
    assert len(rows) == Citation.objects.count()
    assert [r["citation"] for r in rows if r["flags"]] == [outside.pk]


REFUSED = [
    (
        "too-many-domains",
        {"allowed_domains": "\n".join(f"d{i}.example.com" for i in range(101))},
        "allowed_domains",
        "A domain filter allows at most 100 domains (got 101).",
    ),
    (
        "domain-with-scheme",
        {"allowed_domains": "https://docs.python.org"},
        "allowed_domains",
        "Domain 'https://docs.python.org' must be written without a scheme (for "
        "example 'docs.python.org', not 'https://docs.python.org').",
    ),
    (
        "timezone",
        {"timezone": "Mars/Olympus"},
        "timezone",
        "'Mars/Olympus' is not an IANA timezone (for example 'Europe/Berlin').",
    ),
]


def test_invalid_web_search_settings_are_refused_next_to_the_field(
    ui: UI, shot: Any
) -> None:
    valid = {"allowed_domains": "docs.python.org", "country": "DE"}
    for case, fields, field, message in REFUSED:
        fill_web_search(ui, f"bad_{case}".replace("-", "_"), **{**valid, **fields})
        ui.submit()
        assert ui.field_errors(field) == [message], ui.form_errors()
        assert ui.find("p.errornote").is_displayed()
        assert HostedToolDefinition.objects.count() == 0
        shot(f"issue4-06-refused-{case}")
    # The country is picked from the countries by name (issue #28): typing
    # "Germany" into the list picks Germany, never "GE" (Georgia).
    fill_web_search(ui, "de_search")
    ui.type_keys("country", "Germany")
    assert ui.field("country").get_attribute("value") == "DE"


def test_a_model_without_web_search_cannot_save_preview_or_run_the_prompt(
    ui: UI, shot: Any
) -> None:
    add_count_words(ui)
    add_docs_search(ui, shot=lambda name: None)
    add_section_with_search(ui)
    # Saved while the catalog has no allow-list for the model: not restricted.
    add_prompt(ui, "docs-mini", model="gpt-5.4-mini")

    # The capability form refuses a kind it does not know, next to the field.
    ui.go("/admin/tooling/modelcapability/add/")
    ui.fill("model", "gpt-5.4-mini")
    ui.fill("hosted_kinds", '["web_serch"]')
    ui.submit()
    assert ui.field_errors("hosted_kinds") == [
        "Unknown hosted tool kind(s): 'web_serch'; known kinds: web_search, "
        "file_search, code_interpreter, image_generation, mcp, shell, apply_patch."
    ], ui.form_errors()
    assert ModelCapability.objects.count() == 0
    message = (
        "Model 'gpt-5.4-mini' does not support hosted tool kind 'web_search' "
        "(tool 'docs_search'); it supports: file_search."
    )
    # A row that would leave the saved prompt's web search out is refused,
    # naming the prompt.
    ui.fill("hosted_kinds", '["file_search"]')
    ui.submit()
    assert f"This row would break prompt 'ops/docs-mini': {message}" in (
        ui.form_errors()
    ), ui.form_errors()
    assert ModelCapability.objects.count() == 0
    # A row written elsewhere (a fixture, a script) is not checked by the form:
    # the prompt's save, preview and run still refuse what it does not allow.
    ModelCapability.objects.create(model="gpt-5.4-mini", hosted_kinds=["file_search"])

    # A new prompt for that model with the web search section is refused.
    ui.go("/admin/tooling/prompttemplate/add/")
    ui.fill("namespace", "ops")
    ui.fill("key", "docs-mini-2")
    ui.fill("model", "gpt-5.4-mini")
    ui.autocomplete("id_prompt_sections-0-section", "docs", "docs")
    ui.submit()
    assert message in ui.form_errors(), ui.form_errors()
    assert PromptTemplate.objects.count() == 1
    shot("issue4-07-save-refused-model-capability")

    # The prompt saved before the allow-list existed: its preview and its run
    # are refused with the same rule, and nothing reaches the provider or the
    # audit trail.
    open_preview(ui, "ops/docs-mini")
    assert [e.text for e in ui.find_all("ul.errorlist li")] == [message]
    assert not ui.find_all("#request-json")
    shot("issue4-08-preview-refused-model-capability")
    run_path = ui.path.replace("/preview/", "/run/")
    ui.click_and_load(ui.find("input[name=run]"))
    assert ui.path == run_path  # the run view shows the preview page, refused
    assert [e.text for e in ui.find_all("ul.errorlist li")] == [message]
    assert not ui.find_all("#request-json")
    assert AgentSession.objects.count() == 0
    assert ProviderCall.objects.count() == 0
    shot("issue4-09-run-refused-model-capability")
