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

from typing import Any

from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import transaction
from django.db.models import Count, QuerySet
from django.http import HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_view
from rest_framework import mixins, permissions, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import PermissionDenied
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.serializers import BaseSerializer

from sessions_app import access
from sessions_app.models import Dataset, Experiment, Grader
from tooling.api.errors import Conflict, ErrorSerializer, from_django
from tooling.api.input import (
    EMPTY_BODY,
    no_body,
)
from tooling.api.pagination import StrictCursorPagination
from tooling.api.throttling import StartThrottled

from .results import csv_of, results_of
from .running import (
    check_size,
    grade_finished,
    is_runner,
    not_gradable,
    run_experiment,
)
from .serializers import (
    DatasetListSerializer,
    DatasetSerializer,
    ExperimentRequestSerializer,
    ExperimentSerializer,
    GraderSerializer,
    ResultsSerializer,
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
class ExperimentViewSet(StartThrottled, viewsets.ReadOnlyModelViewSet[Experiment]):
    serializer_class = ExperimentSerializer
    pagination_class = IdPagination

    def is_start(self) -> bool:
        return self.action == "create"  # creating one starts runs

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
        responses={
            200: ResultsSerializer,
            403: ErrorSerializer,
            409: OpenApiResponse(
                ErrorSerializer, description="Not run yet, or every run graded."
            ),
        },
    )
    @action(detail=True, methods=["post"])
    def grade(self, request: Request, pk: str) -> Response:
        experiment = self.get_object()
        if not is_runner(request.user, experiment):
            raise PermissionDenied(
                "Only its author, who may start sessions, grades it while runs wait."
            )
        why_not = not_gradable(experiment)
        if why_not is not None:
            raise Conflict(why_not)
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
