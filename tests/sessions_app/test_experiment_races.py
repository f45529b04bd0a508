"""Experiments' API and grading under concurrent requests: the loser of two
creates of the same dataset or grader name gets the sequential 400 (not a
500 from the unique constraint)."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import Group, Permission, User
from rest_framework.exceptions import ValidationError
from rest_framework.test import APIClient

from sessions_app.experiments.api import DatasetSerializer, GraderSerializer
from sessions_app.models import Dataset, DatasetCase, Grader
from tests.sessions_app.factories import UserFactory

pytestmark = pytest.mark.django_db

DATASET = {"name": "race", "cases": [{"params": {"question": "x"}}]}
GRADER = {"name": "race", "kind": "tool_called", "config": {"tool": "deploy"}}


def staff() -> User:
    user = UserFactory.create(username="alice", is_staff=True)
    user.groups.add(Group.objects.get(name="Runners"))
    user.user_permissions.add(
        *Permission.objects.filter(codename__in=["add_dataset", "add_grader"])
    )
    return user


@pytest.mark.parametrize(
    ("url", "serializer_class", "body", "model"),
    [
        ("/api/datasets/", DatasetSerializer, DATASET, Dataset),
        ("/api/graders/", GraderSerializer, GRADER, Grader),
    ],
)
def test_a_name_taken_between_validation_and_insert_is_the_sequential_400(
    url: str, serializer_class: Any, body: dict[str, Any], model: Any
) -> None:
    api = APIClient()
    api.force_login(staff())
    assert api.post(url, body, format="json").status_code == 201
    sequential = api.post(url, body, format="json")
    assert sequential.status_code == 400
    model.objects.all().delete()

    # the race's loser: its name was free when it was validated, and another
    # request inserted it before this one saves
    loser = serializer_class(data=body)
    assert loser.is_valid(), loser.errors
    model.objects.create(**{k: v for k, v in body.items() if k != "cases"})
    with pytest.raises(ValidationError) as raised:  # a 400, not a 500
        loser.save()

    assert raised.value.detail == {"name": sequential.json()["errors"]["name"]}
    assert model.objects.count() == 1
    assert not DatasetCase.objects.exists()  # the loser's cases are not kept
