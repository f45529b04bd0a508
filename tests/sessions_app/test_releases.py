"""Labels and releases (tooling/releases.py, sessions_app/releases): runs start
from a prompt's production label once it has one; editing the catalog changes
the draft only; moving a protected label needs a second person who may
approve releases, never its requester; rollbacks, stale approvals, one
pending release per label; the admin page and the API."""

from __future__ import annotations

import os
from typing import Any

import pytest
from django.contrib.auth.models import Group, Permission, User
from django.core.exceptions import PermissionDenied, ValidationError
from django.core.management import call_command
from django.urls import reverse
from rest_framework.test import APIClient

from sessions_app import services
from sessions_app.models import AgentSession
from tests.sessions_app.cursor_pages import listed_back, listed_ids
from tests.tooling.admin_forms import change_form_data
from tooling import releases
from tooling.demo import seed_demo_catalog
from tooling.models import (
    CatalogRevision,
    PromptLabel,
    PromptTemplate,
    Release,
    SectionDefinition,
)

pytestmark = pytest.mark.django_db

REF = "demo/release"


def releaser(name: str, *, superuser: bool = False) -> User:
    if superuser:
        return User.objects.create_superuser(name, f"{name}@example.com", "pw")
    user = User.objects.create_user(name, is_staff=True)
    user.groups.add(Group.objects.get(name="Releasers"))
    return user


def requester_only(name: str) -> User:
    user = User.objects.create_user(name, is_staff=True)
    user.user_permissions.add(
        *Permission.objects.filter(codename__in=["add_release", "view_release"])
    )
    return user


def template() -> PromptTemplate:
    return PromptTemplate.objects.get(namespace="demo", key="release")


def edit_draft(text: str) -> None:
    edited = SectionDefinition.objects.filter(key="release.pipeline").update(
        template=text
    )
    assert edited == 1


def run(**kwargs: Any) -> AgentSession:
    return services.start_session(prompt_ref=REF, params={}, **kwargs)


@pytest.fixture
def catalog() -> None:
    seed_demo_catalog()


def release(user: User, revision: Any = None, label: str = "production") -> Release:
    prompt = template()
    return releases.request_release(
        template=prompt,
        label=label,
        revision=revision or releases.draft_revision(prompt),
        user=user,
        reason="ship it",
    )


def test_without_labels_runs_use_the_catalog_as_it_is(catalog):
    first = run()
    edit_draft("Ship $service, v2.")
    second = run()
    assert first.label is None and second.label is None
    assert first.revision_id != second.revision_id
    assert "v2" in second.rendered_prompt


def test_production_needs_a_second_person_and_runs_keep_the_old_revision(catalog):
    alice, bob = releaser("alice"), releaser("bob")
    v1 = run().revision_id
    first = release(alice)
    assert first.is_pending  # production is protected
    # pending: nothing changed for runs
    assert run().revision_id == v1 and not PromptLabel.objects.exists()

    with pytest.raises(PermissionDenied, match="second person"):
        releases.approve(first, user=alice)
    releases.approve(first, user=bob, note="looks right")
    first.refresh_from_db()
    assert (first.status, first.requested_by_name, first.decided_by_name) == (
        "released",
        "alice",
        "bob",
    )
    assert first.note == "looks right"

    # the draft moves on; production runs stay on the released revision
    edit_draft("Ship $service, v2.")
    session = run()
    assert session.revision_id == v1 and session.label == "production"
    assert "v2" not in session.rendered_prompt

    second = release(alice)
    assert second.from_revision_id == v1 and second.is_pending
    assert run().revision_id == v1
    releases.approve(second, user=bob)
    moved = run()
    assert moved.revision_id == second.to_revision_id != v1
    assert "v2" in moved.rendered_prompt


def test_superusers_may_not_approve_their_own_release(catalog):
    root = releaser("root", superuser=True)
    pending = release(root)
    with pytest.raises(PermissionDenied):
        releases.approve(pending, user=root)
    assert releases.may_approve(root, pending) is False
    with pytest.raises(PermissionDenied):
        releases.approve(pending, user=requester_only("carol"))


def test_a_rollback_to_a_released_revision_moves_at_once(catalog):
    alice, bob = releaser("alice"), releaser("bob")
    releases.approve(release(alice), user=bob)
    v1 = PromptLabel.objects.get().revision
    edit_draft("Ship $service, v2.")
    releases.approve(release(alice), user=bob)
    assert PromptLabel.objects.get().revision != v1

    back = release(alice, revision=v1)

    assert back.rollback and back.status == "released"
    assert back.decided_by_name == "alice"
    assert run().revision_id == v1.hash


def test_one_pending_release_per_label_and_stale_approvals_are_refused(catalog):
    alice, bob = releaser("alice"), releaser("bob")
    releases.approve(release(alice), user=bob)
    v1 = PromptLabel.objects.get().revision
    edit_draft("Ship $service, v2.")
    releases.approve(release(alice), user=bob)
    edit_draft("Ship $service, v3.")
    waiting = release(alice)
    with pytest.raises(releases.ReleaseConflict, match="already waiting"):
        release(bob)
    release(bob, revision=v1)  # a rollback meanwhile: applied at once

    with pytest.raises(releases.ReleaseConflict, match="moved since"):
        releases.approve(waiting, user=bob)
    releases.reject(waiting, user=bob, note="stale")
    with pytest.raises(releases.ReleaseConflict, match="already decided"):
        releases.approve(waiting, user=bob)


def test_unprotected_labels_move_at_once_and_runs_name_them(catalog):
    alice = releaser("alice")
    staged = release(alice, label="staging")
    assert staged.status == "released"
    edit_draft("Ship $service, v2.")
    session = run(label="staging")
    assert session.label == "staging" and session.revision_id == staged.to_revision_id
    # no production label: the default is the draft
    assert run().revision_id != staged.to_revision_id
    with pytest.raises(ValidationError, match="no label 'canary'"):
        run(label="canary")


def test_runs_may_name_a_revision_or_the_draft(catalog):
    alice, bob = releaser("alice"), releaser("bob")
    v1 = run().revision_id
    releases.approve(release(alice), user=bob)
    edit_draft("Ship $service, v2.")
    draft = run(revision="draft")
    assert draft.label is None and "v2" in draft.rendered_prompt
    assert run(revision=v1).revision_id == v1
    other = services.start_session(prompt_ref="demo/notes", params={})
    with pytest.raises(ValidationError, match="No revision of demo/release"):
        run(revision=other.revision_id)
    with pytest.raises(ValidationError, match="not both"):
        run(revision=v1, label="production")


def test_requesting_needs_add_release(catalog):
    outsider = User.objects.create_user("outsider")
    with pytest.raises(PermissionDenied):
        release(outsider)
    with pytest.raises(ValidationError, match="lower-case"):
        release(releaser("alice"), label="Prod!")


def viewer(name: str) -> User:
    """Staff who may view releases (and prompts) but not request one."""
    user = User.objects.create_user(name, is_staff=True)
    user.user_permissions.add(
        *Permission.objects.filter(codename__in=["view_release", "view_prompttemplate"])
    )
    return user


def test_a_refused_request_writes_no_revision(catalog, client):
    """Someone who may not request a release is refused before the draft is
    frozen: no revision is stored (the table is append-only), through the
    API or the admin's releases page, and the refusal says nothing about
    whether the draft builds."""
    edit_draft("Ship $service, a draft nobody froze.")
    stored = CatalogRevision.objects.count()
    carol = viewer("carol")
    refused = api(carol).post(
        "/api/releases/", {"prompt": REF, "revision": "draft"}, format="json"
    )
    assert refused.status_code == 403
    assert refused.json()["detail"] == releases.REQUEST_DENIED
    client.force_login(carol)
    page = client.post(
        reverse("admin:tooling_prompttemplate_releases", args=[template().pk]),
        {"label": "production", "revision": "draft", "reason": "x"},
    )
    assert page.status_code == 403
    assert CatalogRevision.objects.count() == stored
    assert not Release.objects.exists()


def api(user: User | None) -> APIClient:
    client = APIClient()
    if user is not None:
        client.force_login(user)
    return client


def test_the_api_requests_and_decides_releases(catalog):
    alice, bob = releaser("alice"), releaser("bob")

    created = api(alice).post(
        "/api/releases/", {"prompt": REF, "reason": "first"}, format="json"
    )
    assert created.status_code == 201, created.json()
    body = created.json()
    assert body["status"] == "pending" and body["label"] == "production"
    url = f"/api/releases/{body['id']}/"
    assert created["Location"].endswith(url)

    own = api(alice).post(url + "approve/", {}, format="json")
    assert own.status_code == 403 and "second person" in own.json()["detail"]
    again = api(alice).post("/api/releases/", {"prompt": REF}, format="json")
    assert again.status_code == 409 and "already waiting" in again.json()["detail"]
    for field, value, message in [
        ("label", "Staging", "A label is 1 to 32 lower-case letters, digits, '-'"),
        ("revision", "ABC", "Enter 'draft' or a revision's hash: 64 characters"),
    ]:
        named = api(alice).post(
            "/api/releases/", {"prompt": REF, field: value}, format="json"
        )
        assert named.status_code == 400
        assert named.json()["errors"][field][0].startswith(message)

    approved = api(bob).post(url + "approve/", {"note": "ok"}, format="json")
    assert approved.status_code == 200 and approved.json()["decided_by_name"] == "bob"
    decided = api(bob).post(url + "reject/", {}, format="json")
    assert decided.status_code == 409

    prompt = api(alice).get(f"/api/prompts/{REF}/").json()
    assert prompt["labels"] == {"production": body["to_revision"]}
    assert prompt["run_revision"] == body["to_revision"]

    listed = api(bob).get("/api/releases/", {"prompt": REF, "status": "released"})
    assert [row["id"] for row in listed.json()["results"]] == [body["id"]]
    alice.groups.add(Group.objects.get(name="Runners"))
    run_from = api(alice).post(
        "/api/sessions/", {"prompt": REF, "label": "production"}, format="json"
    )
    assert run_from.status_code == 201, run_from.json()
    assert run_from.json()["label"] == "production"
    assert run_from.json()["revision"] == body["to_revision"]


@pytest.mark.parametrize(
    ("payload", "status", "field"),
    [
        ({"prompt": "nope/missing"}, 400, "prompt"),
        ({"prompt": REF, "label": "Prod!"}, 400, "label"),
        ({"prompt": REF, "revision": "f" * 64}, 400, "revision"),
        ({"prompt": REF, "reason": "a\x00b"}, 400, "reason"),
        ({"prompt": REF, "extra": 1}, 400, "extra"),
    ],
)
def test_the_api_refuses_bad_requests(catalog, payload, status, field):
    response = api(releaser("alice")).post("/api/releases/", payload, format="json")
    assert response.status_code == status, response.json()
    assert field in response.json()["errors"], response.json()
    assert not Release.objects.exists()


def test_the_api_pages_releases_by_page_size_and_refuses_a_bad_one(
    catalog: None,
) -> None:
    alice = releaser("alice")
    for label in ("one", "two", "three"):
        release(alice, label=label)
    first = api(alice).get("/api/releases/", {"page_size": 2}).json()
    assert [row["label"] for row in first["results"]] == ["three", "two"]
    rest = api(alice).get(first["next"]).json()
    assert [row["label"] for row in rest["results"]] == ["one"]
    for size in ("0", "9999", "abc", "-1", ""):
        response = api(alice).get("/api/releases/", {"page_size": size})
        assert response.status_code == 400, (size, response.content)
        assert "page_size" in response.json()["errors"]


@pytest.mark.parametrize("size", ["1", "2", "4"])
def test_releases_requested_at_one_time_are_each_listed_once_either_way(
    catalog: None, size: str
) -> None:
    """The releases list read DRF's cursor (a time and an offset among the
    rows sharing it): back from the last page, releases requested at one
    time were skipped and repeated (found by hostile QA). A keyset names a
    row (ADR 0030)."""
    alice = releaser("alice")
    for label in ("one", "two", "three", "four", "five"):
        release(alice, label=label)
    Release.objects.update(requested_at=Release.objects.earliest("pk").requested_at)
    expected = list(Release.objects.order_by("-pk").values_list("pk", flat=True))
    query = {"page_size": size}
    assert listed_ids(api(alice), "/api/releases/", query) == expected
    assert listed_back(api(alice), "/api/releases/", query) == expected


def test_the_api_needs_the_release_permissions(catalog):
    alice = releaser("alice")
    pending = release(alice)
    runner = User.objects.create_user("runner")
    assert api(None).get("/api/releases/").status_code == 401
    assert api(runner).get("/api/releases/").status_code == 403
    requester = requester_only("carol")
    refused = api(requester).post(
        f"/api/releases/{pending.pk}/approve/", {}, format="json"
    )
    assert refused.status_code == 403
    withdraw = api(requester).post(
        f"/api/releases/{pending.pk}/withdraw/", {}, format="json"
    )
    assert withdraw.status_code == 403
    mine = api(alice).post(f"/api/releases/{pending.pk}/withdraw/", {}, format="json")
    assert mine.status_code == 200 and mine.json()["status"] == "withdrawn"


def test_the_admin_release_page_requests_and_approves(client, catalog):
    alice, bob = releaser("alice", superuser=True), releaser("bob", superuser=True)
    prompt = template()
    url = reverse("admin:tooling_prompttemplate_releases", args=[prompt.pk])
    client.force_login(alice)
    change = client.get(
        reverse("admin:tooling_prompttemplate_change", args=[prompt.pk])
    )
    assert url in change.content.decode()

    page = client.post(
        url,
        {"label": "production", "revision": "draft", "reason": "First <release>"},
        follow=True,
    )
    html = page.content.decode()
    assert "second person" in html and "First &lt;release&gt;" in html
    pending = Release.objects.get()
    assert 'value="approve"' not in html  # not for its requester

    client.force_login(bob)
    # a refused note says why ("could not be read; try again" before)
    for note, why in [
        ("x" * 1001, "Note: Ensure this value has at most 1000 characters"),
        ("o\x00k", "Note: Null characters are not allowed."),
    ]:
        refused = client.post(
            url,
            {"release": pending.pk, "decision": "approve", "note": note},
            follow=True,
        )
        assert f"Not decided. {why}" in refused.content.decode()
        assert Release.objects.get().is_pending
    page = client.post(
        url, {"release": pending.pk, "decision": "approve", "note": "ok"}, follow=True
    )
    assert "Release of production: released." in page.content.decode()
    assert PromptLabel.objects.get().revision_id == pending.to_revision_id

    bad = client.post(url, {"label": "production", "revision": "f" * 64})
    assert "Select a valid choice" in bad.content.decode()


def test_the_admin_release_page_shows_bidi_controls_as_marks(
    client: Any, catalog: None
) -> None:
    alice, bob = releaser("alice", superuser=True), releaser("bob", superuser=True)
    pending = releases.request_release(
        template=template(),
        label="production",
        revision=releases.draft_revision(template()),
        user=alice,
        reason="ok \u202e txet",
    )
    releases.reject(pending, user=bob, note="no \u2067 ton")
    client.force_login(bob)
    html = client.get(
        reverse("admin:tooling_prompttemplate_releases", args=[template().pk])
    ).content.decode()
    assert "ok [U+202E] txet" in html and "no [U+2067] ton" in html
    assert "\u202e" not in html and "\u2067" not in html


def test_the_demo_runs_from_production_until_a_second_person_releases_an_edit(
    client, settings
):
    """Issue 27's "Done when", on the seeded demo: edit a section in the admin,
    see it in the revision diff, request production, runs stay on the old
    revision until the demo approver approves; then they run the edit."""
    settings.DEBUG = True
    with open(os.devnull, "w") as quiet:
        call_command("seed_demo", stdout=quiet)
    research = PromptTemplate.objects.get(namespace="demo", key="research")
    label = PromptLabel.objects.get(prompt=research, name="production")
    seeded = AgentSession.objects.get(prompt_ref="demo/research", label="production")
    assert seeded.revision_id == label.revision_id
    admin = User.objects.get(username="admin")
    admin.groups.add(Group.objects.get(name="Runners"))
    approver = User.objects.get(username="approver")

    client.force_login(admin)
    section = SectionDefinition.objects.get(key="research.sources")
    url = reverse("admin:tooling_sectiondefinition_change", args=[section.pk])
    data = change_form_data(client, url)
    data.update(template="Search only the allowed sites. Never guess.")
    data["change_reason"] = "No guessing"
    assert client.post(url, data).status_code == 302
    since = reverse("sessions_app:revision-compare", args=[label.revision_id, "live"])
    assert (
        "+Search only the allowed sites. Never guess."
        in client.get(since).content.decode()
    )

    releases_url = reverse("admin:tooling_prompttemplate_releases", args=[research.pk])
    client.post(releases_url, {"label": "production", "revision": "draft"})
    pending = Release.objects.get(prompt=research, status="pending")
    ran = api(admin).post("/api/sessions/", {"prompt": "demo/research"}, format="json")
    assert ran.json()["revision"] == label.revision_id  # still the old one

    client.force_login(approver)
    page = client.post(
        releases_url, {"release": pending.pk, "decision": "approve"}, follow=True
    )
    assert "Release of production: released." in page.content.decode()
    ran = api(admin).post("/api/sessions/", {"prompt": "demo/research"}, format="json")
    assert ran.json()["revision"] == pending.to_revision_id
    assert "Never guess." in ran.json()["rendered_prompt"]


def test_a_one_person_rollback_only_goes_back_one_move(catalog):
    alice, bob = releaser("alice"), releaser("bob")
    releases.approve(release(alice), user=bob)
    v1 = PromptLabel.objects.get().revision
    edit_draft("Ship $service, v2.")
    releases.approve(release(alice), user=bob)
    v2 = PromptLabel.objects.get().revision
    edit_draft("Ship $service, v3.")
    releases.approve(release(alice), user=bob)

    older = release(alice, revision=v1)  # two moves back: four eyes again
    assert older.is_pending and not older.rollback
    releases.withdraw(older, user=alice)
    back = release(alice, revision=v2)  # one move back
    assert back.rollback and back.status == "released"


def test_revision_pages_show_the_changes_only_to_who_may_read_history(client, catalog):
    alice = releaser("alice")  # view_catalogrevision, not view_catalogchange
    revision = releases.draft_revision(template())
    client.force_login(alice)
    page = client.get(reverse("sessions_app:revision-detail", args=[revision.hash]))
    assert "Can view catalog change" in page.content.decode()
    body = api(alice).get(f"/api/revisions/{revision.hash}/").json()
    assert body["changes"] is None
