"""Every catalog edit is checked against the prompts that use the edited row:
saving, disabling or deleting a tool, hosted tool, section or policy that
would break a prompt is refused with the prompt named, and nothing changes.
Section parent cycles are impossible, and walking the tree terminates on any
data."""

from __future__ import annotations

import threading

import pytest
from django.db import connection
from django.urls import reverse

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
from tooling.demo import seed_demo_catalog
from tooling.models import (
    HostedToolDefinition,
    PolicyDefinition,
    PromptTemplate,
    SectionDefinition,
    SectionHostedTool,
    ToolDefinition,
)

pytestmark = pytest.mark.django_db


def change_url(row) -> str:
    meta = row._meta
    return reverse(f"admin:{meta.app_label}_{meta.model_name}_change", args=[row.pk])


def delete_url(row) -> str:
    meta = row._meta
    return reverse(f"admin:{meta.app_label}_{meta.model_name}_delete", args=[row.pk])


def refused(response) -> str:
    assert response.status_code == 200, "the form should come back with errors"
    return response.content.decode()


RELEASE_BREAK = "would break prompt &#x27;demo/release&#x27;"


# -- tools ---------------------------------------------------------------------------


def test_disabling_a_tool_a_policy_needs_is_refused(admin_client):
    seed_demo_catalog()
    build = ToolDefinition.objects.get(name="build")
    data = change_form_data(admin_client, change_url(build))
    data.pop("enabled")

    page = refused(admin_client.post(change_url(build), data))

    assert RELEASE_BREAK in page
    assert "build" in page
    assert ToolDefinition.objects.get(pk=build.pk).enabled


def test_renaming_a_tool_a_policy_names_is_refused(admin_client):
    seed_demo_catalog()
    deploy = ToolDefinition.objects.get(name="deploy")
    data = change_form_data(admin_client, change_url(deploy))
    data["name"] = "ship"

    page = refused(admin_client.post(change_url(deploy), data))

    assert RELEASE_BREAK in page
    assert ToolDefinition.objects.filter(name="deploy").exists()


def test_an_edit_no_prompt_minds_is_saved(admin_client):
    seed_demo_catalog()
    lint = ToolDefinition.objects.get(name="lint")
    data = change_form_data(admin_client, change_url(lint))
    data["description"] = "Report the lint run, nothing more."

    response = admin_client.post(change_url(lint), data)

    assert response.status_code == 302
    assert ToolDefinition.objects.get(pk=lint.pk).description.startswith("Report")


def test_deleting_a_tool_a_prompt_needs_is_refused(admin_client):
    seed_demo_catalog()
    build = ToolDefinition.objects.get(name="build")

    page = admin_client.get(delete_url(build)).content.decode()
    response = admin_client.post(delete_url(build), {"post": "yes"})

    assert "Deleting it would break prompt &#x27;demo/release&#x27;" in page
    # The admin refuses to delete what is protected: the page comes back.
    assert response.status_code == 200
    assert "would break prompt" in response.content.decode()
    assert ToolDefinition.objects.filter(pk=build.pk).exists()


def test_bulk_delete_of_needed_tools_is_refused(admin_client):
    seed_demo_catalog()
    rows = ToolDefinition.objects.filter(name__in=["build", "lint"])

    response = admin_client.post(
        reverse("admin:tooling_tooldefinition_changelist"),
        {
            "action": "delete_selected",
            "_selected_action": [str(pk) for pk in rows.values_list("pk", flat=True)],
            "post": "yes",
        },
    )

    page = response.content.decode()
    assert "The selected tool definitions cannot be deleted:" in page
    assert "protected related objects" not in page  # (Django's heading)
    assert "Deleting them would break prompt &#x27;demo/release&#x27;" in page
    assert "Deleting it " not in page  # several rows
    assert ToolDefinition.objects.filter(name__in=["build", "lint"]).count() == 2


def test_deleting_an_unused_tool_works(admin_client):
    tool = ToolDefinitionFactory.create()

    response = admin_client.post(delete_url(tool), {"post": "yes"})

    assert response.status_code == 302
    assert not ToolDefinition.objects.filter(pk=tool.pk).exists()


def test_bulk_delete_of_unused_tools_asks_as_django_does(admin_client):
    tools = ToolDefinitionFactory.create_batch(2)
    changelist = reverse("admin:tooling_tooldefinition_changelist")
    selection = [str(tool.pk) for tool in tools]

    asked = admin_client.post(
        changelist, {"action": "delete_selected", "_selected_action": selection}
    )
    page = asked.content.decode()
    assert "Are you sure you want to delete the selected tool definitions?" in page
    assert "cannot be deleted" not in page
    done = admin_client.post(
        changelist,
        {"action": "delete_selected", "_selected_action": selection, "post": "yes"},
    )
    assert done.status_code == 302
    assert not ToolDefinition.objects.filter(pk__in=selection).exists()


# -- hosted tools --------------------------------------------------------------------


def prompt_choosing(hosted: HostedToolDefinition):
    section = SectionDefinitionFactory.create(template="Search.")
    SectionHostedTool.objects.create(section=section, hosted_tool=hosted)
    prompt = PromptTemplateFactory.create(tool_choice=f"tool:{hosted.name}")
    add_sections(prompt, section)
    return prompt


def test_disabling_a_hosted_tool_the_tool_choice_names_is_refused(admin_client):
    hosted = HostedToolDefinitionFactory.create()
    prompt = prompt_choosing(hosted)
    data = change_form_data(admin_client, change_url(hosted))
    data.pop("enabled")

    page = refused(admin_client.post(change_url(hosted), data))

    assert f"would break prompt &#x27;{prompt.ref}&#x27;" in page
    assert HostedToolDefinition.objects.get(pk=hosted.pk).enabled


def test_deleting_a_hosted_tool_the_tool_choice_names_is_refused(admin_client):
    hosted = HostedToolDefinitionFactory.create()
    prompt_choosing(hosted)

    response = admin_client.post(delete_url(hosted), {"post": "yes"})

    assert response.status_code == 200
    assert "would break prompt" in response.content.decode()
    assert HostedToolDefinition.objects.filter(pk=hosted.pk).exists()


# -- sections ------------------------------------------------------------------------


def test_a_section_template_with_an_undeclared_placeholder_is_refused(admin_client):
    seed_demo_catalog()
    section = SectionDefinition.objects.get(key="release.pipeline")
    data = change_form_data(admin_client, change_url(section))
    data["template"] = "Ship $service to $nowhere."

    page = refused(admin_client.post(change_url(section), data))

    assert "nowhere" in page
    assert "$nowhere" not in SectionDefinition.objects.get(pk=section.pk).template


def test_removing_a_sections_tool_link_a_policy_needs_is_refused(admin_client):
    seed_demo_catalog()
    section = SectionDefinition.objects.get(key="release.pipeline")
    data = change_form_data(admin_client, change_url(section))
    build_row = next(
        key[: -len("-tool")]
        for key, value in data.items()
        if key.startswith("sectiontool_set-")
        and key.endswith("-tool")
        and value == str(ToolDefinition.objects.get(name="build").pk)
    )
    data[f"{build_row}-DELETE"] = "on"

    page = refused(admin_client.post(change_url(section), data))

    assert RELEASE_BREAK in page
    assert section.tools.filter(name="build").exists()


def test_adding_a_tool_whose_name_a_sibling_section_has_is_refused(admin_client):
    tool = ToolDefinitionFactory.create(name="twin")
    first = SectionDefinitionFactory.create(key="first")
    attach(first, tool)
    second = SectionDefinitionFactory.create(key="second")
    prompt = PromptTemplateFactory.create()
    add_sections(prompt, first, second)
    data = change_form_data(admin_client, change_url(second))
    data.update(
        {
            "sectiontool_set-TOTAL_FORMS": "1",
            "sectiontool_set-0-tool": str(tool.pk),
            "sectiontool_set-0-position": "0",
            "sectiontool_set-0-section": str(second.pk),
        }
    )

    page = refused(admin_client.post(change_url(second), data))

    assert f"would break prompt &#x27;{prompt.ref}&#x27;" in page
    assert "Duplicate tool name" in page
    assert not second.tools.exists()


def test_deleting_a_prompts_only_section_is_refused(admin_client):
    section = SectionDefinitionFactory.create()
    prompt = PromptTemplateFactory.create()
    add_sections(prompt, section)

    page = admin_client.get(delete_url(section)).content.decode()

    assert f"would break prompt &#x27;{prompt.ref}&#x27;" in page
    assert "no section left" in page


def test_deleting_a_parent_refuses_for_what_its_children_carry(admin_client):
    seed_demo_catalog()
    parent = SectionDefinitionFactory.create(key="holder")
    SectionDefinition.objects.filter(key="release.pipeline").update(parent=parent)

    response = admin_client.post(delete_url(parent), {"post": "yes"})

    assert response.status_code == 200
    assert "would break prompt &#x27;demo/release&#x27;" in response.content.decode()
    assert SectionDefinition.objects.filter(pk=parent.pk).exists()


# -- policies ----------------------------------------------------------------------


def test_deleting_a_policy_in_use_is_refused_naming_where(admin_client):
    """The demo's approval policy: deleting it had quietly taken the approval
    step out of demo/ship's draft (ADR 0031)."""
    seed_demo_catalog()
    policy = PolicyDefinition.objects.get(name="production-deploy")

    response = admin_client.post(delete_url(policy), {"post": "yes"})

    page = response.content.decode()
    assert response.status_code == 200
    assert "The policy definition “production-deploy” cannot be deleted:" in page
    assert (
        "Policy &#x27;production-deploy&#x27; is attached to section "
        "&#x27;ship.pipeline&#x27;: remove it there first (an edit of that prompt "
        "or section, recorded in its history), then delete it."
    ) in page
    assert PolicyDefinition.objects.filter(pk=policy.pk).exists()
    assert policy.sections.filter(key="ship.pipeline").exists()


def test_deleting_policies_in_use_through_the_list_action_is_refused(admin_client):
    seed_demo_catalog()
    chosen = PolicyDefinition.objects.filter(
        name__in=["production-deploy", "release-order"]
    )

    response = admin_client.post(
        reverse("admin:tooling_policydefinition_changelist"),
        {
            "action": "delete_selected",
            "_selected_action": [p.pk for p in chosen],
            "post": "yes",
        },
    )

    page = response.content.decode()
    assert "Policy &#x27;production-deploy&#x27; is attached to section" in page
    assert "Policy &#x27;release-order&#x27; is attached to section" in page
    assert PolicyDefinition.objects.filter(pk__in=chosen).count() == 2


def test_a_policy_is_deleted_once_detached(admin_client):
    seed_demo_catalog()
    policy = PolicyDefinition.objects.get(name="production-deploy")
    for prompt in policy.prompts.all():
        prompt.policies.remove(policy)  # the edits of their own
    policy.sections.clear()

    response = admin_client.post(delete_url(policy), {"post": "yes"})

    assert response.status_code == 302
    assert not PolicyDefinition.objects.filter(pk=policy.pk).exists()


def test_a_policy_on_a_prompt_and_a_section_names_both_once(admin_client):
    tool = ToolDefinitionFactory.create(name="kept")
    section = SectionDefinitionFactory.create(key="tools")
    attach(section, tool)
    policy = PolicyDefinitionFactory.create(
        name="everywhere", kind="call_limit", config={"limits": {"kept": 3}}
    )
    section.policies.add(policy)
    prompt = PromptTemplateFactory.create()
    add_sections(prompt, section)
    prompt.policies.add(policy)

    page = admin_client.get(delete_url(policy)).content.decode()

    assert page.count("Policy &#x27;everywhere&#x27; is attached to") == 1
    assert (
        f"is attached to prompt &#x27;{prompt.ref}&#x27;, section &#x27;tools&#x27;:"
    ) in page


def test_disabling_the_tools_a_policy_governs_does_not_free_it(admin_client):
    """Whatever the tools' state: a policy attached where a disabled tool
    would come back ungoverned once enabled is still refused."""
    tool = ToolDefinitionFactory.create(name="write_file", enabled=False)
    section = SectionDefinitionFactory.create(key="files")
    attach(section, tool)
    policy = PolicyDefinitionFactory.create(
        name="read-first", kind="read_before_write", config={}
    )
    section.policies.add(policy)
    add_sections(PromptTemplateFactory.create(), section)

    response = admin_client.post(delete_url(policy), {"post": "yes"})

    assert response.status_code == 200
    assert PolicyDefinition.objects.filter(pk=policy.pk).exists()


def test_deleting_a_section_takes_its_policy_with_the_tools_it_governs(admin_client):
    tool = ToolDefinitionFactory.create(name="only_here")
    kept = ToolDefinitionFactory.create(name="kept")
    governed = SectionDefinitionFactory.create(key="governed")
    attach(governed, tool)
    other = SectionDefinitionFactory.create(key="other")
    attach(other, kept)
    policy = PolicyDefinitionFactory.create(
        name="only-here", kind="call_limit", config={"limits": {"only_here": 3}}
    )
    governed.policies.add(policy)
    prompt = PromptTemplateFactory.create()
    add_sections(prompt, governed, other)

    response = admin_client.post(delete_url(governed), {"post": "yes"})

    assert response.status_code == 302  # the policy stays, unattached
    assert not SectionDefinition.objects.filter(pk=governed.pk).exists()
    assert PolicyDefinition.objects.filter(pk=policy.pk).exists()


def test_prompts_broken_by_uses_a_constant_number_of_queries(
    django_assert_num_queries,
):
    from tooling.assembly import CatalogEdit, prompts_broken_by

    seed_demo_catalog()
    build = ToolDefinition.objects.get(name="build")
    build.enabled = False
    # The sections above the tool (1), the prompts rooted there (3), their sections (4).
    with django_assert_num_queries(8) as small:
        assert [ref for ref, _ in prompts_broken_by(CatalogEdit.saving(build))] == [
            "demo/release",
            "demo/ship",
        ]
    for _ in range(20):
        section = SectionDefinitionFactory.create()
        attach(section, ToolDefinitionFactory.create(), ToolDefinitionFactory.create())
        add_sections(PromptTemplateFactory.create(), section)
    with django_assert_num_queries(len(small.captured_queries)):
        prompts_broken_by(CatalogEdit.saving(build))


# -- section cycles ----------------------------------------------------------------


def test_a_parent_that_makes_a_cycle_is_refused(admin_client):
    top = SectionDefinitionFactory.create(key="top")
    middle = SectionDefinitionFactory.create(key="middle", parent=top)
    data = change_form_data(admin_client, change_url(top))
    data["parent"] = str(middle.pk)

    page = refused(admin_client.post(change_url(top), data))

    assert "A section cannot be its own ancestor." in page
    assert SectionDefinition.objects.get(pk=top.pk).parent_id is None


def test_saving_a_cycle_through_the_orm_is_refused():
    from django.core.exceptions import ValidationError

    top = SectionDefinitionFactory.create(key="top")
    middle = SectionDefinitionFactory.create(key="middle", parent=top)
    top.parent = middle
    with pytest.raises(ValidationError):
        top.save()
    assert SectionDefinition.objects.get(pk=top.pk).parent_id is None


def test_the_ancestor_walk_terminates_on_a_cycle_already_in_the_data(admin_client):
    a = SectionDefinitionFactory.create(key="a")
    b = SectionDefinitionFactory.create(key="b", parent=a)
    # Data written around the guards (raw SQL, an old bug): a <-> b.
    SectionDefinition.objects.filter(pk=a.pk).update(parent=b)
    other = SectionDefinitionFactory.create(key="other")
    data = change_form_data(admin_client, change_url(other))
    data["parent"] = str(a.pk)

    response = admin_client.post(change_url(other), data)  # must return

    assert response.status_code in (200, 302)


@pytest.mark.django_db(transaction=True)
@pytest.mark.skipif(
    connection.vendor != "postgresql",
    reason="concurrent writers need PostgreSQL (SQLite serialises every write "
    "transaction: set DATABASE_URL to run this)",
)
def test_two_concurrent_edits_cannot_make_a_cycle(django_user_model):
    from django.db import connections
    from django.test import Client

    django_user_model.objects.create_superuser("root", "r@example.com", "pw")
    a = SectionDefinitionFactory.create(key="a")
    b = SectionDefinitionFactory.create(key="b")
    clients = [Client(), Client()]
    for client in clients:
        client.login(username="root", password="pw")
    payloads = []
    for client, (row, parent) in zip(clients, [(a, b), (b, a)], strict=True):
        data = change_form_data(client, change_url(row))
        data["parent"] = str(parent.pk)
        payloads.append((client, change_url(row), data))
    barrier = threading.Barrier(2)
    statuses: list[int] = []

    def edit(client, url, data):
        try:
            barrier.wait()
            statuses.append(client.post(url, data).status_code)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=edit, args=payload) for payload in payloads]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)

    parents = dict(SectionDefinition.objects.values_list("key", "parent__key"))
    assert not (parents["a"] == "b" and parents["b"] == "a"), parents
    assert sorted(statuses) == [200, 302]  # one saved, one refused


def test_disabling_a_prompts_only_section_is_refused(admin_client):
    # it was saved, and the prompt then ran with an empty system prompt
    section = SectionDefinitionFactory.create(key="only")
    prompt = PromptTemplateFactory.create()
    add_sections(prompt, section)
    data = change_form_data(admin_client, change_url(section))
    data.pop("enabled")

    page = refused(admin_client.post(change_url(section), data))

    assert f"would break prompt &#x27;{prompt.ref}&#x27;" in page
    assert "no enabled section left" in page
    section.refresh_from_db()
    assert section.enabled


def test_disabling_one_of_two_sections_is_saved(admin_client):
    first = SectionDefinitionFactory.create(key="first")
    second = SectionDefinitionFactory.create(key="second")
    add_sections(PromptTemplateFactory.create(), first, second)
    data = change_form_data(admin_client, change_url(first))
    data.pop("enabled")

    assert admin_client.post(change_url(first), data).status_code == 302
    first.refresh_from_db()
    assert not first.enabled


def test_a_prompt_holding_a_section_and_its_parent_is_refused(admin_client):
    # the child's text and tools were rendered twice (as 1.1 and as 2)
    parent = SectionDefinitionFactory.create(key="parent")
    child = SectionDefinitionFactory.create(key="child", parent=parent)
    prompt = PromptTemplateFactory.create()
    add_sections(prompt, parent)
    data = change_form_data(admin_client, change_url(prompt))
    data.update(
        {
            "prompt_sections-TOTAL_FORMS": "2",
            "prompt_sections-1-section": str(child.pk),
            "prompt_sections-1-position": "1",
            "prompt_sections-1-prompt": str(prompt.pk),
        }
    )

    page = refused(admin_client.post(change_url(prompt), data))

    assert (
        "Section &#x27;child&#x27; is in this prompt twice (under &#x27;parent&#x27;"
        " and at the top)" in page
    )
    assert list(prompt.sections.all()) == [parent]


def test_moving_a_prompts_root_under_its_other_root_is_refused(admin_client):
    first = SectionDefinitionFactory.create(key="first")
    second = SectionDefinitionFactory.create(key="second")
    prompt = PromptTemplateFactory.create()
    add_sections(prompt, first, second)
    data = change_form_data(admin_client, change_url(second))
    data["parent"] = str(first.pk)

    page = refused(admin_client.post(change_url(second), data))

    assert f"would break prompt &#x27;{prompt.ref}&#x27;" in page
    assert "is in this prompt twice" in page
    second.refresh_from_db()
    assert second.parent is None


# -- prompts -----------------------------------------------------------------------


def test_a_released_prompt_is_not_deleted_and_the_page_says_why(admin_client):
    from tooling import releases

    seed_demo_catalog()
    prompt = PromptTemplate.objects.get(namespace="demo", key="ship")
    releases.seed_label(prompt, "production", note="first")

    for response in (
        admin_client.get(delete_url(prompt)),
        admin_client.post(delete_url(prompt), {"post": "yes"}),
    ):
        page = response.content.decode()
        assert response.status_code == 200
        assert "permission" not in page
        assert (
            "Prompt &#x27;demo/ship&#x27; has been released (label production): "
            "its labels record what ran. Leave it disabled instead."
        ) in page
    assert PromptTemplate.objects.filter(pk=prompt.pk).exists()


def test_a_prompt_never_released_is_deleted(admin_client):
    seed_demo_catalog()
    prompt = PromptTemplate.objects.get(namespace="demo", key="ship")

    response = admin_client.post(delete_url(prompt), {"post": "yes"})

    assert response.status_code == 302
    assert not PromptTemplate.objects.filter(pk=prompt.pk).exists()
