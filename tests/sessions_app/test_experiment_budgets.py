"""A model grader meets its user's daily budget: the grader's run is refused
(``DailyBudgetExceeded``), the experiment's API answers as usual (201, 200),
the grade stays pending saying why, and a Grade now once the budget allows
grades it."""

from __future__ import annotations

import importlib
from decimal import Decimal

import pytest
from django.apps import apps
from django.contrib.auth.models import Group, Permission, User
from rest_framework.test import APIClient

from sessions_app.models import AgentSession, Dataset, DatasetCase, Experiment, Grader
from tests.sessions_app.factories import UserFactory
from tests.tooling.factories import (
    PromptTemplateFactory,
    SectionDefinitionFactory,
    add_sections,
)
from tooling.assembly import pricing as sheets
from tooling.demo import seed_demo_catalog
from tooling.models import UserBudget

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _seeded_prices() -> None:
    # runs cost what the price list says (the offline provider's ~$0.015 a run)
    importlib.import_module("tooling.migrations.0011_seed_prices").seed(apps, None)
    sheets.clear_cache()


def author() -> User:
    user = UserFactory.create(username="carol", is_staff=True)
    user.groups.add(Group.objects.get(name="Runners"))
    user.user_permissions.add(
        *Permission.objects.filter(codename__in=["add_experiment", "view_dataset"])
    )
    return user


def judge() -> Grader:
    section = SectionDefinitionFactory.create(
        template="Grade: $output ($expected, $params)",
        default_params={"output": "", "expected": "", "params": ""},
    )
    prompt = PromptTemplateFactory.create(namespace="graders", key="judge")
    add_sections(prompt, section)
    return Grader.objects.create(
        name="judge", kind=Grader.Kind.MODEL_GRADED, config={"prompt": prompt.ref}
    )


def test_experiment_budgets_a_refused_grader_leaves_the_grade_pending_for_later():
    seed_demo_catalog()
    user = author()
    judge()
    dataset = Dataset.objects.create(name="budgetds")
    DatasetCase.objects.create(dataset=dataset, params={"question": "one"})
    # the experiment's run may start, and spends the day: its grader may not
    budget = UserBudget.objects.create(user=user, daily_limit=Decimal("0.01"))
    api = APIClient()
    api.force_login(user)

    created = api.post(
        "/api/experiments/",
        {
            "name": "budget-exp",
            "dataset": "budgetds",
            "prompt": "demo/research",
            "targets": ["draft"],
            "graders": ["judge"],
        },
        format="json",
    )

    assert created.status_code == 201, created.json()
    experiment = created.json()["experiment"]["id"]
    (case,) = created.json()["cases"]
    grade = case["runs"][0]["grades"]["judge"]
    assert grade["passed"] is None and "session" not in grade
    assert "The grader's run was refused: You have spent" in grade["detail"]
    assert not AgentSession.objects.filter(prompt_ref="graders/judge").exists()
    assert Experiment.objects.count() == 1  # one experiment, its one run billed

    again = api.post(f"/api/experiments/{experiment}/grade/", format="json")
    assert again.status_code == 200, again.json()
    grade = again.json()["cases"][0]["runs"][0]["grades"]["judge"]
    assert grade["passed"] is None and "daily budget" in grade["detail"]

    budget.daily_limit = Decimal("1")  # as a new day would
    budget.save()
    graded = api.post(f"/api/experiments/{experiment}/grade/", format="json")

    assert graded.status_code == 200
    grade = graded.json()["cases"][0]["runs"][0]["grades"]["judge"]
    verdict = AgentSession.objects.get(prompt_ref="graders/judge")
    assert grade["session"] == str(verdict.pk) and grade["passed"] is not None
    assert graded.json()["experiment"]["status"] == "finished"
