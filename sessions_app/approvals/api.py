"""The approval inbox API: list and read approval requests, approve or deny.

Who may use it (``sessions_app.approvals.inbox``): authenticated users; each sees the
approvals they may decide and those of the sessions they may see, anything
else is a 404. Deciding needs ``access.may_decide`` (403 otherwise; under
four eyes the run's author is told why); an approval already decided, expired
or cancelled, or whose run no longer waits, or whose approved call did not
run (or may have), is a 409 that names its status and its run's
(``session_status``). Errors have one shape (``tooling.api.errors``), the 409
with those two fields added.
"""

from __future__ import annotations

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db.models import QuerySet
from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_view
from rest_framework import serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import NotFound, PermissionDenied, ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from sessions_app import access
from sessions_app.approvals import decisions, inbox
from sessions_app.approvals.filters import ApprovalRequestFilterSet
from sessions_app.approvals.serializers import (
    ApprovalDecisionSerializer,
    ApprovalRequestDetailSerializer,
    ApprovalRequestSerializer,
)
from sessions_app.models import ApprovalRequest
from tooling.api.errors import ErrorSerializer, error_body, from_django
from tooling.api.pagination import KeysetCursorPagination


class ApprovalConflictSerializer(ErrorSerializer):
    """A 409 of ``approve/`` and ``deny/``: the error shape, and the states."""

    status = serializers.CharField(help_text="The approval's status.")
    session_status = serializers.CharField(help_text="Its session's status.")


class RequestedAtCursorPagination(KeysetCursorPagination):
    """Newest first on ``requested_at`` (``?status=pending`` for the open
    ones), ties by key."""

    time_field = "requested_at"
    ordering = ("-requested_at", "-pk")  # (for a reader: time_field decides)


DECISION_RESPONSES = {
    200: ApprovalRequestDetailSerializer,
    400: OpenApiResponse(
        ErrorSerializer,
        description="A reason that is not text, holds a NUL byte or a lone "
        "surrogate, or is longer than 2000 characters; an unknown field; to "
        "deny, no reason.",
    ),
    403: OpenApiResponse(
        ErrorSerializer,
        description="You may see the approval but not decide it (under four "
        "eyes: you started its run).",
    ),
    409: OpenApiResponse(
        ApprovalConflictSerializer,
        description="The approval is no longer pending (decided, expired or "
        "cancelled), its run no longer waits for it, or it was approved but "
        "the call did not run (the run was cancelled first, or another policy "
        "refused it) or may have (the run ended before recording it); "
        "`status` is the approval's, `session_status` its run's.",
    ),
}


@extend_schema_view(
    list=extend_schema(
        summary="Approval requests you may decide or see, newest first",
        description="Filter with `status=pending` for the inbox.",
    ),
    retrieve=extend_schema(summary="An approval request"),
)
class ApprovalRequestViewSet(viewsets.ReadOnlyModelViewSet[ApprovalRequest]):
    filterset_class = ApprovalRequestFilterSet
    pagination_class = RequestedAtCursorPagination

    def get_queryset(self) -> QuerySet[ApprovalRequest]:
        return (
            inbox.visible_to(self.request.user)
            .with_call_record()
            .select_related("session", "decided_by")
        )

    def get_serializer_class(self) -> type[ApprovalRequestSerializer]:
        if self.action == "list":
            return ApprovalRequestSerializer
        return ApprovalRequestDetailSerializer

    def _decide(self, request: Request, *, approve: bool) -> Response:
        approval = self.get_object()
        if access.is_own_run(request.user, approval):
            raise PermissionDenied(access.OWN_RUN)
        if not access.may_decide(request.user, approval):
            raise PermissionDenied("You may see this approval but not decide it.")
        serializer = ApprovalDecisionSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        reason = serializer.validated_data["reason"]
        if not approve and not reason:
            raise ValidationError({"reason": [decisions.DENY_WITHOUT_REASON]})
        try:
            decisions.decide(
                approval_id=approval.pk,
                user=request.user,
                approve=approve,
                reason=reason,
            )
        except ApprovalRequest.DoesNotExist:
            raise NotFound() from None
        except DjangoPermissionDenied as error:
            raise PermissionDenied(str(error) or None) from error
        except decisions.ApprovalClosed as closed:
            return self._conflict(closed)
        except DjangoValidationError as error:
            raise from_django(error) from error
        fresh = self.get_queryset().get(pk=approval.pk)
        return Response(
            ApprovalRequestDetailSerializer(
                fresh, context=self.get_serializer_context()
            ).data
        )

    def _conflict(self, closed: decisions.ApprovalClosed) -> Response:
        detail = str(closed)
        if not isinstance(closed, decisions.RunNotResumed):
            detail = f"{detail} (status: {closed.status})"
        return Response(
            {
                **error_body(detail, "conflict"),
                "status": closed.status,
                "session_status": closed.session_status,
            },
            status=status.HTTP_409_CONFLICT,
        )

    @extend_schema(
        summary="Approve: the call runs and the session resumes",
        request=ApprovalDecisionSerializer,
        responses=DECISION_RESPONSES,
    )
    @action(detail=True, methods=["post"], filter_backends=[], pagination_class=None)
    def approve(self, request: Request, pk: str | None = None) -> Response:
        return self._decide(request, approve=True)

    @extend_schema(
        summary="Deny: the model reads the denial and the reason; the session resumes",
        request=ApprovalDecisionSerializer,
        responses=DECISION_RESPONSES,
    )
    @action(detail=True, methods=["post"], filter_backends=[], pagination_class=None)
    def deny(self, request: Request, pk: str | None = None) -> Response:
        return self._decide(request, approve=False)


__all__ = ["ApprovalRequestViewSet"]
