"""Who may see and do what: every route of the URLconf, for every role.

Roles: ``anonymous``; ``user_a`` and ``user_b``, two ordinary accounts in the
Runners group (they may start runs), each the author of one session;
``auditor`` (the Auditors group, staff: sees every session, may not start or
cancel); ``staff`` (staff, no permission at all); ``approver`` (a Runner in
the Approvers group: may decide any approval, sees no session but its own).
The approver is user_a plus the Approvers group, so a row states its status
only where it differs from user_a's (``Row.approver``).

The routes are read from the URLconf: a route without a row here fails the
test (add the row when you add the route). Admin routes without a row of their
own must at least send anonymous and non-staff users to the login page. The
objects in the URLs are ``user_b``'s, and the test checks that nothing of
``user_b``'s session reaches a role that may not see it (no leak).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import Group
from django.urls import URLPattern, URLResolver, get_resolver, reverse
from django.utils import timezone
from rest_framework.test import APIClient

from sessions_app.models import AgentSession, Dataset, Experiment, Grader
from tests.sessions_app.factories import (
    AgentSessionFactory,
    ApprovalRequestFactory,
    CitationFactory,
    ProviderCallFactory,
    ToolInvocationFactory,
    UserFactory,
)
from tests.tooling.factories import (
    HostedToolDefinitionFactory,
    PromptTemplateFactory,
    SectionDefinitionFactory,
    ToolDefinitionFactory,
    add_sections,
)
from tooling.assembly import freeze_template
from tooling.models import CatalogRevision, Release

pytestmark = pytest.mark.django_db


def catalog_change() -> Any:
    """A recorded change of a catalog row (tooling/history)."""
    from tooling.history.recording import record
    from tooling.history.snapshot import snapshot

    tool = ToolDefinitionFactory.create()
    change = record(tool, before=None, after=snapshot(tool))
    assert change is not None
    return change


ROLES = ("anonymous", "user_a", "user_b", "auditor", "staff", "approver")
LOGIN = 302  # to the login page
SECRET_B = "marker-of-user-b-0b5e"


@dataclass(frozen=True)
class Row:
    method: str
    statuses: tuple[int, int, int, int, int]  # in ROLES order, approver aside
    data: Any = None
    approver: int | None = None  # None: as user_a

    def expected(self, role: str) -> int:
        if role == "approver":
            return self.statuses[1] if self.approver is None else self.approver
        return self.statuses[ROLES.index(role)]


# route name -> rows (one per method). Statuses for anonymous, user_a, user_b,
# auditor, staff, on user_b's running session and its rows.
MATRIX: dict[str, list[Row]] = {
    "home": [Row("get", (302, 302, 302, 302, 302))],
    "schema": [Row("get", (200, 200, 200, 200, 200))],
    "swagger-ui": [Row("get", (200, 200, 200, 200, 200))],
    # every account logs in here; a logged-in user is sent on
    "login": [Row("get", (200, 302, 302, 302, 302))],
    "logout": [Row("post", (302, 302, 302, 302, 302))],
    # audit pages
    "sessions_app:session-list": [Row("get", (LOGIN, 200, 200, 200, 200))],
    "sessions_app:session-detail": [Row("get", (LOGIN, 404, 200, 200, 404))],
    "sessions_app:session-progress": [Row("get", (LOGIN, 404, 200, 200, 404))],
    "sessions_app:session-cancel": [Row("post", (LOGIN, 404, 302, 403, 404))],
    "sessions_app:citation-list": [Row("get", (LOGIN, 200, 200, 200, 200))],
    # replaying needs to see the session and to start runs (auditors see, may
    # not start); comparing needs to see both sessions
    "sessions_app:session-replay": [
        Row("post", (LOGIN, 404, 302, 403, 404), data={"against": "same"})
    ],
    "sessions_app:session-compare": [Row("get", (LOGIN, 404, 200, 200, 404))],
    # adding a session to a dataset: see it, and "Can add dataset case"
    "sessions_app:session-add-to-dataset": [
        Row("post", (LOGIN, 404, 403, 403, 404), data="to_dataset")
    ],
    # experiments: their author's (user_b) and the auditors'; the author runs
    "sessions_app:experiment-list": [Row("get", (LOGIN, 200, 200, 200, 200))],
    "sessions_app:experiment-detail": [Row("get", (LOGIN, 404, 200, 200, 404))],
    "sessions_app:experiment-csv": [Row("get", (LOGIN, 404, 200, 200, 404))],
    # running needs its author to view datasets too (user_b may not)
    "sessions_app:experiment-run": [Row("post", (LOGIN, 404, 403, 403, 404))],
    # grading now: its author while runs wait (user_b's is new: told so)
    "sessions_app:experiment-grade": [Row("post", (LOGIN, 404, 302, 403, 404))],
    # catalog revisions: view_catalogrevision (the Auditors group)
    "sessions_app:revision-list": [Row("get", (LOGIN, 403, 403, 200, 403))],
    "sessions_app:revision-detail": [Row("get", (LOGIN, 403, 403, 200, 403))],
    "sessions_app:revision-compare": [Row("get", (LOGIN, 403, 403, 200, 403))],
    # spend of the sessions each may see (user_b's only to user_b and auditor)
    "sessions_app:cost-report": [Row("get", (LOGIN, 200, 200, 200, 200))],
    "sessions_app:cost-csv": [Row("get", (LOGIN, 200, 200, 200, 200))],
    # the approval inbox: approvers decide; the author (user_b) and auditors
    # see user_b's approval read-only; nobody else sees it
    "sessions_app:approval-list": [Row("get", (LOGIN, 200, 200, 200, 200))],
    "sessions_app:approval-detail": [
        Row("get", (LOGIN, 404, 200, 200, 404), approver=200),
        Row("post", (LOGIN, 404, 403, 403, 404), data="decide_form", approver=302),
    ],
    # sessions API
    "sessions_api:session-list": [
        Row("get", (401, 200, 200, 200, 200)),
        Row("post", (401, 201, 201, 403, 403), data="start"),
    ],
    "sessions_api:session-detail": [Row("get", (401, 404, 200, 200, 404))],
    "sessions_api:session-cancel": [Row("post", (401, 404, 202, 403, 404))],
    "sessions_api:session-replay": [Row("post", (401, 404, 201, 403, 404), data={})],
    "sessions_api:session-compare": [Row("get", (401, 404, 200, 200, 404))],
    "sessions_api:session-provider-calls": [Row("get", (401, 404, 200, 200, 404))],
    "sessions_api:session-events": [Row("get", (401, 404, 200, 200, 404))],
    "sessions_api:session-tool-invocations": [Row("get", (401, 404, 200, 200, 404))],
    "sessions_api:toolinvocation-list": [Row("get", (401, 200, 200, 200, 200))],
    "sessions_api:toolinvocation-detail": [Row("get", (401, 404, 200, 200, 404))],
    "sessions_api:citation-list": [Row("get", (401, 200, 200, 200, 200))],
    "sessions_api:citation-detail": [Row("get", (401, 404, 200, 200, 404))],
    "sessions_api:costs": [Row("get", (401, 200, 200, 200, 200))],
    # releases: view_release (Auditors) reads; add_release requests,
    # approve_release decides (the Releasers group; nobody here holds them)
    "sessions_api:release-list": [
        Row("get", (401, 403, 403, 200, 403)),
        Row("post", (401, 403, 403, 403, 403), data="release"),
    ],
    "sessions_api:release-detail": [Row("get", (401, 403, 403, 200, 403))],
    "sessions_api:release-approve": [Row("post", (401, 403, 403, 403, 403), data={})],
    "sessions_api:release-reject": [Row("post", (401, 403, 403, 403, 403), data={})],
    "sessions_api:release-withdraw": [Row("post", (401, 403, 403, 403, 403), data={})],
    "sessions_api:revision-list": [Row("get", (401, 403, 403, 200, 403))],
    # datasets and graders: the model permissions (Auditors view)
    "sessions_api:dataset-list": [
        Row("get", (401, 403, 403, 200, 403)),
        Row("post", (401, 403, 403, 403, 403), data={"name": "d"}),
    ],
    "sessions_api:dataset-detail": [Row("get", (401, 403, 403, 200, 403))],
    "sessions_api:grader-list": [
        Row("get", (401, 403, 403, 200, 403)),
        Row("post", (401, 403, 403, 403, 403), data={"name": "g"}),
    ],
    "sessions_api:grader-detail": [Row("get", (401, 403, 403, 200, 403))],
    "sessions_api:experiment-list": [
        Row("get", (401, 200, 200, 200, 200)),
        Row("post", (401, 403, 403, 403, 403), data={"name": "e"}),
    ],
    "sessions_api:experiment-detail": [Row("get", (401, 404, 200, 200, 404))],
    "sessions_api:experiment-csv": [Row("get", (401, 404, 200, 200, 404))],
    "sessions_api:experiment-grade": [Row("post", (401, 404, 409, 403, 404))],
    "sessions_api:revision-detail": [Row("get", (401, 403, 403, 200, 403))],
    "sessions_api:revision-compare": [Row("get", (401, 403, 403, 200, 403))],
    "sessions_api:approval-list": [Row("get", (401, 200, 200, 200, 200))],
    "sessions_api:approval-detail": [
        Row("get", (401, 404, 200, 200, 404), approver=200)
    ],
    "sessions_api:approval-approve": [
        Row("post", (401, 404, 403, 403, 404), data={}, approver=200)
    ],
    "sessions_api:approval-deny": [
        Row("post", (401, 404, 403, 403, 404), data={"reason": "no"}, approver=200)
    ],
    # catalog API
    "catalog_api:prompt-list": [Row("get", (401, 200, 200, 200, 200))],
    "catalog_api:prompt-detail": [Row("get", (401, 200, 200, 200, 200))],
    "catalog_api:prompt-preview": [Row("post", (401, 200, 200, 200, 200), data={})],
    "catalog_api:tool-list": [Row("get", (401, 200, 200, 200, 200))],
    "catalog_api:tool-detail": [Row("get", (401, 200, 200, 200, 200))],
    "catalog_api:hostedtool-list": [Row("get", (401, 200, 200, 200, 200))],
    "catalog_api:hostedtool-detail": [Row("get", (401, 200, 200, 200, 200))],
    # the catalog's history: view_catalogchange (the Auditors group)
    "catalog_api:change-list": [Row("get", (401, 403, 403, 200, 403))],
    "catalog_api:change-detail": [Row("get", (401, 403, 403, 200, 403))],
    # the audit admin (auditors read it; staff without permissions may not)
    "admin:index": [Row("get", (LOGIN, LOGIN, LOGIN, 200, 200))],
    "admin:login": [Row("get", (200, 200, 200, 302, 302))],
    "admin:logout": [Row("post", (302, 302, 302, 302, 302))],  # to the login page
    "admin:sessions_app_agentsession_changelist": [
        Row("get", (LOGIN, LOGIN, LOGIN, 200, 403))
    ],
    "admin:sessions_app_agentsession_change": [
        Row("get", (LOGIN, LOGIN, LOGIN, 200, 403))
    ],
    "admin:sessions_app_toolinvocation_change": [
        Row("get", (LOGIN, LOGIN, LOGIN, 200, 403))
    ],
    "admin:sessions_app_providercall_change": [
        Row("get", (LOGIN, LOGIN, LOGIN, 200, 403))
    ],
    "admin:sessions_app_citation_change": [Row("get", (LOGIN, LOGIN, LOGIN, 200, 403))],
    # the admin inbox: staff who may view approvals (the approver is not staff)
    # experiments in the admin: as on the pages (the Auditors see user_b's,
    # read-only; staff without a permission are refused)
    # importing cases changes a dataset: "Can add dataset case" and "Can change
    # dataset" (the Auditors may only view datasets)
    "admin:sessions_app_dataset_import": [Row("get", (LOGIN, LOGIN, LOGIN, 403, 403))],
    "admin:sessions_app_experiment_changelist": [
        Row("get", (LOGIN, LOGIN, LOGIN, 200, 403))
    ],
    "admin:sessions_app_experiment_change": [
        Row("get", (LOGIN, LOGIN, LOGIN, 200, 403))
    ],
    "admin:sessions_app_experiment_delete": [
        Row("get", (LOGIN, LOGIN, LOGIN, 403, 403))
    ],
    "admin:sessions_app_approvalrequest_changelist": [
        Row("get", (LOGIN, LOGIN, LOGIN, 200, 403))
    ],
    "admin:sessions_app_approvalrequest_change": [
        Row("get", (LOGIN, LOGIN, LOGIN, 200, 403))
    ],
    # running a prompt from the admin: view the template and start sessions
    "admin:tooling_prompttemplate_preview": [
        Row("get", (LOGIN, LOGIN, LOGIN, 403, 403))
    ],
    "admin:tooling_prompttemplate_releases": [
        Row("get", (LOGIN, LOGIN, LOGIN, 403, 403))
    ],
    "admin:tooling_prompttemplate_run": [
        Row("post", (LOGIN, LOGIN, LOGIN, 403, 403), data={"params": "{}"})
    ],
}


def routes() -> dict[str, str]:
    """Every named route of the URLconf: name -> pattern."""
    found: dict[str, str] = {}

    def walk(patterns: list[Any], prefix: str, namespace: str) -> None:
        for pattern in patterns:
            if isinstance(pattern, URLResolver):
                inner = (
                    f"{namespace}:{pattern.namespace}"
                    if namespace and pattern.namespace
                    else pattern.namespace or namespace
                )
                walk(pattern.url_patterns, prefix + str(pattern.pattern), inner)
            elif isinstance(pattern, URLPattern) and pattern.name:
                name = f"{namespace}:{pattern.name}" if namespace else pattern.name
                found.setdefault(name, prefix + str(pattern.pattern))
            elif isinstance(pattern, URLPattern):
                # Unnamed: the admin's redirects and catch-all, under /admin/.
                found.setdefault(
                    f"admin:<unnamed {pattern.pattern}>"
                    if prefix.startswith("/admin/")
                    else f"<unnamed {prefix}{pattern.pattern}>",
                    prefix + str(pattern.pattern),
                )

    walk(get_resolver().url_patterns, "/", "")
    return found


@pytest.fixture
def world(monkeypatch: Any) -> dict[str, Any]:
    # A decided approval's run is queued for a worker that never comes: the
    # matrix is about who may decide, and the approval's session is a row, not
    # a run (resumed inline it would end before its call: a 409).
    monkeypatch.setattr("sessions_app.runs.dispatch.dispatch_run", lambda *a, **k: True)
    runners = Group.objects.get(name="Runners")
    user_a, user_b = (
        UserFactory.create(username="user_a"),
        UserFactory.create(username="user_b"),
    )
    user_a.groups.add(runners)
    user_b.groups.add(runners)
    auditor = UserFactory.create(username="auditor", is_staff=True)
    auditor.groups.add(Group.objects.get(name="Auditors"))
    staff = UserFactory.create(username="staff", is_staff=True)
    approver = UserFactory.create(username="approver")
    approver.groups.add(runners, Group.objects.get(name="Approvers"))
    AgentSessionFactory.create(created_by=user_a, output_text="user a's output")
    prompt = PromptTemplateFactory.create()
    add_sections(prompt, SectionDefinitionFactory.create(template="Say hello."))
    revision = CatalogRevision.objects.get_or_create_for(freeze_template(prompt))
    dataset = Dataset.objects.create(name="matrix")
    grader = Grader.objects.create(
        name="matrix", kind="tool_called", config={"tool": "x"}
    )
    experiment = Experiment.objects.create(
        name="matrix",
        dataset=dataset,
        prompt_ref=prompt.ref,
        targets=["draft"],
        created_by=user_b,
    )
    experiment.graders.add(grader)
    pending = Release.objects.create(
        prompt=prompt,
        prompt_ref=prompt.ref,
        label="production",
        to_revision=revision,
        requested_by=user_b,
        requested_by_name="user_b",
    )

    def user_bs(status: str) -> AgentSession:
        return AgentSessionFactory.create(
            created_by=user_b,
            revision=revision,
            prompt_ref=prompt.ref,
            params={},
            status=status,
            output_text=SECRET_B,
            rendered_prompt=SECRET_B,
        )

    session = user_bs(AgentSession.Status.RUNNING)
    AgentSession.objects.filter(pk=session.pk).update(
        lease_expires_at=timezone.now() + timedelta(minutes=5)
    )
    finished = user_bs(AgentSession.Status.SUCCEEDED)  # only one is replayed
    call = ProviderCallFactory.create(session=session, turn=1)
    invocation = ToolInvocationFactory.create(session=session, message=SECRET_B)
    citation = CitationFactory.create(
        session=session, provider_call=call, title=SECRET_B
    )
    approval = ApprovalRequestFactory.create(
        session__created_by=user_b, session__rendered_prompt=SECRET_B, reason=SECRET_B
    )
    return {
        "users": {
            "anonymous": None,
            "user_a": user_a,
            "user_b": user_b,
            "auditor": auditor,
            "staff": staff,
            "approver": approver,
        },
        "kwargs": {
            "sessions_app:session-detail": {"pk": session.pk},
            "sessions_app:session-progress": {"pk": session.pk},
            "sessions_app:session-cancel": {"pk": session.pk},
            "sessions_app:session-replay": {"pk": finished.pk},
            "sessions_app:session-compare": {"pk": session.pk, "other": session.pk},
            "sessions_api:session-replay": {"pk": finished.pk},
            "sessions_api:session-compare": {"pk": session.pk, "other": session.pk},
            "sessions_api:session-detail": {"pk": session.pk},
            "sessions_app:approval-detail": {"pk": approval.pk},
            "sessions_api:approval-detail": {"pk": approval.pk},
            "sessions_api:approval-approve": {"pk": approval.pk},
            "sessions_api:approval-deny": {"pk": approval.pk},
            "admin:sessions_app_approvalrequest_change": {"object_id": approval.pk},
            "sessions_api:session-cancel": {"pk": session.pk},
            "sessions_api:session-provider-calls": {"pk": session.pk},
            "sessions_api:session-events": {"pk": session.pk},
            "sessions_api:session-tool-invocations": {"pk": session.pk},
            "sessions_api:toolinvocation-detail": {"pk": invocation.pk},
            "sessions_api:citation-detail": {"pk": citation.pk},
            "catalog_api:prompt-detail": {
                "namespace": prompt.namespace,
                "key": prompt.key,
            },
            "catalog_api:prompt-preview": {
                "namespace": prompt.namespace,
                "key": prompt.key,
            },
            "catalog_api:tool-detail": {"name": ToolDefinitionFactory.create().name},
            "catalog_api:hostedtool-detail": {
                "name": HostedToolDefinitionFactory.create().name
            },
            "catalog_api:change-detail": {"pk": catalog_change().pk},
            "sessions_app:revision-detail": {"digest": revision.hash},
            "sessions_app:revision-compare": {"digest": revision.hash, "other": "live"},
            "sessions_api:revision-detail": {"hash": revision.hash},
            "sessions_api:release-detail": {"pk": pending.pk},
            "sessions_app:session-add-to-dataset": {"pk": session.pk},
            "sessions_app:experiment-detail": {"pk": experiment.pk},
            "sessions_app:experiment-csv": {"pk": experiment.pk},
            "sessions_app:experiment-run": {"pk": experiment.pk},
            "sessions_app:experiment-grade": {"pk": experiment.pk},
            "sessions_api:experiment-grade": {"pk": experiment.pk},
            "sessions_api:dataset-detail": {"pk": dataset.pk},
            "admin:sessions_app_dataset_import": {"pk": dataset.pk},
            "sessions_api:grader-detail": {"pk": grader.pk},
            "sessions_api:experiment-detail": {"pk": experiment.pk},
            "sessions_api:experiment-csv": {"pk": experiment.pk},
            "sessions_api:release-approve": {"pk": pending.pk},
            "sessions_api:release-reject": {"pk": pending.pk},
            "sessions_api:release-withdraw": {"pk": pending.pk},
            "admin:tooling_prompttemplate_releases": {"pk": prompt.pk},
            "sessions_api:revision-compare": {"hash": revision.hash, "other": "live"},
            "admin:sessions_app_agentsession_change": {"object_id": session.pk},
            "admin:sessions_app_toolinvocation_change": {"object_id": invocation.pk},
            "admin:sessions_app_providercall_change": {"object_id": call.pk},
            "admin:sessions_app_citation_change": {"object_id": citation.pk},
            "admin:sessions_app_experiment_change": {"object_id": experiment.pk},
            "admin:sessions_app_experiment_delete": {"object_id": experiment.pk},
            "admin:tooling_prompttemplate_preview": {"pk": prompt.pk},
            "admin:tooling_prompttemplate_run": {"pk": prompt.pk},
        },
        "start": {"prompt": prompt.ref},
        "decide_form": {"decision": "approve", "confirm": "on", "reason": "ok"},
        "release": {"prompt": prompt.ref, "label": "staging"},
        "to_dataset": {"dataset": dataset.pk},
    }


def client_for(user: Any) -> APIClient:
    client = APIClient()
    if user is not None:
        client.force_login(user)
    return client


def test_every_route_has_a_row():
    unlisted = sorted(
        name
        for name in routes()
        if name not in MATRIX and not name.startswith("admin:")
    )
    assert unlisted == [], f"routes without a row in the access matrix: {unlisted}"
    stale = sorted(set(MATRIX) - set(routes()))
    assert stale == [], f"rows for routes that do not exist: {stale}"


CELLS = [
    (name, row, role, row.expected(role))
    for name, rows in MATRIX.items()
    for row in rows
    for role in ROLES
]


@pytest.mark.parametrize(
    ("name", "row", "role", "expected"),
    CELLS,
    ids=[f"{row.method} {name} as {role}" for name, row, role, _ in CELLS],
)
def test_access(world, name, row, role, expected):
    client = client_for(world["users"][role])
    url = reverse(name, kwargs=world["kwargs"].get(name))
    data = world[row.data] if isinstance(row.data, str) else row.data
    fmt = "json" if name.split(":")[0].endswith("api") else None

    response = getattr(client, row.method)(url, data, format=fmt)

    assert response.status_code == expected, response.content[:300]
    if (
        expected == LOGIN
        and role == "anonymous"
        and name not in ("home", "admin:logout")
    ):
        assert "login" in response["Location"]
    sees_b = role in ("user_b", "auditor") and not name.startswith("admin:tooling")
    # approvers see the approvals they may decide, not their sessions
    sees_b = sees_b or (role == "approver" and "approval" in name)
    if not sees_b:
        assert SECRET_B.encode() not in response.content, "user_b's data leaked"


@pytest.mark.parametrize("method", ["options", "head"])
def test_options_and_head_answer_every_route_without_an_error(world, method):
    """``OPTIONS /api/docs/`` was a 500 for anyone (DRF's answer had no
    template for the page's renderer; found by a hostile review)."""
    for role in ("anonymous", "auditor"):
        client = client_for(world["users"][role])
        for name in MATRIX:
            url = reverse(name, kwargs=world["kwargs"].get(name))
            response = getattr(client, method)(url)
            assert response.status_code < 500, (name, role, response.status_code)
            assert SECRET_B.encode() not in response.content or role == "auditor"


ADMIN_ROUTES = sorted(
    name
    for name in routes()
    if name.startswith("admin:") and name not in ("admin:login", "admin:logout")
)


def admin_url(name: str) -> str:
    pattern = routes()[name]
    if "<unnamed" in name:  # a raw pattern: fill its parameters by hand
        path = pattern.replace("<path:object_id>", "1")
        return path.replace("(?P<url>.*)$", "nowhere/")
    kwargs = {}
    for part in pattern.split("<")[1:]:
        _, _, parameter = part.partition(">")[0].rpartition(":")
        kwargs[parameter] = "sessions_app" if parameter == "app_label" else "1"
    return reverse(name, kwargs=kwargs or None)


@pytest.mark.parametrize("name", ADMIN_ROUTES)
def test_every_admin_route_needs_a_staff_login(name):
    url = admin_url(name)
    user = UserFactory.create(username="nobody")
    for client in (APIClient(), client_for(user)):
        response = client.get(url)
        assert response.status_code == 302, (name, response.status_code)
        assert "login" in response["Location"]
