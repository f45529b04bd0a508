"""Catalog revisions as people read them (sessions_app/revisions): one
revision's page and API, the difference of two (or of one and the catalog
now), the changes that produced it, sessions filtered by revision, and who may
see all of it."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import Group, User
from django.urls import reverse
from rest_framework.test import APIClient

from sessions_app.revisions import compare, queries
from sessions_app.revisions.reading import view_of
from tests.sessions_app.factories import AgentSessionFactory, UserFactory
from tests.tooling.admin_forms import change_form_data
from tests.tooling.factories import (
    HostedToolDefinitionFactory,
    PolicyDefinitionFactory,
    PromptTemplateFactory,
    SectionDefinitionFactory,
    ToolDefinitionFactory,
    add_sections,
    attach,
)
from tooling.assembly import freeze_template
from tooling.models import (
    CatalogRevision,
    PolicyDefinition,
    PromptTemplate,
    SectionDefinition,
    SectionHostedTool,
)

pytestmark = pytest.mark.django_db


def stored(prompt: PromptTemplate) -> CatalogRevision:
    """The prompt's revision as a run stores it."""
    prompt = PromptTemplate.objects.get(pk=prompt.pk)
    return CatalogRevision.objects.get_or_create_for(freeze_template(prompt))


def research_prompt() -> tuple[PromptTemplate, SectionDefinition]:
    section = SectionDefinitionFactory.create(
        key="task",
        title="Task",
        template="Answer: $question\nTone: $tone",
        default_params={"question": None, "tone": "plain"},
    )
    attach(section, ToolDefinitionFactory.create(name="count_words"))
    hosted = HostedToolDefinitionFactory.create(
        name="web_search",
        config={"allowed_domains": ["docs.python.org", "docs.djangoproject.com"]},
    )
    SectionHostedTool.objects.create(section=section, hosted_tool=hosted)
    policy = PolicyDefinitionFactory.create(
        name="check-first",
        kind=PolicyDefinition.Kind.CALL_LIMIT,
        config={"limits": {"count_words": 3}},
    )
    section.policies.add(policy)
    prompt = PromptTemplateFactory.create(namespace="demo", key="research")
    add_sections(prompt, section)
    return prompt, section


def auditor() -> User:
    user = UserFactory.create(username="auditor", is_staff=True)
    user.groups.add(Group.objects.get(name="Auditors"))
    return user


def api(user: User | None) -> APIClient:
    client = APIClient()
    if user is not None:
        client.force_login(user)
    return client


def test_a_revision_reads_as_the_model_sees_it():
    prompt, _ = research_prompt()
    revision = stored(prompt)

    view = view_of(revision.hash, revision.data)

    assert view.problems == []
    # defaults rendered; a required parameter without one shown by name
    assert "Answer: <question>" in view.text and "Tone: plain" in view.text
    # (in the order the database keeps the defaults: PostgreSQL's jsonb sorts)
    assert sorted(p["name"] for p in view.parameters) == ["question", "tone"]
    (tool,) = view.tools
    assert tool.name == "count_words" and tool.fields["section"] == "task"
    assert tool.fields["parameters"]["properties"]["text"]["type"] == "string"
    (hosted,) = view.hosted_tools
    assert hosted.fields["config"]["allowed_domains"][1] == "docs.djangoproject.com"
    (policy,) = view.policies
    assert (policy.name, policy.fields["applies_to"]) == (
        "check-first",
        ["section task"],
    )
    sent = {tool["type"] for tool in view.tools_payload}
    assert sent == {"function", "web_search"}


def test_a_revision_that_cannot_be_built_is_still_readable():
    prompt, _ = research_prompt()
    data = freeze_template(PromptTemplate.objects.get(pk=prompt.pk))
    data["sections"][0]["tools"][0]["handler_key"] = "gone.handler"
    revision = CatalogRevision.objects.get_or_create_for(data)

    view = view_of(revision.hash, revision.data)

    assert view.problems and "gone.handler" in view.problems[0]
    assert "## Task" in view.text and "$question" in view.text  # the outline
    assert view.tools[0].fields["handler_key"] == "gone.handler"


def test_the_difference_of_two_revisions_names_what_changed():
    prompt, section = research_prompt()
    before = stored(prompt)
    section.template = "Answer: $question\nTone: $tone\nNever guess."
    section.save()
    hosted = section.hosted_tools.get()
    hosted.config = {"allowed_domains": ["docs.python.org"]}
    hosted.save()
    attach_more = ToolDefinitionFactory.create(name="fetch_page")
    section.sectiontool_set.create(tool=attach_more, position=1)
    section.policies.clear()
    PromptTemplate.objects.filter(pk=prompt.pk).update(max_turns=3)
    after = stored(prompt)

    diff = compare.compare(
        view_of(before.hash, before.data), view_of(after.hash, after.data)
    )

    assert not diff.same
    assert "+Never guess." in diff.text
    assert [(c.name, c.before, c.after) for c in diff.settings] == [("max_turns", 8, 3)]
    groups = {group.key: group.entries for group in diff.groups}
    (changed_section,) = groups["sections"]
    assert changed_section.status == "changed"
    assert [c.name for c in changed_section.changes] == ["template"]
    (added,) = groups["tools"]
    assert (added.name, added.status) == ("fetch_page", "added")
    (web,) = groups["hosted_tools"]
    (domains,) = web.changes
    assert domains.name == "config.allowed_domains"
    assert domains.removed == ["docs.djangoproject.com"] and domains.added == []
    (removed,) = groups["policies"]
    assert (removed.name, removed.status) == ("check-first", "removed")


def test_the_same_revision_compares_equal():
    prompt, _ = research_prompt()
    revision = stored(prompt)
    view = view_of(revision.hash, revision.data)
    assert compare.compare(view, view).same


def edit_section(client: Any, section: SectionDefinition, template: str) -> None:
    url = reverse("admin:tooling_sectiondefinition_change", args=[section.pk])
    data = change_form_data(client, url)
    data.update(template=template, change_reason="Stop <guessing>")
    response = client.post(url, data)
    assert response.status_code == 302, response.context["adminform"].form.errors


def test_the_revision_page_shows_the_prompt_its_changes_and_runs(client):
    prompt, section = research_prompt()
    first = stored(prompt)
    alice = User.objects.create_superuser("alice", "alice@example.com", "pw")
    client.force_login(alice)
    edit_section(client, section, "Answer: $question\nNever guess.")
    second = stored(prompt)
    viewer = auditor()
    theirs = AgentSessionFactory.create(revision=second, created_by=alice)
    AgentSessionFactory.create(revision=first, created_by=alice)
    client.force_login(viewer)

    page = client.get(reverse("sessions_app:revision-detail", args=[second.hash]))

    assert page.status_code == 200
    html = page.content.decode()
    assert second.hash in html and "Never guess." in html
    # what produced it: alice's edit, with its reason escaped
    assert "alice" in html and "Stop &lt;guessing&gt;" in html
    assert theirs.get_absolute_url() in html
    compare_url = reverse(
        "sessions_app:revision-compare", args=[first.hash, second.hash]
    )
    assert compare_url in html
    assert page.context["previous"] == first and page.context["following"] is None

    diff = client.get(compare_url)
    text = diff.content.decode()
    assert "+Never guess." in text and "-Tone: $tone" in text
    assert [c.actor_name for c in diff.context["changes"]] == ["alice"]


def test_what_changed_since_compares_with_the_catalog_now(client):
    prompt, section = research_prompt()
    revision = stored(prompt)
    session = AgentSessionFactory.create(revision=revision)
    viewer = auditor()
    client.force_login(viewer)
    detail = client.get(session.get_absolute_url()).content.decode()
    since = reverse("sessions_app:revision-compare", args=[revision.hash, "live"])
    assert since in detail

    unchanged = client.get(since)
    assert "The two revisions are the same." in unchanged.content.decode()

    section.title = "Task, <rewritten>"
    section.save()
    changed = client.get(since)
    html = changed.content.decode()
    assert "as the catalog holds it now" in html and "no run used it yet" in html
    assert "Task, &lt;rewritten&gt;" in html

    PromptTemplate.objects.filter(pk=prompt.pk).update(enabled=False)
    gone = client.get(since)
    assert gone.status_code == 200
    assert "not in the catalog or is disabled" in gone.content.decode()


def test_who_may_see_revisions(client):
    prompt, _ = research_prompt()
    revision = stored(prompt)
    runner = UserFactory.create(username="runner")
    runner.groups.add(Group.objects.get(name="Runners"))
    own = AgentSessionFactory.create(revision=revision, created_by=runner)
    url = reverse("sessions_app:revision-detail", args=[revision.hash])

    client.force_login(runner)
    assert client.get(url).status_code == 403
    # their session shows the hash, not links they could not follow
    detail = client.get(own.get_absolute_url()).content.decode()
    assert revision.hash in detail and url not in detail

    client.force_login(auditor())
    assert client.get(url).status_code == 200
    missing = reverse("sessions_app:revision-detail", args=["0" * 64])
    assert client.get(missing).status_code == 404
    assert client.get("/audit/revisions/not-a-hash/").status_code == 404


def test_the_revision_list_filters_by_prompt(client):
    prompt, _ = research_prompt()
    revision = stored(prompt)
    other = PromptTemplateFactory.create(namespace="demo", key="other")
    add_sections(other, SectionDefinitionFactory.create())
    elsewhere = stored(other)
    client.force_login(auditor())

    page = client.get(reverse("sessions_app:revision-list"), {"prompt_ref": prompt.ref})

    html = page.content.decode()
    assert revision.hash[:12] in html and elsewhere.hash[:12] not in html
    refused = client.get(reverse("sessions_app:revision-list"), {"prompt_ref": "x\0"})
    assert (
        refused.status_code == 400
        and "These filters are not valid" in refused.content.decode()
    )


def test_sessions_filter_by_revision(client):
    prompt, _ = research_prompt()
    revision = stored(prompt)
    viewer = auditor()
    ran = AgentSessionFactory.create(revision=revision, prompt_ref="demo/research")
    AgentSessionFactory.create(prompt_ref="demo/research")

    response = api(viewer).get("/api/sessions/", {"revision": revision.hash})
    assert [row["id"] for row in response.json()["results"]] == [str(ran.pk)]
    bad = api(viewer).get("/api/sessions/", {"revision": "abc"})
    assert bad.status_code == 400 and "revision" in bad.json()["errors"]

    client.force_login(viewer)
    page = client.get(reverse("sessions_app:session-list"), {"revision": revision.hash})
    assert list(page.context["sessions"]) == [ran]


def test_the_api_reads_and_compares_revisions():
    prompt, section = research_prompt()
    first = stored(prompt)
    section.template = "Answer: $question"
    section.save()
    second = stored(prompt)
    client = api(auditor())

    listed = client.get("/api/revisions/", {"prompt_ref": prompt.ref}).json()
    assert [row["hash"] for row in listed["results"]] == [second.hash, first.hash]

    detail = client.get(f"/api/revisions/{second.hash}/").json()
    assert detail["previous"] == first.hash and detail["next"] is None
    assert detail["data"] == second.data
    assert [tool["name"] for tool in detail["tools"]] == ["count_words"]
    assert "Answer: <question>" in detail["text"]

    diff = client.get(f"/api/revisions/{first.hash}/compare/{second.hash}/").json()
    assert diff["same"] is False and diff["after_stored"] is True
    assert "-Tone: $tone" not in diff["text"]  # rendered, not the template
    assert "-Tone: plain" in diff["text"]
    sections = next(g for g in diff["groups"] if g["key"] == "sections")
    assert sections["entries"][0]["changes"][0]["kind"] == "text"

    live = client.get(f"/api/revisions/{second.hash}/compare/live/").json()
    assert live["same"] is True and live["after_is_live"] is True

    assert client.get(f"/api/revisions/{'f' * 64}/").status_code == 404
    missing = client.get(f"/api/revisions/{first.hash}/compare/{'f' * 64}/")
    assert missing.status_code == 404
    PromptTemplate.objects.filter(pk=prompt.pk).delete()
    gone = client.get(f"/api/revisions/{second.hash}/compare/live/")
    assert gone.status_code == 404 and "not in the catalog" in gone.json()["detail"]


def test_the_api_needs_view_catalogrevision():
    prompt, _ = research_prompt()
    revision = stored(prompt)
    user = UserFactory.create()
    assert api(None).get("/api/revisions/").status_code == 401
    refused = api(user).get(f"/api/revisions/{revision.hash}/")
    assert refused.status_code == 403
    assert "view_catalogrevision" in refused.json()["detail"]


def test_hostile_text_is_escaped_and_neutralised(client):
    prompt, section = research_prompt()
    section.template = "<script>alert(1)</script>\u202eevil"
    section.save()
    revision = stored(prompt)
    client.force_login(auditor())

    html = client.get(
        reverse("sessions_app:revision-detail", args=[revision.hash])
    ).content.decode()

    assert "<script>alert(1)" not in html and "&lt;script&gt;" in html
    assert "\u202e" not in html and "[U+202E]" in html


def test_neighbours_and_the_changes_behind_follow_first_use():
    prompt, section = research_prompt()
    first = stored(prompt)
    section.template = "v2"
    section.save()
    second = stored(prompt)
    assert queries.previous(second) == first
    assert queries.following(first) == second
    assert queries.previous(first) is None
    assert list(queries.changes_behind(second)) == []  # not edited in the admin


def test_the_admin_shows_revisions_and_links_a_prompt_to_them(client):
    prompt, _ = research_prompt()
    revision = stored(prompt)
    AgentSessionFactory.create(revision=revision, prompt_ref=prompt.ref)
    client.force_login(User.objects.create_superuser("root", "r@example.com", "pw"))

    page = client.get(
        reverse("admin:tooling_catalogrevision_change", args=[revision.hash])
    )
    html = page.content.decode()
    assert page.status_code == 200
    assert "Answer: &lt;question&gt;" in html and "count_words" in html

    prompt_page = client.get(
        reverse("admin:tooling_prompttemplate_change", args=[prompt.pk])
    ).content.decode()
    since = reverse("sessions_app:revision-compare", args=[revision.hash, "live"])
    assert since in prompt_page
    assert reverse("admin:tooling_prompttemplate_preview", args=[prompt.pk]) in (
        prompt_page
    )


def test_long_texts_are_compared_by_size_not_line_by_line(client):
    # a 20,000-line template saved with its lines reordered took a minute to
    # compare (difflib is quadratic); past the bound the sizes are shown
    prompt, section = research_prompt()
    lines = [f"line {n}" for n in range(3_000)]
    section.template = "\n".join(lines)
    section.save()
    first = stored(prompt)
    section.template = "\n".join(lines[1::2] + lines[::2])
    section.save()
    second = stored(prompt)
    reader = auditor()

    body = api(reader).get(f"/api/revisions/{first.hash}/compare/{second.hash}/").json()

    assert body["same"] is False
    assert body["text"] == [] and body["text_not_compared"] == "too_long"
    (changed,) = body["groups"][0]["entries"]
    (template,) = changed["changes"]
    assert template["kind"] == "not_compared"
    assert template["not_compared"] == "too_long" and template["lines"] == []
    client.force_login(reader)
    page = client.get(
        reverse("sessions_app:revision-compare", args=[first.hash, second.hash])
    ).content.decode()
    assert "Too long to compare line by line: before 3,00" in page


def test_identical_long_texts_compare_equal():
    prompt, section = research_prompt()
    section.template = "\n".join(f"line {n}" for n in range(3_000))
    section.save()
    revision = stored(prompt)
    view = view_of(revision.hash, revision.data)
    assert compare.compare(view, view).same


def test_a_nul_in_a_filter_or_a_cursor_is_one_named_error(client):
    """``?prompt_ref=%00`` gave two messages for one problem, and a NUL in a
    parameter no field shows gave "Fix the filter above." with nothing
    marked (found by a hostile review)."""
    user = auditor()
    response = api(user).get("/api/revisions/", {"prompt_ref": "a\x00b"})
    assert response.status_code == 400
    assert response.json()["errors"] == {
        "prompt_ref": ["Null characters are not allowed."]
    }
    client.force_login(user)
    page = client.get(reverse("sessions_app:revision-list"), {"cursor": "\x00"})
    assert page.status_code == 400
    assert page.context["filter"].form.errors == {
        "__all__": ["'cursor': Must not contain NUL bytes or lone surrogates."]
    }
    assert "&#x27;cursor&#x27;: Must not contain NUL bytes" in page.content.decode()
    assert "Fix the filter above" not in page.content.decode()
