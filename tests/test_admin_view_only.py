"""Staff who may only view a model see its admin change page read-only, for
every model the admin registers (a form that set up a field the read-only
form leaves out answered 500)."""

from __future__ import annotations

import pytest
from django.apps import apps
from django.contrib import admin
from django.contrib.auth.models import Permission, User
from django.db.models import Model
from django.test import Client
from django.urls import reverse

from sessions_app.experiments.demo import seed_demo_experiment
from tests.tooling.factories import HostedToolDefinitionFactory
from tooling.demo import seed_demo_catalog
from tooling.models import HostedToolDefinition, ModelCapability, PromptTemplate

pytestmark = pytest.mark.django_db


def registered_with_rows() -> list[type[Model]]:
    found = []
    for model in apps.get_models():
        if admin.site.is_registered(model) and model._default_manager.exists():
            found.append(model)
    return found


def test_a_view_only_user_sees_every_change_page() -> None:
    client = Client(raise_request_exception=False)  # every page's status
    seed_demo_catalog()
    root = User.objects.create_superuser("root", "root@example.com", "pw")
    seed_demo_experiment(root)
    HostedToolDefinitionFactory.create()
    ModelCapability.objects.get_or_create(
        model="gpt-view-only", defaults={"hosted_kinds": ["web_search"]}
    )
    models = registered_with_rows()
    assert {PromptTemplate, HostedToolDefinition, ModelCapability} <= set(models)
    assert len(models) >= 15  # the catalog, the audit rows, experiments ...
    failures = []
    for model in models:
        opts = model._meta
        viewer = User.objects.create_user(f"view-{opts.model_name}", is_staff=True)
        viewer.user_permissions.add(
            Permission.objects.get(
                content_type__app_label=opts.app_label,
                codename=f"view_{opts.model_name}",
            )
        )
        client.force_login(viewer)
        row = model._default_manager.first()
        assert row is not None
        url = reverse(f"admin:{opts.app_label}_{opts.model_name}_change", args=[row.pk])
        status = client.get(url).status_code
        # 404: rows scoped to who may see them (another user's session)
        if status not in (200, 404):
            failures.append((url, status))
    assert not failures, failures
