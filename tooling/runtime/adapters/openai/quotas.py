"""Hosted tool quotas: the most calls a run may make to each provider-run tool.

``Prompt(hosted_tool_limits={"web_search": 2})`` caps a run's web searches at
two. The provider runs hosted tools itself, so the only lever is what each
request offers:

- every call item of a limited tool is counted as the run reads it
  (``HostedCalls.record`` for provider-run calls; an ``apply_patch_call`` or
  local ``shell_call`` too, which the product runs), replayed responses
  included, so a resumed run counts, and decides, the same; a call whose tool
  the provider does not name (two ``web_search`` tools offered together)
  counts against every tool of that kind the request offered, since any of
  them may have run it;
- before each request, a tool whose count reached its limit is left out of
  ``tools`` (a ``tool_choice`` that names it is relaxed to ``"auto"``, or
  loses it from its ``allowed_tools``), and one ``HostedToolWithdrawn`` event
  records the decision with the turn of the first request without it; a
  limit of 0 withdraws the tool before the first request
  (``request_preview`` already leaves it out); a run that ends, pauses or
  fails before another request records no withdrawal it never applied;
- when every built-in tool still offered has a limit, the request's
  ``max_tool_calls`` (the API's cap on built-in tool calls per response, a
  total across them) is what is left: the sum over the tools, where tools of
  one kind whose calls name none add only the smallest of their rests (a call
  counts against each of them); so one response cannot run past the limits
  either (never more than the operator's own ``max_tool_calls``, if any).

The provider may still run more than asked (``max_tool_calls`` is its promise,
not ours to enforce): such calls are recorded like any other, since they
happened and may cost; the event's ``used`` is then above its ``limit``
(``exceeded``) and a warning is logged.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from ...events import EventSink, HostedToolWithdrawn, event_id_for
from ...hosted.base import HostedTool
from ...prompt import RenderedPrompt

logger = logging.getLogger(__name__)

_FUNCTION_TYPES = frozenset({"function", "custom"})

Serialize = Callable[[HostedTool[Any], str], dict[str, Any]]


def limited_specs(
    rendered: RenderedPrompt, serialize: Serialize
) -> dict[str, dict[str, Any]]:
    """The wire form of every limited hosted tool the run offers, by name (a
    limited tool withheld at this trust level is never offered: not here)."""
    return {
        hosted.name: serialize(hosted, rendered.prompt_name)
        for hosted in rendered.hosted_tools
        if hosted.name in rendered.hosted_tool_limits
    }


def offered_request(
    body: Mapping[str, Any],
    limits: Mapping[str, int],
    specs: Mapping[str, Mapping[str, Any]],
    used: Mapping[str, int],
) -> dict[str, Any]:
    """``body`` as the quotas allow it: without the tools whose calls are used
    up, and with ``max_tool_calls`` when every built-in tool left is limited.

    Pure (the run applies it to the same base body each turn, with the
    operator's own ``max_tool_calls`` from ``extra_request``, if any, which it
    never raises). Tools are matched to their
    specs one to one, so of two tools whose wire forms are equal only the
    withdrawn one goes."""
    request = dict(body)
    withdrawn = [
        specs[name] for name in specs if used.get(name, 0) >= limits.get(name, 0)
    ]
    left = {
        name: limits[name] - used.get(name, 0)
        for name in specs
        if used.get(name, 0) < limits[name]
    }
    tools = _without(list(request.get("tools") or ()), withdrawn)
    if withdrawn:
        choice = _relaxed_choice(request.get("tool_choice"), withdrawn, tools)
        if choice is None:
            request.pop("tool_choice", None)
        else:
            request["tool_choice"] = choice
    if tools:
        request["tools"] = tools
    else:  # nothing left to offer: a tool_choice would be refused
        request.pop("tools", None)
        request.pop("tool_choice", None)
    built_in = [t for t in tools if t.get("type") not in _FUNCTION_TYPES]
    if not built_in:
        if specs:
            request.pop("max_tool_calls", None)
        return request
    if not _without(built_in, [specs[name] for name in left]):
        total = _calls_left(left, specs)
        current = request.get("max_tool_calls")
        if isinstance(current, int) and not isinstance(current, bool):
            total = min(total, current)
        request["max_tool_calls"] = total
    return request


def _calls_left(left: Mapping[str, int], specs: Mapping[str, Mapping[str, Any]]) -> int:
    """What is left of the limited tools as one total of built-in calls. A
    call item of most kinds names no tool, so it counts against every offered
    tool of its kind (``HostedQuotas.count``): such a kind adds the smallest
    of its tools' rests, not their sum. MCP calls name their server."""
    total = 0
    smallest: dict[Any, int] = {}
    for name, rest in left.items():
        kind = specs[name].get("type")
        if kind == "mcp":
            total += rest
        else:
            smallest[kind] = min(smallest.get(kind, rest), rest)
    return total + sum(smallest.values())


def _without(tools: list[Any], specs: list[Mapping[str, Any]]) -> list[Any]:
    """``tools`` less one equal entry per spec (two tools may have the same
    wire form: a spec accounts for one of them)."""
    kept = list(tools)
    for spec in specs:
        for index, tool in enumerate(kept):
            if tool == spec:
                del kept[index]
                break
    return kept


def _matches(ref: Any, spec: Mapping[str, Any]) -> bool:
    if not isinstance(ref, Mapping) or ref.get("type") != spec.get("type"):
        return False
    return spec.get("type") != "mcp" or ref.get("server_label") == spec.get(
        "server_label"
    )


def _relaxed_choice(
    choice: Any, withdrawn: list[Mapping[str, Any]], offered: list[Any]
) -> Any:
    """``choice`` without the withdrawn tools: forcing one becomes ``"auto"``;
    an ``allowed_tools`` list loses them (``"auto"`` once it is empty). A
    reference names a type (and an MCP server), not a tool: it stays while a
    tool still offered answers to it (two web searches, one withdrawn)."""
    if not isinstance(choice, Mapping):
        return choice

    def gone(ref: Any) -> bool:
        return any(_matches(ref, spec) for spec in withdrawn) and not any(
            _matches(ref, tool) for tool in offered
        )

    if choice.get("type") == "allowed_tools":
        refs = [ref for ref in choice.get("tools") or () if not gone(ref)]
        return {**choice, "tools": refs} if refs else "auto"
    return "auto" if gone(choice) else choice


class HostedQuotas:
    """The hosted tool counts of one run and the decisions they lead to."""

    def __init__(
        self,
        *,
        rendered: RenderedPrompt,
        serialize: Serialize,
        sink: EventSink,
        session_id: str | None,
        run_id: str,
        ceiling: Any = None,
    ) -> None:
        self.rendered = rendered
        # the operator's own max_tool_calls (extra_request), if any: the first
        # request's value is the quotas' own, which a later one may exceed
        self.ceiling = ceiling
        self.limits = rendered.hosted_tool_limits
        self.specs = limited_specs(rendered, serialize) if self.limits else {}
        self.sink = sink
        self.session_id = session_id
        self.run_id = run_id
        self.used: dict[str, int] = {}
        self.withdrawn: dict[str, int] = {}  # name -> the first turn without it

    def offered_at(self, name: str, turn: int) -> bool:
        """Whether ``turn``'s request offered hosted tool ``name``."""
        withdrawn = self.withdrawn.get(name)
        return withdrawn is None or turn < withdrawn

    def attribute(
        self, candidates: Sequence[HostedTool[Any]], turn: int
    ) -> HostedTool[Any]:
        """The tool a call item is recorded under, of the ``candidates`` that
        may have run it: the first ``turn``'s request offered (the first when
        none was: the provider ran a tool it was not offered)."""
        for hosted in candidates:
            if self.offered_at(hosted.name, turn):
                return hosted
        return candidates[0]

    def count(self, name: str, turn: int, *, alike: Iterable[str] = ()) -> None:
        """One call item of ``name`` (limited or not), read in ``turn``'s
        response. ``alike``: the other tools that may have run it (the
        provider names none for most kinds); each the request offered counts
        it too, so no limited tool can run past its limit unseen."""
        names = [name]
        names += [
            other
            for other in alike
            if other not in names and self.offered_at(other, turn)
        ]
        for counted in names:
            if counted not in self.specs:
                continue
            used = self.used[counted] = self.used.get(counted, 0) + 1
            if used > self.limits[counted]:
                logger.warning(
                    "Hosted tool %s ran %d time(s) against its limit of %d "
                    "(turn %d): the call is recorded.",
                    counted,
                    used,
                    self.limits[counted],
                    turn,
                )

    def withdraw_used_up(self, turn: int) -> None:
        """Withdraw, from ``turn``'s request on, every tool whose calls are
        used up (once each). Called just before each request is sent, or
        replayed, so a withdrawal is recorded only with a request that
        applies it."""
        for name in self.specs:
            used = self.used.get(name, 0)
            if name in self.withdrawn or used < self.limits[name]:
                continue
            self.withdrawn[name] = turn
            hosted = self.rendered.hosted_tool(name)
            self.sink.emit(
                HostedToolWithdrawn(
                    prompt_name=self.rendered.prompt_name,
                    tool_name=name,
                    kind=hosted.kind if hosted is not None else "",
                    used=used,
                    limit=self.limits[name],
                    turn=turn,
                    session_id=self.session_id,
                    event_id=event_id_for(self.run_id, "withdrawn", name),
                )
            )

    def request(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """The body the quotas allow now (``body`` itself when none apply)."""
        if not self.specs:
            return dict(body)
        base = {key: value for key, value in body.items() if key != "max_tool_calls"}
        if self.ceiling is not None:
            base["max_tool_calls"] = self.ceiling
        return offered_request(base, self.limits, self.specs, self.used)
