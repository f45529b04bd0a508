"""Issue 27, tried as a new user would, in a real browser: a prompt ran; an
operator edits one of its sections in the admin; the prompt's change page
leads to "Changes since the last run", which shows the section's edit as a
line diff with who made it and why; the session's page links its revision
and what changed since; the revision page shows the prompt as the model sees
it."""

from __future__ import annotations

from typing import Any

import pytest
from django.urls import reverse

from tests.sessions_app.factories import AgentSessionFactory
from tests.tooling.factories import (
    PromptTemplateFactory,
    SectionDefinitionFactory,
    ToolDefinitionFactory,
    add_sections,
    attach,
)
from tooling.assembly import freeze_template
from tooling.models import CatalogRevision, PromptTemplate

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_section_edit_shows_in_the_prompts_revision_diff(ui: Any, shot: Any) -> None:
    section = SectionDefinitionFactory.create(
        key="answer",
        title="Answer",
        template="Answer: $question\nCite your sources.",
        default_params={"question": None},
    )
    attach(section, ToolDefinitionFactory.create(name="count_words"))
    prompt = PromptTemplateFactory.create(namespace="demo", key="revised")
    add_sections(prompt, section)
    revision = CatalogRevision.objects.get_or_create_for(
        freeze_template(PromptTemplate.objects.get(pk=prompt.pk))
    )
    session = AgentSessionFactory.create(revision=revision, prompt_ref=prompt.ref)

    ui.go(f"/admin/tooling/sectiondefinition/{section.pk}/change/")
    ui.fill("template", "Answer: $question\nCite at least two sources.")
    ui.fill("change_reason", "Ask for <two> sources")
    ui.save_and_expect_success()

    ui.go(f"/admin/tooling/prompttemplate/{prompt.pk}/change/")
    ui.click_and_load(ui.find("#changed-since-last-run"))
    assert ui.path == reverse(
        "sessions_app:revision-compare", args=[revision.hash, "live"]
    )
    text = ui.text("#compare-text")
    assert "-Cite your sources." in text and "+Cite at least two sources." in text
    assert "answer changed" in ui.text("#compare-sections")
    changes = ui.text("#compare-changes")
    assert "operator" in changes and "Ask for <two> sources" in changes
    assert "no run used it yet" in ui.text("#compare-after")
    shot("revision-compare-live")

    ui.go(session.get_absolute_url())
    ui.click_and_load(ui.find("#changed-since"))
    assert "+Cite at least two sources." in ui.text("#compare-text")

    ui.go(session.get_absolute_url())
    ui.click_and_load(ui.find("#revision-hash"))
    assert "Answer: <question>" in ui.text("#revision-text")
    assert "count_words" in ui.text("#revision-tools")
    assert '"name": "count_words"' in ui.find("#revision-tools-json").get_attribute(
        "textContent"
    )
    shot("revision-page")
