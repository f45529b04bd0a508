"""The planning tool suite: handlers, tools, section and executor integration.

Framework-free: run with ``pytest tests/runtime/test_planning.py -p no:django``.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest

from tooling.runtime.context import ToolContext
from tooling.runtime.errors import PromptValidationError, ToolValidationError
from tooling.runtime.events import InMemorySink, StateChanged, ToolInvoked
from tooling.runtime.execution.calls import FunctionCall, ToolExecution
from tooling.runtime.execution.executor import ToolExecutor
from tooling.runtime.planning import (
    MAX_TEXT_LENGTH,
    PLAN_REDUCERS,
    PLAN_STATE_KEY,
    AddStep,
    Plan,
    PlanningStrategy,
    PlanningToolsSection,
    PlanStep,
    ReadPlan,
    SetupPlan,
    UpdateStep,
    add_step,
    current_plan,
    planning_template,
    planning_tools,
    read_plan,
    reduce_add_step,
    reduce_plan,
    reduce_setup_plan,
    reduce_update_step,
    setup_plan,
    update_step,
)
from tooling.runtime.prompt import Prompt
from tooling.runtime.reducers import prompt_reducers, reduce_event
from tooling.runtime.results import ToolResult
from tooling.runtime.schema import dataclass_schema, is_strict_compatible
from tooling.runtime.sections import MarkdownSection
from tooling.runtime.session import InMemorySession
from tooling.runtime.tools import Tool

TOOL_NAMES = (
    "planning_setup_plan",
    "planning_add_step",
    "planning_update_step",
    "planning_read_plan",
)


# --------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------


def make_context(session: InMemorySession | None = None) -> ToolContext:
    prompt = Prompt(ns="tests", key="planning", sections=[PlanningToolsSection()])
    return ToolContext(
        prompt=prompt,
        rendered_prompt=None,
        adapter=None,
        session=session if session is not None else InMemorySession(),
    )


@pytest.fixture
def context() -> ToolContext:
    return make_context()


def stored(context: ToolContext) -> Plan | None:
    return current_plan(context.session)


def titles(plan: Plan) -> list[tuple[int, str, str]]:
    return [(s.step_id, s.title, s.status) for s in plan.steps]


class Harness:
    """A prompt with the planning section, run through ``ToolExecutor``."""

    def __init__(self, *extra_tools: Tool[Any, Any]) -> None:
        sections: list[MarkdownSection] = [PlanningToolsSection()]
        if extra_tools:
            sections.append(
                MarkdownSection(title="Extra", key="extra", tools=extra_tools)
            )
        self.prompt = Prompt(ns="tests", key="planning", sections=sections)
        self.session = InMemorySession()
        self.sink = InMemorySink()
        self.executor = ToolExecutor(
            prompt=self.prompt,
            rendered=self.prompt.render(),
            session=self.session,
            sink=self.sink,
        )
        self._calls = 0

    def call(self, name: str, **arguments: Any) -> ToolExecution:
        self._calls += 1
        return self.executor.execute(
            FunctionCall(name, json.dumps(arguments), f"call-{self._calls}")
        )

    @property
    def plan(self) -> Plan | None:
        return current_plan(self.session)


# --------------------------------------------------------------------------
# Data model
# --------------------------------------------------------------------------


def test_plan_render_with_steps() -> None:
    plan = Plan(
        objective="Ship it",
        status="active",
        steps=(
            PlanStep(step_id=1, title="Write code", status="done"),
            PlanStep(step_id=2, title="Review", status="in_progress"),
        ),
        next_step_id=3,
    )
    assert plan.render() == (
        "Objective: Ship it\nStatus: active\n\n1 [done] Write code\n"
        "2 [in_progress] Review"
    )


def test_plan_render_without_steps() -> None:
    plan = Plan(objective="Ship it", status="completed", steps=(), next_step_id=1)
    assert plan.render() == "Objective: Ship it\nStatus: completed\n\n<no steps>"


def test_plan_and_step_are_frozen_and_slotted() -> None:
    step = PlanStep(step_id=1, title="x", status="pending")
    plan = Plan(objective="o", status="active", steps=(step,), next_step_id=2)
    with pytest.raises(dataclasses.FrozenInstanceError):
        step.title = "y"  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        plan.status = "completed"  # type: ignore[misc]
    assert not hasattr(plan, "__dict__")
    assert not hasattr(step, "__dict__")


def test_plan_rejects_a_counter_that_would_reuse_an_id() -> None:
    step = PlanStep(step_id=3, title="x", status="pending")
    with pytest.raises(ValueError, match="next_step_id"):
        Plan(objective="o", status="active", steps=(step,), next_step_id=3)


def test_plan_rejects_duplicate_step_ids() -> None:
    step = PlanStep(step_id=1, title="x", status="pending")
    with pytest.raises(ValueError, match="unique"):
        Plan(objective="o", status="active", steps=(step, step), next_step_id=2)


def test_read_plan_params_is_an_empty_dataclass() -> None:
    assert dataclasses.is_dataclass(ReadPlan)
    assert dataclasses.fields(ReadPlan) == ()


# --------------------------------------------------------------------------
# setup
# --------------------------------------------------------------------------


def test_setup_creates_an_active_plan_numbered_from_one(context: ToolContext) -> None:
    result = setup_plan(
        SetupPlan(objective="Ship it", initial_steps=("Write", "Review")),
        context=context,
    )
    assert result.success
    assert result.message == "Plan initialised with 2 steps."
    plan = result.value
    assert plan is not None
    assert plan == stored(context)
    assert context.session.get_state(PLAN_STATE_KEY) is plan
    assert plan.objective == "Ship it"
    assert plan.status == "active"
    assert plan.next_step_id == 3
    assert titles(plan) == [(1, "Write", "pending"), (2, "Review", "pending")]


@pytest.mark.parametrize(
    ("steps", "message"),
    [
        ((), "Plan initialised with 0 steps."),
        (("One",), "Plan initialised with 1 step."),
        (("One", "Two", "Three"), "Plan initialised with 3 steps."),
    ],
)
def test_setup_message_is_pluralised(
    context: ToolContext, steps: tuple[str, ...], message: str
) -> None:
    result = setup_plan(SetupPlan(objective="o", initial_steps=steps), context=context)
    assert result.message == message


def test_setup_strips_objective_and_titles(context: ToolContext) -> None:
    result = setup_plan(
        SetupPlan(objective="  Ship it \n", initial_steps=("  Write\t", " Review ")),
        context=context,
    )
    assert result.value is not None
    assert result.value.objective == "Ship it"
    assert [s.title for s in result.value.steps] == ["Write", "Review"]


@pytest.mark.parametrize("objective", ["", "   ", "\n\t"])
def test_setup_rejects_empty_objective(context: ToolContext, objective: str) -> None:
    with pytest.raises(ToolValidationError, match=r"^Objective must not be empty\.$"):
        setup_plan(SetupPlan(objective=objective), context=context)
    assert stored(context) is None


def test_setup_rejects_empty_title(context: ToolContext) -> None:
    with pytest.raises(ToolValidationError, match=r"^Title must not be empty\.$"):
        setup_plan(
            SetupPlan(objective="o", initial_steps=("ok", "  ")), context=context
        )
    assert stored(context) is None


def test_setup_checks_objective_before_titles(context: ToolContext) -> None:
    with pytest.raises(ToolValidationError, match="Objective must not be empty"):
        setup_plan(SetupPlan(objective=" ", initial_steps=("",)), context=context)


def test_setup_length_limits(context: ToolContext) -> None:
    exact = "x" * MAX_TEXT_LENGTH
    result = setup_plan(
        SetupPlan(objective=exact, initial_steps=(exact,)), context=context
    )
    assert result.success
    # Stripping happens before the length check.
    padded = f"  {exact}  "
    assert setup_plan(SetupPlan(objective=padded), context=context).success
    with pytest.raises(
        ToolValidationError, match=r"^Objective must be <= 500 characters\.$"
    ):
        setup_plan(SetupPlan(objective=exact + "x"), context=context)
    with pytest.raises(
        ToolValidationError, match=r"^Title must be <= 500 characters\.$"
    ):
        setup_plan(
            SetupPlan(objective="o", initial_steps=(exact + "x",)), context=context
        )


def test_setup_replaces_an_existing_plan_and_restarts_ids(context: ToolContext) -> None:
    setup_plan(SetupPlan(objective="first", initial_steps=("a", "b")), context=context)
    add_step(AddStep(steps=("c",)), context=context)
    result = setup_plan(
        SetupPlan(objective="second", initial_steps=("x",)), context=context
    )
    assert result.value is not None
    assert result.value.objective == "second"
    assert titles(result.value) == [(1, "x", "pending")]
    assert result.value.next_step_id == 2


def test_setup_can_start_a_new_plan_after_completion(context: ToolContext) -> None:
    setup_plan(SetupPlan(objective="first", initial_steps=("a",)), context=context)
    done = update_step(UpdateStep(step_id=1, status="done"), context=context)
    assert done.value is not None and done.value.status == "completed"
    result = setup_plan(
        SetupPlan(objective="again", initial_steps=("b",)), context=context
    )
    assert result.value is not None
    assert result.value.status == "active"
    assert titles(result.value) == [(1, "b", "pending")]


# --------------------------------------------------------------------------
# add
# --------------------------------------------------------------------------


def test_add_requires_a_plan(context: ToolContext) -> None:
    with pytest.raises(
        ToolValidationError, match=r"^No plan is currently initialised\.$"
    ):
        add_step(AddStep(steps=("a",)), context=context)


def test_add_appends_pending_steps_with_fresh_ids(context: ToolContext) -> None:
    setup_plan(SetupPlan(objective="o", initial_steps=("a",)), context=context)
    result = add_step(AddStep(steps=(" b ", "c")), context=context)
    assert result.message == "Added 2 steps."
    assert result.value is not None
    assert result.value == stored(context)
    assert titles(result.value) == [
        (1, "a", "pending"),
        (2, "b", "pending"),
        (3, "c", "pending"),
    ]
    assert result.value.next_step_id == 4
    assert add_step(AddStep(steps=("d",)), context=context).message == "Added 1 step."


def test_add_to_an_empty_plan_starts_at_one(context: ToolContext) -> None:
    setup_plan(SetupPlan(objective="o"), context=context)
    result = add_step(AddStep(steps=("a",)), context=context)
    assert result.value is not None
    assert titles(result.value) == [(1, "a", "pending")]


def test_add_uses_the_counter_so_ids_are_never_reused(context: ToolContext) -> None:
    # A plan whose highest step is 2 but which already handed out id 5 (e.g. a
    # restored snapshot): new steps continue from the counter, never from 3.
    context.session.put_state(
        PLAN_STATE_KEY,
        Plan(
            objective="o",
            status="active",
            steps=(
                PlanStep(step_id=1, title="a", status="done"),
                PlanStep(step_id=2, title="b", status="pending"),
            ),
            next_step_id=5,
        ),
    )
    result = add_step(AddStep(steps=("c", "d")), context=context)
    assert result.value is not None
    assert [s.step_id for s in result.value.steps] == [1, 2, 5, 6]
    assert result.value.next_step_id == 7


def test_ids_stay_unique_across_a_whole_session(context: ToolContext) -> None:
    setup_plan(SetupPlan(objective="o", initial_steps=("a", "b")), context=context)
    seen: list[int] = []
    for round_number in range(5):
        result = add_step(AddStep(steps=(f"step {round_number}",)), context=context)
        assert result.value is not None
        update_step(
            UpdateStep(step_id=result.value.steps[-1].step_id, title="renamed"),
            context=context,
        )
        seen = [s.step_id for s in result.value.steps]
    assert seen == [1, 2, 3, 4, 5, 6, 7]
    assert len(seen) == len(set(seen))


def test_add_refused_once_completed(context: ToolContext) -> None:
    setup_plan(SetupPlan(objective="o", initial_steps=("a",)), context=context)
    update_step(UpdateStep(step_id=1, status="done"), context=context)
    with pytest.raises(
        ToolValidationError,
        match=r"^Plan must be active\. Current status: completed\.$",
    ):
        add_step(AddStep(steps=("b",)), context=context)


def test_add_rejects_an_empty_list(context: ToolContext) -> None:
    setup_plan(SetupPlan(objective="o"), context=context)
    with pytest.raises(
        ToolValidationError, match=r"^Provide at least one step to add\.$"
    ):
        add_step(AddStep(steps=()), context=context)


def test_add_rejects_empty_and_overlong_titles(context: ToolContext) -> None:
    setup_plan(SetupPlan(objective="o"), context=context)
    with pytest.raises(ToolValidationError, match=r"^Title must not be empty\.$"):
        add_step(AddStep(steps=("ok", " ")), context=context)
    with pytest.raises(
        ToolValidationError, match=r"^Title must be <= 500 characters\.$"
    ):
        add_step(AddStep(steps=("x" * 501,)), context=context)
    plan = stored(context)
    assert plan is not None and plan.steps == ()


def test_add_check_order(context: ToolContext) -> None:
    # 1. the plan must exist (even with an empty list and bad titles)
    with pytest.raises(ToolValidationError, match="No plan is currently initialised"):
        add_step(AddStep(steps=()), context=context)
    # 2. the plan must be active (before titles and emptiness are checked)
    setup_plan(SetupPlan(objective="o", initial_steps=("a",)), context=context)
    update_step(UpdateStep(step_id=1, status="done"), context=context)
    with pytest.raises(ToolValidationError, match="Plan must be active"):
        add_step(AddStep(steps=("",)), context=context)
    with pytest.raises(ToolValidationError, match="Plan must be active"):
        add_step(AddStep(steps=()), context=context)


# --------------------------------------------------------------------------
# update
# --------------------------------------------------------------------------


def test_update_requires_a_plan(context: ToolContext) -> None:
    with pytest.raises(
        ToolValidationError, match=r"^No plan is currently initialised\.$"
    ):
        update_step(UpdateStep(step_id=1, status="done"), context=context)


def test_update_status_and_title(context: ToolContext) -> None:
    setup_plan(SetupPlan(objective="o", initial_steps=("a", "b")), context=context)
    result = update_step(UpdateStep(step_id=2, status="in_progress"), context=context)
    assert result.message == "Step 2 updated."
    assert result.value is not None
    assert titles(result.value) == [(1, "a", "pending"), (2, "b", "in_progress")]
    result = update_step(UpdateStep(step_id=1, title="  alpha  "), context=context)
    assert result.value is not None
    assert titles(result.value) == [(1, "alpha", "pending"), (2, "b", "in_progress")]
    result = update_step(
        UpdateStep(step_id=1, title="A", status="done"), context=context
    )
    assert result.value is not None
    assert titles(result.value) == [(1, "A", "done"), (2, "b", "in_progress")]
    assert result.value.status == "active"
    assert result.value == stored(context)


def test_update_does_not_change_the_counter(context: ToolContext) -> None:
    setup_plan(SetupPlan(objective="o", initial_steps=("a",)), context=context)
    result = update_step(UpdateStep(step_id=1, title="b"), context=context)
    assert result.value is not None and result.value.next_step_id == 2


def test_update_requires_title_or_status(context: ToolContext) -> None:
    setup_plan(SetupPlan(objective="o", initial_steps=("a",)), context=context)
    with pytest.raises(
        ToolValidationError,
        match=r"^Provide a new title or status to update a step\.$",
    ):
        update_step(UpdateStep(step_id=1), context=context)


def test_update_unknown_step(context: ToolContext) -> None:
    setup_plan(SetupPlan(objective="o", initial_steps=("a",)), context=context)
    with pytest.raises(ToolValidationError, match=r"^Step 7 does not exist\.$"):
        update_step(UpdateStep(step_id=7, status="done"), context=context)


def test_update_rejects_empty_and_overlong_titles(context: ToolContext) -> None:
    setup_plan(SetupPlan(objective="o", initial_steps=("a",)), context=context)
    with pytest.raises(ToolValidationError, match=r"^Title must not be empty\.$"):
        update_step(UpdateStep(step_id=1, title="  "), context=context)
    with pytest.raises(
        ToolValidationError, match=r"^Title must be <= 500 characters\.$"
    ):
        update_step(UpdateStep(step_id=1, title="y" * 501), context=context)
    exact = update_step(UpdateStep(step_id=1, title="y" * 500), context=context)
    assert exact.success


def test_update_check_order(context: ToolContext) -> None:
    setup_plan(SetupPlan(objective="o", initial_steps=("a",)), context=context)
    # title is normalised before "title or status" and before "step exists"
    with pytest.raises(ToolValidationError, match="Title must not be empty"):
        update_step(UpdateStep(step_id=99, title=""), context=context)
    # "title or status" comes before "step exists"
    with pytest.raises(ToolValidationError, match="Provide a new title or status"):
        update_step(UpdateStep(step_id=99), context=context)
    # once completed, "plan active" comes before everything else
    update_step(UpdateStep(step_id=1, status="done"), context=context)
    with pytest.raises(ToolValidationError, match="Plan must be active"):
        update_step(UpdateStep(step_id=99, title=""), context=context)


def test_plan_completes_when_every_step_is_done(context: ToolContext) -> None:
    setup_plan(SetupPlan(objective="o", initial_steps=("a", "b")), context=context)
    first = update_step(UpdateStep(step_id=1, status="done"), context=context)
    assert first.value is not None and first.value.status == "active"
    second = update_step(UpdateStep(step_id=2, status="done"), context=context)
    assert second.value is not None and second.value.status == "completed"
    assert second.message == "Step 2 updated."
    plan = stored(context)
    assert plan is not None and plan.status == "completed"


def test_update_refused_once_completed(context: ToolContext) -> None:
    setup_plan(SetupPlan(objective="o", initial_steps=("a",)), context=context)
    update_step(UpdateStep(step_id=1, status="done"), context=context)
    with pytest.raises(
        ToolValidationError,
        match=r"^Plan must be active\. Current status: completed\.$",
    ):
        update_step(UpdateStep(step_id=1, status="pending"), context=context)


def test_adding_after_partial_progress_keeps_plan_active(context: ToolContext) -> None:
    setup_plan(SetupPlan(objective="o", initial_steps=("a", "b")), context=context)
    update_step(UpdateStep(step_id=1, status="done"), context=context)
    result = add_step(AddStep(steps=("c",)), context=context)
    assert result.value is not None and result.value.status == "active"
    update_step(UpdateStep(step_id=2, status="done"), context=context)
    last = update_step(UpdateStep(step_id=3, status="done"), context=context)
    assert last.value is not None and last.value.status == "completed"


# --------------------------------------------------------------------------
# read
# --------------------------------------------------------------------------


def test_read_requires_a_plan(context: ToolContext) -> None:
    with pytest.raises(
        ToolValidationError, match=r"^No plan is currently initialised\.$"
    ):
        read_plan(ReadPlan(), context=context)


def test_read_messages(context: ToolContext) -> None:
    setup_plan(SetupPlan(objective="o"), context=context)
    empty = read_plan(ReadPlan(), context=context)
    assert empty.message == "Retrieved the current plan (no steps recorded)."
    add_step(AddStep(steps=("a",)), context=context)
    one = read_plan(ReadPlan(), context=context)
    assert one.message == "Retrieved the current plan with 1 step."
    add_step(AddStep(steps=("b",)), context=context)
    two = read_plan(ReadPlan(), context=context)
    assert two.message == "Retrieved the current plan with 2 steps."
    assert two.value == stored(context)


def test_read_works_on_a_completed_plan(context: ToolContext) -> None:
    setup_plan(SetupPlan(objective="o", initial_steps=("a",)), context=context)
    update_step(UpdateStep(step_id=1, status="done"), context=context)
    result = read_plan(ReadPlan(), context=context)
    assert result.success
    assert result.value is not None and result.value.status == "completed"


def test_state_that_is_not_a_plan_counts_as_no_plan(context: ToolContext) -> None:
    context.session.put_state(PLAN_STATE_KEY, {"objective": "forged"})
    with pytest.raises(ToolValidationError, match="No plan is currently initialised"):
        read_plan(ReadPlan(), context=context)


def test_plans_are_isolated_per_session() -> None:
    first, second = make_context(), make_context()
    setup_plan(SetupPlan(objective="mine", initial_steps=("a",)), context=first)
    assert stored(second) is None
    with pytest.raises(ToolValidationError):
        read_plan(ReadPlan(), context=second)


# --------------------------------------------------------------------------
# Tools, schemas, section and strategies
# --------------------------------------------------------------------------


def test_planning_tools_names_and_flags() -> None:
    tools = planning_tools()
    assert tuple(tool.name for tool in tools) == TOOL_NAMES
    for tool in tools:
        assert tool.accepts_overrides is False
        assert tool.handler is not None
        assert 1 <= len(tool.description) <= 200
        assert tool.description.isascii()
        assert tool.result_type is Plan
    assert [tool.params_type for tool in tools] == [
        SetupPlan,
        AddStep,
        UpdateStep,
        ReadPlan,
    ]
    setup = tools[0]
    assert setup.examples
    assert isinstance(setup.examples[0].input, SetupPlan)


def test_planning_tools_reject_description_overrides() -> None:
    with pytest.raises(PromptValidationError, match="does not accept overrides"):
        planning_tools()[0].with_description("Something else.")


def test_setup_example_matches_what_the_handler_returns() -> None:
    setup = planning_tools()[0]
    for example in setup.examples:
        result = setup_plan(example.input, context=make_context())
        assert result.value == example.output


def test_planning_schemas_are_strict_compatible() -> None:
    for tool in planning_tools():
        schema = dataclass_schema(tool.params_type)
        assert is_strict_compatible(schema), tool.name
        for name, prop in schema["properties"].items():
            assert prop.get("description"), (tool.name, name)


def test_update_step_status_schema_is_a_nullable_enum() -> None:
    schema = dataclass_schema(UpdateStep)
    status = schema["properties"]["status"]
    assert status["enum"] == ["pending", "in_progress", "done", None]
    assert "null" in status["type"]
    assert schema["required"] == ["step_id", "title", "status"]
    assert schema["additionalProperties"] is False


def test_read_plan_schema_is_an_empty_object() -> None:
    assert dataclass_schema(ReadPlan) == {
        "type": "object",
        "properties": {},
        "required": [],
        "additionalProperties": False,
    }


def test_strategy_values_and_distinct_guidance() -> None:
    assert [s.value for s in PlanningStrategy] == [
        "react",
        "plan_act_reflect",
        "goal_decompose_route_synthesise",
    ]
    guidance = [s.guidance for s in PlanningStrategy]
    assert all(text.strip() for text in guidance)
    assert len(set(guidance)) == 3


def test_section_defaults() -> None:
    section = PlanningToolsSection()
    assert section.key == "planning"
    assert section.title == "Planning Tools"
    assert section.strategy is PlanningStrategy.REACT
    assert section.accepts_overrides is False
    assert tuple(tool.name for tool in section.tools()) == TOOL_NAMES
    assert section.placeholders == ()


@pytest.mark.parametrize("strategy", list(PlanningStrategy))
def test_section_body_varies_only_by_strategy_paragraph(
    strategy: PlanningStrategy,
) -> None:
    section = PlanningToolsSection(strategy=strategy)
    body = section.render_body(None, ("planning",))
    assert strategy.guidance in body
    for other in PlanningStrategy:
        if other is not strategy:
            assert other.guidance not in body
    common = planning_template(PlanningStrategy.REACT).split("\n\n")[0]
    assert body.startswith(common)


def test_section_accepts_a_strategy_value_and_custom_key() -> None:
    section = PlanningToolsSection(strategy=PlanningStrategy("plan_act_reflect"))
    assert section.strategy is PlanningStrategy.PLAN_ACT_REFLECT
    assert PlanningToolsSection(key="plan.tools").key == "plan.tools"


def test_section_renders_in_a_prompt_with_examples() -> None:
    prompt = Prompt(ns="tests", key="planning", sections=[PlanningToolsSection()])
    rendered = prompt.render()
    assert tuple(tool.name for tool in rendered.tools) == TOOL_NAMES
    assert "## 1. Planning Tools (planning)" in rendered.text
    assert "planning_setup_plan" in rendered.text
    assert "1 [pending] Audit existing guides" in rendered.text


def test_two_sections_in_one_prompt_clash_on_tool_names() -> None:
    with pytest.raises(PromptValidationError, match="Duplicate"):
        Prompt(
            ns="tests",
            key="planning",
            sections=[PlanningToolsSection(), PlanningToolsSection(key="other")],
        )


# --------------------------------------------------------------------------
# Through the executor
# --------------------------------------------------------------------------


def test_executor_full_lifecycle() -> None:
    harness = Harness()
    setup = harness.call(
        "planning_setup_plan", objective="Ship", initial_steps=["a", "b"]
    )
    assert setup.result.success
    assert setup.output.startswith("Plan initialised with 2 steps.\n\nObjective: Ship")
    added = harness.call("planning_add_step", steps=["c"])
    assert added.result.message == "Added 1 step."
    for step_id in (1, 2, 3):
        done = harness.call(
            "planning_update_step", step_id=step_id, title=None, status="done"
        )
        assert done.result.message == f"Step {step_id} updated."
    plan = harness.plan
    assert plan is not None and plan.status == "completed"
    read = harness.call("planning_read_plan")
    assert read.result.message == "Retrieved the current plan with 3 steps."
    assert read.result.value == plan
    refused = harness.call("planning_add_step", steps=["d"])
    assert not refused.result.success
    assert refused.output == (
        "Tool validation failed: Plan must be active. Current status: completed."
    )
    changes = harness.sink.of_type(StateChanged)
    assert [event.key for event in changes] == [PLAN_STATE_KEY] * 5


def test_executor_strict_nulls_use_defaults() -> None:
    harness = Harness()
    result = harness.call("planning_setup_plan", objective="o", initial_steps=None)
    assert result.result.success
    assert result.result.message == "Plan initialised with 0 steps."


def test_executor_rejects_unknown_status_and_extra_keys() -> None:
    harness = Harness()
    harness.call("planning_setup_plan", objective="o", initial_steps=["a"])
    bad = harness.call("planning_update_step", step_id=1, status="finished")
    assert not bad.result.success
    assert bad.output.startswith("Tool validation failed: status")
    extra = harness.call("planning_read_plan", verbose=True)
    assert not extra.result.success
    assert "Extra keys not permitted" in extra.output


@pytest.mark.parametrize(
    ("name", "arguments", "output"),
    [
        (
            "planning_read_plan",
            {},
            "Tool validation failed: No plan is currently initialised.",
        ),
        (
            "planning_add_step",
            {"steps": ["a"]},
            "Tool validation failed: No plan is currently initialised.",
        ),
        (
            "planning_setup_plan",
            {"objective": " "},
            "Tool validation failed: Objective must not be empty.",
        ),
    ],
)
def test_executor_reports_validation_failures(
    name: str, arguments: dict[str, Any], output: str
) -> None:
    harness = Harness()
    execution = harness.call(name, **arguments)
    assert not execution.result.success
    assert execution.result.value is None
    assert execution.output == output
    invoked = harness.sink.of_type(ToolInvoked)
    assert len(invoked) == 1 and not invoked[0].success


def test_failed_setup_leaves_the_existing_plan_unchanged() -> None:
    harness = Harness()
    harness.call("planning_setup_plan", objective="keep", initial_steps=["a"])
    before = harness.plan
    failed = harness.call(
        "planning_setup_plan", objective="replace", initial_steps=["ok", ""]
    )
    assert failed.output == "Tool validation failed: Title must not be empty."
    assert harness.plan is before


def _add_then_fail(params: AddStep, *, context: ToolContext) -> ToolResult[Plan]:
    """Adds steps (writing the plan) and then fails validation."""
    result = add_step(params, context=context)
    assert result.value is not None
    assert current_plan(context.session) == result.value  # the write happened
    raise ToolValidationError("rejected after the plan was written")


def test_validation_error_after_a_state_change_rolls_the_plan_back() -> None:
    harness = Harness(
        Tool(
            name="add_then_fail",
            description="Adds steps then fails.",
            handler=_add_then_fail,
        )
    )
    harness.call("planning_setup_plan", objective="o", initial_steps=["a"])
    before = harness.plan
    events_before = len(harness.sink.of_type(StateChanged))
    execution = harness.call("add_then_fail", steps=["b", "c"])
    assert not execution.result.success
    assert execution.output == (
        "Tool validation failed: rejected after the plan was written"
    )
    assert harness.plan is before
    assert harness.plan is not None
    assert titles(harness.plan) == [(1, "a", "pending")]
    # No StateChanged event is emitted for a rolled-back write.
    assert len(harness.sink.of_type(StateChanged)) == events_before
    # The ids handed out inside the failed call are free again: the plan never
    # recorded them, so the next real add continues from the stored counter.
    added = harness.call("planning_add_step", steps=["b"])
    assert added.result.value is not None
    assert [s.step_id for s in added.result.value.steps] == [1, 2]


def test_unexpected_error_after_a_state_change_rolls_the_plan_back() -> None:
    def explode(params: UpdateStep, *, context: ToolContext) -> ToolResult[Plan]:
        update_step(params, context=context)
        raise RuntimeError("disk on fire")

    harness = Harness(
        Tool(
            name="update_then_explode",
            description="Updates a step then crashes.",
            handler=explode,
            params_type=UpdateStep,
            result_type=Plan,
        )
    )
    harness.call("planning_setup_plan", objective="o", initial_steps=["a"])
    before = harness.plan
    execution = harness.call("update_then_explode", step_id=1, status="done")
    assert execution.output == (
        "Tool 'update_then_explode' execution failed: disk on fire"
    )
    assert harness.plan is before


# --------------------------------------------------------------------------
# The plan as a reduction of events (seed 003)
# --------------------------------------------------------------------------


def test_section_registers_the_plan_reducers() -> None:
    section = PlanningToolsSection()
    assert section.reducers() == PLAN_REDUCERS
    assert [(r.event_type, r.key) for r in PLAN_REDUCERS] == [
        (Plan, PLAN_STATE_KEY),
        (SetupPlan, PLAN_STATE_KEY),
        (AddStep, PLAN_STATE_KEY),
        (UpdateStep, PLAN_STATE_KEY),
    ]
    assert (
        prompt_reducers(Prompt(ns="tests", key="p", sections=[section]))
        == PLAN_REDUCERS
    )


def test_the_plan_is_a_reduction_of_its_events() -> None:
    events: list[object] = [
        SetupPlan(objective="Ship", initial_steps=("a", "b")),
        AddStep(steps=("c",)),
        UpdateStep(step_id=2, status="done"),
        UpdateStep(step_id=1, title="A!"),
    ]
    plan: Plan | None = None
    for event in events:
        (reducer,) = [r for r in PLAN_REDUCERS if r.applies_to(event)]
        plan = reducer.reduce(plan, event)
    assert plan is not None
    assert titles(plan) == [(1, "A!", "pending"), (2, "b", "done"), (3, "c", "pending")]
    assert plan.next_step_id == 4

    session = InMemorySession()
    for event in events:
        assert reduce_event(session, event, PLAN_REDUCERS) == (PLAN_STATE_KEY,)
    assert current_plan(session) == plan
    # a published Plan replaces the current one
    replacement = dataclasses.replace(plan, objective="Other")
    reduce_event(session, replacement, PLAN_REDUCERS)
    assert current_plan(session) == replacement
    assert reduce_event(session, ReadPlan(), PLAN_REDUCERS) == ()


def test_reducers_refuse_events_without_a_plan() -> None:
    with pytest.raises(ToolValidationError, match="No plan is currently initialised"):
        reduce_add_step(None, AddStep(steps=("a",)))
    with pytest.raises(ToolValidationError, match="No plan is currently initialised"):
        reduce_update_step(None, UpdateStep(step_id=1, status="done"))
    assert reduce_plan(None, reduce_setup_plan(None, SetupPlan("o"))).steps == ()


def test_executor_delivers_the_plan_events_before_state_and_invocation() -> None:
    harness = Harness()
    harness.call("planning_setup_plan", objective="Ship", initial_steps=["a"])
    harness.call("planning_update_step", step_id=1, status="in_progress")
    harness.call("planning_read_plan")
    kinds = [type(event).__name__ for event in harness.sink.events]
    assert kinds == [
        "SetupPlan",
        "StateChanged",
        "ToolInvoked",
        "UpdateStep",
        "StateChanged",
        "ToolInvoked",
        "ToolInvoked",  # reading publishes nothing
    ]
    setup_event = harness.sink.events[0]
    assert setup_event == SetupPlan(objective="Ship", initial_steps=("a",))


def test_a_refused_event_is_not_delivered() -> None:
    harness = Harness()
    refused = harness.call("planning_add_step", steps=["a"])
    assert refused.output == "Tool validation failed: No plan is currently initialised."
    assert [type(e).__name__ for e in harness.sink.events] == ["ToolInvoked"]


def test_a_failed_calls_published_events_are_dropped_with_its_state() -> None:
    def publish_then_fail(params: AddStep, *, context: ToolContext) -> ToolResult[Plan]:
        add_step(params, context=context)
        raise RuntimeError("boom")

    harness = Harness(
        Tool[AddStep, Plan](
            name="publish_then_fail",
            description="Adds steps then crashes.",
            handler=publish_then_fail,
        )
    )
    harness.call("planning_setup_plan", objective="o")
    before = list(harness.sink.events)
    harness.call("publish_then_fail", steps=["b"])
    new = harness.sink.events[len(before) :]
    assert [type(e).__name__ for e in new] == ["ToolInvoked"]
    assert harness.plan is not None and harness.plan.steps == ()


def test_planning_tools_in_a_plain_section_still_reduce_the_plan() -> None:
    # The catalog assembly puts planning_tools() in a MarkdownSection, which
    # registers no reducers: the handlers name theirs.
    section = MarkdownSection(title="Work", key="work", tools=planning_tools())
    prompt = Prompt(ns="tests", key="plain", sections=[section])
    assert prompt_reducers(prompt) == ()
    session = InMemorySession()
    sink = InMemorySink()
    executor = ToolExecutor(
        prompt=prompt, rendered=prompt.render(), session=session, sink=sink
    )
    call = FunctionCall(
        "planning_setup_plan",
        json.dumps({"objective": "o", "initial_steps": ["a"]}),
        "c1",
    )
    assert executor.execute(call).result.success
    plan = current_plan(session)
    assert plan is not None and titles(plan) == [(1, "a", "pending")]
    assert [type(e).__name__ for e in sink.events] == [
        "SetupPlan",
        "StateChanged",
        "ToolInvoked",
    ]


def test_planning_events_are_exported_from_the_runtime() -> None:
    import tooling.runtime as runtime

    assert (runtime.SetupPlan, runtime.AddStep, runtime.UpdateStep) == (
        SetupPlan,
        AddStep,
        UpdateStep,
    )
    assert runtime.ReadPlan is ReadPlan


def test_session_reset_clears_plan_and_policy_state() -> None:
    session = InMemorySession()
    session.filesystem.write("notes.txt", "kept")
    reduce_event(session, SetupPlan(objective="o"), PLAN_REDUCERS)
    session.put_state("policy:read_before_write", {"read": ["notes.txt"]})
    session.reset()
    assert current_plan(session) is None
    assert session.get_state("policy:read_before_write") is None
    assert session.filesystem.read("notes.txt") == "kept"
