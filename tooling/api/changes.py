"""The catalog's change history over the API (``/api/catalog-changes/``).

Who may read it: users holding ``tooling.view_catalogchange`` (catalog staff
given it, the Auditors group); anyone else gets 403. Filters: ``model``
(``tooldefinition``, ``sectiondefinition``, ...), ``object_id``, ``prompt``
(``namespace/key``: every change that touched the prompt), ``actor``
(username), ``action``.
"""

from __future__ import annotations

from typing import Any

import django_filters
from django.apps import apps
from django.contrib import admin
from django.core.exceptions import ValidationError
from django.db.models import QuerySet
from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import permissions, serializers, viewsets
from rest_framework.request import Request

from tooling.api.input import StrictFilterSet
from tooling.api.pagination import KeysetCursorPagination
from tooling.history.admin import HistoryAdminMixin
from tooling.models import CatalogChange

VIEW = "tooling.view_catalogchange"


class MayViewChanges(permissions.BasePermission):
    message = "Reading the catalog's history needs the view_catalogchange permission."

    def has_permission(self, request: Request, view: Any) -> bool:
        user = request.user
        return bool(user and user.is_authenticated and user.has_perm(VIEW))


class ChangeSerializer(serializers.ModelSerializer[CatalogChange]):
    model = serializers.CharField(source="content_type.model", read_only=True)
    prompts = serializers.SerializerMethodField()

    class Meta:
        model = CatalogChange
        fields = [
            "id",
            "at",
            "model",
            "object_id",
            "object_repr",
            "action",
            "actor_name",
            "reason",
            "fields",
            "before",
            "after",
            "version",
            "prompts",
        ]

    def get_prompts(self, change: CatalogChange) -> list[str]:
        return [link.prompt_ref for link in change.prompts.all()]


class ChangeCursorPagination(KeysetCursorPagination):
    """Newest first on ``at``, ties by key (a keyset: changes saved at one
    time are each listed once, either way)."""

    time_field = "at"
    ordering = ("-at", "-pk")  # (for a reader: time_field decides)


def _catalog_model(value: str) -> None:
    """A ``model`` filter names a kind of row whose changes are recorded
    (its admin keeps the history, ``HistoryAdminMixin``; any case): another
    is a 400, not an empty list."""
    known = sorted(
        model._meta.model_name or ""
        for model in apps.get_app_config("tooling").get_models()
        if admin.site.is_registered(model)
        and isinstance(admin.site.get_model_admin(model), HistoryAdminMixin)
    )
    if value.lower() not in known:
        raise ValidationError(
            f"Unknown kind of row: use one of {', '.join(known)}.", code="invalid"
        )


class ChangeFilter(StrictFilterSet):
    model = django_filters.CharFilter(
        field_name="content_type__model",
        method="filter_model",
        validators=[_catalog_model],
        help_text="The kind of row: tooldefinition, sectiondefinition, ...",
    )
    object_id = django_filters.CharFilter()
    prompt = django_filters.CharFilter(
        field_name="prompts__prompt_ref",
        distinct=True,
        help_text="namespace/key: every change that touched the prompt",
    )
    actor = django_filters.CharFilter(field_name="actor_name", help_text="username")
    action = django_filters.ChoiceFilter(choices=CatalogChange.Action.choices)

    class Meta:
        model = CatalogChange
        fields: list[str] = []

    def filter_model(
        self, queryset: QuerySet[CatalogChange], name: str, value: str
    ) -> QuerySet[CatalogChange]:
        return queryset.filter(
            content_type__app_label="tooling", content_type__model=value.lower()
        )


@extend_schema_view(
    list=extend_schema(summary="Changes of the catalog, newest first"),
    retrieve=extend_schema(summary="One change of the catalog"),
)
class ChangeViewSet(viewsets.ReadOnlyModelViewSet[CatalogChange]):
    serializer_class = ChangeSerializer
    pagination_class = ChangeCursorPagination
    permission_classes = [MayViewChanges]
    filterset_class = ChangeFilter
    queryset = CatalogChange.objects.select_related("content_type").prefetch_related(
        "prompts"
    )
