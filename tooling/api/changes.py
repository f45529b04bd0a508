"""The catalog's change history over the API (``/api/catalog-changes/``).

Who may read it: users holding ``tooling.view_catalogchange`` (catalog staff
given it, the Auditors group); anyone else gets 403. Filters: ``model``
(``tooldefinition``, ``sectiondefinition``, ...), ``object_id``, ``prompt``
(``namespace/key``: every change that touched the prompt), ``actor``
(username), ``action``.
"""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_view
from rest_framework import permissions, serializers, viewsets
from rest_framework.pagination import CursorPagination
from rest_framework.request import Request

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


class ChangeCursorPagination(CursorPagination):
    ordering = ("-at", "-id")


FILTERS = [
    OpenApiParameter("model", OpenApiTypes.STR, description="e.g. tooldefinition"),
    OpenApiParameter("object_id", OpenApiTypes.STR),
    OpenApiParameter("prompt", OpenApiTypes.STR, description="namespace/key"),
    OpenApiParameter("actor", OpenApiTypes.STR, description="username"),
    OpenApiParameter("action", OpenApiTypes.STR, enum=CatalogChange.Action.values),
]


@extend_schema_view(
    list=extend_schema(
        summary="Changes of the catalog, newest first", parameters=FILTERS
    ),
    retrieve=extend_schema(summary="One change of the catalog"),
)
class ChangeViewSet(viewsets.ReadOnlyModelViewSet[CatalogChange]):
    serializer_class = ChangeSerializer
    pagination_class = ChangeCursorPagination
    permission_classes = [MayViewChanges]
    filter_backends: list[Any] = []

    def get_queryset(self) -> QuerySet[CatalogChange]:
        changes = CatalogChange.objects.select_related("content_type").prefetch_related(
            "prompts"
        )
        params = self.request.query_params
        if model := params.get("model"):
            changes = changes.filter(
                content_type__app_label="tooling", content_type__model=model.lower()
            )
        if object_id := params.get("object_id"):
            changes = changes.filter(object_id=object_id)
        if prompt := params.get("prompt"):
            changes = changes.filter(prompts__prompt_ref=prompt).distinct()
        if actor := params.get("actor"):
            changes = changes.filter(actor_name=actor)
        if action := params.get("action"):
            changes = changes.filter(action=action)
        return changes
