"""What the real Responses API sends, through the whole product (issue #24):
sessions run on the offline provider (which plays each case) or on bodies
recorded from the real API, then their rows, pages and API read back."""

from __future__ import annotations

import pytest
from django.utils.html import escape

from sessions_app import services
from sessions_app.models import AgentSession, Citation, ProviderCall, ToolInvocation
from tests.runtime import real_responses as real
from tests.runtime.fakes import message, response
from tests.sessions_app.factories import (
    AgentSessionFactory,
    CitationFactory,
    ToolInvocationFactory,
)
from tests.sessions_app.misbehaving import ScriptedProvider
from tests.tooling.factories import HostedToolDefinitionFactory
from tests.tooling.hosted_admin import prompt_with
from tooling.offline import MARKER_COMMENTARY, MARKER_COMMENTARY_ONLY, MARKER_STATUS

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _offline(settings):
    settings.WINK_PROVIDER = "offline"


def _run(*hosted, template: str = "Find the refund policy.") -> AgentSession:
    prompt = prompt_with(*hosted, template=template)
    session = services.start_session(prompt_ref=prompt.ref, params={})
    return AgentSession.objects.get(pk=session.pk)


# -- 15. statuses -----------------------------------------------------------------


@pytest.mark.parametrize("status", ["queued", "in_progress", "cancelled"])
def test_a_background_status_fails_the_session_with_the_call_recorded(status):
    session = _run(template=f"Find the refund policy. {MARKER_STATUS[status]}")

    assert (session.status, session.error_phase) == ("failed", "response")
    assert session.error_message == (
        f"The provider answered with status '{status}': the product does not use "
        "background mode; the response has no output to act on."
    )
    (call,) = ProviderCall.objects.filter(session=session)
    assert call.status == status
    assert call.response["status"] == status
    assert call.response["output"] == []


# -- 16. commentary ---------------------------------------------------------------


def test_commentary_is_on_the_timeline_and_in_the_api_not_in_the_output(
    admin_client, api_client
):
    session = _run(template=f"Find the refund policy. {MARKER_COMMENTARY}")

    assert session.status == "succeeded", session.error_message
    (call,) = ProviderCall.objects.filter(session=session)
    (commentary,) = call.commentary
    assert commentary.startswith('I will work on "Find the refund policy."')
    assert commentary not in session.output_text
    assert session.output_text.startswith("No function tools were called.")
    page = admin_client.get(session.get_absolute_url()).content.decode()
    assert 'class="commentary"><span class="badge"' in page
    assert escape(commentary) in page
    body = api_client.get(f"/api/sessions/{session.pk}/").json()
    assert body["provider_calls"][0]["commentary"] == [commentary]


def test_commentary_alone_is_not_the_end_of_the_run():
    session = _run(template=f"Find the refund policy. {MARKER_COMMENTARY_ONLY}")

    assert session.status == "succeeded", session.error_message
    calls = list(ProviderCall.objects.filter(session=session).order_by("turn"))
    assert len(calls) == 2
    assert [len(call.commentary) for call in calls] == [1, 1]
    assert session.output_text.startswith("No function tools were called.")
    # the commentary went back with its phase
    echoed = [i for i in calls[1].request["input"] if i.get("type") == "message"]
    assert [m["phase"] for m in echoed] == ["commentary"]


# -- 17. file and container file citations name their call ------------------------


def test_file_and_container_citations_link_to_their_calls(admin_client):
    search = HostedToolDefinitionFactory.create(
        name="docs", kind="file_search", config={"vector_store_ids": ["vs_1"]}
    )
    code = HostedToolDefinitionFactory.create(
        name="sandbox", kind="code_interpreter", config={}
    )

    session = _run(search, code)

    assert session.status == "succeeded", session.error_message
    calls = {
        row.kind: row.call_id
        for row in ToolInvocation.objects.filter(session=session, native=True)
    }
    links = {
        row.kind: row.search_call_id for row in Citation.objects.filter(session=session)
    }
    assert links == {
        "file_citation": calls["file_search"],
        "container_file_citation": calls["code_interpreter"],
    }
    page = admin_client.get(session.get_absolute_url()).content.decode()
    for call_id in calls.values():
        assert f'id="call-{call_id}"' in page  # the timeline entry
        assert f'href="#call-{call_id}"' in page  # the source pointing at it
    assert "docs <code>" in page and "sandbox <code>" in page


def test_a_file_citation_whose_call_is_not_recorded_says_what_made_it(admin_client):
    session = AgentSessionFactory.create(output_text="See the handbook.")
    CitationFactory.create(
        session=session,
        kind="file_citation",
        url="",
        filename="handbook.md",
        search_call_id="fs_gone",
    )

    page = admin_client.get(session.get_absolute_url()).content.decode()

    assert "from file search <code>fs_gone</code>" in page


# -- 18. web search sources without a URL -----------------------------------------


def test_a_feed_source_is_recorded_and_listed_as_text(admin_client):
    search = HostedToolDefinitionFactory.create(
        name="web", kind="web_search", config={}
    )

    session = _run(search, template="What is the weather in Berlin today?")

    assert session.status == "succeeded", session.error_message
    call = ToolInvocation.objects.get(session=session, native=True)
    assert call.value is not None and call.value["api_sources"] == ["oai-weather"]
    assert "- api: oai-weather" in call.rendered_output
    page = admin_client.get(session.get_absolute_url()).content.decode()
    assert '<li class="api-source">oai-weather <span class="badge"' in page


def test_a_hostile_feed_name_is_escaped_and_never_a_link(admin_client):
    session = AgentSessionFactory.create()
    ToolInvocationFactory.create(
        session=session,
        native=True,
        kind="web_search",
        value={
            "sources": [],
            "api_sources": ["<script>x</script>", "https://a.example"],
        },
    )

    page = admin_client.get(session.get_absolute_url()).content.decode()

    assert "<script>x</script>" not in page
    assert escape("<script>x</script>") in page
    assert 'href="https://a.example"' not in page
    assert '<li class="api-source">https://a.example <span' in page


# -- 19. a client-executed shell call for a hosted shell ---------------------------


def test_a_client_shell_call_is_a_failed_call_and_the_session_goes_on(admin_client):
    shell = HostedToolDefinitionFactory.create(name="box", kind="shell", config={})
    prompt = prompt_with(shell, template="Show the working directory.")
    provider = ScriptedProvider(
        real.body(real.SHELL_LOCAL), response(message("Nothing ran, so: unknown."))
    )

    session = services.start_session(prompt_ref=prompt.ref, client=provider.client)

    session = AgentSession.objects.get(pk=session.pk)
    assert session.status == "succeeded", session.error_message
    assert session.output_text == "Nothing ran, so: unknown."
    call = ToolInvocation.objects.get(session=session)
    assert (call.native, call.kind, call.success) == (True, "shell", False)
    assert call.message == (
        "The model asked for a client-executed shell call, but this prompt's shell "
        "runs in a provider container; nothing ran."
    )
    answer = [
        item
        for item in ProviderCall.objects.get(session=session, turn=2).request["input"]
        if item.get("type") == "shell_call_output"
    ]
    assert [item["call_id"] for item in answer] == [call.call_id]
    page = admin_client.get(session.get_absolute_url()).content.decode()
    assert "nothing ran." in page
