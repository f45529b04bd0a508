"""Experiments' API and grading under concurrent requests: the loser of two
creates of the same dataset or grader name gets the sequential 400 (not a
500 from the unique constraint); two Grade now at once start one model
grader session per run, and a grade that died holds its run only until its
claim expires."""

from __future__ import annotations

from datetime import timedelta
from io import StringIO
from typing import Any

import pytest
from django.contrib.auth.models import Group, Permission, User
from django.core.management import call_command
from django.db.models.signals import post_save
from django.urls import reverse
from django.utils import timezone
from rest_framework.exceptions import ValidationError
from rest_framework.test import APIClient

from sessions_app.experiments.running import grade_finished
from sessions_app.experiments.serializers import DatasetSerializer, GraderSerializer
from sessions_app.models import (
    AgentSession,
    Dataset,
    DatasetCase,
    Experiment,
    ExperimentRun,
    Grader,
)
from tests.sessions_app.factories import AgentSessionFactory, UserFactory
from tests.tooling.factories import (
    PromptTemplateFactory,
    SectionDefinitionFactory,
    add_sections,
)
from tooling.demo import seed_demo_catalog

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


# -- grading: one model grader session per run and grader ---------------------


def judged_experiment(author: User) -> tuple[Experiment, ExperimentRun]:
    """A running experiment of ``author``'s with one finished run, graded by a
    model grader (``graders/judge``) no one has started yet."""
    seed_demo_catalog()
    section = SectionDefinitionFactory.create(
        template="Grade: $output ($expected, $params)",
        default_params={"output": "", "expected": "", "params": ""},
    )
    prompt = PromptTemplateFactory.create(namespace="graders", key="judge")
    add_sections(prompt, section)
    grader = Grader.objects.create(
        name="judge", kind=Grader.Kind.MODEL_GRADED, config={"prompt": prompt.ref}
    )
    dataset = Dataset.objects.create(name="j")
    case = DatasetCase.objects.create(dataset=dataset, params={})
    experiment = Experiment.objects.create(
        name="j",
        dataset=dataset,
        prompt_ref="demo/research",
        targets=["draft"],
        created_by=author,
        status=Experiment.Status.RUNNING,
    )
    experiment.graders.add(grader)
    run = ExperimentRun.objects.create(
        experiment=experiment,
        case=case,
        target="draft",
        session=AgentSessionFactory.create(created_by=author),
    )
    return experiment, run


def judges() -> list[AgentSession]:
    return list(AgentSession.objects.filter(prompt_ref="graders/judge"))


def test_two_grade_nows_at_once_start_one_grader_session(client: Any) -> None:
    author = staff()
    experiment, run = judged_experiment(author)
    api = APIClient()
    api.force_login(author)
    client.force_login(author)
    button = reverse("sessions_app:experiment-grade", args=[experiment.pk])
    inner: list[Any] = []

    def press_the_button_meanwhile(
        sender: Any, instance: AgentSession, created: bool, **kwargs: Any
    ) -> None:
        # the API's Grade now is starting the grader's session: the page's
        # Grade now is pressed at that moment (once)
        if created and instance.prompt_ref == "graders/judge" and not inner:
            inner.append(None)
            inner[0] = client.post(button)

    post_save.connect(press_the_button_meanwhile, sender=AgentSession)
    try:
        outer = api.post(f"/api/experiments/{experiment.pk}/grade/", format="json")
    finally:
        post_save.disconnect(press_the_button_meanwhile, sender=AgentSession)

    assert outer.status_code == 200 and inner[0].status_code == 302
    assert len(judges()) == 1, judges()  # the button's grade left the run alone
    (verdict,) = judges()
    run.refresh_from_db()
    assert (run.grades or {})["judge"]["session"] == str(verdict.pk)
    assert run.graded_at is not None and run.grading_until is None


def test_a_run_another_grade_holds_is_left_to_it_until_its_claim_expires() -> None:
    author = staff()
    experiment, run = judged_experiment(author)
    held = timezone.now() + timedelta(minutes=5)
    ExperimentRun.objects.filter(pk=run.pk).update(grading_until=held)

    assert grade_finished(experiment, user=author, model_graders=True) == 0
    assert not judges()
    run.refresh_from_db()
    assert run.graded_at is None and run.grading_until == held

    # the grade that held it died: its claim has expired, and the run is
    # graded again
    expired = timezone.now() - timedelta(seconds=1)
    ExperimentRun.objects.filter(pk=run.pk).update(grading_until=expired)

    assert grade_finished(experiment, user=author, model_graders=True) == 1
    (verdict,) = judges()
    run.refresh_from_db()
    assert (run.grades or {})["judge"]["session"] == str(verdict.pk)
    assert run.graded_at is not None and run.grading_until is None


def test_a_run_purged_before_its_grade_ends_and_the_experiment_finishes(
    monkeypatch: Any,
) -> None:
    """purge_sessions removed its session before anyone graded it: nothing is
    left to grade, so it is final with what it has, and the experiment ends."""
    author = staff()
    experiment, run = judged_experiment(author)
    assert run.session_id is not None
    session_id = run.session_id
    AgentSession.objects.filter(pk=session_id).update(status="succeeded")
    # two days later (a purge keeps the sessions of today: they hold the
    # day's spend against the daily budgets)
    later = timezone.now() + timedelta(days=2)
    with monkeypatch.context() as patched:
        patched.setattr(timezone, "now", lambda: later)
        call_command("purge_sessions", "--older-than", "1d", stdout=StringIO())
    assert not AgentSession.objects.filter(pk=session_id).exists()

    assert grade_finished(experiment, user=author, model_graders=True) == 1
    run.refresh_from_db()
    experiment.refresh_from_db()
    assert run.graded_at is not None and not judges()
    assert experiment.status == Experiment.Status.FINISHED


def test_a_grade_that_fails_releases_its_claim(monkeypatch: Any) -> None:
    author = staff()
    experiment, run = judged_experiment(author)

    def fails(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("a grader broke")

    monkeypatch.setattr("sessions_app.experiments.grading.grade", fails)
    with pytest.raises(RuntimeError):
        grade_finished(experiment, user=author, model_graders=True)
    run.refresh_from_db()
    assert run.grading_until is None and run.graded_at is None
