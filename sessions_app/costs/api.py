"""``GET /api/costs/?group=&from=&to=``: the cost page's figures as JSON.

Who may use it: authenticated users (no credentials is a 401), each seeing
the spend of the sessions they may see (``sessions_app.access``): their own,
or every session with ``view_all_sessions``. Bad input is a 400 naming the
parameter (``tooling.api.errors``' shape).
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from sessions_app.audit.fields import usd_field
from sessions_app.costs import ranges, reports
from sessions_app.costs.spend import GROUPS, TOP_GROUPS, Spend, SpendRow
from tooling.api.errors import ErrorSerializer

ROW_KINDS = ("group", "other", "tokens")


def _money(help_text: str) -> serializers.DecimalField:
    # Sums of many sessions' costs: more digits than one cost's column.
    return usd_field(help_text, null=False, digits=30)


class SpendRowSerializer(serializers.Serializer[SpendRow]):
    key = serializers.CharField(
        read_only=True,
        help_text="The group: a prompt reference, tool name, model, username, "
        'date or month (YYYY-MM); "" for sessions without a user or model; '
        '"(other)" for the folded groups; "(model tokens)" for the provider '
        "calls (by tool).",
    )
    # Named like Field.label: the serializer metaclass takes a declared field
    # off the class, so nothing is shadowed at run time.
    label = serializers.CharField(  # type: ignore[assignment]
        read_only=True, help_text="The group as the page shows it."
    )
    cost = _money("USD, as a decimal string.")
    count = serializers.IntegerField(
        read_only=True, help_text="Sessions, or (by tool) calls."
    )
    unpriced_calls = serializers.IntegerField(
        source="unpriced",
        read_only=True,
        help_text="Calls with no price in effect (not in `cost`).",
    )
    kind = serializers.ChoiceField(
        choices=ROW_KINDS,
        read_only=True,
        help_text=f'"group"; "other": the groups past the largest '
        f'{TOP_GROUPS}; "tokens": the provider calls\' cost (by tool).',
    )


class CostReportSerializer(serializers.Serializer[Spend]):
    group = serializers.ChoiceField(choices=GROUPS, read_only=True)
    total = _money("USD spent in the range, as a decimal string.")
    count = serializers.IntegerField(
        read_only=True, help_text="Sessions, or (by tool) calls, in the range."
    )
    count_label = serializers.ChoiceField(choices=("sessions", "calls"), read_only=True)
    unpriced_calls = serializers.IntegerField(source="unpriced", read_only=True)
    groups = serializers.IntegerField(
        read_only=True, help_text="How many groups there were before folding."
    )
    rows = SpendRowSerializer(many=True, read_only=True)

    def get_fields(self) -> dict[str, serializers.Field[Any, Any, Any, Any]]:
        fields = super().get_fields()
        # "from" is a Python keyword: these two cannot be class attributes.
        fields["from"] = serializers.DateField(
            source="range.start", read_only=True, help_text="First day, included."
        )
        fields["to"] = serializers.DateField(
            source="range.end", read_only=True, help_text="Last day, included."
        )
        return fields


class CostReportView(APIView):
    @extend_schema(
        summary="Spend by prompt, tool, model, user, day or month",
        description="The sessions created in the range that you may see (yours; "
        "every session with 'Can view all sessions'). The largest "
        f"{TOP_GROUPS} groups, the rest as one 'other' row; by day, every "
        "day of the range; by month, every month (key YYYY-MM; the first and "
        "last cut by the range). By tool: native calls' fees plus one 'model tokens' "
        "row for the provider calls. Amounts are USD decimal strings.",
        parameters=[
            OpenApiParameter(
                "group",
                OpenApiTypes.STR,
                enum=list(GROUPS),
                description='How to group (default "prompt").',
            ),
            OpenApiParameter(
                "from",
                OpenApiTypes.DATE,
                description=f"First day (YYYY-MM-DD, the server's time zone); "
                f"default: {ranges.DEFAULT_DAYS - 1} days before `to`.",
            ),
            OpenApiParameter(
                "to",
                OpenApiTypes.DATE,
                description=f"Last day, included; default today, or, when only "
                f"`from` is given, today at most {ranges.MAX_DAYS - 1} days "
                f"after it. At most {ranges.MAX_DAYS} days in all.",
            ),
        ],
        responses={
            200: CostReportSerializer,
            400: OpenApiResponse(ErrorSerializer, description="A bad parameter."),
        },
    )
    def get(self, request: Request) -> Response:
        group = request.query_params.get("group") or "prompt"
        if group not in GROUPS:
            raise ValidationError({"group": [f"Choose one of: {', '.join(GROUPS)}."]})
        try:
            period = ranges.date_range(
                start=request.query_params.get("from") or None,
                end=request.query_params.get("to") or None,
            )
        except ranges.InvalidRange as invalid:
            raise ValidationError({invalid.field: [str(invalid)]}) from invalid
        spend = reports.spend_by(
            group, user=request.user, start=period.start, end=period.end
        )
        return Response(CostReportSerializer(spend).data)
