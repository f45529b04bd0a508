"""Starting with a broker (202), cancelling (API, page, admin), the live
progress endpoint, and bidi controls shown neutralised on the pages."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth.models import Permission
from django.urls import reverse
from rest_framework.test import APIClient

from sessions_app.models import AgentSession
from sessions_app.runs import lifecycle, store
from tests.sessions_app.factories import (
    AgentSessionFactory,
    ProviderCallFactory,
    ToolInvocationFactory,
    UserFactory,
)
from tooling.demo import seed_demo_catalog

pytestmark = pytest.mark.django_db

Status = AgentSession.Status


def api(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user=user)
    return client


def cancel_url(session) -> str:
    return reverse("sessions_api:session-cancel", args=[session.pk])


# -- starting with a broker -------------------------------------------------------


def test_start_with_a_broker_answers_202_queued(
    api_client, settings, django_capture_on_commit_callbacks
):
    settings.CELERY_TASK_ALWAYS_EAGER = False
    seed_demo_catalog()

    with django_capture_on_commit_callbacks() as sent:
        response = api_client.post(
            reverse("sessions_api:session-list"),
            {"prompt": "demo/release"},
            format="json",
        )

    assert response.status_code == 202
    body = response.json()
    assert body["status"] == "queued"
    assert response["Location"].endswith(f"/api/sessions/{body['id']}/")
    assert len(sent) == 1  # the run is sent to the broker once committed
    assert body["revision"] and body["attempts"] == 0


def test_start_without_a_broker_answers_201_finished(api_client):
    seed_demo_catalog()
    response = api_client.post(
        reverse("sessions_api:session-list"), {"prompt": "demo/release"}, format="json"
    )
    assert response.status_code == 201
    assert response.json()["status"] == "succeeded"


def test_start_refuses_params_a_database_cannot_store(api_client):
    seed_demo_catalog()
    response = api_client.post(
        reverse("sessions_api:session-list"),
        {"prompt": "demo/release", "params": {"service": "a\u0000b"}},
        format="json",
    )
    assert response.status_code == 400
    assert response.json()["errors"] == {
        "params.service": ["Must not contain NUL bytes or lone surrogates."]
    }
    assert not AgentSession.objects.exists()


# -- cancel through the API --------------------------------------------------------


def test_author_cancels_a_queued_session(user):
    session = AgentSessionFactory.create(status=Status.QUEUED, created_by=user)

    response = api(user).post(cancel_url(session))

    assert response.status_code == 200
    assert response.json()["status"] == "cancelled"
    assert response.json()["cancelled_by"] == user.username


def test_author_cancels_a_running_session_at_its_next_step(user):
    session = AgentSessionFactory.create(status=Status.RUNNING, created_by=user)
    from django.utils import timezone

    AgentSession.objects.filter(pk=session.pk).update(
        lease_expires_at=timezone.now() + timedelta(minutes=1)
    )

    response = api(user).post(cancel_url(session))

    assert response.status_code == 202
    assert response.json()["status"] == "running"
    assert response.json()["cancel_requested_at"] is not None


def test_cancel_of_a_finished_session_is_a_conflict(user):
    session = AgentSessionFactory.create(status=Status.SUCCEEDED, created_by=user)

    response = api(user).post(cancel_url(session))

    assert response.status_code == 409
    assert response.json() == {
        "detail": "The session has already ended (succeeded).",
        "code": "conflict",
        "errors": {},
    }


@pytest.mark.parametrize("route", ["api", "page"])
def test_a_run_that_ends_as_its_cancel_is_requested_is_reported_ended(
    user, client, monkeypatch, route
):
    """The run's last step ends it between the cancel request and the answer:
    the answer says it ended (409; the page's message), not that it will
    stop (202 with a body saying "succeeded"). The request stays recorded."""
    session = AgentSessionFactory.create(status=Status.QUEUED, created_by=user)
    claim = store.claim(session.pk)
    assert claim is not None
    requested = lifecycle.request_cancel

    def request_then_the_run_ends(*args, **kwargs):
        marked = requested(*args, **kwargs)
        store.finish(claim, status=Status.SUCCEEDED, output_text="Done.")
        return marked

    monkeypatch.setattr(lifecycle, "request_cancel", request_then_the_run_ends)

    if route == "api":
        response = api(user).post(cancel_url(session))
        assert response.status_code == 409
        assert response.json()["detail"] == (
            "The session has already ended (succeeded)."
        )
    else:
        client.force_login(user)
        page = client.post(
            reverse("sessions_app:session-cancel", args=[session.pk]), follow=True
        )
        assert "The session had already ended." in page.content.decode()
    ended = AgentSession.objects.get(pk=session.pk)
    assert (ended.status, ended.output_text) == (Status.SUCCEEDED, "Done.")
    assert ended.cancel_requested_at is not None and ended.cancelled_by == user
    client.force_login(user)
    shown = client.get(ended.get_absolute_url()).content.decode()
    assert "(the run ended before its next step)" in shown


def test_only_the_author_or_a_permission_may_cancel(user):
    session = AgentSessionFactory.create(
        status=Status.QUEUED, created_by=UserFactory.create()
    )

    refused = api(user).post(cancel_url(session))
    user.user_permissions.add(Permission.objects.get(codename="cancel_any_session"))
    user = type(user).objects.get(pk=user.pk)  # fresh permission cache
    allowed = api(user).post(cancel_url(session))

    assert refused.status_code == 403
    assert allowed.status_code == 200


def test_cancel_unknown_session_is_404(api_client):
    response = api_client.post(
        "/api/sessions/00000000-0000-0000-0000-000000000001/cancel/"
    )
    assert response.status_code == 404


# -- cancel from the page and the admin ------------------------------------------


def test_page_offers_cancel_to_the_author_and_cancels(client, user):
    session = AgentSessionFactory.create(status=Status.QUEUED, created_by=user)
    client.force_login(user)

    page = client.get(session.get_absolute_url()).content.decode()
    response = client.post(reverse("sessions_app:session-cancel", args=[session.pk]))

    assert 'id="cancel-form"' in page
    assert response.status_code == 302
    assert AgentSession.objects.get(pk=session.pk).status == Status.CANCELLED
    followed = client.get(response["Location"]).content.decode()
    assert "The session was cancelled." in followed


def test_page_hides_cancel_from_others_and_refuses_their_post(client, user):
    session = AgentSessionFactory.create(
        status=Status.QUEUED, created_by=UserFactory.create()
    )
    client.force_login(user)

    page = client.get(session.get_absolute_url()).content.decode()
    response = client.post(reverse("sessions_app:session-cancel", args=[session.pk]))

    assert 'id="cancel-form"' not in page
    assert response.status_code == 403
    assert AgentSession.objects.get(pk=session.pk).status == Status.QUEUED


def test_admin_action_cancels_selected_sessions(admin_client):
    queued = AgentSessionFactory.create(status=Status.QUEUED)
    done = AgentSessionFactory.create(status=Status.SUCCEEDED)

    response = admin_client.post(
        reverse("admin:sessions_app_agentsession_changelist"),
        {"action": "cancel_sessions", "_selected_action": [queued.pk, done.pk]},
        follow=True,
    )

    assert response.status_code == 200
    text = response.content.decode()
    assert "1 cancelled" in text and "1 already finished" in text
    assert AgentSession.objects.get(pk=queued.pk).status == Status.CANCELLED
    assert AgentSession.objects.get(pk=done.pk).status == Status.SUCCEEDED


# -- the live page -----------------------------------------------------------------


def test_progress_reports_status_and_a_version_that_moves(client, user):
    session = AgentSessionFactory.create(status=Status.RUNNING)
    client.force_login(user)
    url = reverse("sessions_app:session-progress", args=[session.pk])

    before = client.get(url).json()
    ProviderCallFactory.create(session=session, turn=1)
    ToolInvocationFactory.create(session=session, sequence=1)
    after = client.get(url).json()

    assert before["status"] == "running" and before["finished"] is False
    assert after["provider_calls"] == 1 and after["tool_invocations"] == 1
    assert after["version"] != before["version"]


def test_progress_is_one_query(client, user, django_assert_num_queries):
    session = AgentSessionFactory.create(status=Status.RUNNING)
    client.force_login(user)
    url = reverse("sessions_app:session-progress", args=[session.pk])
    client.get(url)
    with django_assert_num_queries(5):  # two: the permission lookup
        client.get(url)


def test_progress_of_an_unknown_session_is_404(client, user):
    client.force_login(user)
    response = client.get(
        "/audit/sessions/00000000-0000-0000-0000-000000000001/progress/"
    )
    assert response.status_code == 404


def test_a_live_session_page_polls_and_degrades_without_javascript(client, user):
    session = AgentSessionFactory.create(status=Status.RUNNING)
    client.force_login(user)

    page = client.get(session.get_absolute_url()).content.decode()

    progress = reverse("sessions_app:session-progress", args=[session.pk])
    assert f'data-live-url="{progress}"' in page
    assert "sessions_app/live.js" in page
    assert '<noscript><meta http-equiv="refresh" content="5"></noscript>' in page


def test_a_finished_session_page_does_not_poll(client, user):
    session = AgentSessionFactory.create(status=Status.SUCCEEDED)
    client.force_login(user)

    page = client.get(session.get_absolute_url()).content.decode()

    assert "data-live-url" not in page
    assert "live.js" not in page
    assert "refresh" not in page


# -- bidi controls ----------------------------------------------------------------


def test_pages_show_bidi_controls_neutralised(admin_client):
    session = AgentSessionFactory.create(
        output_text="safe \u202eetad\u202c text \u2066x"
    )

    page = admin_client.get(session.get_absolute_url()).content.decode()
    listed = admin_client.get(
        reverse("admin:sessions_app_agentsession_change", args=[session.pk])
    ).content.decode()
    api = admin_client.get(
        reverse("sessions_api:session-detail", args=[session.pk])
    ).json()

    for html in (page, listed):
        assert "\u202e" not in html and "\u2066" not in html
        assert "[U+202E]etad[U+202C]" in html
    assert api["output_text"] == session.output_text  # the record keeps them


def test_a_filter_box_sends_back_the_control_it_was_given(admin_client):
    """The box keeps the control as a character reference (the browser reads
    it back as the character), so submitting the form again searches for
    what was searched."""
    url = reverse("sessions_app:session-list")

    page = admin_client.get(url, {"q": "\u202eRTL"}).content.decode()

    assert 'value="&#x202E;RTL"' in page
    assert "\u202e" not in page


def test_neutralise_page_keeps_controls_only_where_a_browser_sends_them():
    from tooling.bidi import neutralise_page

    html = (
        '<input name="q" value="a\u202eb"><a href="https://x.example/\u202e">'
        '\u202eshown</a><span title="t\u202e">x</span>'
    )

    assert neutralise_page(html) == (
        '<input name="q" value="a&#x202E;b"><a href="https://x.example/&#x202E;">'
        '[U+202E]shown</a><span title="t[U+202E]">x</span>'
    )
    box = '<p>\u202e</p><textarea name="reason" rows="2">\nnot on \u202eFri</textarea>'
    assert neutralise_page(box) == (
        '<p>[U+202E]</p><textarea name="reason" rows="2">\nnot on &#x202E;Fri'
        "</textarea>"
    )
