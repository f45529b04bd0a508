"""The catalog API: what a client may run, and a preview of it.

Who may use it: authenticated users (token or session). Everything is
read-only except the preview, which renders a prompt and shows the exact first
request without calling the provider.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db.models import CharField, QuerySet, Value
from django.db.models.functions import Concat
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import viewsets
from rest_framework.request import Request
from rest_framework.response import Response

from tooling import assembly, services
from tooling.api.errors import from_django
from tooling.api.pagination import StrictCursorPagination
from tooling.api.serializers import (
    HostedToolSerializer,
    PreviewRequestSerializer,
    PreviewSerializer,
    PromptSerializer,
    ToolSerializer,
)
from tooling.handlers import registry
from tooling.models import (
    CatalogRevision,
    HostedToolDefinition,
    PromptTemplate,
    ToolDefinition,
)
from tooling.runtime import PromptError


class RefCursorPagination(StrictCursorPagination):
    """Prompts by ``namespace/key``, one text no two prompts share: DRF's
    cursor names a position in its first ordering field and an offset among
    the rows sharing it, and ordered by namespace then key (every demo
    prompt shares ``demo``) its ``previous`` links skipped prompts
    (encode/django-rest-framework#7709; found by hostile QA)."""

    ordering = ("ref_order",)

    def paginate_queryset(
        self, queryset: QuerySet[Any], request: Request, view: Any = None
    ) -> list[Any] | None:
        ref = Concat("namespace", Value("/"), "key", output_field=CharField())
        return super().paginate_queryset(
            queryset.annotate(ref_order=ref), request, view
        )


class NameCursorPagination(StrictCursorPagination):
    ordering = "name"


def _sections(entries: Any) -> Iterator[Mapping[str, Any]]:
    for entry in entries or []:
        yield entry
        yield from _sections(entry.get("children"))


def _tool_description(tool: Mapping[str, Any]) -> str:
    if tool.get("description"):
        return str(tool["description"])
    key = tool.get("handler_key")
    return (
        registry.get(key).description
        if isinstance(key, str) and key in registry
        else ""
    )


def describe_prompt(template: PromptTemplate, data: Any) -> dict[str, Any]:
    """A prompt as the API shows it, from its frozen revision."""
    described: dict[str, Any] = {
        "ref": template.ref,
        "namespace": template.namespace,
        "key": template.key,
        "name": template.name,
        "description": template.description,
        "model": template.model,
        "max_turns": template.max_turns,
        "deadline_seconds": template.deadline_seconds,
        "output_schema": template.output_schema,
        "revision": "",
        "labels": {label.name: label.revision_id for label in template.labels.all()},
        "parameters": [],
        "tools": [],
        "hosted_tools": [],
    }
    described["run_revision"] = described["labels"].get(settings.WINK_DEFAULT_LABEL)
    if isinstance(data, PromptError):  # a broken catalog: the basics only
        return described
    sections = list(_sections(data["sections"]))
    described.update(
        revision=CatalogRevision.hash_of(data),
        run_revision=described["run_revision"] or CatalogRevision.hash_of(data),
        parameters=[spec.as_dict() for spec in assembly.prompt_parameters(data)],
        tools=[
            {"name": tool["name"], "description": _tool_description(tool)}
            for section in sections
            for tool in section["tools"]
        ],
        hosted_tools=[
            {
                "name": hosted["name"],
                "kind": hosted["kind"],
                "description": hosted["description"],
                "min_trust_level": hosted["min_trust_level"],
            }
            for section in sections
            for hosted in section["hosted_tools"]
        ],
    )
    return described


@extend_schema_view(
    list=extend_schema(
        summary="Prompts a client may run, with their parameters and tools"
    ),
    retrieve=extend_schema(summary="A prompt, by namespace and key"),
)
class PromptViewSet(viewsets.GenericViewSet[PromptTemplate]):
    serializer_class = PromptSerializer
    pagination_class = RefCursorPagination
    lookup_url_kwarg = "key"

    def get_queryset(self) -> QuerySet[PromptTemplate]:
        return (
            PromptTemplate.objects.enabled().with_catalog().prefetch_related("labels")
        )

    def _template(self, namespace: str, key: str) -> PromptTemplate:
        return get_object_or_404(self.get_queryset(), namespace=namespace, key=key)

    def list(self, request: Request) -> Response:
        page = self.paginate_queryset(self.get_queryset())
        assert page is not None
        frozen = assembly.freeze_templates(page)
        data = [describe_prompt(template, frozen[template.pk]) for template in page]
        return self.get_paginated_response(PromptSerializer(data, many=True).data)

    def retrieve(self, request: Request, namespace: str, key: str) -> Response:
        template = self._template(namespace, key)
        frozen = assembly.freeze_templates([template])[template.pk]
        return Response(PromptSerializer(describe_prompt(template, frozen)).data)

    @extend_schema(
        summary="Preview a run: the rendered prompt and the exact first request",
        description="Nothing is sent to the provider and nothing is recorded.",
        request=PreviewRequestSerializer,
        responses=PreviewSerializer,
    )
    def preview(self, request: Request, namespace: str, key: str) -> Response:
        template = self._template(namespace, key)
        serializer = PreviewRequestSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        try:
            preview = services.preview_prompt(
                template=template,
                params=serializer.validated_data["params"],
                trust_level=serializer.validated_data["trust_level"],
            )
        except DjangoValidationError as exc:
            raise from_django(exc) from exc
        return Response(
            PreviewSerializer(
                {
                    "rendered_prompt": preview.text,
                    "request": preview.safe_request,
                    "revision": preview.revision_hash,
                    "withheld_tools": preview.withheld_tools,
                }
            ).data
        )


@extend_schema_view(
    list=extend_schema(summary="Function tools of the catalog"),
    retrieve=extend_schema(summary="A function tool, by name"),
)
class ToolViewSet(viewsets.ReadOnlyModelViewSet[ToolDefinition]):
    serializer_class = ToolSerializer
    pagination_class = NameCursorPagination
    lookup_field = "name"
    # Any name reaches the view (a dot included): who asks is checked
    # before whether it exists, so an anonymous caller gets 401, never 404.
    lookup_value_regex = "[^/]+"
    queryset = ToolDefinition.objects.all()


@extend_schema_view(
    list=extend_schema(summary="Hosted (provider-run) tools of the catalog"),
    retrieve=extend_schema(summary="A hosted tool, by name"),
)
class HostedToolViewSet(viewsets.ReadOnlyModelViewSet[HostedToolDefinition]):
    serializer_class = HostedToolSerializer
    pagination_class = NameCursorPagination
    lookup_field = "name"
    # Any name reaches the view (a dot included): who asks is checked
    # before whether it exists, so an anonymous caller gets 401, never 404.
    lookup_value_regex = "[^/]+"
    queryset = HostedToolDefinition.objects.all()
