"""Approval as a policy outcome: ``PolicyDecision.ask``, and ``ApprovalPolicy``
(its conditions, its decisions, its validation). The executor's pause and
resume: test_approval_pause.py; MCP: test_approval_mcp.py; decisions bound to
their call: test_approval_binding.py."""

import dataclasses
from typing import Any

import pytest

from tooling.runtime import (
    ApprovalDecision,
    ApprovalPolicy,
    InMemorySession,
    PolicyDecision,
    PromptValidationError,
    expiry_reason,
)
from tooling.runtime.approvals import format_duration
from tooling.runtime.context import ToolContext
from tooling.runtime.prompt import Prompt
from tooling.runtime.results import ToolResult
from tooling.runtime.sections import MarkdownSection
from tooling.runtime.tools import Tool

RUN_ID = "session-approvals"


@dataclasses.dataclass(frozen=True)
class Target:
    region: str = "eu"


@dataclasses.dataclass(frozen=True)
class DeployParams:
    environment: str
    replicas: int = 1
    force: bool = False
    target: Target = dataclasses.field(default_factory=Target)


deployed: list[str] = []


def deploy(params: DeployParams, *, context: ToolContext) -> ToolResult[None]:
    deployed.append(params.environment)
    context.session.put_state("deployed", params.environment)
    return ToolResult.ok(None, f"deployed to {params.environment}")


def check(params: None, *, context: ToolContext) -> ToolResult[None]:
    return ToolResult.ok(None, "checked")


DEPLOY = Tool(name="deploy", description="Deploy.", handler=deploy)
CHECK = Tool(name="check", description="Check.", handler=check)
PRODUCTION = {"tool": "deploy", "when": {"environment": "production"}}


def make_prompt(*policies: Any) -> Prompt:
    return Prompt(
        ns="tests",
        key="approvals",
        sections=[
            MarkdownSection(
                key="task", title="Task", template="Release.", tools=[DEPLOY, CHECK]
            )
        ],
        policies=list(policies) or [ApprovalPolicy([PRODUCTION])],
    )


def context_with(decision: ApprovalDecision | None = None) -> ToolContext:
    return ToolContext(
        prompt=make_prompt(),
        rendered_prompt=None,
        adapter=None,
        session=InMemorySession(),
        call_id="c1",
        approval=decision,
    )


def decide(
    policy: ApprovalPolicy, decision: ApprovalDecision | None = None, **args: Any
) -> PolicyDecision:
    return policy.check(DEPLOY, DeployParams(**args), context=context_with(decision))


# -- PolicyDecision ---------------------------------------------------------------


def test_policy_decision_has_three_outcomes() -> None:
    assert PolicyDecision.allow().outcome == "allow"
    assert PolicyDecision.deny("no").outcome == "deny"
    asked = PolicyDecision.ask(
        "a human decides", approvers={"group": "Ops"}, deadline_seconds=60
    )
    assert asked.outcome == "ask"
    assert (asked.reason, dict(asked.approvers), asked.deadline_seconds) == (
        "a human decides",
        {"group": "Ops"},
        60,
    )


def test_policy_decision_ask_is_not_allowed_for_code_reading_only_allowed() -> None:
    # callers that only know allow/deny fail closed
    assert PolicyDecision.ask("wait").allowed is False


# -- ApprovalPolicy: conditions -----------------------------------------------------


def test_approval_policy_without_condition_asks_about_every_call() -> None:
    policy = ApprovalPolicy([{"tool": "deploy"}])
    decision = decide(policy, environment="staging")
    assert decision.outcome == "ask"
    assert decision.reason == "Tool 'deploy' needs a human decision."


def test_approval_policy_condition_matches() -> None:
    decision = decide(ApprovalPolicy([PRODUCTION]), environment="production")
    assert decision.outcome == "ask"
    assert decision.reason == (
        "Tool 'deploy' needs a human decision when environment is 'production'."
    )


def test_approval_policy_condition_does_not_match() -> None:
    assert (
        decide(ApprovalPolicy([PRODUCTION]), environment="staging").outcome == "allow"
    )


def test_approval_policy_allows_tools_it_does_not_name() -> None:
    policy = ApprovalPolicy([PRODUCTION])
    decision = policy.check(CHECK, None, context=context_with())
    assert decision.outcome == "allow"


def test_approval_policy_list_matches_any_of_its_values() -> None:
    policy = ApprovalPolicy(
        [{"tool": "deploy", "when": {"environment": ["production", "dr"]}}]
    )
    assert decide(policy, environment="dr").outcome == "ask"
    assert decide(policy, environment="production").outcome == "ask"
    assert decide(policy, environment="staging").outcome == "allow"
    assert "environment is one of 'production', 'dr'" in (
        decide(policy, environment="dr").reason or ""
    )


def test_approval_policy_every_key_must_match() -> None:
    policy = ApprovalPolicy(
        [{"tool": "deploy", "when": {"environment": "production", "replicas": 3}}]
    )
    assert decide(policy, environment="production", replicas=3).outcome == "ask"
    assert decide(policy, environment="production", replicas=2).outcome == "allow"


def test_approval_policy_dotted_keys_reach_nested_arguments() -> None:
    policy = ApprovalPolicy([{"tool": "deploy", "when": {"target.region": "us"}}])
    assert decide(policy, environment="x", target=Target("us")).outcome == "ask"
    assert decide(policy, environment="x", target=Target("eu")).outcome == "allow"


def test_approval_policy_missing_argument_never_matches() -> None:
    policy = ApprovalPolicy([{"tool": "deploy", "when": {"region": "us"}}])
    assert decide(policy, environment="production").outcome == "allow"
    nested = ApprovalPolicy([{"tool": "deploy", "when": {"environment.name": "x"}}])
    assert decide(nested, environment="production").outcome == "allow"


def test_approval_policy_compares_json_types_strictly() -> None:
    boolean = ApprovalPolicy([{"tool": "deploy", "when": {"force": True}}])
    assert decide(boolean, environment="x", force=True).reason == (
        "Tool 'deploy' needs a human decision when force is true."
    )
    number = ApprovalPolicy([{"tool": "deploy", "when": {"replicas": True}}])
    assert decide(number, environment="x", replicas=1).outcome == "allow"  # not 1
    text = ApprovalPolicy([{"tool": "deploy", "when": {"replicas": "1"}}])
    assert decide(text, environment="x", replicas=1).outcome == "allow"


def test_approval_policy_several_rules_for_one_tool_any_matches() -> None:
    policy = ApprovalPolicy(
        [
            {"tool": "deploy", "when": {"environment": "production"}},
            {"tool": "deploy", "when": {"force": True}},
        ]
    )
    assert decide(policy, environment="staging", force=True).outcome == "ask"
    assert decide(policy, environment="staging").outcome == "allow"


def test_approval_policy_carries_approvers_and_deadline() -> None:
    policy = ApprovalPolicy(
        [PRODUCTION],
        approvers={"permission": "ops.release", "group": "Release managers"},
        deadline_seconds=3600,
    )
    decision = decide(policy, environment="production")
    assert dict(decision.approvers) == {
        "permission": "ops.release",
        "group": "Release managers",
    }
    assert decision.deadline_seconds == 3600
    assert policy.referenced_tools() == frozenset({"deploy"})


# -- ApprovalPolicy: decisions ------------------------------------------------------


def test_approved_decision_allows_the_call() -> None:
    approved = ApprovalDecision(True, "alice", "", "approved")
    assert (
        decide(ApprovalPolicy([PRODUCTION]), approved, environment="production").outcome
        == "allow"
    )


def test_denied_decision_names_who_and_why() -> None:
    denied = ApprovalDecision(False, "alice", "not on a Friday", "denied")
    decision = decide(ApprovalPolicy([PRODUCTION]), denied, environment="production")
    assert decision.outcome == "deny"
    assert decision.reason == "Denied by alice: not on a Friday"
    bare = ApprovalDecision(False, "bob", "  ", "denied")
    assert bare.denial() == "Denied by bob."


def test_expired_decision_says_it_was_denied_automatically() -> None:
    expired = ApprovalDecision(False, "", expiry_reason(3600), "expired")
    decision = decide(ApprovalPolicy([PRODUCTION]), expired, environment="production")
    assert decision.reason == "No decision within 1h; denied automatically."


def test_format_duration() -> None:
    assert [format_duration(s) for s in (0, 45, 90, 3600, 86400 + 3600 + 5)] == [
        "0s",
        "45s",
        "1m 30s",
        "1h",
        "1d 1h",
    ]


def test_approval_decision_status_must_agree_with_approved() -> None:
    with pytest.raises(ValueError, match="approved must be true"):
        ApprovalDecision(True, "alice", "", "denied")
    with pytest.raises(ValueError, match="status must be one of"):
        ApprovalDecision(False, "alice", "", "maybe")  # type: ignore[arg-type]


# -- ApprovalPolicy: validation ----------------------------------------------------


@pytest.mark.parametrize(
    ("rules", "message"),
    [
        ([], "needs at least one rule"),
        ("deploy", "rules must be a list"),
        ({"tool": "deploy"}, "rules must be a list"),
        (None, "rules must be a list"),
        (["deploy"], "Approval rule 1 must be an object"),
        ([{"tool": "deploy", "if": {}}], "unknown key(s): if"),
        ([{"when": {"a": 1}}], 'needs "tool"'),
        ([{"tool": " "}], 'needs "tool"'),
        ([{"tool": 7}], 'needs "tool"'),
        ([{"tool": "deploy", "when": {}}], "leave it out to ask about every call"),
        ([{"tool": "deploy", "when": ["environment"]}], '"when" must be an object'),
        ([{"tool": "deploy", "when": {"": "x"}}], "condition keys must be"),
        ([{"tool": "deploy", "when": {"a..b": "x"}}], "condition keys must be"),
        ([{"tool": "deploy", "when": {"a": []}}], "list of values for 'a' is empty"),
        ([{"tool": "deploy", "when": {"a": {"b": 1}}}], "must be a string, number"),
        ([{"tool": "deploy", "when": {"a": [[1]]}}], "must be a string, number"),
        ([{"tool": "deploy", "when": {"a": float("nan")}}], "must be a string, number"),
    ],
)
def test_approval_policy_refuses_malformed_rules(rules: Any, message: str) -> None:
    with pytest.raises(PromptValidationError) as raised:
        ApprovalPolicy(rules)
    assert message in raised.value.message


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"approvers": ["ops"]}, "approvers must be an object"),
        ({"approvers": {"user": "alice"}}, "unknown key(s): user"),
        ({"approvers": {"group": 3}}, "approvers.group must be a non-blank name"),
        ({"approvers": {"group": "x" * 151}}, "at most 150 characters"),
        ({"approvers": {"permission": "release"}}, "must be 'app_label.codename'"),
        ({"approvers": {"permission": "a.b.c"}}, "must be 'app_label.codename'"),
        ({"deadline_seconds": 0}, "deadline_seconds must be a whole number"),
        ({"deadline_seconds": True}, "deadline_seconds must be a whole number"),
        ({"deadline_seconds": "60"}, "deadline_seconds must be a whole number"),
        ({"deadline_seconds": 10**9}, "deadline_seconds must be a whole number"),
    ],
)
def test_approval_policy_refuses_malformed_options(
    kwargs: dict[str, Any], message: str
) -> None:
    with pytest.raises(PromptValidationError) as raised:
        ApprovalPolicy([PRODUCTION], **kwargs)
    assert message in raised.value.message


def test_prompt_refuses_an_approval_rule_for_a_tool_it_does_not_have() -> None:
    with pytest.raises(PromptValidationError, match="refers to tool 'rollback'"):
        make_prompt(ApprovalPolicy([{"tool": "rollback"}]))


# -- a condition on an argument the tool does not take ------------------------


@pytest.mark.parametrize(
    ("when", "named", "known"),
    [
        ({"environmnet": "production"}, "environmnet", "environment, force, "),
        ({"environment": "production", "replica": 2}, "replica", "replicas, target"),
        ({"target.regoin": "eu"}, "target.regoin", "(its arguments: region)"),
    ],
)
def test_a_condition_on_an_argument_the_tool_does_not_take_is_refused(
    when: dict[str, Any], named: str, known: str
) -> None:
    """It would never match: a misspelt key let every call through unasked
    (found by a hostile review: production deploys ran without a decision)."""
    policy = ApprovalPolicy([{"tool": "deploy", "when": when}], name="prod-gate")
    with pytest.raises(PromptValidationError) as refused:
        make_prompt(policy)
    message = str(refused.value)
    assert f"Policy 'prod-gate' has a condition on '{named}'" in message
    assert "tool 'deploy' does not take" in message
    assert known in message and "the rule would never ask" in message


def test_conditions_on_arguments_the_tool_takes_are_accepted() -> None:
    make_prompt(
        ApprovalPolicy(
            [
                {"tool": "deploy", "when": {"environment": "production"}},
                {"tool": "deploy", "when": {"target.region": "eu", "force": True}},
                {"tool": "check"},
            ]
        )
    )


@dataclasses.dataclass(frozen=True)
class MaybeTargetParams:
    target: Target | None = None


def maybe_deploy(
    params: MaybeTargetParams, *, context: ToolContext
) -> ToolResult[None]:
    return ToolResult.ok(None, "deployed")


def test_a_condition_under_an_optional_parameter_is_checked_too() -> None:
    """``target: Target | None``: its fields are declared all the same."""
    tool = Tool(name="deploy", description="Deploy.", handler=maybe_deploy)
    policy = ApprovalPolicy([{"tool": "deploy", "when": {"target.regoin": "eu"}}])
    section = MarkdownSection(key="task", title="Task", template="Go.", tools=[tool])
    with pytest.raises(PromptValidationError) as refused:
        Prompt(ns="tests", key="maybe", sections=[section], policies=[policy])
    assert "condition on 'target.regoin'" in str(refused.value)
    fine = ApprovalPolicy([{"tool": "deploy", "when": {"target.region": "eu"}}])
    Prompt(ns="tests", key="maybe", sections=[section], policies=[fine])
