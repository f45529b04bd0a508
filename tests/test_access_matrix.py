"""Who may see and do what: every route, every role, one table.

A new route or page adds its row here. Roles: ``anonymous``; ``user`` (logged
in, not staff, not the session's author); ``author`` (created the session);
``superuser``. Statuses are what each role gets for the route on a running
session another user may own.
"""

from __future__ import annotations

import pytest
from django.urls import reverse
from django.utils import timezone
from rest_framework.test import APIClient

from sessions_app.models import AgentSession
from tests.sessions_app.factories import AgentSessionFactory, UserFactory
from tests.tooling.factories import (
    PromptTemplateFactory,
    SectionDefinitionFactory,
    add_sections,
)

pytestmark = pytest.mark.django_db

LOGIN = 302  # to the login page
ANON_API = 403  # DRF: no credentials (issue #10 turns this into 401)

# (method, route, anonymous, user, author, superuser)
MATRIX = [
    ("get", "sessions_app:session-list", LOGIN, 200, 200, 200),
    ("get", "sessions_app:session-detail", LOGIN, 404, 200, 200),
    ("get", "sessions_app:session-progress", LOGIN, 404, 200, 200),
    ("post", "sessions_app:session-cancel", LOGIN, 404, 302, 302),
    ("get", "sessions_app:citation-list", LOGIN, 200, 200, 200),
    ("get", "sessions_api:session-list", ANON_API, 200, 200, 200),
    ("get", "sessions_api:session-detail", ANON_API, 404, 200, 200),
    ("get", "sessions_api:session-provider-calls", ANON_API, 404, 200, 200),
    ("post", "sessions_api:session-cancel", ANON_API, 404, 202, 202),
    ("get", "sessions_api:citation-list", ANON_API, 200, 200, 200),
    ("get", "admin:sessions_app_agentsession_changelist", LOGIN, 302, 302, 200),
    ("get", "admin:sessions_app_agentsession_change", LOGIN, 302, 302, 200),
    ("get", "admin:tooling_prompttemplate_preview", LOGIN, 302, 302, 200),
    ("post", "admin:tooling_prompttemplate_run", LOGIN, 302, 302, 302),
]

ROLES = ["anonymous", "user", "author", "superuser"]


@pytest.fixture
def world():
    prompt = PromptTemplateFactory()
    add_sections(prompt, SectionDefinitionFactory(template="Say hello."))
    author = UserFactory(username="author")
    session = AgentSessionFactory(status=AgentSession.Status.RUNNING, created_by=author)
    AgentSession.objects.filter(pk=session.pk).update(
        lease_expires_at=timezone.now() + timezone.timedelta(minutes=5)
    )
    return {
        "session": session,
        "prompt": prompt,
        "users": {
            "anonymous": None,
            "user": UserFactory(username="someone"),
            "author": author,
            "superuser": UserFactory(username="root", is_staff=True, is_superuser=True),
        },
    }


def url_for(route: str, world: dict) -> str:
    if route.endswith(("-list", "_changelist")):
        return reverse(route)
    if route.startswith("admin:tooling_prompttemplate"):
        return reverse(route, args=[world["prompt"].pk])
    return reverse(route, args=[world["session"].pk])


@pytest.mark.parametrize(
    ("method", "route", "role", "expected"),
    [
        (method, route, role, statuses[index])
        for method, route, *statuses in MATRIX
        for index, role in enumerate(ROLES)
    ],
    ids=lambda value: str(value),
)
def test_access(world, method, route, role, expected):
    client = APIClient()
    user = world["users"][role]
    if user is not None:
        client.force_login(user)
    data = {"params": "{}"} if route.endswith("_run") else None

    response = getattr(client, method)(url_for(route, world), data)

    assert response.status_code == expected, (method, route, role)
    if expected == LOGIN and role == "anonymous":
        assert "login" in response["Location"]
