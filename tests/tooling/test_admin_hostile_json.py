"""JSON an operator types into the admin that no database stores (a NUL byte, a
lone surrogate, in a key or a value) is refused on the form, naming the field;
nothing is saved and no page answers 500 (PostgreSQL's jsonb refuses both)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from django.urls import reverse

from sessions_app.models import AgentSession
from tests.tooling.admin_forms import change_form_data
from tooling.demo import seed_demo_catalog
from tooling.models import (
    HostedToolDefinition,
    PolicyDefinition,
    PromptTemplate,
    SectionDefinition,
    ToolDefinition,
)

NUL = "a\u0000b"
SURROGATE = "a\ud800b"
# json.dumps writes both as escapes (\u0000, \ud800), as an operator would type them.
HOSTILE: dict[str, Callable[[], dict[str, Any]]] = {
    "nul value": lambda: {"x": NUL},
    "surrogate value": lambda: {"x": SURROGATE},
    "nul key": lambda: {NUL: "x"},
    "nested surrogate": lambda: {"x": [{"y": SURROGATE}]},
}


def _row(model):
    seed_demo_catalog()
    return model.objects.order_by("pk").first()


CASES = [
    (ToolDefinition, "param_descriptions", lambda value: value),
    (ToolDefinition, "examples", lambda value: [value]),
    (PolicyDefinition, "config", lambda value: value),
    (SectionDefinition, "default_params", lambda value: value),
    (PromptTemplate, "output_schema", lambda value: {"type": "object", **value}),
]
# What else a browser posts with the JSON: the policy's is read when chosen.
ALSO = {"config": {"config_source": "json"}}


@pytest.mark.parametrize("hostile", HOSTILE, ids=list(HOSTILE))
@pytest.mark.parametrize(
    ("model", "field", "wrap"), CASES, ids=[f"{m.__name__}.{f}" for m, f, _ in CASES]
)
def test_catalog_json_fields_refuse_unstorable_text(
    admin_client, model, field, wrap, hostile
):
    row = _row(model)
    before = getattr(row, field)
    url = reverse(f"admin:tooling_{model._meta.model_name}_change", args=[row.pk])
    data = change_form_data(admin_client, url)
    data[field] = json.dumps(wrap(HOSTILE[hostile]()))
    data.update(ALSO.get(field, {}))

    response = admin_client.post(url, data)

    assert response.status_code == 200
    errors = response.context["adminform"].form.errors
    assert "NUL bytes or lone surrogates" in " ".join(errors.get(field, [])), errors
    row.refresh_from_db()
    assert getattr(row, field) == before


@pytest.mark.parametrize("hostile", HOSTILE, ids=list(HOSTILE))
def test_hosted_tool_filters_refuse_unstorable_text(admin_client, hostile):
    hosted = HostedToolDefinition.objects.create(
        name="kb",
        kind=HostedToolDefinition.Kind.FILE_SEARCH,
        description="Search the knowledge base.",
        config={"vector_store_ids": ["vs_1"]},
    )
    url = reverse("admin:tooling_hostedtooldefinition_change", args=[hosted.pk])
    data = change_form_data(admin_client, url)
    data["filters"] = json.dumps({"type": "eq", "key": "team", **HOSTILE[hostile]()})

    response = admin_client.post(url, data)

    assert response.status_code == 200
    errors = response.context["adminform"].form.errors
    assert "NUL bytes or lone surrogates" in " ".join(errors.get("filters", [])), errors
    hosted.refresh_from_db()
    assert hosted.config == {"vector_store_ids": ["vs_1"]}


@pytest.mark.parametrize("hostile", HOSTILE, ids=list(HOSTILE))
@pytest.mark.parametrize("view", ["preview", "run"])
def test_preview_and_run_refuse_unstorable_params(admin_client, view, hostile):
    seed_demo_catalog()
    prompt = PromptTemplate.objects.get(namespace="demo", key="research")
    url = reverse(f"admin:tooling_prompttemplate_{view}", args=[prompt.pk])

    response = admin_client.post(url, {"params": json.dumps(HOSTILE[hostile]())})

    assert response.status_code == 200
    errors = response.context["form"].errors
    assert "NUL bytes or lone surrogates" in " ".join(errors.get("params", [])), errors
    assert not AgentSession.objects.exists()


@pytest.mark.parametrize(
    "text",
    ["[" * 100_000 + "]" * 100_000, '{"x": ' + "[" * 70 + "]" * 70 + "}"],
    ids=["too deep to decode", "deeper than the limit"],
)
def test_deeply_nested_json_is_a_form_error(admin_client, text):
    """Python's JSON decoder recurses: a deep value is refused, not a 500."""
    seed_demo_catalog()
    section = SectionDefinition.objects.order_by("pk").first()
    assert section is not None
    url = reverse("admin:tooling_sectiondefinition_change", args=[section.pk])
    data = change_form_data(admin_client, url)
    data["default_params"] = text

    response = admin_client.post(url, data)

    assert response.status_code == 200
    errors = response.context["adminform"].form.errors
    assert errors["default_params"] == ["Must not be nested more than 64 levels deep."]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            '{"x": 1' + "0" * 5000 + "}",
            "Enter valid JSON: A number has too many digits.",
        ),
        (
            '{"x": 1e400}',
            "Enter valid JSON: A number is too large (a float is at most about "
            "1.8e308).",
        ),
    ],
    ids=["5000 digits", "1e400"],
)
def test_a_number_json_cannot_hold_is_a_form_error_that_says_so(
    admin_client, text, message
):
    """Both were Django's bare "Enter a valid JSON." (found by hostile QA)."""
    seed_demo_catalog()
    section = SectionDefinition.objects.order_by("pk").first()
    assert section is not None
    url = reverse("admin:tooling_sectiondefinition_change", args=[section.pk])
    data = change_form_data(admin_client, url)
    data["default_params"] = text

    response = admin_client.post(url, data)

    assert response.status_code == 200
    errors = response.context["adminform"].form.errors
    assert errors["default_params"] == [message]


def test_section_parameters_may_default_to_lists_and_objects(admin_client):
    """A dataclass refuses a mutable default; each section instance gets a copy."""
    seed_demo_catalog()
    section = SectionDefinition.objects.order_by("pk").first()
    assert section is not None
    url = reverse("admin:tooling_sectiondefinition_change", args=[section.pk])
    data = change_form_data(admin_client, url)
    params = {**section.default_params, "tags": ["a", "b"], "limits": {"n": 1}}
    data["default_params"] = json.dumps(params)

    response = admin_client.post(url, data)

    assert response.status_code == 302, response.context["adminform"].form.errors
    section.refresh_from_db()
    assert section.default_params == params


@pytest.mark.parametrize("name", ["class", "None", "1x", "a-b"])
def test_section_parameter_names_must_be_identifiers_not_keywords(admin_client, name):
    seed_demo_catalog()
    section = SectionDefinition.objects.order_by("pk").first()
    assert section is not None
    url = reverse("admin:tooling_sectiondefinition_change", args=[section.pk])
    data = change_form_data(admin_client, url)
    data["default_params"] = json.dumps({**section.default_params, name: "x"})

    response = admin_client.post(url, data)

    assert response.status_code == 200
    errors = response.context["adminform"].form.errors
    assert errors["default_params"] == [
        f"Parameter name '{name}' must be a Python identifier (not a keyword)."
    ]
