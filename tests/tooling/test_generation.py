"""The catalog generation (``tooling/generation.py``) and the frozen revisions
cached under it (``assembly.catalog.freeze_template``)."""

from __future__ import annotations

import datetime
from decimal import Decimal

import pytest
from django.apps import apps
from django.db import connection

from tests.sessions_app.factories import UserFactory
from tooling import assembly
from tooling.assembly import catalog
from tooling.demo import seed_demo_catalog
from tooling.generation import CATALOG_TABLES
from tooling.models import (
    CatalogGeneration,
    HostedToolPrice,
    ModelCapability,
    ModelPrice,
    PolicyDefinition,
    PromptTemplate,
    SectionDefinition,
    UserBudget,
)

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def empty_cache() -> None:
    catalog._FROZEN.clear()


def token() -> str:
    return CatalogGeneration.objects.get(pk=1).token


def test_every_catalog_table_has_the_triggers():
    tables = {
        model._meta.db_table
        for model in apps.get_app_config("tooling").get_models(
            include_auto_created=True
        )
    } - {
        "tooling_catalogrevision",
        "tooling_cataloggeneration",
        "tooling_userbudget",
        "tooling_catalogchange",
        "tooling_catalogchangeprompt",
        # labels point at stored revisions; a start reads its default label in
        # the template's own query, never from a cache keyed by the token
        "tooling_promptlabel",
        "tooling_release",
    }
    assert set(CATALOG_TABLES) == tables


def test_a_users_budget_is_not_catalog_and_keeps_the_token():
    before = token()
    budget = UserBudget.objects.create(
        user=UserFactory.create(), daily_limit=Decimal(1)
    )
    UserBudget.objects.filter(pk=budget.pk).update(daily_limit=Decimal(2))
    assert token() == before


def test_any_write_to_any_catalog_table_changes_the_token():
    seed_demo_catalog()
    ModelCapability.objects.create(model="gpt-test", hosted_kinds=["web_search"])
    # SQLite's triggers fire per row: every table needs one
    ModelPrice.objects.create(
        model="gpt-test",
        effective_from=datetime.date(2026, 1, 1),
        input_per_mtok=Decimal(1),
        cached_input_per_mtok=Decimal(1),
        output_per_mtok=Decimal(1),
    )
    HostedToolPrice.objects.create(
        kind="web_search",
        unit="call",
        price=Decimal(1),
        effective_from=datetime.date(2026, 1, 1),
    )
    template = PromptTemplate.objects.get(namespace="demo", key="research")
    policy = PolicyDefinition.objects.first()
    assert policy is not None
    template.policies.add(policy)
    section = SectionDefinition.objects.filter(policies__isnull=True).first()
    assert section is not None
    section.policies.add(policy)
    for table in CATALOG_TABLES:
        before = token()
        with connection.cursor() as cursor:  # raw SQL: no signal, no ORM
            cursor.execute(f"UPDATE {table} SET id = id")
        assert token() != before, f"{table} did not change the generation"
    before = token()
    PromptTemplate.objects.filter(pk=template.pk).delete()
    assert token() != before


def freeze(ref: str) -> dict:
    return assembly.freeze_template(assembly.load_template(ref))


def test_a_template_is_frozen_once_per_generation(django_assert_num_queries):
    seed_demo_catalog()
    first = freeze("demo/research")
    with django_assert_num_queries(1):  # the template and the token
        again = freeze("demo/research")
    assert again == first
    again["prompt"]["model"] = "changed by a caller"  # each hit is a copy
    assert freeze("demo/research") == first


def test_a_catalog_write_is_seen_by_the_next_freeze():
    seed_demo_catalog()
    freeze("demo/research")
    # QuerySet.update(): no model signal, only the database trigger sees it.
    SectionDefinition.objects.filter(key="research.sources").update(
        template="Edited behind the ORM's back."
    )
    assert "Edited behind the ORM's back." in str(freeze("demo/research"))


def test_a_kept_template_instance_does_not_use_its_old_token():
    seed_demo_catalog()
    template = assembly.load_template("demo/research")
    assembly.freeze_template(template)
    SectionDefinition.objects.filter(key="research.sources").update(template="New.")
    assert "New." in str(assembly.freeze_template(template))


def test_without_a_generation_nothing_is_cached():
    seed_demo_catalog()
    CatalogGeneration.objects.all().delete()
    freeze("demo/research")
    assert not catalog._FROZEN
