"""What a session's row sums from its calls (usage, turns, cost) and the
columns the update that ends a run writes, made storable."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from decimal import Decimal
from typing import Any

from django.db.models import Count, DecimalField, Q, Sum, Value
from django.db.models.functions import Coalesce
from django.utils import timezone

from sessions_app.models import ProviderCall, ToolInvocation
from sessions_app.models.audit import UNPRICED_CALL
from sessions_app.runs.recording import MAX_COST
from sessions_app.runs.storable import Scrubber


def _cost_sum() -> Coalesce:
    return Coalesce(Sum("cost"), Value(Decimal(0)), output_field=DecimalField())


def totals(session_id: Any) -> dict[str, Any]:
    """Usage, turns and cost summed from the session's provider calls and
    native calls (two queries)."""
    sums = ProviderCall.objects.filter(session_id=session_id).aggregate(
        input_tokens=Coalesce(Sum("input_tokens"), 0),
        output_tokens=Coalesce(Sum("output_tokens"), 0),
        cached_tokens=Coalesce(Sum("cached_tokens"), 0),
        reasoning_tokens=Coalesce(Sum("reasoning_tokens"), 0),
        turns=Count("id", filter=Q(response__isnull=False)),
        calls_cost=_cost_sum(),
        calls_unpriced=Count("id", filter=UNPRICED_CALL),
    )
    # (aliases other than "cost": an alias named like the field it filters on
    # makes Django read the filter as the aggregate)
    fees = ToolInvocation.objects.filter(session_id=session_id, native=True).aggregate(
        fees_cost=_cost_sum(), fees_unpriced=Count("id", filter=Q(cost__isnull=True))
    )
    turns = sums.pop("turns")
    cost = sums.pop("calls_cost") + fees["fees_cost"]
    unpriced = sums.pop("calls_unpriced") + fees["fees_unpriced"]
    return as_totals(sums, turns, cost=cost, unpriced=unpriced)


def as_totals(
    sums: Mapping[str, int],
    turns: int,
    *,
    cost: Decimal = Decimal(0),
    unpriced: int = 0,
) -> dict[str, Any]:
    """The session's ``usage``, ``turns``, ``cost`` and ``unpriced_calls`` from
    its summed token counts and amounts."""
    usage = {key: int(value) for key, value in sums.items()}
    usage["total_tokens"] = usage["input_tokens"] + usage["output_tokens"]
    cost = min(cost, MAX_COST)  # absurd usage: capped, as each row's is
    return {"usage": usage, "turns": turns, "cost": cost, "unpriced_calls": unpriced}


def ending_fields(
    *,
    status: str,
    phase: str = "",
    message: str = "",
    payload: Mapping[str, Any] | None = None,
    output_text: str | None = None,
    output: Any = None,
    session_id: Any,
    now: datetime | None = None,
    summed: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The columns a session's final update writes, made storable. ``summed``
    is the run's ``totals``, when its caller kept them."""
    scrub = Scrubber()
    fields: dict[str, Any] = {
        "status": status,
        "error_phase": scrub.text(phase, 20),
        "error_message": scrub.text(message),
        "error_payload": scrub.json(dict(payload or {})),
        "finished_at": now or timezone.now(),
        "lease_expires_at": None,
        **(summed if summed is not None else totals(session_id)),
    }
    if output_text is not None:
        fields["output_text"] = scrub.text(output_text)
    if output is not None:
        fields["output"] = scrub.json(output)
    fields["text_altered"] = scrub.altered
    return fields
