"""Datasets, graders and experiments over the API.

- ``/api/datasets/`` (and ``<id>/`` with its cases): read with "Can view
  dataset"; ``POST`` a dataset with its cases with "Can add dataset" (a
  case's parameter over a run start's size limit is a 413 naming the case).
- ``/api/graders/``: read with "Can view grader"; ``POST`` with "Can add
  grader" (a config its kind cannot use is a 400 naming it).
- ``/api/experiments/`` (and ``<id>/`` with its results): each user sees the
  experiments they started, the Auditors every one; ``POST`` creates and runs
  one (needs "Can add experiment" and to start sessions); ``<id>/csv/``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import IntegrityError, transaction
from django.db.models import Count, QuerySet
from django.http import HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_view
from rest_framework import mixins, permissions, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import PermissionDenied
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.serializers import BaseSerializer
from rest_framework.throttling import BaseThrottle
from rest_framework.validators import UniqueValidator

from sessions_app import access
from sessions_app.models import Dataset, DatasetCase, Experiment, Grader
from tooling.api.errors import ErrorSerializer, from_django
from tooling.api.input import (
    EMPTY_BODY,
    StrictSerializer,
    no_body,
    refuse_too_large,
)
from tooling.api.pagination import StrictCursorPagination
from tooling.api.throttling import SharedScopedRateThrottle
from tooling.models import PromptTemplate

from . import grader_config
from .results import csv_of, results_of
from .running import (
    TARGET,
    check_size,
    grade_finished,
    may_grade,
    run_experiment,
    unknown_targets,
)


class ModelPermission(permissions.BasePermission):
    """Reading needs the model's view permission, ``POST`` its add one."""

    def has_permission(self, request: Request, view: Any) -> bool:
        model = view.queryset.model
        verb = "add" if request.method == "POST" else "view"
        name = f"{model._meta.app_label}.{verb}_{model._meta.model_name}"
        return bool(request.user and request.user.has_perm(name))


class IdPagination(StrictCursorPagination):
    """Newest first; ``?page_size=`` from 1 to 500 (anything else a 400), as
    the sessions' lists."""

    ordering = "-id"


class UniqueNameSerializer(serializers.ModelSerializer[Any]):
    """Creates a row whose ``name`` is unique. DRF's ``UniqueValidator`` reads
    before the insert: two requests with the same new name both pass it, and
    the later insert breaks the unique constraint. That insert runs in a
    savepoint, and its ``IntegrityError``, once the name is found taken, is
    the validator's own 400 (``name``: already exists), as when the requests
    come one after the other."""

    def create(self, validated_data: dict[str, Any]) -> Any:
        try:
            with transaction.atomic():
                return self.create_row(validated_data)
        except IntegrityError:
            unique = next(
                validator
                for validator in self.fields["name"].validators
                if isinstance(validator, UniqueValidator)
            )
            if not unique.queryset.filter(name=validated_data.get("name")).exists():
                raise  # another constraint: not the name's
            raise serializers.ValidationError({"name": [unique.message]}) from None

    def create_row(self, validated_data: dict[str, Any]) -> Any:
        """The insert, in the savepoint (with what goes with the row)."""
        return super().create(validated_data)


class CaseSerializer(StrictSerializer, serializers.ModelSerializer[DatasetCase]):
    class Meta:
        model = DatasetCase
        fields = ["id", "position", "params", "trust_level", "expected_output", "notes"]
        read_only_fields = ["id"]


class DatasetSerializer(StrictSerializer, UniqueNameSerializer):
    cases = CaseSerializer(many=True, required=False)

    class Meta:
        model = Dataset
        fields = ["id", "name", "description", "created_at", "cases"]
        read_only_fields = ["id", "created_at"]

    def refuse_too_large(self, data: Mapping[Any, Any]) -> None:
        # each case's params are its runs' parameters: a 413 past a run
        # start's limit, naming the case (the model refuses them elsewhere)
        super().refuse_too_large(data)
        cases = data.get("cases")
        for index, case in enumerate(cases if isinstance(cases, list) else []):
            if isinstance(case, Mapping):
                refuse_too_large(case.get("params"), f"cases.{index}.params")

    def create_row(self, validated_data: dict[str, Any]) -> Dataset:
        cases = validated_data.pop("cases", [])
        dataset = Dataset.objects.create(**validated_data)
        DatasetCase.objects.bulk_create(
            DatasetCase(dataset=dataset, **{"position": index + 1, **case})
            for index, case in enumerate(cases)
        )
        return dataset


class DatasetListSerializer(serializers.ModelSerializer[Dataset]):
    """A dataset in the list: its size, not its cases (a list of datasets of
    thousands of cases each would be megabytes a page; ``<id>/`` has them)."""

    case_count = serializers.IntegerField(
        read_only=True, help_text="How many cases it holds."
    )

    class Meta:
        model = Dataset
        fields = ["id", "name", "description", "created_at", "case_count"]
        read_only_fields = fields


@extend_schema_view(
    list=extend_schema(summary="Datasets (their cases: each dataset's own URL)"),
    retrieve=extend_schema(summary="A dataset with its cases"),
    create=extend_schema(summary="Create a dataset with its cases"),
)
class DatasetViewSet(
    mixins.CreateModelMixin,
    viewsets.ReadOnlyModelViewSet[Dataset],
):
    serializer_class = DatasetSerializer
    permission_classes = [ModelPermission]
    pagination_class = IdPagination
    queryset = Dataset.objects.all()

    def get_queryset(self) -> QuerySet[Dataset]:
        if self.action == "list":
            return Dataset.objects.annotate(case_count=Count("cases"))
        return Dataset.objects.prefetch_related("cases")

    def get_serializer_class(self) -> type[BaseSerializer[Any]]:
        if self.action == "list":
            return DatasetListSerializer
        return DatasetSerializer

    def perform_create(self, serializer: Any) -> None:
        serializer.save(created_by=self.request.user)


class GraderSerializer(StrictSerializer, UniqueNameSerializer):
    class Meta:
        model = Grader
        fields = ["id", "name", "kind", "config", "description"]
        read_only_fields = ["id"]

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        try:
            grader_config.check_entered_config(attrs["kind"], attrs.get("config", {}))
        except DjangoValidationError as error:
            raise serializers.ValidationError({"config": error.messages}) from error
        return attrs


@extend_schema_view(
    list=extend_schema(summary="Graders"),
    retrieve=extend_schema(summary="A grader"),
    create=extend_schema(summary="Create a grader"),
)
class GraderViewSet(
    mixins.CreateModelMixin,
    viewsets.ReadOnlyModelViewSet[Grader],
):
    serializer_class = GraderSerializer
    permission_classes = [ModelPermission]
    pagination_class = IdPagination
    queryset = Grader.objects.all()


class ExperimentSerializer(serializers.ModelSerializer[Experiment]):
    dataset: serializers.SlugRelatedField[Any] = serializers.SlugRelatedField(
        slug_field="name", read_only=True
    )
    graders: serializers.SlugRelatedField[Any] = serializers.SlugRelatedField(
        slug_field="name", many=True, read_only=True
    )

    class Meta:
        model = Experiment
        fields = [
            "id",
            "name",
            "dataset",
            "prompt_ref",
            "targets",
            "graders",
            "status",
            "created_at",
        ]
        read_only_fields = fields


class NameField(serializers.SlugRelatedField[Any]):
    """A dataset or a grader by its name, trimmed as names are when created
    (``" =1+2"`` names ``=1+2``)."""

    def to_internal_value(self, data: Any) -> Any:
        return super().to_internal_value(
            data.strip() if isinstance(data, str) else data
        )


class ExperimentRequestSerializer(StrictSerializer):
    name = serializers.CharField(max_length=200)
    dataset = NameField(slug_field="name", queryset=Dataset.objects.all())
    prompt = serializers.CharField(max_length=201, help_text='"namespace/key"')
    targets = serializers.ListField(
        child=serializers.RegexField(TARGET.pattern),
        min_length=1,
        max_length=10,
        help_text='"draft", "label:<name>" or a revision\'s hash; each once.',
    )
    graders = NameField(slug_field="name", queryset=Grader.objects.all(), many=True)

    def validate_prompt(self, value: str) -> str:
        namespace, _, key = value.strip().partition("/")
        if not PromptTemplate.objects.filter(namespace=namespace, key=key).exists():
            raise serializers.ValidationError(f"No prompt template is named {value}.")
        return f"{namespace}/{key}"

    def validate_targets(self, value: list[str]) -> list[str]:
        if len(set(value)) != len(value):
            raise serializers.ValidationError("Name each target once.")
        return value

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        unknown = unknown_targets(attrs["prompt"], attrs["targets"])
        if unknown:
            raise serializers.ValidationError({"targets": unknown})
        return attrs


class ResultsSerializer(serializers.Serializer[Any]):
    experiment = ExperimentSerializer()
    targets = serializers.JSONField(
        help_text="Per target: runs, finished, paused, failed_to_start, pass_rates "
        "(per grader; null: none decided), cost, mean_seconds."
    )
    cases = serializers.JSONField(
        help_text="Per case: its params, whether the targets' grades differ, and "
        "each target's session, error and grades."
    )


def _results(experiment: Experiment) -> dict[str, Any]:
    results = results_of(experiment)
    return {
        "experiment": experiment,
        "targets": [
            {
                "target": t.target,
                "runs": t.runs,
                "finished": t.finished,
                "paused": t.paused,
                "failed_to_start": t.failed_to_start,
                "pass_rates": t.pass_rates,
                "cost": str(t.cost),
                "mean_seconds": t.mean_seconds,
            }
            for t in results.targets
        ],
        "cases": [
            {
                "case": row.case_id,
                "position": row.position,
                "params": row.params,
                "differs": row.differs,
                "runs": [
                    None
                    if run is None
                    else {
                        "target": run.target,
                        "session": str(run.session_id) if run.session_id else None,
                        "error": run.error,
                        "grades": run.grades,
                    }
                    for run in row.runs
                ],
            }
            for row in results.cases
        ],
    }


@extend_schema_view(list=extend_schema(summary="Experiments you may see"))
class ExperimentViewSet(viewsets.ReadOnlyModelViewSet[Experiment]):
    serializer_class = ExperimentSerializer
    pagination_class = IdPagination
    throttle_scope = "session-start"

    def get_throttles(self) -> list[BaseThrottle]:
        # creating one starts runs: throttled with run starts
        return [SharedScopedRateThrottle()] if self.action == "create" else []

    def get_queryset(self) -> QuerySet[Experiment]:
        return (
            Experiment.objects.visible_to(self.request.user)
            .prefetch_related("graders")
            .select_related("dataset")
        )

    @extend_schema(
        summary="An experiment's results (grading the runs that finished)",
        responses={200: ResultsSerializer},
    )
    def retrieve(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        experiment = self.get_object()
        if experiment.status == Experiment.Status.RUNNING:
            grade_finished(experiment, user=experiment.created_by)
        return Response(ResultsSerializer(_results(experiment)).data)

    @extend_schema(
        summary="Create an experiment and run it",
        description="Every case of the dataset against every target, each a "
        "normal session of yours (inline without a broker, on workers "
        "otherwise); results fill in as runs finish. Needs 'Can add experiment' "
        "and 'Can start sessions'.",
        request=ExperimentRequestSerializer,
        responses={201: ResultsSerializer, 400: ErrorSerializer, 403: ErrorSerializer},
    )
    def create(self, request: Request) -> Response:
        if not (
            request.user.has_perm("sessions_app.add_experiment")
            and request.user.has_perm("sessions_app.view_dataset")
            and access.may_start(request.user)
        ):
            raise PermissionDenied(
                "Running an experiment needs 'Can add experiment', 'Can view "
                "dataset' and 'Can start sessions'."
            )
        body = ExperimentRequestSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        try:
            # refused before anything is created: no experiment is left behind
            check_size(data["dataset"], data["targets"])
            with transaction.atomic():
                experiment = Experiment.objects.create(
                    name=data["name"],
                    dataset=data["dataset"],
                    prompt_ref=data["prompt"],
                    targets=data["targets"],
                    created_by=request.user if request.user.is_authenticated else None,
                )
                experiment.graders.set(data["graders"])
            try:
                run_experiment(experiment, user=request.user)
            except DjangoValidationError:
                # refused as it ran (cases added meanwhile): nothing started
                Experiment.objects.filter(
                    pk=experiment.pk, status=Experiment.Status.NEW
                ).delete()
                raise
        except DjangoValidationError as error:
            raise from_django(error) from error
        return Response(
            ResultsSerializer(_results(experiment)).data, status=status.HTTP_201_CREATED
        )

    @extend_schema(
        summary="Grade the finished runs now, model graders included",
        description="Model-graded graders start sessions of their own, as you. "
        "Reading the results grades the deterministic graders only. Its author, "
        "who may start sessions, while runs wait for grades. It takes no body, "
        "or `{}`.",
        request=EMPTY_BODY,
        responses={200: ResultsSerializer, 403: ErrorSerializer},
    )
    @action(detail=True, methods=["post"])
    def grade(self, request: Request, pk: str) -> Response:
        experiment = self.get_object()
        if not may_grade(request.user, experiment):
            raise PermissionDenied(
                "Only its author, who may start sessions, grades it while runs wait."
            )
        no_body(request.data)
        grade_finished(experiment, user=request.user, model_graders=True)
        return Response(ResultsSerializer(_results(experiment)).data)

    @extend_schema(
        summary="An experiment's results as CSV",
        responses={(200, "text/csv"): OpenApiResponse(OpenApiTypes.STR)},
    )
    @action(detail=True, methods=["get"], url_path="csv", url_name="csv")
    def results_csv(self, request: Request, pk: str) -> HttpResponse:
        experiment = self.get_object()
        response = HttpResponse(
            csv_of(results_of(experiment)), content_type="text/csv; charset=utf-8"
        )
        response["Content-Disposition"] = (
            f'attachment; filename="experiment-{experiment.pk}.csv"'
        )
        return response
