"""Two sessions side by side: a replay and its source, or any two runs.

- **facts**: status, label, revision, turns, calls, denials, approvals, cost,
  tokens, duration and the provider's latency, each for both;
- **turns**: each turn's provider call and the tool calls it led to, aligned
  by turn number;
- **calls**: every tool call matched by tool and arguments (in order, so the
  second identical call matches the second): the same, changed (same call,
  another answer), added (only the right) or removed (only the left);
- **policy decisions**: each side's denials and approval requests;
- **output**: the final outputs as a line diff.

Every list is read with a bound (a session of 10,000 events compares as fast
as one of 20, and says where it stopped).
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections import defaultdict
from collections.abc import Iterable
from decimal import Decimal
from typing import Any

from sessions_app.audit.timings import finite_ms
from sessions_app.models import (
    AgentSession,
    ApprovalRequest,
    PolicyDenial,
    ProviderCall,
    ToolInvocation,
)
from sessions_app.runs.answers import arguments_key
from tooling.history.snapshot import DiffBudget, FieldChange, line_diff

MOST_TURNS = 200
MOST_CALLS = 1000
MOST_DECISIONS = 500


@dataclasses.dataclass(frozen=True)
class Side:
    session: AgentSession
    provider_calls: list[dict[str, Any]]
    tool_calls: list[dict[str, Any]]
    denials: list[dict[str, Any]]
    approvals: list[dict[str, Any]]
    truncated: list[str]

    @property
    def seconds(self) -> float | None:
        started, finished = self.session.started_at, self.session.finished_at
        if started is None or finished is None:
            return None
        return round((finished - started).total_seconds(), 3)

    @property
    def latency_ms(self) -> float:
        # (a stored latency that is not a finite number counts as 0, as on
        # the session's page)
        return round(
            sum(finite_ms(call["latency_ms"]) for call in self.provider_calls), 1
        )

    @property
    def tokens(self) -> int:
        return sum(
            (call["input_tokens"] or 0) + (call["output_tokens"] or 0)
            for call in self.provider_calls
        )


@dataclasses.dataclass(frozen=True)
class Fact:
    name: str
    left: Any
    right: Any

    @property
    def differs(self) -> bool:
        return bool(self.left != self.right)


@dataclasses.dataclass(frozen=True)
class TurnPair:
    turn: int
    left: dict[str, Any] | None
    right: dict[str, Any] | None
    left_calls: list[dict[str, Any]]
    right_calls: list[dict[str, Any]]


@dataclasses.dataclass(frozen=True)
class CallPair:
    name: str
    arguments: str
    status: str  # same, changed, added or removed
    left: dict[str, Any] | None
    right: dict[str, Any] | None


@dataclasses.dataclass(frozen=True)
class Comparison:
    left: Side
    right: Side
    facts: list[Fact]
    turns: list[TurnPair]
    calls: list[CallPair]
    output: list[str]
    # why the outputs were not compared line by line (``DiffBudget``): "" when
    # they were; the page then gives their sizes
    output_not_compared: str = ""

    @property
    def output_sizes(self) -> str:
        return FieldChange(
            "output", self.left.session.output_text, self.right.session.output_text
        ).sizes

    @property
    def changed_calls(self) -> list[CallPair]:
        return [pair for pair in self.calls if pair.status != "same"]


def _side(session: AgentSession) -> Side:
    calls = list(
        ProviderCall.objects.filter(session=session)
        .order_by("turn")
        .values(
            "turn",
            "status",
            "latency_ms",
            "input_tokens",
            "output_tokens",
            "error",
            "created_at",
        )[: MOST_TURNS + 1]
    )
    for call in calls:  # JSON carries no NaN: null, as in the session's API
        if not math.isfinite(call["latency_ms"]):
            call["latency_ms"] = None
    tools = list(
        ToolInvocation.objects.filter(session=session)
        .order_by("sequence", "id")
        .values(
            "turn",
            "sequence",
            "name",
            "native",
            "kind",
            "params",
            "raw_arguments",
            "success",
            "message",
            "model_output",
            "value",
        )[: MOST_CALLS + 1]
    )
    denials = list(
        PolicyDenial.objects.filter(session=session)
        .order_by("turn", "id")
        .values("turn", "policy_name", "tool_name", "reason")[: MOST_DECISIONS + 1]
    )
    approvals: list[dict[str, Any]] = [
        dict(row)
        for row in ApprovalRequest.objects.filter(session=session)
        .order_by("requested_at", "pk")
        .values("turn", "policy_name", "tool_name", "status", "decided_by__username")[
            : MOST_DECISIONS + 1
        ]
    ]
    truncated = [
        name
        for name, rows, most in (
            ("provider calls", calls, MOST_TURNS),
            ("tool calls", tools, MOST_CALLS),
            ("policy denials", denials, MOST_DECISIONS),
            ("approval requests", approvals, MOST_DECISIONS),
        )
        if len(rows) > most
    ]
    return Side(
        session=session,
        provider_calls=calls[:MOST_TURNS],
        tool_calls=tools[:MOST_CALLS],
        denials=denials[:MOST_DECISIONS],
        approvals=approvals[:MOST_DECISIONS],
        truncated=truncated,
    )


def _key(call: dict[str, Any]) -> tuple[str, str]:
    arguments = call["raw_arguments"] or ""
    if call["native"] or not arguments:
        arguments = _json(call["params"])
    found = arguments_key(call["name"], arguments)
    return found if found is not None else (call["name"], arguments)


def _json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def _answer(call: dict[str, Any]) -> tuple[Any, ...]:
    if call["native"]:
        return (call["success"], _json(call["value"]))
    return (call["success"], call["model_output"])


def match_calls(
    left: Iterable[dict[str, Any]], right: Iterable[dict[str, Any]]
) -> list[CallPair]:
    """Each call paired with the other side's same call (module docstring)."""
    waiting: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for call in right:
        waiting[_key(call)].append(call)
    pairs: list[CallPair] = []
    for call in left:
        key = _key(call)
        other = waiting[key].pop(0) if waiting[key] else None
        if other is None:
            pairs.append(CallPair(key[0], key[1], "removed", call, None))
        else:
            same = _answer(call) == _answer(other)
            pairs.append(
                CallPair(key[0], key[1], "same" if same else "changed", call, other)
            )
    for key, calls in waiting.items():
        pairs.extend(CallPair(key[0], key[1], "added", None, call) for call in calls)
    return pairs


def _turns(left: Side, right: Side) -> list[TurnPair]:
    def by_turn(rows: list[dict[str, Any]]) -> dict[int, list[dict[str, Any]]]:
        found: dict[int, list[dict[str, Any]]] = defaultdict(list)
        for row in rows:
            found[row["turn"]].append(row)
        return found

    left_calls, right_calls = by_turn(left.tool_calls), by_turn(right.tool_calls)
    left_turns = {call["turn"]: call for call in left.provider_calls}
    right_turns = {call["turn"]: call for call in right.provider_calls}
    numbers = sorted({*left_turns, *right_turns, *left_calls, *right_calls})
    return [
        TurnPair(
            turn,
            left_turns.get(turn),
            right_turns.get(turn),
            left_calls.get(turn, []),
            right_calls.get(turn, []),
        )
        for turn in numbers
    ]


def _money(value: Decimal | None) -> str:
    return "—" if value is None else f"${value:.4f}"


def _facts(left: Side, right: Side) -> list[Fact]:
    a, b = left.session, right.session
    return [
        Fact("Status", a.get_status_display(), b.get_status_display()),
        Fact("Started from", a.label or "—", b.label or "—"),
        Fact("Revision", a.revision_id or "—", b.revision_id or "—"),
        Fact("Turns", a.turns, b.turns),
        Fact("Tool calls", len(left.tool_calls), len(right.tool_calls)),
        Fact("Policy denials", len(left.denials), len(right.denials)),
        Fact("Approval requests", len(left.approvals), len(right.approvals)),
        Fact("Cost", _money(a.cost), _money(b.cost)),
        Fact("Tokens", left.tokens, right.tokens),
        Fact("Duration (s)", left.seconds, right.seconds),
        Fact("Provider latency (ms)", left.latency_ms, right.latency_ms),
    ]


def compare_sessions(left: AgentSession, right: AgentSession) -> Comparison:
    a, b = _side(left), _side(right)
    # a model's output may be long: compared line by line within a budget
    output, refused = line_diff(
        left.output_text or "", right.output_text or "", budget=DiffBudget(), context=3
    )
    return Comparison(
        left=a,
        right=b,
        facts=_facts(a, b),
        turns=_turns(a, b),
        calls=match_calls(a.tool_calls, b.tool_calls),
        output=output,
        output_not_compared=refused,
    )
