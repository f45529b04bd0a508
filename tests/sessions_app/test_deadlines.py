"""A session's deadline bounds everything it waits for, provider included."""

from __future__ import annotations

import time

import pytest
from django.urls import reverse

from sessions_app.models import AgentSession
from tests.limits import LATE_SECONDS
from tests.tooling.factories import (
    PromptTemplateFactory,
    SectionDefinitionFactory,
    add_sections,
)
from tooling.offline import OfflineServer

pytestmark = pytest.mark.django_db


@pytest.fixture
def slow_provider(settings):
    """The offline provider over HTTP, answering after 10 minutes."""
    server = OfflineServer(delay=600).start()
    settings.WINK_PROVIDER = "openai"
    settings.OPENAI_API_KEY = "sk-offline"
    settings.OPENAI_BASE_URL = server.base_url
    settings.WINK_OPENAI_MAX_RETRIES = 2
    settings.WINK_OPENAI_TIMEOUT = 600
    yield server
    server.stop()


def test_a_3_second_deadline_ends_the_run_not_the_provider(api_client, slow_provider):
    section = SectionDefinitionFactory.create(key="slow", template="Answer slowly.")
    prompt = PromptTemplateFactory.create(deadline_seconds=3)
    add_sections(prompt, section)

    started = time.monotonic()
    response = api_client.post(
        reverse("sessions_api:session-list"), {"prompt": prompt.ref}, format="json"
    )
    elapsed = time.monotonic() - started

    assert response.status_code == 201, response.content
    # the deadline, not the provider's 10 minutes, ended it (about 3 s when the
    # machine is quiet)
    assert elapsed < 3 + LATE_SECONDS, f"the run took {elapsed:.1f} s"
    session = AgentSession.objects.get(pk=response.json()["id"])
    assert session.status == AgentSession.Status.FAILED
    assert session.error_phase == "deadline"
    assert session.error_message.startswith(
        "Deadline expired while waiting for the provider"
    )
    assert session.deadline_seconds == 3
    (call,) = session.provider_calls.all()
    assert call.error_type == "DeadlineExceeded"
    assert [a["error_type"] for a in call.attempts] == ["DeadlineExceeded"]
    assert len(slow_provider.served) == 0  # nothing answered, nothing retried


def test_the_global_cap_bounds_a_template_without_a_deadline(
    api_client, slow_provider, settings
):
    settings.WINK_RUN_MAX_SECONDS = 2
    section = SectionDefinitionFactory.create(key="slow", template="Answer slowly.")
    prompt = PromptTemplateFactory.create(deadline_seconds=None)
    add_sections(prompt, section)

    started = time.monotonic()
    response = api_client.post(
        reverse("sessions_api:session-list"), {"prompt": prompt.ref}, format="json"
    )

    # the cap, not the provider's 10 minutes, ends it (about 2 s when the
    # machine is quiet: the start's own work runs before the deadline's clock)
    assert time.monotonic() - started < 2 + LATE_SECONDS
    assert response.json()["status"] == "failed"
    assert response.json()["error_phase"] == "deadline"
    assert response.json()["deadline_seconds"] == 2
