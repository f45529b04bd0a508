"""Releases over the API (``/api/releases/``): the list (filters ``prompt``,
``label``, ``status``), one release, requesting one, and deciding one
(``<id>/approve/``, ``<id>/reject/``, ``<id>/withdraw/``).

Who may use it: reading needs ``view_release``; requesting ``add_release``;
approving and rejecting ``approve_release`` and not being the requester (four
eyes, superusers too); withdrawing, being the requester. Anyone else gets 403.
A release that cannot be made in the present state (already decided, the
label moved since the request, another one waiting, the label already there)
is a 409 naming why (``tooling.releases``).
"""

from __future__ import annotations

from typing import Any

import django_filters
from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import ValidationError as DjangoValidationError
from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import permissions, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import PermissionDenied
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.reverse import reverse

from sessions_app.audit.serializers import (
    LABEL_INVALID,
    PROMPT_REF_RE,
    REVISION_INVALID,
)
from tooling import releases
from tooling.api.errors import Conflict, ErrorSerializer, from_django
from tooling.api.input import StrictFilterSet, StrictSerializer
from tooling.api.pagination import KeysetCursorPagination
from tooling.models import PromptTemplate, Release


class MayViewReleases(permissions.BasePermission):
    message = "Reading releases needs the view_release permission."

    def has_permission(self, request: Request, view: Any) -> bool:
        return releases.may_view(request.user)


class ReleaseSerializer(serializers.ModelSerializer[Release]):
    from_revision = serializers.CharField(
        source="from_revision_id", allow_null=True, read_only=True
    )
    to_revision = serializers.CharField(source="to_revision_id", read_only=True)

    class Meta:
        model = Release
        fields = [
            "id",
            "prompt_ref",
            "label",
            "from_revision",
            "to_revision",
            "reason",
            "rollback",
            "status",
            "requested_by_name",
            "requested_at",
            "decided_by_name",
            "decided_at",
            "note",
        ]
        read_only_fields = fields


class ReleaseRequestSerializer(StrictSerializer):
    prompt = serializers.CharField(
        max_length=201, help_text='The prompt, as "namespace/key".'
    )
    # the metaclass takes declared fields off the class: ``Field.label`` stays
    label = serializers.RegexField(  # type: ignore[assignment]
        r"^[a-z][a-z0-9_-]{0,31}$",
        error_messages={"invalid": LABEL_INVALID},
        default="production",
        help_text="The label to move.",
    )
    revision = serializers.RegexField(
        r"^([0-9a-f]{64}|draft)$",
        error_messages={"invalid": REVISION_INVALID},
        default=releases.DRAFT,
        help_text="'draft' (the catalog as it is now, frozen and stored) or the "
        "hash of one of the prompt's revisions.",
    )
    reason = serializers.CharField(max_length=1000, required=False, default="")

    def validate_prompt(self, value: str) -> str:
        value = value.strip()
        if not PROMPT_REF_RE.fullmatch(value):
            raise serializers.ValidationError(
                'Enter a prompt reference of the form "namespace/key".'
            )
        return value


class DecisionSerializer(StrictSerializer):
    note = serializers.CharField(max_length=1000, required=False, default="")


class ReleaseFilter(StrictFilterSet):
    prompt = django_filters.CharFilter(
        field_name="prompt_ref", max_length=201, help_text="namespace/key"
    )
    label = django_filters.CharFilter(max_length=32)
    status = django_filters.ChoiceFilter(choices=Release.Status.choices)

    class Meta:
        model = Release
        fields: list[str] = []


class ReleaseCursorPagination(KeysetCursorPagination):
    """Newest first on ``requested_at``, ties by key (a keyset: releases
    requested at one time are each listed once, either way)."""

    time_field = "requested_at"
    ordering = ("-requested_at", "-pk")  # (for a reader: time_field decides)


ERRORS = {400: ErrorSerializer, 403: ErrorSerializer, 409: ErrorSerializer}


def _refusal(error: DjangoValidationError) -> Exception:
    if isinstance(error, releases.ReleaseConflict):
        return Conflict(" ".join(error.messages))
    return from_django(error)


@extend_schema_view(
    list=extend_schema(summary="Releases, newest first"),
    retrieve=extend_schema(summary="One release"),
)
class ReleaseViewSet(viewsets.ReadOnlyModelViewSet[Release]):
    serializer_class = ReleaseSerializer
    pagination_class = ReleaseCursorPagination
    permission_classes = [MayViewReleases]
    filterset_class = ReleaseFilter
    queryset = Release.objects.all()

    @extend_schema(
        summary="Request a release: move a prompt's label to a revision",
        description="An unprotected label (and a rollback to a revision the "
        "label was released to before) moves at once (`status` released); a "
        "protected one waits for a second person's approval (`status` pending).",
        request=ReleaseRequestSerializer,
        responses={201: ReleaseSerializer, **ERRORS},
    )
    def create(self, request: Request) -> Response:
        if not releases.may_request(request.user):  # before anything is read
            raise PermissionDenied(releases.REQUEST_DENIED)
        body = ReleaseRequestSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        namespace, _, key = data["prompt"].partition("/")
        template = PromptTemplate.objects.filter(namespace=namespace, key=key).first()
        if template is None:
            raise from_django(
                DjangoValidationError(
                    {"prompt": f"No prompt is named {data['prompt']}."}
                )
            )
        try:
            revision = releases.revision_for(
                template, data["revision"], user=request.user
            )
            release = releases.request_release(
                template=template,
                label=data["label"],
                revision=revision,
                user=request.user,
                reason=data["reason"],
            )
        except DjangoPermissionDenied as error:
            raise PermissionDenied(str(error)) from error
        except DjangoValidationError as error:
            raise _refusal(error) from error
        location = reverse(
            "sessions_api:release-detail", args=[release.pk], request=request
        )
        return Response(
            ReleaseSerializer(release).data,
            status=status.HTTP_201_CREATED,
            headers={"Location": location},
        )

    def _decide(self, request: Request, decide: Any) -> Response:
        release = self.get_object()
        body = DecisionSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        try:
            release = decide(
                release, user=request.user, note=body.validated_data["note"]
            )
        except DjangoPermissionDenied as error:
            raise PermissionDenied(str(error)) from error
        except DjangoValidationError as error:
            raise _refusal(error) from error
        return Response(ReleaseSerializer(release).data)

    @extend_schema(
        summary="Approve a pending release (a second person: never its requester)",
        request=DecisionSerializer,
        responses={200: ReleaseSerializer, **ERRORS},
    )
    @action(detail=True, methods=["post"], filterset_class=None)
    def approve(self, request: Request, pk: str) -> Response:
        return self._decide(request, releases.approve)

    @extend_schema(
        summary="Reject a pending release",
        request=DecisionSerializer,
        responses={200: ReleaseSerializer, **ERRORS},
    )
    @action(detail=True, methods=["post"], filterset_class=None)
    def reject(self, request: Request, pk: str) -> Response:
        return self._decide(request, releases.reject)

    @extend_schema(
        summary="Withdraw your own pending release",
        request=DecisionSerializer,
        responses={200: ReleaseSerializer, **ERRORS},
    )
    @action(detail=True, methods=["post"], filterset_class=None)
    def withdraw(self, request: Request, pk: str) -> Response:
        return self._decide(request, releases.withdraw)
