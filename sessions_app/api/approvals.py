"""The approval inbox API: list and read approval requests, approve or deny.

Who may use it (``sessions_app.inbox``): authenticated users; each sees the
approvals they may decide and those of the sessions they may see, anything
else is a 404. Deciding needs ``access.may_decide`` (403 otherwise); an
approval already decided or expired is a 409 that names its status. Errors
have one shape (``tooling.api.errors``).
"""

from __future__ import annotations

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db.models import QuerySet
from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_view
from rest_framework import viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import NotFound, PermissionDenied, ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from sessions_app import access, approvals, inbox
from sessions_app.api.approval_serializers import (
    ApprovalDecisionSerializer,
    ApprovalRequestDetailSerializer,
    ApprovalRequestSerializer,
)
from sessions_app.api.pagination import StrictCursorPagination
from sessions_app.approval_filters import ApprovalRequestFilterSet
from sessions_app.models import ApprovalRequest
from tooling.api.errors import Conflict, ErrorSerializer, from_django


class RequestedAtCursorPagination(StrictCursorPagination):
    """Newest first on ``requested_at`` (``?status=pending`` for the open
    ones)."""

    ordering = ("-requested_at", "-id")


DECISION_RESPONSES = {
    200: ApprovalRequestDetailSerializer,
    400: OpenApiResponse(
        ErrorSerializer,
        description="A reason that is not text, holds a NUL byte or a lone "
        "surrogate, or is longer than 2000 characters; an unknown field; to "
        "deny, no reason.",
    ),
    403: OpenApiResponse(
        ErrorSerializer, description="You may see the approval but not decide it."
    ),
    409: OpenApiResponse(
        ErrorSerializer,
        description="The approval is no longer pending (decided or expired); "
        "the detail names its status.",
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
        return inbox.visible_to(self.request.user).select_related(
            "session", "decided_by"
        )

    def get_serializer_class(self) -> type[ApprovalRequestSerializer]:
        if self.action == "list":
            return ApprovalRequestSerializer
        return ApprovalRequestDetailSerializer

    def _decide(self, request: Request, *, approve: bool) -> Response:
        approval = self.get_object()
        if not access.may_decide(request.user, approval):
            raise PermissionDenied("You may see this approval but not decide it.")
        serializer = ApprovalDecisionSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        reason = serializer.validated_data["reason"]
        if not approve and not reason:
            raise ValidationError(
                {"reason": ["Say why you deny it: the model reads the reason."]}
            )
        try:
            approvals.decide(
                approval_id=approval.pk,
                user=request.user,
                approve=approve,
                reason=reason,
            )
        except ApprovalRequest.DoesNotExist:
            raise NotFound() from None
        except DjangoPermissionDenied as error:
            raise PermissionDenied(str(error) or None) from error
        except approvals.ApprovalClosed as closed:
            raise Conflict(f"{closed} (status: {closed.status})") from closed
        except DjangoValidationError as error:
            raise from_django(error) from error
        fresh = self.get_queryset().get(pk=approval.pk)
        return Response(
            ApprovalRequestDetailSerializer(
                fresh, context=self.get_serializer_context()
            ).data
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
