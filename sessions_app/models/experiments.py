"""Datasets, graders and experiments (docs/experiments.md).

A ``Dataset`` is a named list of cases (parameters, trust level, an optional
expected output and notes). A ``Grader`` judges a finished session: a
deterministic check (a tool called or not, in an order, a policy's denial, an
approval asked, the output against a schema, a pattern or a text, citations
inside domains, cost or turns at most) or a grader prompt of the catalog run
on the output (``sessions_app.experiments.grading``). An ``Experiment`` runs
every case of a dataset against each of its targets (a revision, a label or
the draft), each case a normal governed session (``ExperimentRun``), and
grades them as they finish.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator
from django.db import models
from django.utils import timezone

from sessions_app import access
from sessions_app.models.sessions import AgentSession
from tooling.models import TrustLevel
from tooling.param_size import too_large
from tooling.storable_json import StorableJSONField


def validate_case_params(value: Any) -> None:
    """A case's parameters are its sessions' ``params``: a JSON object, each
    parameter within the size a run start allows (``tooling.param_size``)."""
    if not isinstance(value, dict):
        raise ValidationError(
            "Params must be a JSON object of the prompt's parameters (such as "
            '{"question": "Why?"}), not a list or a single value.',
            # not "invalid": a form field would show its own message instead
            code="not_an_object",
        )
    oversized = too_large(value)
    if oversized is not None:
        raise ValidationError(f"The parameter {oversized}", code="too_large")


class Dataset(models.Model):
    name = models.CharField(max_length=100, unique=True)
    description = models.TextField(blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


# The largest position a case may have: a PositiveIntegerField's on every
# database (PostgreSQL's integer; SQLite took up to 2**63 - 1, and the next
# case's position then overflowed).
MOST_POSITION = 2_147_483_647


class DatasetCase(models.Model):
    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="cases")
    position = models.PositiveIntegerField(
        default=0, validators=[MaxValueValidator(MOST_POSITION)]
    )
    params = StorableJSONField(
        default=dict, blank=True, validators=[validate_case_params]
    )
    trust_level = models.CharField(
        max_length=16, choices=TrustLevel.choices, default=TrustLevel.STANDARD
    )
    expected_output = models.TextField(blank=True)
    notes = models.TextField(blank=True)
    # the session it was made from; kept as an id when that session is purged
    source_session = models.ForeignKey(
        AgentSession,
        null=True,
        blank=True,
        on_delete=models.DO_NOTHING,
        db_constraint=False,
        related_name="+",
    )

    class Meta:
        ordering = ["dataset", "position", "id"]

    def __str__(self) -> str:
        return f"{self.dataset.name} #{self.position}"


class Grader(models.Model):
    class Kind(models.TextChoices):
        TOOL_CALLED = "tool_called", "Tool called"
        TOOL_NOT_CALLED = "tool_not_called", "Tool never called"
        CALLED_BEFORE = "called_before", "Tool called before another"
        DENIED_BY_POLICY = "denied_by_policy", "Denied by a policy"
        APPROVAL_REQUESTED = "approval_requested", "Approval requested"
        OUTPUT_SCHEMA = "output_schema", "Output matches a JSON schema"
        OUTPUT_REGEX = "output_regex", "Output matches a pattern"
        OUTPUT_CONTAINS = "output_contains", "Output contains a text"
        CITATIONS_IN_DOMAINS = "citations_in_domains", "Citations inside domains"
        COST_AT_MOST = "cost_at_most", "Cost at most"
        TURNS_AT_MOST = "turns_at_most", "Turns at most"
        MODEL_GRADED = "model_graded", "Model-graded (a grader prompt)"

    name = models.CharField(max_length=100, unique=True)
    kind = models.CharField(max_length=32, choices=Kind.choices)
    config = StorableJSONField(default=dict, blank=True)
    description = models.TextField(blank=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    def graded_experiments(self) -> models.QuerySet[Experiment]:
        """The experiments that ran with it: their runs' grades are kept under
        its name and read with its kind and config, so it stays as it is
        (neither deleted, renamed nor reconfigured) while one of them does."""
        return self.experiments.exclude(status=Experiment.Status.NEW)


class ExperimentQuerySet(models.QuerySet["Experiment"]):
    def visible_to(self, user: Any) -> ExperimentQuerySet:
        """Experiments ``user`` started; every one for who sees all sessions."""
        if access.sees_all(user):
            return self
        if not access.is_user(user):
            return self.none()
        return self.filter(created_by=user)


class Experiment(models.Model):
    class Status(models.TextChoices):
        NEW = "new", "Not run yet"
        RUNNING = "running", "Running"
        FINISHED = "finished", "Finished"

    name = models.CharField(max_length=200)
    dataset = models.ForeignKey(
        Dataset, on_delete=models.PROTECT, related_name="experiments"
    )
    prompt_ref = models.CharField(max_length=201)
    targets = models.JSONField(
        default=list,
        help_text='What each case runs against: "draft", "label:<name>" or a '
        "revision's hash.",
    )
    graders = models.ManyToManyField(Grader, related_name="experiments")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.NEW)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    created_at = models.DateTimeField(default=timezone.now)

    objects = ExperimentQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return self.name


class ExperimentRun(models.Model):
    """One case against one target: its session, and its grades once the
    session has finished (``None`` until then)."""

    experiment = models.ForeignKey(
        Experiment, on_delete=models.CASCADE, related_name="runs"
    )
    # a run keeps its case (deleting a case that ran is refused) and the
    # parameters it ran with (the case may be edited later)
    case = models.ForeignKey(DatasetCase, on_delete=models.PROTECT, related_name="+")
    params = models.JSONField(default=dict, blank=True)
    target = models.CharField(max_length=80)
    session = models.ForeignKey(
        AgentSession,
        null=True,
        blank=True,
        on_delete=models.DO_NOTHING,
        db_constraint=False,
        related_name="+",
    )
    error = models.TextField(blank=True, help_text="Why the run could not start.")
    grades = models.JSONField(
        null=True,
        blank=True,
        help_text='{grader name: {"passed": bool or null, "detail": text}}',
    )
    graded_at = models.DateTimeField(null=True, blank=True)
    # a grade in progress holds the run until then (running.grade_finished);
    # a claim past it is of a grade that died, and is taken again
    grading_until = models.DateTimeField(null=True, blank=True, editable=False)

    class Meta:
        ordering = ["case__position", "case_id", "target"]
        constraints = [
            models.UniqueConstraint(
                fields=["experiment", "case", "target"], name="one_run_per_case_target"
            )
        ]

    def __str__(self) -> str:
        return f"{self.experiment} #{self.case_id} {self.target}"
