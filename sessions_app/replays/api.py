"""Replays and comparisons over the API.

- ``POST /api/sessions/<id>/replay/``: replay the session (``revision``:
  ``same``, ``draft`` or a hash; or ``label``; ``live_tools``); 201 (inline)
  or 202 (queued) with the new session, as ``POST /api/sessions/``. Needs to
  see the session and to start sessions at its trust level; throttled with
  run starts.
- ``GET /api/sessions/<id>/compare/<other>/``: the two side by side; needs to
  see both (another user's is a 404).
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError as DjangoValidationError
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import PermissionDenied
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.reverse import reverse
from rest_framework.views import APIView

from sessions_app.audit import trail
from sessions_app.audit.api import DailyBudgetSpent
from sessions_app.audit.serializers import (
    LABEL_INVALID,
    TRAIL_LIMIT,
    AgentSessionDetailSerializer,
)
from sessions_app.costs.budgets import DailyBudgetExceeded
from sessions_app.models import AgentSession
from sessions_app.runs import dispatch
from tooling.api.errors import ErrorSerializer, from_django
from tooling.api.input import JsonBooleanField, StrictSerializer
from tooling.api.throttling import StartThrottled

from .comparison import compare_sessions
from .pages import may_replay
from .starting import SAME, start_replay


class ReplayRequestSerializer(StrictSerializer):
    revision = serializers.RegexField(
        r"^([0-9a-f]{64}|draft|same)$",
        error_messages={
            "invalid": "Enter 'same', 'draft' or a revision's hash: 64 characters, "
            "digits and a-f."
        },
        default=SAME,
        help_text="same (the source's revision), draft (the catalog as it is "
        "now) or one of the prompt's revisions.",
    )
    # the metaclass takes declared fields off the class: ``Field.label`` stays
    label = serializers.RegexField(  # type: ignore[assignment]
        r"^[a-z][a-z0-9_-]{0,31}$",
        error_messages={"invalid": LABEL_INVALID},
        required=False,
        help_text="Replay against the revision this label points at instead.",
    )
    live_tools = JsonBooleanField(
        default=False,
        help_text="Run read-only tools live (they change nothing outside the run); "
        "otherwise every call is answered from the source's record.",
    )

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if "label" in attrs and "revision" in self.initial_data:
            raise serializers.ValidationError(
                {"label": ["Name a label or a revision to replay against, not both."]}
            )
        return attrs


class FactSerializer(serializers.Serializer[Any]):
    name = serializers.CharField()
    left = serializers.JSONField()
    right = serializers.JSONField()
    differs = serializers.BooleanField()


class CallPairSerializer(serializers.Serializer[Any]):
    name = serializers.CharField()
    arguments = serializers.CharField()
    status = serializers.ChoiceField(choices=["same", "changed", "added", "removed"])
    left = serializers.JSONField(allow_null=True)
    right = serializers.JSONField(allow_null=True)


class TurnPairSerializer(serializers.Serializer[Any]):
    turn = serializers.IntegerField()
    left = serializers.JSONField(allow_null=True, help_text="The provider call.")
    right = serializers.JSONField(allow_null=True)
    left_calls = serializers.JSONField()
    right_calls = serializers.JSONField()


class ComparisonSerializer(serializers.Serializer[Any]):
    left = serializers.UUIDField()
    right = serializers.UUIDField()
    facts = FactSerializer(many=True)
    calls = CallPairSerializer(many=True, help_text="Every call, matched.")
    turns = TurnPairSerializer(many=True)
    output = serializers.ListField(
        child=serializers.CharField(), help_text="The outputs as a line diff."
    )
    output_not_compared = serializers.ChoiceField(
        choices=["", "too_long"],
        help_text="too_long: the outputs (over 2,000 lines or 200,000 characters "
        "on a side) were not compared line by line; empty when they were.",
    )
    left_denials = serializers.JSONField()
    right_denials = serializers.JSONField()
    left_approvals = serializers.JSONField()
    right_approvals = serializers.JSONField()
    truncated = serializers.JSONField(
        help_text="The lists read only up to their bound, per side."
    )


class ReplayView(StartThrottled, APIView):
    @extend_schema(
        summary="Replay a session against a revision",
        description="Same prompt, parameters and trust level; local calls that "
        "match the source's (tool and arguments) are answered from its record. "
        "201 with the finished replay (inline) or 202 queued, as a start.",
        request=ReplayRequestSerializer,
        responses={
            201: AgentSessionDetailSerializer,
            202: AgentSessionDetailSerializer,
            403: ErrorSerializer,
            404: ErrorSerializer,
            429: OpenApiResponse(ErrorSerializer, description="Throttled or spent."),
        },
    )
    def post(self, request: Request, pk: Any) -> Response:
        source = get_object_or_404(AgentSession.objects.visible_to(request.user), pk=pk)
        if not may_replay(request.user, source):
            raise PermissionDenied(
                "Replaying needs the permission to start sessions at its trust level."
            )
        body = ReplayRequestSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        try:
            replay = start_replay(
                source,
                user=request.user,
                revision=data["revision"],
                label=data.get("label"),
                live_tools=data["live_tools"],
            )
        except DjangoValidationError as error:
            raise from_django(error) from error
        except DailyBudgetExceeded as error:
            raise DailyBudgetSpent(error.message, wait=error.retry_after) from error
        fresh = AgentSession.objects.select_related("created_by", "cancelled_by").get(
            pk=replay.pk
        )
        fresh.trail = trail.first_rows(fresh, limit=TRAIL_LIMIT)  # type: ignore[attr-defined]
        location = reverse(
            "sessions_api:session-detail", args=[fresh.pk], request=request
        )
        code = (
            status.HTTP_201_CREATED
            if dispatch.runs_inline()
            else status.HTTP_202_ACCEPTED
        )
        body_out = AgentSessionDetailSerializer(
            fresh, context={"request": request}
        ).data
        return Response(body_out, status=code, headers={"Location": location})


class CompareView(APIView):
    @extend_schema(
        summary="Two sessions side by side",
        responses={200: ComparisonSerializer, 404: ErrorSerializer},
    )
    def get(self, request: Request, pk: Any, other: Any) -> Response:
        visible = AgentSession.objects.visible_to(request.user)
        left = get_object_or_404(visible, pk=pk)
        right = get_object_or_404(visible, pk=other)
        comparison = compare_sessions(left, right)
        body = {
            "left": left.pk,
            "right": right.pk,
            "facts": [
                {"name": f.name, "left": f.left, "right": f.right, "differs": f.differs}
                for f in comparison.facts
            ],
            "calls": [
                {
                    "name": p.name,
                    "arguments": p.arguments,
                    "status": p.status,
                    "left": p.left,
                    "right": p.right,
                }
                for p in comparison.calls
            ],
            "turns": [
                {
                    "turn": t.turn,
                    "left": t.left,
                    "right": t.right,
                    "left_calls": t.left_calls,
                    "right_calls": t.right_calls,
                }
                for t in comparison.turns
            ],
            "output": comparison.output,
            "output_not_compared": comparison.output_not_compared,
            "left_denials": comparison.left.denials,
            "right_denials": comparison.right.denials,
            "left_approvals": comparison.left.approvals,
            "right_approvals": comparison.right.approvals,
            "truncated": {
                "left": comparison.left.truncated,
                "right": comparison.right.truncated,
            },
        }
        return Response(ComparisonSerializer(body).data)
