"""A prompt is named ``namespace/key`` wherever it is run, released or
reported: neither part may hold a '/', whitespace or an invisible character,
or two prompts would share a reference (the admin's Run started the other
one) or a name would not read as what it is."""

from __future__ import annotations

from typing import Any

import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse

from tests.tooling.admin_forms import change_form_data
from tests.tooling.factories import (
    PromptTemplateFactory,
    SectionDefinitionFactory,
    add_sections,
)
from tooling import assembly
from tooling.forms import PromptTemplateForm
from tooling.models import CatalogRevision, PromptTemplate
from tooling.models.catalog import validate_prompt_name

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        ("a/b", "'/' at character 2"),
        ("my team", "U+0020 at character 3"),
        ("evil\r\nBcc", "U+000D at character 5"),
        ("k\u202e", "U+202E at character 2"),
        ("zero\u200bwidth", "U+200B at character 5"),
        ("nbsp\u00a0", "U+00A0 at character 5"),
    ],
)
def test_a_prompt_name_part_refuses_what_would_not_read_back(
    value: str, shown: str
) -> None:
    with pytest.raises(ValidationError) as caught:
        validate_prompt_name(value)
    assert caught.value.messages == [
        "Use no '/', space or invisible character here: the prompt is named "
        f"namespace/key ({shown})."
    ]


@pytest.mark.parametrize("value", ["demo", "ops-deploy_2", "Démo", "数据", "a.b"])
def test_a_prompt_name_part_takes_visible_names(value: str) -> None:
    validate_prompt_name(value)


def test_the_prompt_form_refuses_a_slash_in_either_part() -> None:
    # namespace "a/b" + key "c" and namespace "a" + key "b/c" were both saved:
    # two prompts named "a/b/c", and Run started the other one
    form = PromptTemplateForm(
        data={
            "namespace": "a/b",
            "key": "c d",
            "model": "gpt-5.4",
            "tool_choice": "auto",
            "max_turns": "8",
            "hosted_tool_limits": "{}",
        }
    )
    assert not form.is_valid()
    assert set(form.errors) >= {"namespace", "key"}
    assert not PromptTemplate.objects.filter(namespace="a/b").exists()


def rename(admin_client: Any, prompt: PromptTemplate, key: str) -> Any:
    url = reverse("admin:tooling_prompttemplate_change", args=[prompt.pk])
    data = change_form_data(admin_client, url)
    data["key"] = key
    return admin_client.post(url, data)


def test_a_prompt_that_has_run_keeps_its_name(admin_client: Any) -> None:
    # a rename left its label on a revision of the old name: every default
    # start was refused ("No revision of demo/notes2 has the hash ...")
    prompt = PromptTemplateFactory.create(namespace="demo", key="notes")
    add_sections(prompt, SectionDefinitionFactory.create())
    CatalogRevision.objects.get_or_create_for(assembly.freeze_template(prompt))

    page = rename(admin_client, prompt, "notes2")

    assert page.status_code == 200
    assert (
        "&#x27;demo/notes&#x27; has run or been released under this name"
        in page.content.decode()
    )
    prompt.refresh_from_db()
    assert prompt.ref == "demo/notes"


def test_a_prompt_that_never_ran_may_be_renamed(admin_client: Any) -> None:
    prompt = PromptTemplateFactory.create(namespace="demo", key="notes")
    add_sections(prompt, SectionDefinitionFactory.create())

    assert rename(admin_client, prompt, "notes2").status_code == 302
    prompt.refresh_from_db()
    assert prompt.ref == "demo/notes2"


def test_a_prompt_named_before_the_rule_can_still_be_edited(admin_client: Any) -> None:
    # a row saved before the rule: its own name is not refused on each save
    prompt = PromptTemplateFactory.create(namespace="demo", key="my notes")
    add_sections(prompt, SectionDefinitionFactory.create())
    CatalogRevision.objects.get_or_create_for(assembly.freeze_template(prompt))
    url = reverse("admin:tooling_prompttemplate_change", args=[prompt.pk])
    data = change_form_data(admin_client, url)
    data["description"] = "typo fixed"

    assert admin_client.post(url, data).status_code == 302
    prompt.refresh_from_db()
    assert (prompt.key, prompt.description) == ("my notes", "typo fixed")
