"""Graders: each judges one finished session (docs/experiments.md).

``grade`` returns ``Grade(passed, detail)``, for a config ``grader_config``
checks (a misconfigured grader fails its grade). A model-graded grader runs
its grader prompt on the session's output (``{"output", "expected",
"params"}`` as parameters) as a session of its own, recorded like any other;
it passes when that session's structured output says ``{"passed": true}`` or
its text starts with ``PASS``. A start refused for the grading user's spent
daily budget, or because the grader's prompt does not take those parameters
(changed since the grader was entered), leaves the grade undecided (pending),
for a later *Grade now* to start.
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import jsonschema
import regex
from django.core.exceptions import ValidationError
from referencing.exceptions import Unresolvable

from sessions_app.costs.budgets import DailyBudgetExceeded
from sessions_app.models import (
    AgentSession,
    ApprovalRequest,
    Citation,
    DatasetCase,
    Grader,
    PolicyDenial,
    ToolInvocation,
)
from sessions_app.runs.starting import start_session

from . import grader_config

Kind = Grader.Kind
# The most output text a pattern or a text is searched in, and how long one
# grade's patterns may search (a catastrophic pattern fails the grade, not the
# page): an output_regex's pattern, or every pattern of an output_schema's
# schema together.
MOST_TEXT = 200_000
PATTERN_SECONDS = 0.5


def _found(pattern: str, text: str, deadline: float) -> bool:
    """Whether ``pattern`` is found in ``text``, searched until ``deadline``
    (``time.monotonic()``) at most: the one way a grader runs a pattern
    (``TimeoutError`` past it)."""
    left = deadline - time.monotonic()
    if left <= 0:
        raise TimeoutError
    return regex.search(pattern, text, timeout=left) is not None


def _bounded_validator(deadline: float) -> Any:
    """A JSON schema validator (draft 2020-12) whose ``pattern``,
    ``patternProperties`` and ``additionalProperties`` search through
    ``_found`` until ``deadline``: jsonschema's own run Python's ``re``, which
    nothing stops. (``unevaluatedProperties`` beside ``patternProperties``
    would too: ``check_config`` refuses the pair; ``format`` is not
    asserted.)"""

    def pattern(
        validator: Any, patrn: str, instance: Any, schema: Any
    ) -> Iterator[Any]:
        if validator.is_type(instance, "string") and not _found(
            patrn, instance, deadline
        ):
            yield jsonschema.ValidationError(f"{instance!r} does not match {patrn!r}")

    def pattern_properties(
        validator: Any, patterns: dict[str, Any], instance: Any, schema: Any
    ) -> Iterator[Any]:
        if not validator.is_type(instance, "object"):
            return
        for patrn, subschema in patterns.items():
            for key, value in instance.items():
                if _found(patrn, key, deadline):
                    yield from validator.descend(
                        value, subschema, path=key, schema_path=patrn
                    )

    def additional_properties(
        validator: Any, allowed: Any, instance: Any, schema: Any
    ) -> Iterator[Any]:
        if not validator.is_type(instance, "object"):
            return
        named = schema.get("properties", {})
        patterns = list(schema.get("patternProperties", {}))
        extras = sorted(
            key
            for key in instance
            if key not in named
            and not any(_found(patrn, key, deadline) for patrn in patterns)
        )
        if validator.is_type(allowed, "object"):
            for extra in extras:
                yield from validator.descend(instance[extra], allowed, path=extra)
        elif not allowed and extras:
            shown = ", ".join(repr(extra) for extra in extras)
            yield jsonschema.ValidationError(
                f"Additional properties are not allowed ({shown} unexpected)"
            )

    return jsonschema.validators.extend(
        jsonschema.Draft202012Validator,
        {
            "pattern": pattern,
            "patternProperties": pattern_properties,
            "additionalProperties": additional_properties,
        },
    )


@dataclasses.dataclass(frozen=True)
class Grade:
    passed: bool | None  # None: not decided yet (a paused run, a grader running)
    detail: str
    session: str | None = None  # a model grader's own session

    def as_dict(self) -> dict[str, Any]:
        found: dict[str, Any] = {"passed": self.passed, "detail": self.detail}
        if self.session is not None:
            found["session"] = self.session
        return found

    @property
    def pending(self) -> bool:
        return self.passed is None


def _calls(session: AgentSession, name: str) -> list[int]:
    return list(
        ToolInvocation.objects.filter(session=session, name=name)
        .order_by("sequence")
        .values_list("sequence", flat=True)[:1]
    )


def grade(
    grader: Grader,
    session: AgentSession,
    case: DatasetCase,
    user: Any,
    previous: dict[str, Any] | None = None,
    *,
    start: bool = True,
) -> Grade:
    """``grader``'s verdict on the finished ``session`` of ``case``
    (``previous``: its last, undecided one: a model grader's session is
    looked at again, not started twice; ``start=False``: a model grader that
    has no session yet stays pending instead of starting one)."""
    if session.status == AgentSession.Status.AWAITING_APPROVAL:
        return Grade(None, "The run waits for an approval.")
    config = grader.config if isinstance(grader.config, dict) else {}
    try:
        grader_config.check_config(grader.kind, config)
    except ValidationError as error:
        return Grade(False, "The grader is misconfigured: " + " ".join(error.messages))
    if grader.kind == Kind.MODEL_GRADED:
        previous = previous or {}
        if not start and not isinstance(previous.get("session"), str):
            return Grade(None, "Waits for its author to grade it (Grade now).")
        return _model_graded(config, session, case, user, previous)
    return CHECKS[Kind(grader.kind)](config, session)


def _tool_called(config: dict[str, Any], session: AgentSession) -> Grade:
    called = bool(_calls(session, config["tool"]))
    return Grade(called, f"{config['tool']} {'was' if called else 'was not'} called.")


def _tool_not_called(config: dict[str, Any], session: AgentSession) -> Grade:
    called = bool(_calls(session, config["tool"]))
    return Grade(
        not called, f"{config['tool']} {'was' if called else 'was not'} called."
    )


def _called_before(config: dict[str, Any], session: AgentSession) -> Grade:
    first, then = _calls(session, config["first"]), _calls(session, config["then"])
    if not first or not then:
        missing = config["first"] if not first else config["then"]
        return Grade(False, f"{missing} was not called.")
    passed = first[0] < then[0]
    order = "before" if passed else "after"
    return Grade(
        passed, f"{config['first']} was first called {order} {config['then']}."
    )


def _denied(config: dict[str, Any], session: AgentSession) -> Grade:
    found = PolicyDenial.objects.filter(
        session=session, policy_name=config["policy"]
    ).exists()
    said = "denied a call" if found else "denied no call"
    return Grade(found, f"{config['policy']} {said}.")


def _approval(config: dict[str, Any], session: AgentSession) -> Grade:
    requests = ApprovalRequest.objects.filter(session=session)
    if config.get("tool"):
        requests = requests.filter(tool_name=config["tool"])
    found = requests.exists()
    return Grade(
        found, "An approval was requested." if found else "No approval was requested."
    )


def _output(session: AgentSession) -> str:
    return (session.output_text or "")[:MOST_TEXT]


def _schema(config: dict[str, Any], session: AgentSession) -> Grade:
    value = session.output
    if value is None:
        try:
            value = json.loads(session.output_text or "")
        except ValueError:
            return Grade(False, "The output is not JSON.")
    validator = _bounded_validator(time.monotonic() + PATTERN_SECONDS)
    try:
        errors = sorted(
            validator(config["schema"]).iter_errors(value),
            key=lambda e: list(e.path),
        )
    except (Unresolvable, RecursionError) as error:
        return Grade(False, f"The schema cannot be applied: {type(error).__name__}.")
    except TimeoutError:
        return Grade(
            False, f"The schema's patterns took more than {PATTERN_SECONDS} s."
        )
    except regex.error as error:
        return Grade(False, f"A pattern of the schema is not valid: {error}.")
    if errors:
        return Grade(False, f"The output does not match: {errors[0].message[:300]}")
    return Grade(True, "The output matches the schema.")


def _regex(config: dict[str, Any], session: AgentSession) -> Grade:
    deadline = time.monotonic() + PATTERN_SECONDS
    try:
        found = _found(config["pattern"], _output(session), deadline)
    except TimeoutError:
        return Grade(False, f"The pattern took more than {PATTERN_SECONDS} s.")
    return Grade(
        found, "The pattern matches." if found else "The pattern does not match."
    )


def _contains(config: dict[str, Any], session: AgentSession) -> Grade:
    text, output = config["text"], _output(session)
    if not config.get("case_sensitive"):
        text, output = text.lower(), output.lower()
    found = text in output
    return Grade(
        found,
        "The text is in the output." if found else "The text is not in the output.",
    )


def _in_domains(config: dict[str, Any], session: AgentSession) -> Grade:
    allowed = [grader_config.domain(d) for d in config["domains"]]
    outside = []
    cited = Citation.objects.filter(session=session).exclude(url="")
    for url, host in cited.values_list("url", "domain"):
        host = host or Citation.domain_of(url)
        if not any(host == d or host.endswith("." + d) for d in allowed):
            outside.append(host or url)
    if outside:
        shown = ", ".join(sorted(set(outside))[:5])
        return Grade(False, f"{len(outside)} citation(s) outside the domains: {shown}.")
    return Grade(True, "Every citation is inside the domains.")


def _cost(config: dict[str, Any], session: AgentSession) -> Grade:
    most = grader_config.amount(config)
    passed = (session.cost or Decimal(0)) <= most
    return Grade(passed, f"Cost ${session.cost or 0:.4f} (at most ${most}).")


def _turns(config: dict[str, Any], session: AgentSession) -> Grade:
    passed = session.turns <= config["turns"]
    return Grade(passed, f"{session.turns} turn(s) (at most {config['turns']}).")


def _model_graded(
    config: dict[str, Any],
    session: AgentSession,
    case: DatasetCase,
    user: Any,
    previous: dict[str, Any],
) -> Grade:
    earlier = previous.get("session")
    started = (
        AgentSession.objects.filter(pk=earlier).first()
        if isinstance(earlier, str)
        else None
    )
    try:
        verdict = started or start_session(
            prompt_ref=config["prompt"],
            params={
                "output": session.output_text or "",
                "expected": case.expected_output,
                "params": json.dumps(session.params, sort_keys=True),
            },
            user=user,
        )
    except ValidationError as error:
        # the grader's fault, not the graded run's: undecided (not counted
        # as a fail), and the next Grade now starts it again
        return Grade(
            None,
            "The grader's prompt could not run: "
            + " ".join(error.messages)
            + " Correct the grader or its prompt, then Grade now.",
        )
    except DailyBudgetExceeded as error:
        # refused before anything was recorded: undecided, and the next
        # Grade now (the budget reset) starts it
        return Grade(
            None,
            f"The grader's run was refused: {error.message} Grade now once it "
            "can start.",
        )
    if verdict.status not in AgentSession.TERMINAL:
        return Grade(
            None,
            f"The grader's session {verdict.pk} has not finished.",
            str(verdict.pk),
        )
    output = verdict.output if isinstance(verdict.output, dict) else {}
    passed = output.get("passed") is True or (
        (verdict.output_text or "").strip().upper().startswith("PASS")
    )
    return Grade(passed, f"Graded by session {verdict.pk}.", str(verdict.pk))


CHECKS = {
    Kind.TOOL_CALLED: _tool_called,
    Kind.TOOL_NOT_CALLED: _tool_not_called,
    Kind.CALLED_BEFORE: _called_before,
    Kind.DENIED_BY_POLICY: _denied,
    Kind.APPROVAL_REQUESTED: _approval,
    Kind.OUTPUT_SCHEMA: _schema,
    Kind.OUTPUT_REGEX: _regex,
    Kind.OUTPUT_CONTAINS: _contains,
    Kind.CITATIONS_IN_DOMAINS: _in_domains,
    Kind.COST_AT_MOST: _cost,
    Kind.TURNS_AT_MOST: _turns,
}
