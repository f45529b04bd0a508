"""The price list's admin: it refuses prices the runtime would never charge
(a unit not the kind's, a variant no call can have), negative and malformed
amounts, and a second price for the same model (or kind and variant) on the
same day, each as a form error; and the user budgets' admin."""

from __future__ import annotations

import importlib
from decimal import Decimal

import pytest
from django.apps import apps
from django.urls import reverse

from tooling.assembly import pricing as sheets
from tooling.models import HostedToolPrice, ModelPrice

pytestmark = pytest.mark.django_db

D = Decimal


@pytest.fixture(autouse=True)
def _seeded_prices():
    importlib.import_module("tooling.migrations.0011_seed_prices").seed(apps, None)
    sheets.clear_cache()


# -- the price list's admin --------------------------------------------------------


def _model_price(admin_client, **overrides):
    data = {
        "model": "gpt-5",
        "effective_from": "2025-01-01",
        "input_per_mtok": "1",
        "cached_input_per_mtok": "0.1",
        "cache_write_per_mtok": "1",
        "output_per_mtok": "8",
        "reasoning_per_mtok": "",
        "source": "test",
        **overrides,
    }
    return admin_client.post(reverse("admin:tooling_modelprice_add"), data)


def _hosted_price(admin_client, **overrides):
    data = {
        "kind": "web_search",
        "unit": "call",
        "variant": "",
        "price": "0.01",
        "effective_from": "2026-01-01",
        "source": "test",
        **overrides,
    }
    return admin_client.post(reverse("admin:tooling_hostedtoolprice_add"), data)


def test_budgets_admin_duplicate_model_price_is_a_form_error(admin_client):
    response = _model_price(admin_client)  # gpt-5 from 2025-01-01 is seeded
    assert response.status_code == 200
    assert b"already exists" in response.content


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("input_per_mtok", "-1", b"no sign or exponent"),
        ("output_per_mtok", "NaN", b"Enter a number"),
        ("cached_input_per_mtok", "1e20", b"no sign or exponent"),
        ("model", "gpt 5", b"A model name is one word"),
        ("input_per_mtok", "1_000", b"Enter a number: digits"),
        ("cached_input_per_mtok", "\u0661", b"Enter a number: digits"),
        ("output_per_mtok", "1" * 20, b"Ensure that there are no more than"),
        # shown raw in every prompt's suggestions: "gpt-\u202e5.4" reads "gpt-4.5"
        ("model", "gpt-\u202e5.4", b"not U+202E at character 5"),
        ("source", "bad\x00source", b"Null characters are not allowed"),
    ],
)
def test_budgets_admin_refuses_bad_model_prices(admin_client, field, value, message):
    response = _model_price(
        admin_client, **{field: value, "effective_from": "2031-01-01"}
    )
    assert response.status_code == 200
    assert message in response.content
    assert not ModelPrice.objects.filter(effective_from="2031-01-01").exists()


def test_budgets_admin_adds_a_new_model_price(admin_client):
    response = _model_price(admin_client, effective_from="2031-01-01")
    assert response.status_code == 302
    assert ModelPrice.objects.get(model="gpt-5", effective_from="2031-01-01")


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"unit": "image"}, b"web_search is billed per call, not per image."),
        ({"variant": "1g"}, b"leave the variant empty"),
        (
            {"kind": "code_interpreter", "unit": "container", "variant": "2g"},
            b"memory limit: one of 1g, 4g, 16g, 64g",
        ),
        (
            {"kind": "image_generation", "unit": "image", "variant": "auto"},
            b"quality one of low, medium, high",
        ),
        ({"kind": "mcp"}, b"cost only their tokens"),
        ({"price": "-0.01"}, b"no sign or exponent"),
    ],
)
def test_budgets_admin_refuses_prices_never_charged(admin_client, overrides, message):
    response = _hosted_price(admin_client, **overrides)
    assert response.status_code == 200
    assert message in response.content
    assert not HostedToolPrice.objects.filter(effective_from="2026-01-01").exists()


def test_budgets_admin_normalises_an_image_variant(admin_client):
    response = _hosted_price(
        admin_client,
        kind="image_generation",
        unit="image",
        variant=" High:1024X1536 ",
        price="0.3",
    )
    assert response.status_code == 302
    assert HostedToolPrice.objects.get(effective_from="2026-01-01").variant == (
        "high:1024x1536"
    )


def test_budgets_admin_user_budget_refuses_a_negative_limit(admin_client, user):
    response = admin_client.post(
        reverse("admin:tooling_userbudget_add"),
        {"user": user.pk, "daily_limit": "-5"},
    )
    assert response.status_code == 200
    assert b"no sign or exponent" in response.content


@pytest.mark.parametrize(
    "name", ["tooling_modelprice", "tooling_hostedtoolprice", "tooling_userbudget"]
)
def test_budgets_admin_changelists_load(admin_client, name):
    assert admin_client.get(reverse(f"admin:{name}_changelist")).status_code == 200


@pytest.mark.parametrize(
    ("char", "shown"),
    [
        ("\u2066", "U+2066"),  # a bidi isolate
        ("\u202e", "U+202E"),  # a bidi override
        ("\u200b", "U+200B"),  # a zero-width space (found by hostile QA)
        ("\u2011", "U+2011"),  # a non-breaking hyphen, a look-alike of "-"
        ("\u0435", "U+0435"),  # a Cyrillic "e"
    ],
)
def test_a_model_name_that_is_not_visible_ascii_is_refused_everywhere_it_is_typed(
    admin_client, char, shown
):
    """A model name looked like the model in every list and warning, was
    unknown to the price list (unpriced calls, outside the budgets) and
    failed only when the prompt ran."""
    from tests.tooling.admin_forms import change_form_data
    from tests.tooling.factories import PromptTemplateFactory
    from tooling.models import ModelCapability

    refusal = f"not {shown} at character 5.".encode()
    response = admin_client.post(
        reverse("admin:tooling_modelcapability_add"),
        {"model": f"capx{char}7", "hosted_kinds": "[]", "reason": ""},
    )
    assert response.status_code == 200
    assert refusal in response.content
    assert not ModelCapability.objects.filter(model__startswith="cap").exists()
    response = admin_client.post(
        reverse("admin:tooling_modelprice_add"),
        {"model": f"gpt-{char}5", "input_per_mtok": "1", "output_per_mtok": "1"},
    )
    assert response.status_code == 200
    assert refusal in response.content
    prompt = PromptTemplateFactory.create(model="gpt-5")
    url = reverse("admin:tooling_prompttemplate_change", args=[prompt.pk])
    data = change_form_data(admin_client, url)
    response = admin_client.post(url, {**data, "model": f"gpt-{char}5.4"})
    assert response.status_code == 200
    assert refusal in response.content
    prompt.refresh_from_db()
    assert prompt.model == "gpt-5"


@pytest.mark.parametrize("typed", ["1_000", "\u0661", "+5", "1e2"])
def test_a_prompts_budget_is_an_amount_written_plainly(admin_client, typed):
    from tests.tooling.admin_forms import change_form_data
    from tooling.demo import seed_demo_catalog
    from tooling.models import PromptTemplate

    seed_demo_catalog()
    prompt = PromptTemplate.objects.get(namespace="demo", key="notes")
    url = reverse("admin:tooling_prompttemplate_change", args=[prompt.pk])
    data = change_form_data(admin_client, url)
    response = admin_client.post(url, {**data, "max_cost_per_session": typed})
    assert response.status_code == 200
    assert b"no sign or exponent" in response.content
    prompt.refresh_from_db()
    assert prompt.max_cost_per_session is None
    saved = admin_client.post(url, {**data, "max_cost_per_session": "0.25"})
    assert saved.status_code == 302


@pytest.mark.parametrize("typed", ["0", "0.00", "0.00001"])
def test_a_prompts_budget_of_nothing_is_refused(admin_client, typed):
    """A limit of $0 saved without a word and failed every run before its
    first request (an operator meaning "no limit"; found by hostile QA)."""
    from tests.tooling.admin_forms import change_form_data
    from tooling.demo import seed_demo_catalog
    from tooling.models import PromptTemplate

    seed_demo_catalog()
    prompt = PromptTemplate.objects.get(namespace="demo", key="notes")
    url = reverse("admin:tooling_prompttemplate_change", args=[prompt.pk])
    data = change_form_data(admin_client, url)
    response = admin_client.post(url, {**data, "max_cost_per_session": typed})
    assert response.status_code == 200
    (message,) = response.context["adminform"].form.errors["max_cost_per_session"]
    assert message in (
        "A run's cost limit is more than $0 (empty: no limit).",
        "Ensure that there are no more than 4 decimal places.",
    )
    prompt.refresh_from_db()
    assert prompt.max_cost_per_session is None
