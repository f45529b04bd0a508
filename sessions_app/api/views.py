"""The audit trail API: sessions (read, start a run, cancel) and citations.

Who may use it: any authenticated user (session or token); starting at the
trusted level needs ``start_trusted_session``; cancelling needs to be the
session's author or hold ``cancel_any_session``.
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import NON_FIELD_ERRORS
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db.models import QuerySet
from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_view
from rest_framework import status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import PermissionDenied, ValidationError
from rest_framework.fields import get_error_detail
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.reverse import reverse
from rest_framework.serializers import BaseSerializer
from rest_framework.settings import api_settings

from sessions_app import access, dispatch, services
from sessions_app.api.pagination import CreatedAtCursorPagination
from sessions_app.api.serializers import (
    AgentSessionCreateSerializer,
    AgentSessionDetailSerializer,
    AgentSessionListSerializer,
    CitationListSerializer,
    ProviderCallDetailSerializer,
)
from sessions_app.filters import AgentSessionFilterSet, CitationFilterSet
from sessions_app.models import (
    AgentSession,
    Citation,
    ProviderCall,
)


def _validation_error_detail(exc: DjangoValidationError) -> dict[str, Any]:
    """A service's ValidationError as DRF's ``{field: [messages]}``."""
    detail = get_error_detail(exc)
    if not isinstance(detail, dict):
        return {str(api_settings.NON_FIELD_ERRORS_KEY): detail}
    renamed: dict[str, str] = {
        NON_FIELD_ERRORS: str(api_settings.NON_FIELD_ERRORS_KEY),
        "prompt_ref": "prompt",
    }
    return {renamed.get(str(key), str(key)): value for key, value in detail.items()}


@extend_schema_view(
    list=extend_schema(summary="List agent sessions, newest first"),
    retrieve=extend_schema(summary="A session's audit trail"),
)
class AgentSessionViewSet(viewsets.ReadOnlyModelViewSet[AgentSession]):
    filterset_class = AgentSessionFilterSet
    pagination_class = CreatedAtCursorPagination

    def get_queryset(self) -> QuerySet[AgentSession]:
        # Another user's session is a 404 here, like a missing one (access.py).
        sessions = AgentSession.objects.visible_to(self.request.user)
        if self.action == "list":
            return sessions.summaries()
        if self.action == "provider_calls":
            return sessions.only("id")
        if self.action == "cancel":
            return sessions.only("id", "status", "created_by")
        return sessions.with_audit_trail()

    def get_serializer_class(self) -> type[BaseSerializer[Any]]:
        if self.action == "list":
            return AgentSessionListSerializer
        if self.action == "create":
            return AgentSessionCreateSerializer
        if self.action == "provider_calls":
            return ProviderCallDetailSerializer
        return AgentSessionDetailSerializer

    @extend_schema(
        summary="Start a run of a prompt",
        description="Without a broker the run happens inline and the answer "
        "(201) holds the finished session; with one it is queued for a worker "
        "and the answer (202) holds the queued session: follow its Location.",
        request=AgentSessionCreateSerializer,
        responses={
            201: AgentSessionDetailSerializer,
            202: AgentSessionDetailSerializer,
            400: OpenApiResponse(
                description="Invalid input: unknown prompt, bad params or an "
                "invalid catalog; messages keyed by field or non_field_errors."
            ),
            403: OpenApiResponse(
                description="Not allowed to start a session at the requested "
                "trust level."
            ),
        },
    )
    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        serializer = AgentSessionCreateSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        trust_level = serializer.validated_data["trust_level"]
        if not access.may_start(request.user):
            raise PermissionDenied(
                "You may not start sessions: that needs the 'Can start sessions' "
                "permission (the Runners group)."
            )
        if not access.may_start_at(request.user, trust_level):
            raise PermissionDenied(
                f"You may not start sessions at trust level '{trust_level}'."
            )
        try:
            session = services.start_session(
                prompt_ref=serializer.validated_data["prompt"],
                params=serializer.validated_data["params"],
                user=request.user,
                trust_level=trust_level,
            )
        except DjangoValidationError as exc:
            raise ValidationError(_validation_error_detail(exc)) from exc
        session = AgentSession.objects.with_audit_trail().get(pk=session.pk)
        data = AgentSessionDetailSerializer(
            session, context=self.get_serializer_context()
        ).data
        location = reverse(
            "sessions_api:session-detail", args=[session.pk], request=request
        )
        code = (
            status.HTTP_201_CREATED
            if dispatch.runs_inline()
            else status.HTTP_202_ACCEPTED
        )
        return Response(data, status=code, headers={"Location": location})

    @extend_schema(
        summary="Cancel a session",
        description="A queued session is cancelled at once (200); a running one "
        "stops at its next step (202). Who cancelled it is recorded.",
        request=None,
        responses={
            200: AgentSessionDetailSerializer,
            202: AgentSessionDetailSerializer,
            403: OpenApiResponse(
                description="Only the session's author, or a user with 'Can "
                "cancel any session', may cancel it."
            ),
            404: OpenApiResponse(description="No such session."),
            409: OpenApiResponse(description="The session has already ended."),
        },
    )
    @action(detail=True, methods=["post"], filter_backends=[], pagination_class=None)
    def cancel(self, request: Request, pk: str | None = None) -> Response:
        session = self.get_object()
        if not access.may_cancel(request.user, session):
            raise PermissionDenied(
                "Only the session's author, or a user with 'Can cancel any "
                "session', may cancel it."
            )
        outcome = services.cancel_session(session_id=session.pk, user=request.user)
        if outcome == "finished":
            current = AgentSession.objects.values_list("status", flat=True).get(
                pk=session.pk
            )
            return Response(
                {"detail": f"The session has already ended ({current})."},
                status=status.HTTP_409_CONFLICT,
            )
        fresh = AgentSession.objects.with_audit_trail().get(pk=session.pk)
        data = AgentSessionDetailSerializer(
            fresh, context=self.get_serializer_context()
        ).data
        code = (
            status.HTTP_200_OK if outcome == "cancelled" else status.HTTP_202_ACCEPTED
        )
        return Response(data, status=code)

    @extend_schema(
        summary="A session's provider calls with request and response bodies",
        responses=ProviderCallDetailSerializer(many=True),
    )
    @action(
        detail=True,
        url_path="provider-calls",
        filter_backends=[],
        pagination_class=None,
    )
    def provider_calls(self, request: Request, pk: str | None = None) -> Response:
        session = self.get_object()
        calls = ProviderCall.objects.filter(session=session).order_by("turn")
        serializer = ProviderCallDetailSerializer(
            calls, many=True, context=self.get_serializer_context()
        )
        return Response(serializer.data)


@extend_schema_view(
    list=extend_schema(summary="Citations across sessions, newest first"),
    retrieve=extend_schema(summary="A citation"),
)
class CitationViewSet(viewsets.ReadOnlyModelViewSet[Citation]):
    serializer_class = CitationListSerializer
    filterset_class = CitationFilterSet
    pagination_class = CreatedAtCursorPagination

    def get_queryset(self) -> QuerySet[Citation]:
        return Citation.objects.visible_to(self.request.user).listing()
