"""The catalog's change history (tooling/history): every admin save, disable
and delete recorded with who, when, why and the diff; stale forms refused,
naming who changed what; the History pages; append-only rows."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import Group, Permission, User
from django.db import DatabaseError, connection, transaction
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from tests.tooling.admin_forms import change_form_data
from tests.tooling.factories import (
    HostedToolDefinitionFactory,
    PolicyDefinitionFactory,
    PromptTemplateFactory,
    SectionDefinitionFactory,
    ToolDefinitionFactory,
    add_sections,
)
from tooling.append_only import AppendOnlyError
from tooling.history import recording
from tooling.history.snapshot import (
    PAGE_LINES,
    TEXT_LINES_MAX,
    DiffBudget,
    diff,
    snapshot,
    version,
)
from tooling.models import (
    CatalogChange,
    SectionDefinition,
    SectionTool,
    ToolDefinition,
)

pytestmark = pytest.mark.django_db

Action = CatalogChange.Action


def editor(name: str) -> User:
    return User.objects.create_superuser(name, f"{name}@example.com", "pw")


def login(client: Any, user: User) -> Any:
    client.force_login(user)
    return client


def section_url(section: SectionDefinition) -> str:
    return reverse("admin:tooling_sectiondefinition_change", args=[section.pk])


def test_an_admin_edit_records_who_when_why_and_the_diff(client):
    alice = editor("alice")
    section = SectionDefinitionFactory.create(template="Line one.\nLine two.")
    prompt = PromptTemplateFactory.create()
    add_sections(prompt, section)
    login(client, alice)
    data = change_form_data(client, section_url(section))
    data["template"] = "Line one.\nLine 2, changed."
    data["change_reason"] = "Clearer <b>wording</b>"
    response = client.post(section_url(section), data)
    assert response.status_code == 302, response.context["adminform"].form.errors

    change = CatalogChange.objects.get()
    assert (change.actor, change.actor_name, change.action) == (
        alice,
        "alice",
        "changed",
    )
    assert change.reason == "Clearer <b>wording</b>"
    assert change.fields == ["template"]
    assert (change.before or {})["template"] == "Line one.\nLine two."
    assert (change.after or {})["template"] == "Line one.\nLine 2, changed."
    assert change.version == version(snapshot(SectionDefinition.objects.get()))
    assert [p.prompt_ref for p in change.prompts.all()] == [prompt.ref]

    page = client.get(
        reverse("admin:tooling_sectiondefinition_history", args=[section.pk])
    )
    html = page.content.decode()
    assert "-Line two." in html and "+Line 2, changed." in html
    assert "Clearer &lt;b&gt;wording&lt;/b&gt;" in html  # escaped
    assert "alice" in html
    # the prompt's history lists its section's change
    page = client.get(reverse("admin:tooling_prompttemplate_history", args=[prompt.pk]))
    assert "+Line 2, changed." in page.content.decode()


def test_linked_lists_are_part_of_the_record(client):
    alice = editor("alice")
    section = SectionDefinitionFactory.create()
    tool = ToolDefinitionFactory.create()
    login(client, alice)
    data = change_form_data(client, section_url(section))
    data.update(
        {
            "sectiontool_set-TOTAL_FORMS": "1",
            "sectiontool_set-0-tool": str(tool.pk),
            "sectiontool_set-0-position": "0",
            "sectiontool_set-0-section": str(section.pk),
        }
    )
    response = client.post(section_url(section), data)
    assert response.status_code == 302, response.context["adminform"].form.errors
    assert SectionTool.objects.filter(section=section, tool=tool).exists()
    change = CatalogChange.objects.get()
    assert change.fields == ["tools"]
    assert (change.before or {})["tools"] == [] and (change.after or {})["tools"] == [
        tool.name
    ]
    (field,) = diff(change.before, change.after)
    assert field.kind == "list" and field.added == [tool.name]


def test_disable_create_and_delete_are_recorded(client):
    alice = editor("alice")
    login(client, alice)
    tool = ToolDefinitionFactory.create()
    section = SectionDefinitionFactory.create()
    SectionTool.objects.create(section=section, tool=tool)
    prompt = PromptTemplateFactory.create()
    add_sections(prompt, section)
    url = reverse("admin:tooling_tooldefinition_change", args=[tool.pk])
    data = change_form_data(client, url)
    data.pop("enabled")
    assert client.post(url, data).status_code == 302
    disabled = CatalogChange.objects.get()
    assert disabled.action == Action.DISABLED and disabled.fields == ["enabled"]
    assert [p.prompt_ref for p in disabled.prompts.all()] == [prompt.ref]

    add = reverse("admin:tooling_policydefinition_add")
    response = client.post(
        add,
        {
            "name": "one-at-a-time",
            "kind": "sequential_dependency",
            "config": '{"dependencies": {"deploy": ["check"]}}',
        },
    )
    assert response.status_code == 302, response.context["adminform"].form.errors
    created = CatalogChange.objects.filter(action=Action.CREATED).get()
    assert created.before is None and (created.after or {})["name"] == "one-at-a-time"

    policy = PolicyDefinitionFactory.create()
    response = client.post(
        reverse("admin:tooling_policydefinition_delete", args=[policy.pk]),
        {"post": "yes"},
    )
    assert response.status_code == 302
    deleted = CatalogChange.objects.filter(action=Action.DELETED).get()
    assert deleted.object_repr == str(policy) and deleted.after is None
    assert (deleted.before or {})["name"] == policy.name
    # The row's own key, not the None Django leaves on a deleted instance.
    assert deleted.object_id == str(policy.pk)


def test_a_save_that_changes_nothing_records_nothing(client):
    login(client, editor("alice"))
    tool = ToolDefinitionFactory.create()
    url = reverse("admin:tooling_tooldefinition_change", args=[tool.pk])
    assert client.post(url, change_form_data(client, url)).status_code == 302
    assert not CatalogChange.objects.exists()


def test_a_stale_form_is_refused_naming_who_changed_what(client):
    alice, bob = editor("alice"), editor("bob")
    tool = ToolDefinitionFactory.create(description="")
    url = reverse("admin:tooling_tooldefinition_change", args=[tool.pk])
    login(client, alice)
    alices = change_form_data(client, url)  # alice opens the form

    login(client, bob)
    bobs = change_form_data(client, url)
    bobs["examples"] = "[]"
    bobs.pop("enabled")
    bobs["change_reason"] = "Pausing it \u202e"  # (its bidi control shown as a mark)
    assert client.post(url, bobs).status_code == 302  # bob disables it

    login(client, alice)
    alices["param_descriptions"] = '{"text": "The words"}'
    response = client.post(url, alices)
    assert response.status_code == 200  # the form again, with her input
    errors = response.context["adminform"].form.non_field_errors()
    (message,) = errors
    assert "bob disabled" in message and "Pausing it [U+202E]" in message
    assert "\u202e" not in response.content.decode()
    assert "Your changes were not saved" in message
    tool.refresh_from_db()
    assert tool.enabled is False and tool.param_descriptions == {}
    assert "{&quot;text&quot;: &quot;The words&quot;}" in response.content.decode()

    # submitting again (the form now carries the current version) is knowing
    again = dict(alices)
    again["catalog_version"] = (
        response.context["adminform"].form["catalog_version"].value()
    )
    assert client.post(url, again).status_code == 302
    tool.refresh_from_db()
    assert tool.param_descriptions == {"text": "The words"} and tool.enabled is True
    assert CatalogChange.objects.count() == 2


def test_a_form_without_its_version_is_refused_not_saved_over_a_change(client):
    """The stale-form check read the posted version; a form posted without
    one (a script, an old page) was saved over the other person's change,
    unwarned; and the refusal's time ended "a.m.." (found by hostile QA)."""
    alice, bob = editor("alice"), editor("bob")
    tool = ToolDefinitionFactory.create(description="")
    url = reverse("admin:tooling_tooldefinition_change", args=[tool.pk])
    login(client, alice)
    alices = change_form_data(client, url)
    login(client, bob)
    bobs = change_form_data(client, url)
    bobs["description"] = "Bob's"
    assert client.post(url, bobs).status_code == 302

    login(client, alice)
    alices["description"] = "Alice's"
    without = {k: v for k, v in alices.items() if k != "catalog_version"}
    response = client.post(url, without)
    assert response.status_code == 200
    (message,) = response.context["adminform"].form.non_field_errors()
    assert message == (
        "This form does not say which version it was opened on (no "
        "catalog_version): reload the page and make your changes again."
    )
    tool.refresh_from_db()
    assert tool.description == "Bob's"
    response = client.post(url, alices)  # opened before bob's change
    (message,) = response.context["adminform"].form.non_field_errors()
    assert "bob changed description on" in message and ".." not in message


def test_change_rows_are_append_only():
    change = CatalogChange.objects.create(
        content_type_id=1, object_id="1", object_repr="x", action=Action.CHANGED
    )
    with pytest.raises(AppendOnlyError):
        CatalogChange.objects.filter(pk=change.pk).update(reason="rewritten")
    with pytest.raises(AppendOnlyError):
        change.delete()

    with (
        pytest.raises(
            DatabaseError
        ),  # IntegrityError on SQLite, a trigger's on PostgreSQL
        transaction.atomic(),
        connection.cursor() as cursor,
    ):
        cursor.execute("UPDATE tooling_catalogchange SET reason = 'x'")


def test_the_change_list_is_for_who_may_view_changes(client):
    login(client, editor("alice"))
    tool = ToolDefinitionFactory.create()
    url = reverse("admin:tooling_tooldefinition_change", args=[tool.pk])
    data = change_form_data(client, url)
    data["description"] = "Counts words."
    client.post(url, data)
    changes = reverse("admin:tooling_catalogchange_changelist")
    auditor = User.objects.create_user("audrey", password="pw", is_staff=True)
    auditor.groups.add(Group.objects.get(name="Auditors"))
    login(client, auditor)
    assert client.get(changes).status_code == 200
    change = CatalogChange.objects.get()
    page = client.get(reverse("admin:tooling_catalogchange_change", args=[change.pk]))
    assert page.status_code == 200 and "Counts words." in page.content.decode()
    login(client, User.objects.create_user("stan", password="pw", is_staff=True))
    assert client.get(changes).status_code == 403


def test_deleting_a_user_keeps_their_changes(client):
    alice = editor("alice")
    login(client, alice)
    tool = ToolDefinitionFactory.create()
    url = reverse("admin:tooling_tooldefinition_change", args=[tool.pk])
    data = change_form_data(client, url)
    data["description"] = "Counts words."
    client.post(url, data)
    alice.delete()
    change = CatalogChange.objects.get()
    assert change.actor_name == "alice"
    assert ToolDefinition.objects.filter(pk=tool.pk).exists()


def test_the_api_lists_changes_for_who_may_view_them(client):
    from rest_framework.test import APIClient

    login(client, editor("alice"))
    section = SectionDefinitionFactory.create()
    prompt = PromptTemplateFactory.create()
    add_sections(prompt, section)
    data = change_form_data(client, section_url(section))
    data["title"] = "Renamed"
    client.post(section_url(section), data)
    other = ToolDefinitionFactory.create()
    url = reverse("admin:tooling_tooldefinition_change", args=[other.pk])
    data = change_form_data(client, url)
    data["description"] = "Counts words."
    client.post(url, data)

    api = APIClient()
    auditor = User.objects.create_user("audrey", password="pw")
    auditor.groups.add(Group.objects.get(name="Auditors"))
    api.force_authenticate(auditor)
    body = api.get("/api/catalog-changes/", {"prompt": prompt.ref}).json()
    (only,) = body["results"]
    assert only["model"] == "sectiondefinition" and only["fields"] == ["title"]
    assert only["actor_name"] == "alice" and only["prompts"] == [prompt.ref]
    assert only["after"]["title"] == "Renamed"
    for model in ("tooldefinition", "ToolDefinition"):
        body = api.get("/api/catalog-changes/", {"model": model}).json()
        assert [c["object_repr"] for c in body["results"]] == [other.name]
    assert len(api.get("/api/catalog-changes/").json()["results"]) == 2
    api.force_authenticate(User.objects.create_user("ulla", password="pw"))
    assert api.get("/api/catalog-changes/").status_code == 403


@pytest.mark.parametrize(
    "query",
    [
        {"actor": "a\x00b"},
        {"object_id": "\x00"},
        {"action": "rewrote"},
        {"model": "zzz"},
        {"model": "release"},  # a tooling model whose changes are not recorded
    ],
)
def test_the_api_refuses_bad_filters_with_400(query):
    from rest_framework.test import APIClient

    api = APIClient()
    auditor = User.objects.create_user("audrey", password="pw")
    auditor.groups.add(Group.objects.get(name="Auditors"))
    api.force_authenticate(auditor)
    response = api.get("/api/catalog-changes/", query)
    assert response.status_code == 400, response.content
    assert next(iter(query)) in response.json()["errors"]
    # a surrogate's bytes in the URL arrive replaced, never as a 500
    assert api.get("/api/catalog-changes/?prompt=x%ED%B2%80").status_code == 200


def test_the_hosted_tool_form_carries_the_reason_and_the_version(client):
    hosted = HostedToolDefinitionFactory.create()
    login(client, editor("alice"))
    url = reverse("admin:tooling_hostedtooldefinition_change", args=[hosted.pk])
    html = client.get(url).content.decode()
    assert 'name="change_reason"' in html and 'name="catalog_version"' in html

    data = change_form_data(client, url)
    data["description"] = "Search the docs."
    data["change_reason"] = "Clearer"
    data["catalog_version"] = "stale"
    refused = client.post(url, data)
    assert refused.status_code == 200
    assert "after you opened it" in refused.content.decode()
    hosted.refresh_from_db()
    assert hosted.description == "Search the web."


def _recorded_template_change(
    section: SectionDefinition, before: str, after: str
) -> None:
    old = snapshot(section)
    recording.record(
        section,
        before={**old, "template": before},
        after={**old, "template": after},
        reason="Reordered",
    )


def test_history_refuses_a_user_without_permission_before_reading_changes(
    client: Any,
) -> None:
    section = SectionDefinitionFactory.create(template="One.\nTwo.")
    _recorded_template_change(section, "One.\nTwo.", "Two.\nOne.")
    login(client, User.objects.create_user("stan", password="pw", is_staff=True))
    url = reverse("admin:tooling_sectiondefinition_history", args=[section.pk])
    with CaptureQueriesContext(connection) as queries:
        response = client.get(url)
    assert response.status_code == 403
    read = [q["sql"] for q in queries.captured_queries]
    assert not [sql for sql in read if "tooling_catalogchange" in sql], read


def test_history_shows_sizes_for_a_text_too_long_to_compare(client: Any) -> None:
    lines = [f"Line {i} of a long template." for i in range(20_000)]
    # every other line moved to the end: the worst case of a line diff
    reordered = lines[1::2] + lines[0::2]
    section = SectionDefinitionFactory.create(template="\n".join(reordered))
    _recorded_template_change(section, "\n".join(lines), "\n".join(reordered))
    login(client, editor("alice"))
    page = client.get(
        reverse("admin:tooling_sectiondefinition_history", args=[section.pk])
    )
    html = page.content.decode()
    assert "Too long to compare line by line" in html
    assert "before 20,000 lines (" in html and "after 20,000 lines (" in html
    assert "Line 12345 of" not in html
    assert len(html) < 100_000


def test_history_compares_at_most_a_page_of_lines() -> None:
    budget = DiffBudget()
    text = "\n".join(f"Line {i}." for i in range(TEXT_LINES_MAX - 1))
    shown = [
        diff({"template": text}, {"template": text + "\nMore."}, budget=budget)[0]
        for _ in range(PAGE_LINES // TEXT_LINES_MAX)
    ]
    # each comparison takes 2 * TEXT_LINES_MAX - 1 lines of the page's budget
    assert [field.not_compared for field in shown] == [
        "",
        "",
        "page_full",
        "page_full",
        "page_full",
    ]
    longer = text + "\n" + text
    (field,) = diff({"template": text}, {"template": longer}, budget=DiffBudget())
    assert field.not_compared == "too_long"


def test_history_shows_bidi_controls_as_marks(client: Any) -> None:
    section = SectionDefinitionFactory.create(title="Plain")
    old = snapshot(section)
    recording.record(
        section,
        before=old,
        after={**old, "title": "evil \u2066title"},
        reason="ok \u202e txet",
    )
    login(client, editor("alice"))
    history = client.get(
        reverse("admin:tooling_sectiondefinition_history", args=[section.pk])
    ).content.decode()
    assert "Reason: ok [U+202E] txet" in history
    assert "evil [U+2066]title" in history
    assert "\u202e" not in history and "\u2066" not in history
    change = CatalogChange.objects.get()
    for url in (
        reverse("admin:tooling_catalogchange_changelist"),
        reverse("admin:tooling_catalogchange_change", args=[change.pk]),
    ):
        page = client.get(url).content.decode()
        assert "ok [U+202E] txet" in page and "\u202e" not in page
    assert change.reason == "ok \u202e txet"  # the record keeps them


def test_the_api_pages_changes_by_page_size_and_refuses_a_bad_one() -> None:
    from rest_framework.test import APIClient

    section = SectionDefinitionFactory.create(title="Plain")
    old = snapshot(section)
    for title in ("One", "Two", "Three"):
        recording.record(section, before=old, after={**old, "title": title})
    api = APIClient()
    auditor = User.objects.create_user("audrey", password="pw")
    auditor.groups.add(Group.objects.get(name="Auditors"))
    api.force_authenticate(auditor)
    first = api.get("/api/catalog-changes/", {"page_size": 2}).json()
    assert [c["after"]["title"] for c in first["results"]] == ["Three", "Two"]
    rest = api.get(first["next"]).json()
    assert [c["after"]["title"] for c in rest["results"]] == ["One"]
    for size in ("0", "9999", "abc", "-1", ""):
        response = api.get("/api/catalog-changes/", {"page_size": size})
        assert response.status_code == 400, (size, response.content)
        assert "page_size" in response.json()["errors"]


@pytest.mark.parametrize("size", ["1", "2", "4"])
def test_changes_saved_at_one_time_are_each_listed_once_either_way(
    monkeypatch: Any, size: str
) -> None:
    """Changes saved at one time (one admin save records several rows) were
    skipped and repeated back from the last page with DRF's cursor (a time
    and an offset); a keyset names a row (ADR 0030)."""
    from rest_framework.test import APIClient

    from tests.sessions_app.cursor_pages import listed_back, listed_ids

    moment = timezone.now()
    monkeypatch.setattr(recording.timezone, "now", lambda: moment)
    section = SectionDefinitionFactory.create(title="Plain")
    old = snapshot(section)
    for title in ("One", "Two", "Three", "Four", "Five"):
        recording.record(section, before=old, after={**old, "title": title})
    assert set(CatalogChange.objects.values_list("at", flat=True)) == {moment}
    expected = list(CatalogChange.objects.order_by("-pk").values_list("pk", flat=True))
    api = APIClient()
    auditor = User.objects.create_user("audrey", password="pw")
    auditor.groups.add(Group.objects.get(name="Auditors"))
    api.force_authenticate(auditor)
    query = {"page_size": size}
    assert listed_ids(api, "/api/catalog-changes/", query) == expected
    assert listed_back(api, "/api/catalog-changes/", query) == expected


def test_a_list_diff_takes_unhashable_items() -> None:
    (field,) = diff({"items": []}, {"items": [{"a": 1}, ["b"]]})
    assert field.added == [{"a": 1}, ["b"]] and field.removed == []
    (field,) = diff({"items": ["x", {"a": 1}]}, {"items": ["y"]})
    assert field.added == ["y"] and field.removed == ["x", {"a": 1}]


def test_history_says_when_it_shows_only_the_newest_changes(client: Any) -> None:
    from tooling.history.admin import HISTORY_SHOWN

    section = SectionDefinitionFactory.create(template="Zero.")
    for number in range(HISTORY_SHOWN + 1):
        _recorded_template_change(section, f"{number}.", f"{number + 1}.")
    url = reverse("admin:tooling_sectiondefinition_history", args=[section.pk])
    login(client, editor("alice"))
    page = client.get(url).content.decode()
    assert page.count('class="catalog-change"') == HISTORY_SHOWN
    assert f"The newest {HISTORY_SHOWN} of {HISTORY_SHOWN + 1} changes." in page
    every = f"/api/catalog-changes/?model=sectiondefinition&amp;object_id={section.pk}"
    assert f'<a href="{every}">Every change</a> is in the API.' in page
    listed = client.get(every.replace("&amp;", "&"), {"page_size": 500}).json()
    assert len(listed["results"]) == HISTORY_SHOWN + 1
    # who may not read the catalog's history is not sent to the API
    stan = User.objects.create_user("stan", password="pw", is_staff=True)
    stan.user_permissions.add(
        *Permission.objects.filter(codename="view_sectiondefinition")
    )
    login(client, stan)
    page = client.get(url).content.decode()
    assert f"The newest {HISTORY_SHOWN} of {HISTORY_SHOWN + 1} changes." in page
    assert "Every change" not in page


def test_a_prompts_history_links_its_changes_by_prompt(client: Any) -> None:
    from tooling.history.admin import _every_change_url

    prompt = PromptTemplateFactory.create(namespace="support", key="triage")
    assert _every_change_url(prompt) == "/api/catalog-changes/?prompt=support%2Ftriage"
