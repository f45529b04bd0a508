"""A dataset case's parameters are its runs' parameters: each is held to a
run start's size limit (``WINK_API_MAX_PARAM_BYTES``) wherever a case is
entered (the datasets API, the admin's import and inline, "add to dataset"),
with an error naming the case and the parameter and nothing stored; a case
stored before the limit does not start its run."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.contrib.auth.models import Group, Permission, User
from django.core.exceptions import ValidationError
from django.urls import reverse
from rest_framework.test import APIClient

from sessions_app.experiments.cases import import_cases
from sessions_app.experiments.running import run_experiment
from sessions_app.models import AgentSession, Dataset, DatasetCase, Experiment
from tests.sessions_app.factories import AgentSessionFactory, UserFactory
from tooling.demo import seed_demo_catalog

pytestmark = pytest.mark.django_db

LIMIT = 100
BIG = "x" * 200  # 202 bytes JSON encoded
SAID = f"question is 202 bytes encoded; each is at most {LIMIT}."


@pytest.fixture(autouse=True)
def _small_limit(settings: Any) -> None:
    settings.WINK_API_MAX_PARAM_BYTES = LIMIT


def runner(*codenames: str) -> User:
    user = UserFactory.create(username="alice", is_staff=True)
    user.groups.add(Group.objects.get(name="Runners"))
    user.user_permissions.add(*Permission.objects.filter(codename__in=codenames))
    return user


def test_case_sizes_the_datasets_api_answers_413_naming_the_case() -> None:
    api = APIClient()
    api.force_login(runner("add_dataset"))
    cases = [{"params": {"question": "small"}}, {"params": {"question": BIG}}]

    refused = api.post("/api/datasets/", {"name": "big", "cases": cases}, format="json")

    assert refused.status_code == 413, refused.json()
    assert refused.json()["code"] == "request_too_large"
    assert refused.json()["detail"] == f"cases.1.params.{SAID}"
    assert not Dataset.objects.exists() and not DatasetCase.objects.exists()


def test_case_sizes_an_import_names_the_row_and_adds_nothing() -> None:
    dataset = Dataset.objects.create(name="d")
    rows = [{"params": {"question": "small"}}, {"params": {"question": BIG}}]

    with pytest.raises(ValidationError, match=f"Item 2: The parameter {SAID}"):
        import_cases(dataset, json.dumps(rows).encode(), "cases.json")
    csv = "params\n" + "".join(
        '"' + json.dumps(row["params"]).replace('"', '""') + '"\n' for row in rows
    )
    with pytest.raises(ValidationError, match=f"Row 3: The parameter {SAID}"):
        import_cases(dataset, csv.encode(), "cases.csv")

    assert not dataset.cases.exists()


def test_case_sizes_the_admin_inline_refuses_the_row(client: Any) -> None:
    client.force_login(User.objects.create_superuser("root", "root@example.com", "pw"))
    dataset = Dataset.objects.create(name="d")
    inline = {
        "name": "d",
        "created_at_0": "2026-11-30",
        "created_at_1": "08:00:00",
        "cases-TOTAL_FORMS": "1",
        "cases-INITIAL_FORMS": "0",
        "cases-0-position": "1",
        "cases-0-params": json.dumps({"question": BIG}),
        "cases-0-trust_level": "standard",
    }

    page = client.post(
        reverse("admin:sessions_app_dataset_change", args=[dataset.pk]), inline
    )

    assert page.status_code == 200
    assert f"The parameter {SAID}" in page.content.decode()
    assert not dataset.cases.exists()


def test_case_sizes_a_session_over_the_limit_is_not_added_to_a_dataset(
    client: Any,
) -> None:
    user = runner("add_datasetcase")
    dataset = Dataset.objects.create(name="kept")
    # a grader's session, say: started with the output it grades
    session = AgentSessionFactory.create(created_by=user, params={"question": BIG})
    client.force_login(user)

    page = client.post(
        reverse("sessions_app:session-add-to-dataset", args=[session.pk]),
        {"dataset": dataset.pk},
        follow=True,
    )

    assert f"cannot be a case of kept: The parameter {SAID}" in page.content.decode()
    assert not dataset.cases.exists()


def test_case_sizes_a_case_stored_before_the_limit_does_not_start() -> None:
    seed_demo_catalog()
    user = runner()
    dataset = Dataset.objects.create(name="old")
    DatasetCase.objects.create(dataset=dataset, params={"question": BIG})
    experiment = Experiment.objects.create(
        name="x", dataset=dataset, prompt_ref="demo/research", targets=["draft"]
    )

    (run,) = run_experiment(experiment, user=user)

    assert run.session_id is None and run.error == f"The parameter {SAID}"
    assert not AgentSession.objects.exists()
