"""Issue 27, tried as a new user would, in a real browser: edit a section in
the admin with a reason; its History page shows who, when, why and the line
diff, and so does the History of the prompt that holds it; a form opened
before someone else's save is refused, naming them, and keeps what was typed."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from tests.tooling.admin_forms import change_form_data
from tests.tooling.factories import (
    PromptTemplateFactory,
    SectionDefinitionFactory,
    add_sections,
)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_sections_history_shows_the_change_and_a_stale_form_is_refused(
    ui: Any, shot: Any
) -> None:
    section = SectionDefinitionFactory.create(
        key="answer", template="Answer the question.\nCite your sources."
    )
    prompt = PromptTemplateFactory.create(namespace="demo", key="history")
    add_sections(prompt, section)
    change = f"/admin/tooling/sectiondefinition/{section.pk}/change/"

    ui.go(change)
    ui.fill("template", "Answer the question.\nCite at least two sources.")
    ui.fill("change_reason", "Ask for <two> sources")
    ui.save_and_expect_success()

    ui.go(f"/admin/tooling/sectiondefinition/{section.pk}/history/")
    text = ui.text("#catalog-history")
    assert "operator changed" in text and "Reason: Ask for <two> sources" in text
    assert "-Cite your sources." in text
    assert "+Cite at least two sources." in text
    shot("catalog-history-section")
    ui.go(f"/admin/tooling/prompttemplate/{prompt.pk}/history/")
    assert "+Cite at least two sources." in ui.text("#catalog-history")

    # the operator opens the form; bob saves the section meanwhile
    ui.go(change)
    bob = User.objects.create_superuser("bob", "bob@example.com", "pw")
    other = Client()
    other.force_login(bob)
    data = change_form_data(other, change)
    data["title"] = "Answering"
    data["change_reason"] = "Shorter title"
    assert other.post(change, data).status_code == 302

    ui.fill("template", "Answer briefly.")
    ui.submit("_save")
    (error,) = [e for e in ui.form_errors() if "after you opened it" in e]
    assert "bob changed title" in error and "Shorter title" in error
    assert "Your changes were not saved" in error
    assert ui.field("template").get_attribute("value") == "Answer briefly."
    shot("catalog-history-stale-form")
    # submitting again replaces bob's change with the form's, knowingly
    title = ui.field("title").get_attribute("value")
    assert title != "Answering"
    ui.save_and_expect_success()
    section.refresh_from_db()
    assert (section.template, section.title) == ("Answer briefly.", title)
    ui.go(f"/admin/tooling/sectiondefinition/{section.pk}/history/")
    assert len(ui.find_all("#catalog-history .catalog-change")) == 3
