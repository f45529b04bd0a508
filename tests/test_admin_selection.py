"""An admin action posted with a selection that is not the model's keys
(``_selected_action=abc``, which no browser sends) does nothing and says so,
on every list with actions, never a 500 (``wink_project.admin_selection``)."""

from __future__ import annotations

import pytest
from django.apps import apps
from django.contrib import admin
from django.contrib.auth.models import User
from django.db import connection, models
from django.test import Client
from django.urls import reverse

from tests.tooling.factories import PolicyDefinitionFactory
from tooling.models import PolicyDefinition

pytestmark = pytest.mark.django_db


def lists_with_actions() -> list[str]:
    found = []
    for model in apps.get_models():
        if not admin.site.is_registered(model):
            continue
        opts = model._meta
        found.append(reverse(f"admin:{opts.app_label}_{opts.model_name}_changelist"))
    return found


def test_every_registered_list_is_found():
    assert len(lists_with_actions()) >= 20


@pytest.mark.parametrize("value", ["abc", "\x00", "9" * 30, "", "1.5"])
def test_a_selection_that_is_not_keys_does_nothing_anywhere(value):
    superuser = User.objects.create_superuser("root", password="pw")
    client = Client()
    client.force_login(superuser)
    policy = PolicyDefinitionFactory.create()
    for url in lists_with_actions():
        response = client.post(
            url,
            {"action": "delete_selected", "index": "0", "_selected_action": [value]},
        )
        assert response.status_code in (200, 302, 403), (url, response.status_code)
    assert PolicyDefinition.objects.filter(pk=policy.pk).exists()


def test_the_list_says_nothing_was_done(admin_client):
    policy = PolicyDefinitionFactory.create()
    url = reverse("admin:tooling_policydefinition_changelist")

    response = admin_client.post(
        url,
        {
            "action": "delete_selected",
            "index": "0",
            "_selected_action": [str(policy.pk), "abc"],
        },
        follow=True,
    )

    assert response.status_code == 200
    assert "Nothing was done: the selection holds a value that is not a row" in (
        response.content.decode()
    )
    assert PolicyDefinition.objects.filter(pk=policy.pk).exists()


def test_a_selection_of_keys_still_runs_the_action(admin_client):
    policy = PolicyDefinitionFactory.create()
    url = reverse("admin:tooling_policydefinition_changelist")

    response = admin_client.post(
        url,
        {
            "action": "delete_selected",
            "_selected_action": [str(policy.pk)],
            "post": "yes",
        },
    )

    assert response.status_code == 302
    assert not PolicyDefinition.objects.filter(pk=policy.pk).exists()


def test_a_related_filter_past_the_largest_integer_is_a_bad_lookup_anywhere():
    """``?prompt=99999999999999999999999`` on a list: SQLite refused to bind
    it (``OverflowError``, a 500; found by a hostile review). Every list
    answers it as Django answers a bad lookup: its address with ``?e=1``."""
    superuser = User.objects.create_superuser("root", password="pw")
    client = Client()
    client.force_login(superuser)
    huge = "9" * 30
    tried = 0
    for model in apps.get_models():
        if not admin.site.is_registered(model):
            continue
        opts = model._meta
        url = reverse(f"admin:{opts.app_label}_{opts.model_name}_changelist")
        for field in opts.get_fields():
            if not (isinstance(field, models.ForeignKey) and field.concrete):
                continue
            for name, value in ((field.name, huge), (field.attname, "9" * 5000)):
                response = client.get(url, {name: value})
                # (200: a key that is text, such as a revision's hash)
                assert response.status_code in (200, 302, 400), (url, name)
                if response.status_code == 302:
                    assert response["Location"] == f"{url}?e=1", (url, name)
                    tried += 1
    if connection.vendor != "sqlite":
        return  # PostgreSQL compares it (as a numeric): an empty list
    assert tried >= 10
    # and past the error flag, Django's own page for a list it cannot read
    url = reverse("admin:sessions_app_agentsession_changelist")
    page = client.get(url, {"e": "1", "created_by": huge})
    assert page.status_code == 200 and "Database error" in page.content.decode()


def forms_with_many_to_many(client: Client) -> list[tuple[str, str]]:
    """Every admin add page's many-to-many fields: (page, field name)."""
    from django import forms

    found = []
    for model in apps.get_models():
        if not admin.site.is_registered(model):
            continue
        opts = model._meta
        url = reverse(f"admin:{opts.app_label}_{opts.model_name}_add")
        response = client.get(url)
        if response.status_code != 200 or "adminform" not in response.context:
            continue
        form = response.context["adminform"].form
        found += [
            (url, name)
            for name, field in form.fields.items()
            if isinstance(field, forms.ModelMultipleChoiceField)
        ]
    return found


@pytest.mark.parametrize("value", ["9223372036854775808", "1" + "0" * 400, "abc"])
def test_a_many_to_many_choice_that_cannot_be_a_key_is_a_form_error(value):
    """A prompt's or a section's policies, an experiment's graders: a value
    past the largest integer was handed to the database, which SQLite could
    not bind (a 500, found by hostile QA). It is the error Django gives any
    value that is not a key."""
    superuser = User.objects.create_superuser("root", password="pw")
    client = Client()
    client.force_login(superuser)
    fields = forms_with_many_to_many(client)
    assert {name for _url, name in fields} >= {"policies", "graders"}
    for url, name in fields:
        response = client.post(url, {name: [value]})
        assert response.status_code == 200, (url, name, response.status_code)
        errors = response.context["adminform"].form.errors
        assert errors[name] == [f"“{value}” is not a valid value."], (url, errors)


@pytest.mark.parametrize("typed", ["\uff11\uff12", "\u0663", "1_0", "+5"])
def test_an_integer_typed_in_other_digits_is_refused(admin_client, typed):
    """A prompt's deadline, turns and token limit took full-width and
    Arabic-Indic digits, ``1_0`` and ``+5`` (Django's ``IntegerField`` reads
    them), while the money fields beside them refused them (found by hostile
    QA). Every admin integer field takes ASCII digits."""
    from tests.tooling.admin_forms import change_form_data
    from tooling.demo import seed_demo_catalog
    from tooling.models import PromptTemplate

    seed_demo_catalog()
    prompt = PromptTemplate.objects.get(namespace="demo", key="notes")
    url = reverse("admin:tooling_prompttemplate_change", args=[prompt.pk])
    data = change_form_data(admin_client, url)
    for field in ("deadline_seconds", "max_turns", "max_total_tokens"):
        response = admin_client.post(url, {**data, field: typed})
        assert response.status_code == 200, field
        errors = response.context["adminform"].form.errors
        assert errors[field] == ["Enter a whole number: digits 0-9."], errors
    saved = admin_client.post(url, {**data, "max_turns": "12"})
    assert saved.status_code == 302
    prompt.refresh_from_db()
    assert prompt.max_turns == 12


def test_every_admin_whole_number_field_takes_ascii_digits_only():
    """Every whole-number field of every admin add page and of its inlines is
    ``PlainIntegerField`` (an inline's position took full-width digits: found
    by a hostile review)."""
    from django import forms

    from tooling.forms.fields import (
        PlainDecimalField,
        PlainFloatField,
        PlainIntegerField,
    )

    superuser = User.objects.create_superuser("root", password="pw")
    client = Client()
    client.force_login(superuser)
    seen = []
    for model in apps.get_models():
        if not admin.site.is_registered(model):
            continue
        opts = model._meta
        response = client.get(reverse(f"admin:{opts.app_label}_{opts.model_name}_add"))
        if response.status_code != 200 or "adminform" not in response.context:
            continue
        forms_shown = [response.context["adminform"].form] + [
            inline.formset.empty_form
            for inline in response.context["inline_admin_formsets"]
        ]
        for form in forms_shown:
            for name, field in form.fields.items():
                if isinstance(field, forms.FloatField | forms.DecimalField):
                    # (Django's are IntegerFields too)
                    plain = (PlainFloatField, PlainDecimalField)
                    assert isinstance(field, plain), (opts.model_name, name)
                elif isinstance(field, forms.IntegerField):
                    seen.append((opts.model_name, name))
                    assert isinstance(field, PlainIntegerField), (opts.model_name, name)
    assert ("prompttemplate", "max_turns") in seen
    # an inline's: the prompt's sections, the dataset's cases
    assert {("prompttemplate", "position"), ("dataset", "position")} <= set(seen)
