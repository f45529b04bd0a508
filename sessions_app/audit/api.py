"""The audit trail API: sessions (read, start a run, cancel, events, tool calls),
tool invocations and citations.

Who may use it (``sessions_app.access``): authenticated users (token or
session; no credentials is a 401); each sees only the sessions they may see,
and another user's session is a 404 on every route. Starting a run needs
``start_session`` (and ``start_trusted_session`` for the trusted level) and is
throttled per user; cancelling needs to be the session's author or hold
``cancel_any_session``. Errors have one shape (``tooling.api.errors``).
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError as DjangoValidationError
from django.db.models import QuerySet
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
    extend_schema_view,
)
from rest_framework import status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import (
    APIException,
    NotFound,
    PermissionDenied,
    ValidationError,
)
from rest_framework.generics import get_object_or_404
from rest_framework.pagination import CursorPagination
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.reverse import reverse
from rest_framework.serializers import BaseSerializer
from rest_framework.utils.urls import replace_query_param

from sessions_app import access, services
from sessions_app.audit import timeline, trail
from sessions_app.audit.event_rows import event_rows
from sessions_app.audit.filters import (
    AgentSessionFilterSet,
    CitationFilterSet,
    ToolInvocationFilterSet,
)
from sessions_app.audit.pagination import (
    CreatedAtCursorPagination,
    SequenceCursorPagination,
    TurnCursorPagination,
)
from sessions_app.audit.plans import search_index_plan
from sessions_app.audit.row_serializers import (
    CitationListSerializer,
    EventPageSerializer,
    ProviderCallDetailSerializer,
    ToolInvocationListSerializer,
    ToolInvocationSerializer,
)
from sessions_app.audit.serializers import (
    TRAIL_LIMIT,
    AgentSessionCreateSerializer,
    AgentSessionDetailSerializer,
    AgentSessionListSerializer,
)
from sessions_app.costs.budgets import DailyBudgetExceeded
from sessions_app.models import AgentSession, Citation, ProviderCall, ToolInvocation
from sessions_app.runs import dispatch
from tooling.api.errors import Conflict, ErrorSerializer, from_django
from tooling.api.input import EMPTY_BODY, no_body
from tooling.api.pagination import MAX_PAGE_SIZE, page_size
from tooling.api.throttling import StartThrottled

SESSION_ID = "The session's id."
EVENTS_PAGE = 100
EVENTS_PAGE_MAX = MAX_PAGE_SIZE


class DailyBudgetSpent(APIException):
    """A 429 whose ``wait`` becomes the ``Retry-After`` header (DRF's handler)."""

    status_code = status.HTTP_429_TOO_MANY_REQUESTS
    default_detail = "You have spent your daily budget."
    default_code = "budget_exceeded"

    def __init__(self, detail: str, *, wait: int) -> None:
        super().__init__(detail)
        self.wait = wait


# A paginated list read the way its filters chose: one that sorts its few
# matches with sequential scans off (``plans.search_index_plan``). A comment,
# not a docstring: the OpenAPI schema would take it as every list's text.
class PlannedListMixin:
    def list(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        view: Any = self
        queryset = view.filter_queryset(view.get_queryset())
        with search_index_plan(queryset):
            page = view.paginate_queryset(queryset)
        return view.get_paginated_response(view.get_serializer(page, many=True).data)


@extend_schema_view(
    list=extend_schema(summary="List agent sessions, newest first"),
    retrieve=extend_schema(summary="A session's audit trail"),
)
class AgentSessionViewSet(
    StartThrottled, PlannedListMixin, viewsets.ReadOnlyModelViewSet[AgentSession]
):
    filterset_class = AgentSessionFilterSet
    pagination_class = CreatedAtCursorPagination

    def get_queryset(self) -> QuerySet[Any]:
        # Another user's session is a 404 here, like a missing one (access.py).
        sessions = AgentSession.objects.visible_to(self.request.user)
        if self.action == "list":
            return sessions.summaries()
        if self.action == "tool_invocations":  # the rows the action lists
            return ToolInvocation.objects.filter(
                session__in=sessions, session_id=self.kwargs.get("pk")
            )
        if self.action == "provider_calls":
            return sessions.only("id")
        if self.action == "events":  # (what became of an approved call reads both)
            return sessions.only("id", "status", "attempts")
        if self.action == "cancel":
            return sessions.only("id", "status", "created_by")
        return sessions.select_related("created_by", "cancelled_by")

    def get_serializer_class(self) -> type[BaseSerializer[Any]]:
        if self.action == "list":
            return AgentSessionListSerializer
        if self.action == "create":
            return AgentSessionCreateSerializer
        if self.action == "provider_calls":
            return ProviderCallDetailSerializer
        if self.action == "tool_invocations":
            return ToolInvocationSerializer
        return AgentSessionDetailSerializer

    def is_start(self) -> bool:
        # Runs cost money: starting one is throttled per user, counted in the
        # cache every worker shares.
        return self.action == "create"

    def _detail(self, session: AgentSession) -> dict[str, Any]:
        """The session with the first rows of each list of its trail: the
        same queries for a session of 20 events and one of 10,000."""
        session.trail = trail.first_rows(  # type: ignore[attr-defined]
            session, limit=TRAIL_LIMIT
        )
        return AgentSessionDetailSerializer(
            session, context=self.get_serializer_context()
        ).data

    def _fresh(self, pk: Any) -> AgentSession:
        return AgentSession.objects.select_related("created_by", "cancelled_by").get(
            pk=pk
        )

    def retrieve(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        return Response(self._detail(self.get_object()))

    @extend_schema(
        summary="Start a run of a prompt",
        description="Without a broker the run happens inline and the answer "
        "(201) holds the finished session; with one it is queued for a worker "
        "and the answer (202) holds the queued session: follow its Location. "
        "A broker that cannot be reached does not fail the start: the answer "
        "is still 202, the session stays queued with `dispatch_error` saying "
        "why, and the sweeper sends it again (do not post again: that would "
        "start a second run). "
        "Needs the 'Can start sessions' permission; throttled per user. A user "
        "who has spent their daily budget is refused with a 429 saying so, and a "
        "Retry-After header (seconds to the next local midnight).",
        request=AgentSessionCreateSerializer,
        responses={
            201: AgentSessionDetailSerializer,
            202: AgentSessionDetailSerializer,
            429: OpenApiResponse(
                ErrorSerializer,
                description="Throttled, or the user's daily budget is spent "
                "(code budget_exceeded).",
            ),
        },
    )
    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        if not access.may_start(request.user):
            raise PermissionDenied(
                "You may not start sessions: that needs the 'Can start sessions' "
                "permission (the Runners group)."
            )
        serializer = AgentSessionCreateSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        trust_level = serializer.validated_data["trust_level"]
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
                label=serializer.validated_data.get("label"),
                revision=serializer.validated_data.get("revision"),
            )
        except DjangoValidationError as exc:
            raise from_django(exc, {"prompt_ref": "prompt"}) from exc
        except DailyBudgetExceeded as exc:
            raise DailyBudgetSpent(exc.message, wait=exc.retry_after) from exc
        data = self._detail(self._fresh(session.pk))
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
        "stops at its next step (202); one that already ended is a 409. Who "
        "cancelled it is recorded. The session's author, or a user with 'Can "
        "cancel any session', may. It takes no body, or `{}`.",
        request=EMPTY_BODY,
        responses={
            200: AgentSessionDetailSerializer,
            202: AgentSessionDetailSerializer,
            409: OpenApiResponse(
                ErrorSerializer, description="The session has already ended."
            ),
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
        no_body(request.data)
        outcome = services.cancel_session(session_id=session.pk, user=request.user)
        if outcome == "finished":
            current = AgentSession.objects.values_list("status", flat=True).get(
                pk=session.pk
            )
            raise Conflict(f"The session has already ended ({current}).")
        data = self._detail(self._fresh(session.pk))
        code = (
            status.HTTP_200_OK if outcome == "cancelled" else status.HTTP_202_ACCEPTED
        )
        return Response(data, status=code)

    @extend_schema(
        summary="A session's provider calls with request and response bodies, "
        "by turn, page by page",
        responses=ProviderCallDetailSerializer(many=True),
    )
    @action(
        detail=True,
        url_path="provider-calls",
        filter_backends=[],
        pagination_class=TurnCursorPagination,
    )
    def provider_calls(self, request: Request, pk: str | None = None) -> Response:
        session = self.get_object()
        page = self.paginate_queryset(ProviderCall.objects.filter(session=session))
        serializer = ProviderCallDetailSerializer(
            page, many=True, context=self.get_serializer_context()
        )
        return self.get_paginated_response(serializer.data)

    @extend_schema(
        summary="A session's events, in order, page by page",
        description="One timeline: each provider call, its citations, then each "
        "tool call (local or native) with its approval request and policy "
        "denial before it and its state changes after it. Follow `next` until "
        "it is null.",
        parameters=[
            OpenApiParameter(
                "cursor", OpenApiTypes.STR, description="From the previous `next`."
            ),
            OpenApiParameter(
                "page_size",
                {"type": "integer", "minimum": 1, "maximum": EVENTS_PAGE_MAX},
                description=f"Events per page (1-{EVENTS_PAGE_MAX}; "
                f"{EVENTS_PAGE} by default).",
            ),
            OpenApiParameter(
                "kind",
                {"type": "array", "items": {"enum": [*timeline.API_FILTERS]}},
                explode=True,
                description="Only these kinds (repeat the parameter for several): "
                "provider (calls and quota decisions), tool (local calls), native, "
                "denial, approval, state, citation; or an event's own `kind` "
                "(provider_call, quota_decision, tool_invocation: local and native, "
                "...). Every kind by default.",
            ),
        ],
        responses=EventPageSerializer,
    )
    @action(detail=True, filter_backends=[], pagination_class=None)
    def events(self, request: Request, pk: str | None = None) -> Response:
        session = self.get_object()
        after = None
        cursor = request.query_params.get("cursor")
        if cursor is not None:
            try:
                after = timeline.decode_cursor(cursor)
            except timeline.InvalidCursor as error:
                # as every other list answers a cursor it did not give out
                raise NotFound(CursorPagination.invalid_cursor_message) from error
        size = page_size(
            request.query_params.get("page_size"),
            default=EVENTS_PAGE,
            maximum=EVENTS_PAGE_MAX,
        )
        try:
            kinds, native = timeline.filtered_kinds(
                # an empty value (?kind=) filters nothing, as on every list
                [name for name in request.query_params.getlist("kind") if name],
                timeline.API_FILTERS,
            )
        except ValueError as error:
            raise ValidationError({"kind": [str(error)]}) from error
        events, next_position = timeline.events_page(
            session, after=after, limit=size, kinds=kinds, native=native
        )
        results = event_rows(events, self.get_serializer_context())
        next_url = None
        if next_position is not None:
            next_url = replace_query_param(
                request.build_absolute_uri(),
                "cursor",
                timeline.encode_cursor(next_position),
            )
        return Response(
            EventPageSerializer({"next": next_url, "results": results}).data
        )

    @extend_schema(
        summary="A session's tool calls, in the order they ran",
        parameters=[
            OpenApiParameter(
                "id", OpenApiTypes.UUID, OpenApiParameter.PATH, description=SESSION_ID
            )
        ],
        responses=ToolInvocationSerializer(many=True),
    )
    @action(
        detail=True,
        url_path="tool-invocations",
        filterset_class=ToolInvocationFilterSet,
        pagination_class=SequenceCursorPagination,
    )
    def tool_invocations(self, request: Request, pk: str | None = None) -> Response:
        get_object_or_404(
            AgentSession.objects.visible_to(request.user).only("id"), pk=pk
        )
        page = self.paginate_queryset(self.filter_queryset(self.get_queryset()))
        serializer = ToolInvocationSerializer(
            page, many=True, context=self.get_serializer_context()
        )
        return self.get_paginated_response(serializer.data)


@extend_schema_view(
    list=extend_schema(summary="Tool calls across sessions, newest first"),
    retrieve=extend_schema(summary="A tool call"),
)
class ToolInvocationViewSet(viewsets.ReadOnlyModelViewSet[ToolInvocation]):
    serializer_class = ToolInvocationListSerializer
    filterset_class = ToolInvocationFilterSet
    pagination_class = CreatedAtCursorPagination

    def get_queryset(self) -> QuerySet[ToolInvocation]:
        return ToolInvocation.objects.visible_to(self.request.user).order_by(
            "-created_at", "-id"
        )


@extend_schema_view(
    list=extend_schema(summary="Citations across sessions, newest first"),
    retrieve=extend_schema(summary="A citation"),
)
class CitationViewSet(PlannedListMixin, viewsets.ReadOnlyModelViewSet[Citation]):
    serializer_class = CitationListSerializer
    filterset_class = CitationFilterSet
    pagination_class = CreatedAtCursorPagination

    def get_queryset(self) -> QuerySet[Citation]:
        return Citation.objects.visible_to(self.request.user).listing()
